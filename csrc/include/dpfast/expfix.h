/* Internal: one-word certified enclosures of exp(-x) in 64-bit fixed point, shared by the
 * prepared samplers' acceptance coins (csrc/prepared.c, csrc/dgauss.c).  Each function
 * returns an integer bound of 2^64 exp(-x) (or of 2^64 exp(-e/2^54)) that is certainly on
 * the stated side; the proofs are beside each function.  No floating point. */
#ifndef DPFAST_EXPFIX_H
#define DPFAST_EXPFIX_H

#include <stdint.h>
#include "dpfast/arith.h"

#define DPF_EXP54_TAB (45 * 32)   /* entries of the table of exp(-i/32): e^-45 2^64 < 1 */

/* For 0 <= x <= xh / 2^64 <= 1/32, a lower bound of 2^64 exp(-x): Taylor's theorem with
 * the remainder's sign gives 1 - x + x^2/2 - x^3/6 <= exp(-x) for x >= 0, and the
 * polynomial decreases on [0, 1]; evaluated at x = xh/2^64 with each term rounded so that
 * the sum goes down (xh = 0 gives 2^64 - 1 through the wrap-around, still a lower bound). */
static DPF_INLINE uint64_t dpf_exp_small_lo(uint64_t xh)
{
    uint64_t s2, s3;
    dpf_mul64(xh, xh, &s2);                         /* floor(xh^2/2^64) */
    dpf_mul64(s2 + 1, xh, &s3);
    s3 += 1;                                        /* >= xh^3 / 2^128 */
    return (0 - xh) + (s2 >> 1) - (s3 / 6 + 1);
}

/* For x >= xl / 2^64 (x <= 1/32): an upper bound of 2^64 exp(-x), saturated at 2^64 - 1
 * (a saturated bound never decides a rejection, so it stays safe):
 * exp(-x) <= 1 - x + x^2/2 - x^3/6 + x^4/24 (Taylor, remainder's sign), decreasing on
 * [0, 1], at x = xl/2^64, rounded up overall. */
static DPF_INLINE uint64_t dpf_exp_small_hi(uint64_t xl)
{
    uint64_t t2, t3, t4;
    if (xl < 64) return UINT64_MAX;
    dpf_mul64(xl, xl, &t2);                         /* floor(xl^2/2^64) */
    dpf_mul64(t2, xl, &t3);                         /* <= xl^3 / 2^128 */
    dpf_mul64(t2 + 1, t2 + 1, &t4);
    t4 += 1;                                        /* >= xl^4 / 2^192 */
    return (0 - xl) + (t2 >> 1) + 1 - t3 / 6 + t4 / 24 + 2;
}

/* floor(x y / 2^63). */
static DPF_INLINE uint64_t dpf_mul63(uint64_t x, uint64_t y)
{
    uint64_t hi, lo = dpf_mul64(x, y, &hi);
    return (hi << 1) | (lo >> 63);
}

/* 2^64 exp(-e/2^54) from below (up = 0) or above (up = 1), saturated at 2^64 - 1:
 * exp(-i/32) from the certified table e_tab ([lo, hi] of 2^63 exp(-i/32), set up in
 * 192-bit arithmetic) times the enclosure above of exp(-x), x = e/2^54 - i/32 < 1/32;
 * products truncated (lower bound) or truncated + 1 (upper bound). */
static DPF_INLINE uint64_t dpf_exp54(const uint64_t (*e_tab)[2], uint64_t e, int up)
{
    const uint64_t i = e >> 49, x = (e & (((uint64_t)1 << 49) - 1)) << 10;
    uint64_t p;
    if (i >= DPF_EXP54_TAB) return (uint64_t)up;    /* 2^64 e^-45 < 1 */
    if (!up) {
        p = dpf_mul63(e_tab[i][0], dpf_exp_small_lo(x) >> 1);
        return p >= ((uint64_t)1 << 63) ? UINT64_MAX : p << 1;
    }
    p = dpf_mul63(e_tab[i][1], (dpf_exp_small_hi(x) >> 1) + 1) + 1;
    return p >= ((uint64_t)1 << 63) ? UINT64_MAX : p << 1;
}

/* The same, cruder and shorter (one product at most): exp(-x) >= 1 - x below, <= 1 above;
 * about 2^-5 p wide. */
static DPF_INLINE uint64_t dpf_exp54_crude(const uint64_t (*e_tab)[2], uint64_t e, int up)
{
    const uint64_t i = e >> 49, x = (e & (((uint64_t)1 << 49) - 1)) << 10;
    uint64_t p;
    if (i >= DPF_EXP54_TAB) return (uint64_t)up;
    p = up ? e_tab[i][1] : dpf_mul63(e_tab[i][0], ((uint64_t)1 << 63) - (x >> 1) - 1);
    return p >= ((uint64_t)1 << 63) ? UINT64_MAX : p << 1;
}

#endif
