/* Portable 64x64 -> 128-bit multiply, 128/64 divide and bit length for the C core:
 * unsigned __int128 where the compiler has it, MSVC intrinsics, plain C otherwise.
 * DPF_PORTABLE_ARITH forces the plain-C versions (to test them where the fast ones exist). */
#ifndef DPFAST_ARITH_H
#define DPFAST_ARITH_H

#include <stdint.h>

#include "dpfast/common.h"

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

/* ================================================================ portable arithmetic */

/* 64x64 -> 128: returns the low word, *hi the high word.  DPF_PORTABLE_ARITH forces the
 * plain-C versions (used to test them on a compiler that has the fast ones). */
static DPF_INLINE uint64_t dpf_mul64(uint64_t a, uint64_t b, uint64_t *hi)
{
#if defined(__SIZEOF_INT128__) && !defined(DPF_PORTABLE_ARITH)
    __extension__ unsigned __int128 p = (unsigned __int128)a * b;
    *hi = (uint64_t)(p >> 64);
    return (uint64_t)p;
#elif defined(_MSC_VER) && defined(_M_X64) && !defined(__clang__) &&                       \
    !defined(DPF_PORTABLE_ARITH)
    return _umul128(a, b, hi);
#elif defined(_MSC_VER) && defined(_M_ARM64) && !defined(__clang__) &&                     \
    !defined(DPF_PORTABLE_ARITH)
    *hi = __umulh(a, b);
    return a * b;
#else
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return (mid << 32) | (p00 & 0xffffffffu);
#endif
}

/* (hi*2^64 + lo) / d for hi < d (so the quotient fits); *rem gets the remainder.
 * Only the set-up code (prepare functions) divides; the samplers never do. */
static DPF_INLINE uint64_t dpf_div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem)
{
#if defined(__SIZEOF_INT128__) && !defined(DPF_PORTABLE_ARITH)
    __extension__ unsigned __int128 n = ((unsigned __int128)hi << 64) | lo;
    *rem = (uint64_t)(n % d);
    return (uint64_t)(n / d);
#elif defined(_MSC_VER) && _MSC_VER >= 1920 && defined(_M_X64) && !defined(__clang__) &&   \
    !defined(DPF_PORTABLE_ARITH)
    return _udiv128(hi, lo, d, rem);
#else
    /* Restoring division, one quotient bit at a time; hi < d throughout. */
    uint64_t q = 0;
    int i;
    for (i = 63; i >= 0; i--) {
        uint64_t top = hi >> 63;
        hi = (hi << 1) | (lo >> 63);
        lo <<= 1;
        if (top || hi >= d) {
            hi -= d;   /* modulo 2^64: the true value 2^64*top + hi - d is < d */
            q |= (uint64_t)1 << i;
        }
    }
    *rem = hi;
    return q;
#endif
}

static DPF_INLINE int dpf_bitlen64(uint64_t x)
{
#if (defined(__GNUC__) || defined(__clang__)) && !defined(DPF_PORTABLE_ARITH)
    return x ? 64 - __builtin_clzll(x) : 0;
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64)) &&                       \
    !defined(DPF_PORTABLE_ARITH)
    unsigned long i;
    return _BitScanReverse64(&i, x) ? (int)i + 1 : 0;
#else
    int n = 0;
    while (x) {
        n++;
        x >>= 1;
    }
    return n;
#endif
}

#endif
