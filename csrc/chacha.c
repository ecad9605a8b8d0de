/* ChaCha20 block function (RFC 8439 §2.3) with run-time SIMD choice and the buffered
 * generator of chacha.h.  OS entropy, fork safety and erasure are in entropy.c, the
 * layer below. */
#include "dpfast/chacha.h"
#include "dpfast/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rounds are macros of macro calls without semicolons (as RFC 8439 writes the
 * quarter rounds, four to a line), which clang-format re-wraps differently on every
 * pass: this file keeps its hand layout. */
/* clang-format off */

/* ------------------------------------------------------------------ helpers */

static uint32_t load32_le(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static void store32_le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* The 16-word input of block `ctr`: constants, key, counter, nonce (RFC 8439 §2.3).
 * The block counter is 64 bits: its high half is added to the first nonce word, so
 * for the first 2^32 blocks this is exactly RFC 8439, and afterwards it is the original
 * 64-bit-counter ChaCha instead of wrapping around. */
static const uint32_t chacha_sigma[4] = {0x61707865u, 0x3320646eu, 0x79622d32u,
                                         0x6b206574u}; /* "expand 32-byte k" */

static void chacha_input(uint32_t s[16], const uint32_t key[8], const uint32_t nonce[3],
                         uint64_t ctr)
{
    s[0] = chacha_sigma[0]; s[1] = chacha_sigma[1]; s[2] = chacha_sigma[2];
    s[3] = chacha_sigma[3];
    memcpy(s + 4, key, 32);
    s[12] = (uint32_t)ctr;
    s[13] = nonce[0] + (uint32_t)(ctr >> 32);
    s[14] = nonce[1];
    s[15] = nonce[2];
}

#define ROTL32(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d)                                   \
    a += b; d ^= a; d = ROTL32(d, 16);                   \
    c += d; b ^= c; b = ROTL32(b, 12);                   \
    a += b; d ^= a; d = ROTL32(d, 8);                    \
    c += d; b ^= c; b = ROTL32(b, 7);
#define DOUBLE_ROUND(x)                                  \
    QR(x[0], x[4], x[8], x[12]) QR(x[1], x[5], x[9], x[13])    \
    QR(x[2], x[6], x[10], x[14]) QR(x[3], x[7], x[11], x[15])  \
    QR(x[0], x[5], x[10], x[15]) QR(x[1], x[6], x[11], x[12])  \
    QR(x[2], x[7], x[8], x[13]) QR(x[3], x[4], x[9], x[14])

/* One block at a time: the remainder of every other version. */
static void blocks_single(const uint32_t key[8], const uint32_t nonce[3], uint64_t ctr,
                          uint32_t *out, size_t nblocks)
{
    size_t b;
    int i, r;
    for (b = 0; b < nblocks; b++) {
        uint32_t s[16], x[16];
        chacha_input(s, key, nonce, ctr + b);
        memcpy(x, s, sizeof x);
        for (r = 0; r < 10; r++) { DOUBLE_ROUND(x) }
        for (i = 0; i < 16; i++) out[16 * b + i] = x[i] + s[i];
    }
}

#if (defined(__GNUC__) || defined(__clang__)) && !defined(DPF_NO_SIMD)
/* Portable, with GCC/Clang: the generic vector extension, 4 blocks per vector (word i
 * of block l in lane l of s[i]) and two sets of vectors interleaved round by round.
 * The compiler maps it to the target's SIMD (SSE2 on baseline x86-64, NEON on arm64,
 * VSX, ...) or to scalar code where it has none; no intrinsics, no CPU check.  This is
 * also the arm64 NEON version, where both sets fit the 32 vector registers.  On x86-64
 * (16 registers) the compiler spills: measured on Zen 4 (gcc 12) 5.4 ns per 64-bit word,
 * against 5.05 for the one-set layout of the SSE2 kernel below, which would cost arm64
 * its second set; the portable version keeps the layout that suits wide register files. */
#define DPF_GENERIC_VEC 1
typedef uint32_t gen_v __attribute__((vector_size(16)));

/* The input of blocks ctr .. ctr+3, word i of block l in lane l of s[i]. */
static void gen_input(gen_v s[16], const uint32_t key[8], const uint32_t nonce[3],
                      uint64_t ctr)
{
    uint32_t s0[16];
    int i, l;
    chacha_input(s0, key, nonce, ctr);
    for (i = 0; i < 16; i++) s[i] = (gen_v){0} + s0[i];
    for (l = 0; l < 4; l++) {
        uint64_t c = ctr + (uint64_t)l;
        s[12][l] = (uint32_t)c;
        s[13][l] = nonce[0] + (uint32_t)(c >> 32);
    }
}

static void gen_output(uint32_t *out, const gen_v x[16], const gen_v s[16])
{
    int i, l;
    for (l = 0; l < 4; l++)
        for (i = 0; i < 16; i++) out[16 * l + i] = x[i][l] + s[i][l];
}

#define QR_2(i, j, k, l) QR(x[i], x[j], x[k], x[l]) QR(y[i], y[j], y[k], y[l])
static void blocks_scalar(const uint32_t key[8], const uint32_t nonce[3], uint64_t ctr,
                          uint32_t *out, size_t nblocks)
{
    size_t b = 0;
    int i, r;
    for (; b + 8 <= nblocks; b += 8) {
        gen_v s[16], t[16], x[16], y[16];
        gen_input(s, key, nonce, ctr + b);
        gen_input(t, key, nonce, ctr + b + 4);
        for (i = 0; i < 16; i++) {
            x[i] = s[i];
            y[i] = t[i];
        }
        for (r = 0; r < 10; r++) {
            QR_2(0, 4, 8, 12) QR_2(1, 5, 9, 13) QR_2(2, 6, 10, 14) QR_2(3, 7, 11, 15)
            QR_2(0, 5, 10, 15) QR_2(1, 6, 11, 12) QR_2(2, 7, 8, 13) QR_2(3, 4, 9, 14)
        }
        gen_output(out + 16 * b, x, s);
        gen_output(out + 16 * (b + 4), y, t);
    }
    for (; b + 4 <= nblocks; b += 4) {
        gen_v s[16], x[16];
        gen_input(s, key, nonce, ctr + b);
        for (i = 0; i < 16; i++) x[i] = s[i];
        for (r = 0; r < 10; r++) { DOUBLE_ROUND(x) }
        gen_output(out + 16 * b, x, s);
    }
    if (b < nblocks) blocks_single(key, nonce, ctr + b, out + 16 * b, nblocks - b);
}
#else
/* Portable, plain C (other compilers, or DPF_NO_SIMD): two blocks interleaved
 * (independent instruction chains for a superscalar core: about 10% faster than one at
 * a time on x86-64), then one at a time.  out receives 16 words per block, in keystream
 * order. */
#define QR_2(i, j, k, l) QR(x[i], x[j], x[k], x[l]) QR(y[i], y[j], y[k], y[l])
static void blocks_scalar(const uint32_t key[8], const uint32_t nonce[3], uint64_t ctr,
                          uint32_t *out, size_t nblocks)
{
    size_t b;
    int i, r;
    for (b = 0; b + 2 <= nblocks; b += 2) {
        uint32_t s[16], t[16], x[16], y[16];
        chacha_input(s, key, nonce, ctr + b);
        chacha_input(t, key, nonce, ctr + b + 1);
        memcpy(x, s, sizeof x);
        memcpy(y, t, sizeof y);
        for (r = 0; r < 10; r++) {
            QR_2(0, 4, 8, 12) QR_2(1, 5, 9, 13) QR_2(2, 6, 10, 14) QR_2(3, 7, 11, 15)
            QR_2(0, 5, 10, 15) QR_2(1, 6, 11, 12) QR_2(2, 7, 8, 13) QR_2(3, 4, 9, 14)
        }
        for (i = 0; i < 16; i++) {
            out[16 * b + i] = x[i] + s[i];
            out[16 * b + 16 + i] = y[i] + t[i];
        }
    }
    if (b < nblocks) blocks_single(key, nonce, ctr + b, out + 16 * b, nblocks - b);
}
#endif

/* Vector versions: LANES blocks side by side, word i of every block in one vector
 * ("vertical" layout); lane l of the result vectors is block l, written out in order.
 *
 * x86-64: SSE2 (4 blocks), AVX2 (8) and AVX-512F (16) with intrinsics, which gcc, clang
 * and MSVC all compile (gcc and clang need the target attribute; MSVC none), so the code
 * tested on Linux is the code Windows runs.  arm64: NEON through the GCC/Clang vector
 * extension.  DPF_NO_SIMD builds only the portable version. */
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(DPF_NO_SIMD)
#define DPF_X86 1
#include <immintrin.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define DPF_TARGET(t)
#else
#define DPF_TARGET(t) __attribute__((target(t)))
#endif

/* Per-lane block counters (words 12 and 13) of LANES consecutive blocks. */
static void lane_counters(const uint32_t nonce[3], uint64_t ctr, int lanes, uint32_t *c12,
                          uint32_t *c13)
{
    int l;
    for (l = 0; l < lanes; l++) {
        uint64_t c = ctr + (uint64_t)l;
        c12[l] = (uint32_t)c;
        c13[l] = nonce[0] + (uint32_t)(c >> 32);
    }
}

/* Words 12 and 13 of the LANES blocks from cb, as vectors k12 and k13 (which must be
 * volatile V lvalues: they are read again after the rounds), built in registers: a
 * broadcast plus the lane numbers.  Written lane by lane to memory and loaded as one
 * vector, as before, they cannot be forwarded from the store buffer (one load over
 * several stores), so each set of blocks waited for those stores to retire, that is
 * for the whole previous set: measured on Zen 4, 3% of the SSE2 and 4% of the AVX2
 * time.  Only a set in which the low counter word wraps (once in 2^32 blocks) still goes
 * through lane_counters. */
static const uint32_t lane_index[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
#define V_COUNTERS(k12, k13, nonce, cb, LANES)                                         \
    do {                                                                               \
        if ((uint32_t)(cb) <= 0xFFFFFFFFu - ((LANES) - 1)) {                           \
            (k12) = V_ADD(V_SET1((uint32_t)(cb)), V_LOAD(lane_index));                 \
            (k13) = V_SET1((nonce)[0] + (uint32_t)((cb) >> 32));                       \
        } else {                                                                       \
            uint32_t c12_[LANES], c13_[LANES];                                         \
            lane_counters((nonce), (cb), (LANES), c12_, c13_);                         \
            (k12) = V_LOAD(c12_);                                                      \
            (k13) = V_LOAD(c13_);                                                      \
        }                                                                              \
    } while (0)

/* The ten double rounds fully unrolled: without a loop back edge, gcc 12 no longer spills
 * state vectors across it (measured on Zen 4: 5% faster for SSE2 and AVX2, 17% for the
 * AVX-512 pair of sets).  Other compilers keep the loop. */
#if defined(__clang__)
#define DPF_UNROLL_ROUNDS _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__) && __GNUC__ >= 8
#define DPF_UNROLL_ROUNDS _Pragma("GCC unroll 10")
#else
#define DPF_UNROLL_ROUNDS
#endif

/* The body, over the operations V_ADD, V_XOR, V_ROTL(x, n), V_ROT16, V_ROT8, V_SET1,
 * V_LOAD and V_OUTPUT(out, x) that each instruction set defines just before instantiating
 * it.  V_QR2 is two independent quarter rounds, step by step. */
#define V_QR(a, b, c, d)                                                               \
    a = V_ADD(a, b); d = V_XOR(d, a); d = V_ROT16(d);                                  \
    c = V_ADD(c, d); b = V_XOR(b, c); b = V_ROTL(b, 12);                               \
    a = V_ADD(a, b); d = V_XOR(d, a); d = V_ROT8(d);                                   \
    c = V_ADD(c, d); b = V_XOR(b, c); b = V_ROTL(b, 7);
#define V_QR2(a0, b0, c0, d0, a1, b1, c1, d1)                                          \
    a0 = V_ADD(a0, b0); a1 = V_ADD(a1, b1); d0 = V_XOR(d0, a0); d1 = V_XOR(d1, a1);    \
    d0 = V_ROT16(d0); d1 = V_ROT16(d1);                                                \
    c0 = V_ADD(c0, d0); c1 = V_ADD(c1, d1); b0 = V_XOR(b0, c0); b1 = V_XOR(b1, c1);    \
    b0 = V_ROTL(b0, 12); b1 = V_ROTL(b1, 12);                                          \
    a0 = V_ADD(a0, b0); a1 = V_ADD(a1, b1); d0 = V_XOR(d0, a0); d1 = V_XOR(d1, a1);    \
    d0 = V_ROT8(d0); d1 = V_ROT8(d1);                                                  \
    c0 = V_ADD(c0, d0); c1 = V_ADD(c1, d1); b0 = V_XOR(b0, c0); b1 = V_XOR(b1, c1);    \
    b0 = V_ROTL(b0, 7); b1 = V_ROTL(b1, 7);

/* For the two-set kernel: the input of LANES blocks (word i of block l in lane l of
 * x[i]), and the final addition of it.  The input is rebuilt from s0 (broadcast loads)
 * and the counter vectors instead of being kept in 16 more registers across the rounds. */
#define V_START(x, s0, k12, k13)                                                       \
    do {                                                                               \
        int i_;                                                                        \
        for (i_ = 0; i_ < 16; i_++) (x)[i_] = V_SET1((s0)[i_]);                        \
        (x)[12] = (k12);                                                               \
        (x)[13] = (k13);                                                               \
    } while (0)
#define V_FINISH(x, s0, k12, k13)                                                      \
    do {                                                                               \
        int i_;                                                                        \
        for (i_ = 0; i_ < 16; i_++)                                                    \
            if (i_ != 12 && i_ != 13) (x)[i_] = V_ADD((x)[i_], V_SET1((s0)[i_]));      \
        (x)[12] = V_ADD((x)[12], (k12));                                               \
        (x)[13] = V_ADD((x)[13], (k13));                                               \
    } while (0)

/* SSE2 and AVX2 have 16 vector registers: one set of LANES blocks, its 16 state vectors
 * in registers, the classic layout of the x86 assembly versions (e.g. Goll & Gueron,
 * "Vectorization on ChaCha stream cipher", ITNG 2014; the Linux kernel's chacha-avx2).
 * A pair of quarter rounds needs two temporaries, so the two c words (8..11) of the other
 * pair wait in a stack slot: the column pairs use c8, c9 then c10, c11 and the diagonal
 * pairs c10, c11 then c8, c9, so one exchange (2 stores, 2 loads, off the dependency
 * chains) per round.  The slot is volatile so that the compiler keeps exactly this
 * exchange instead of choosing its own spills.  The input's broadcasts are made once
 * per call into a volatile array read at the start and end of each set (2% faster for
 * AVX2 than broadcasting per set); its key words and the slot are erased on return.
 * Measured on Zen 4 (gcc 12, 32 blocks, minimum of 9 x 31 runs): SSE2 4.83 ns per 64-bit
 * word, AVX2 2.34 (before V_COUNTERS: 4.97 and 2.43; two interleaved sets with gcc's
 * spills: 5.33 and 2.59; one block per register row, 3 blocks interleaved: SSE2 6.6;
 * 2 blocks per register row, 4 sets: AVX2 3.1).
 * Four quarter rounds in flight instead of two (the a row, or the c row, kept in a stack
 * array and updated by load-add-store, 12 rows and 4 temporaries in registers, as in the
 * Linux kernel's chacha-avx2) were all slower, old kernel 4.97 and 2.43 in the same runs:
 * a row volatile, step by step over the four columns, SSE2 5.05-5.47, AVX2 2.96 (gcc
 * cannot fold a volatile load into the add, so each takes a register and rows spill);
 * column by column, 5.11 and 2.54; the a row through a pointer re-read from a volatile
 * at each step (ordinary loads, folded into vpaddd, not forwarded by the compiler),
 * 5.05-5.28 and 2.52-2.91; the c row that way, 5.10 and 2.50; all 16 rows in plain
 * variables, four quarter rounds interleaved, gcc's spills: 5.58 and 3.07.  Also slower:
 * the d words exchanged instead of the c words (diagonal pairs (0, 3), (1, 2)): 5.19 and
 * 2.52; OpenSSL's op order (one step of one quarter round, then of the other): 4.98 and
 * 2.44; the AVX2 masks through a non-volatile pointer: 2.55.  On this machine the mix of
 * adds, xors, shifts and shuffles of these kernels issues at about 3.3 vector ops per
 * cycle at best (2 of them shifts or shuffles), a rough bound of 4.4 (SSE2) and 1.9
 * (AVX2) ns per word; OpenSSL 4.0's hand-scheduled AVX2 code (ChaCha20_8x, the same
 * layout as here; AVX-512 masked off with OPENSSL_ia32cap) does 2.29 including the xor
 * with its input.  A remainder of fewer than LANES
 * blocks goes to REST. */
#define DEFINE_X86_BLOCKS(NAME, REST, V, LANES, TARGET)                                \
    TARGET static void NAME(const uint32_t key[8], const uint32_t nonce[3],            \
                            uint64_t ctr, uint32_t *out, size_t nblocks)               \
    {                                                                                  \
        size_t b;                                                                      \
        int r, i;                                                                      \
        volatile V in[16], slot[2], cnt[2];                                            \
        for (i = 0; i < 4; i++) in[i] = V_SET1(chacha_sigma[i]);                       \
        for (i = 0; i < 8; i++) in[4 + i] = V_SET1(key[i]);                           \
        in[14] = V_SET1(nonce[1]);                                                     \
        in[15] = V_SET1(nonce[2]);                                                     \
        for (b = 0; b + (LANES) <= nblocks; b += (LANES)) {                            \
            V x[16];                                                                   \
            V_COUNTERS(cnt[0], cnt[1], nonce, ctr + b, (LANES));                       \
            for (i = 0; i < 16; i++)                                                   \
                if (i != 12 && i != 13) x[i] = in[i];                                  \
            x[12] = cnt[0];                                                            \
            x[13] = cnt[1];                                                            \
            slot[0] = x[10];                                                           \
            slot[1] = x[11];                                                           \
            DPF_UNROLL_ROUNDS                                                          \
            for (r = 0; r < 10; r++) {                                                 \
                V_QR2(x[0], x[4], x[8], x[12], x[1], x[5], x[9], x[13])                \
                V_SWAP(x[8], x[9], x[10], x[11], slot)                                 \
                V_QR2(x[2], x[6], x[10], x[14], x[3], x[7], x[11], x[15])              \
                V_QR2(x[0], x[5], x[10], x[15], x[1], x[6], x[11], x[12])              \
                V_SWAP(x[10], x[11], x[8], x[9], slot)                                 \
                V_QR2(x[2], x[7], x[8], x[13], x[3], x[4], x[9], x[14])                \
            }                                                                          \
            x[10] = slot[0];                                                           \
            x[11] = slot[1];                                                           \
            for (i = 0; i < 16; i++)                                                   \
                if (i != 12 && i != 13) x[i] = V_ADD(x[i], in[i]);                     \
            x[12] = V_ADD(x[12], cnt[0]);                                              \
            x[13] = V_ADD(x[13], cnt[1]);                                              \
            V_OUTPUT(out + 16 * b, x);                                                 \
        }                                                                              \
        /* the copies of the key made here */                                          \
        for (i = 4; i < 12; i++) in[i] = V_SET1(0);                                    \
        slot[0] = slot[1] = V_SET1(0);                                                 \
        if (b < nblocks) REST(key, nonce, ctr + b, out + 16 * b, nblocks - b);         \
    }
/* Take u, v out of the slot and put p, q in it. */
#define V_SWAP(p, q, u, v, slot)                                                       \
    u = (slot)[0];                                                                     \
    v = (slot)[1];                                                                     \
    (slot)[0] = p;                                                                     \
    (slot)[1] = q;

/* AVX-512 has 32 registers: two sets of LANES blocks interleaved round by round, both
 * states in registers, twice the independent work between dependent instructions (the
 * rotate has a latency of 2 cycles on Zen 4).  Measured on Zen 4: 1.28 ns per 64-bit word
 * (one set: 1.53).  A remainder of fewer than 2 LANES blocks goes to REST. */
#define DEFINE_X86_BLOCKS2(NAME, REST, V, LANES, TARGET)                               \
    TARGET static void NAME(const uint32_t key[8], const uint32_t nonce[3],            \
                            uint64_t ctr, uint32_t *out, size_t nblocks)               \
    {                                                                                  \
        size_t b;                                                                      \
        int r, i;                                                                      \
        uint32_t s0[16];                                                               \
        volatile V cnt[4];                                                             \
        for (b = 0; b + 2 * (LANES) <= nblocks; b += 2 * (LANES)) {                    \
            V x[16], y[16];                                                            \
            chacha_input(s0, key, nonce, ctr + b);                                     \
            V_COUNTERS(cnt[0], cnt[1], nonce, ctr + b, (LANES));                       \
            V_COUNTERS(cnt[2], cnt[3], nonce, ctr + b + (LANES), (LANES));             \
            V_START(x, s0, cnt[0], cnt[1]);                                            \
            V_START(y, s0, cnt[2], cnt[3]);                                            \
            DPF_UNROLL_ROUNDS                                                          \
            for (r = 0; r < 10; r++) {                                                 \
                V_QR(x[0], x[4], x[8], x[12]) V_QR(y[0], y[4], y[8], y[12])            \
                V_QR(x[1], x[5], x[9], x[13]) V_QR(y[1], y[5], y[9], y[13])            \
                V_QR(x[2], x[6], x[10], x[14]) V_QR(y[2], y[6], y[10], y[14])          \
                V_QR(x[3], x[7], x[11], x[15]) V_QR(y[3], y[7], y[11], y[15])          \
                V_QR(x[0], x[5], x[10], x[15]) V_QR(y[0], y[5], y[10], y[15])          \
                V_QR(x[1], x[6], x[11], x[12]) V_QR(y[1], y[6], y[11], y[12])          \
                V_QR(x[2], x[7], x[8], x[13]) V_QR(y[2], y[7], y[8], y[13])            \
                V_QR(x[3], x[4], x[9], x[14]) V_QR(y[3], y[4], y[9], y[14])            \
            }                                                                          \
            V_FINISH(x, s0, cnt[0], cnt[1]);                                           \
            V_FINISH(y, s0, cnt[2], cnt[3]);                                           \
            V_OUTPUT(out + 16 * b, x);                                                 \
            V_OUTPUT(out + 16 * (b + (LANES)), y);                                     \
        }                                                                              \
        for (i = 0; i < 16; i++) ((volatile uint32_t *)s0)[i] = 0; /* the key copy */  \
        if (b < nblocks) REST(key, nonce, ctr + b, out + 16 * b, nblocks - b);         \
    }

/* Lane l of the vectors x[0..15] is block l: write the blocks in keystream order by
 * transposing in registers (a scalar transposition cost about 10% of the time). */

/* SSE2: 4x4 transposes of words 4g..4g+3 of the 4 blocks. */
#define V_OUTPUT_SSE2(o, x)                                                            \
    do {                                                                               \
        int g_;                                                                        \
        for (g_ = 0; g_ < 4; g_++) {                                                   \
            const __m128i *a_ = (x) + 4 * g_;                                          \
            __m128i t0 = _mm_unpacklo_epi32(a_[0], a_[1]);                             \
            __m128i t1 = _mm_unpacklo_epi32(a_[2], a_[3]);                             \
            __m128i t2 = _mm_unpackhi_epi32(a_[0], a_[1]);                             \
            __m128i t3 = _mm_unpackhi_epi32(a_[2], a_[3]);                             \
            V_STORE((o) + 0 + 4 * g_, _mm_unpacklo_epi64(t0, t1));                     \
            V_STORE((o) + 16 + 4 * g_, _mm_unpackhi_epi64(t0, t1));                    \
            V_STORE((o) + 32 + 4 * g_, _mm_unpacklo_epi64(t2, t3));                    \
            V_STORE((o) + 48 + 4 * g_, _mm_unpackhi_epi64(t2, t3));                    \
        }                                                                              \
    } while (0)

/* AVX2: 8x8 transposes of words 8g..8g+7 of the 8 blocks (unpack within 128-bit halves,
 * then exchange halves: block l and l + 4 share a pair of u vectors). */
#define V_OUTPUT_AVX2(o, x)                                                            \
    do {                                                                               \
        int g_, j_;                                                                    \
        for (g_ = 0; g_ < 2; g_++) {                                                   \
            const __m256i *a_ = (x) + 8 * g_;                                          \
            __m256i t_[8], u_[8];                                                      \
            for (j_ = 0; j_ < 4; j_++) {                                               \
                t_[2 * j_] = _mm256_unpacklo_epi32(a_[2 * j_], a_[2 * j_ + 1]);        \
                t_[2 * j_ + 1] = _mm256_unpackhi_epi32(a_[2 * j_], a_[2 * j_ + 1]);    \
            }                                                                          \
            for (j_ = 0; j_ < 2; j_++) {                                               \
                u_[4 * j_ + 0] = _mm256_unpacklo_epi64(t_[4 * j_], t_[4 * j_ + 2]);    \
                u_[4 * j_ + 1] = _mm256_unpackhi_epi64(t_[4 * j_], t_[4 * j_ + 2]);    \
                u_[4 * j_ + 2] = _mm256_unpacklo_epi64(t_[4 * j_ + 1], t_[4 * j_ + 3]); \
                u_[4 * j_ + 3] = _mm256_unpackhi_epi64(t_[4 * j_ + 1], t_[4 * j_ + 3]); \
            }                                                                          \
            for (j_ = 0; j_ < 4; j_++) {                                               \
                V_STORE((o) + 16 * j_ + 8 * g_,                                        \
                        _mm256_permute2x128_si256(u_[j_], u_[4 + j_], 0x20));          \
                V_STORE((o) + 16 * (j_ + 4) + 8 * g_,                                  \
                        _mm256_permute2x128_si256(u_[j_], u_[4 + j_], 0x31));          \
            }                                                                          \
        }                                                                              \
    } while (0)

/* AVX-512: 16x16 transpose.  After the two unpack stages (as for SSE2), lane k of
 * u[4q + r] holds words 4q..4q+3 of block 4k + r; two stages of 128-bit lane shuffles
 * then gather block 4k + r's four lanes from u[r], u[4 + r], u[8 + r], u[12 + r]. */
#define V_OUTPUT_AVX512(o, x)                                                          \
    do {                                                                               \
        int p_, r_;                                                                    \
        __m512i t_[16], u_[16];                                                        \
        for (p_ = 0; p_ < 8; p_++) {                                                   \
            t_[2 * p_] = _mm512_unpacklo_epi32((x)[2 * p_], (x)[2 * p_ + 1]);          \
            t_[2 * p_ + 1] = _mm512_unpackhi_epi32((x)[2 * p_], (x)[2 * p_ + 1]);      \
        }                                                                              \
        for (p_ = 0; p_ < 4; p_++) {                                                   \
            u_[4 * p_] = _mm512_unpacklo_epi64(t_[4 * p_], t_[4 * p_ + 2]);            \
            u_[4 * p_ + 1] = _mm512_unpackhi_epi64(t_[4 * p_], t_[4 * p_ + 2]);        \
            u_[4 * p_ + 2] = _mm512_unpacklo_epi64(t_[4 * p_ + 1], t_[4 * p_ + 3]);    \
            u_[4 * p_ + 3] = _mm512_unpackhi_epi64(t_[4 * p_ + 1], t_[4 * p_ + 3]);    \
        }                                                                              \
        for (r_ = 0; r_ < 4; r_++) {                                                   \
            /* lanes (0, 1, 0, 1) and (2, 3, 2, 3) of two vectors, then (0, 2, 0, 2)   \
             * and (1, 3, 1, 3) of those */                                            \
            __m512i c0 = _mm512_shuffle_i32x4(u_[r_], u_[4 + r_], 0x44);               \
            __m512i c1 = _mm512_shuffle_i32x4(u_[r_], u_[4 + r_], 0xEE);               \
            __m512i c2 = _mm512_shuffle_i32x4(u_[8 + r_], u_[12 + r_], 0x44);          \
            __m512i c3 = _mm512_shuffle_i32x4(u_[8 + r_], u_[12 + r_], 0xEE);          \
            V_STORE((o) + 16 * r_, _mm512_shuffle_i32x4(c0, c2, 0x88));                \
            V_STORE((o) + 16 * (4 + r_), _mm512_shuffle_i32x4(c0, c2, 0xDD));          \
            V_STORE((o) + 16 * (8 + r_), _mm512_shuffle_i32x4(c1, c3, 0x88));          \
            V_STORE((o) + 16 * (12 + r_), _mm512_shuffle_i32x4(c1, c3, 0xDD));         \
        }                                                                              \
    } while (0)

/* SSE2 (baseline x86-64): rotation by 16 swaps the 16-bit halves. */
#define V_ADD _mm_add_epi32
#define V_XOR _mm_xor_si128
#define V_ROTL(x, n) _mm_or_si128(_mm_slli_epi32((x), (n)), _mm_srli_epi32((x), 32 - (n)))
#define V_ROT16(x) _mm_shufflehi_epi16(_mm_shufflelo_epi16((x), 0xB1), 0xB1)
#define V_ROT8(x) V_ROTL((x), 8)
#define V_SET1(v) _mm_set1_epi32((int)(v))
#define V_LOAD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define V_STORE(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define V_OUTPUT V_OUTPUT_SSE2
DEFINE_X86_BLOCKS(blocks_vec128, blocks_single, __m128i, 4, DPF_TARGET("sse2"))
#undef V_ADD
#undef V_XOR
#undef V_ROTL
#undef V_ROT16
#undef V_ROT8
#undef V_SET1
#undef V_LOAD
#undef V_STORE
#undef V_OUTPUT

/* AVX2: byte shuffles rotate by 16 and 8.  Their masks are read through a volatile
 * pointer, so that each vpshufb takes its mask from memory (an L1 load off the dependency
 * chain) instead of pinning two of the 16 registers: measured 2.44 against 2.55 ns per
 * word. */
typedef union { uint8_t b[32]; __m256i v; } dpf_mask256;
static const dpf_mask256 rot16_mask = {{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
                                        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13}};
static const dpf_mask256 rot8_mask = {{3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
                                       3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14}};
#define V_ADD _mm256_add_epi32
#define V_XOR _mm256_xor_si256
#define V_ROTL(x, n) _mm256_or_si256(_mm256_slli_epi32((x), (n)), _mm256_srli_epi32((x), 32 - (n)))
#define V_ROT16(x) _mm256_shuffle_epi8((x), *(const volatile __m256i *)&rot16_mask.v)
#define V_ROT8(x) _mm256_shuffle_epi8((x), *(const volatile __m256i *)&rot8_mask.v)
#define V_SET1(v) _mm256_set1_epi32((int)(v))
#define V_LOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define V_STORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define V_OUTPUT V_OUTPUT_AVX2
DEFINE_X86_BLOCKS(blocks_avx2, blocks_vec128, __m256i, 8, DPF_TARGET("avx2"))
#undef V_ADD
#undef V_XOR
#undef V_ROTL
#undef V_ROT16
#undef V_ROT8
#undef V_SET1
#undef V_LOAD
#undef V_STORE
#undef V_OUTPUT

/* AVX-512F: a rotate instruction.  Fewer than 32 blocks: one set (the stack slot of
 * DEFINE_X86_BLOCKS is not needed with 32 registers, but costs little), then SSE2. */
#define V_ADD _mm512_add_epi32
#define V_XOR _mm512_xor_si512
#define V_ROTL(x, n) _mm512_rol_epi32((x), (n))
#define V_ROT16(x) _mm512_rol_epi32((x), 16)
#define V_ROT8(x) _mm512_rol_epi32((x), 8)
#define V_SET1(v) _mm512_set1_epi32((int)(v))
#define V_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define V_STORE(p, v) _mm512_storeu_si512((void *)(p), (v))
#define V_OUTPUT V_OUTPUT_AVX512
DEFINE_X86_BLOCKS(blocks_avx512_1, blocks_vec128, __m512i, 16, DPF_TARGET("avx512f"))
DEFINE_X86_BLOCKS2(blocks_avx512, blocks_avx512_1, __m512i, 16, DPF_TARGET("avx512f"))

/* CPU and OS support (the OS must save the wider registers: XGETBV). */
static int x86_has(int impl)
{
#if defined(_MSC_VER) && !defined(__clang__)
    int r[4];
    unsigned long long xcr0;
    __cpuid(r, 0);
    if (r[0] < 7) return 0;
    __cpuid(r, 1);
    if (!(r[2] & (1 << 27))) return 0;          /* OSXSAVE */
    xcr0 = _xgetbv(0);
    __cpuidex(r, 7, 0);
    if (impl == DPF_IMPL_AVX2) return (r[1] & (1 << 5)) && (xcr0 & 0x6) == 0x6;
    if (impl == DPF_IMPL_AVX512) return (r[1] & (1 << 16)) && (xcr0 & 0xE6) == 0xE6;
    return 1;
#else
    __builtin_cpu_init();
    if (impl == DPF_IMPL_AVX2) return __builtin_cpu_supports("avx2");
    if (impl == DPF_IMPL_AVX512) return __builtin_cpu_supports("avx512f");
    return 1;
#endif
}

#elif (defined(__aarch64__) || defined(__ARM_NEON)) && defined(DPF_GENERIC_VEC)
/* arm64: the generic vector version above is the NEON one (two sets of 4 blocks
 * interleaved: arm64 has 32 vector registers, both states fit). */
#define DPF_NEON 1
#define blocks_vec128 blocks_scalar
#endif

typedef void (*blocks_fn)(const uint32_t *, const uint32_t *, uint64_t, uint32_t *, size_t);

static blocks_fn impl_fn(int impl)
{
    switch (impl) {
    case DPF_IMPL_SCALAR: return blocks_scalar;
#if defined(DPF_X86) || defined(DPF_NEON)
    case DPF_IMPL_VEC128: return blocks_vec128;
#endif
#if defined(DPF_X86)
    case DPF_IMPL_AVX2: return blocks_avx2;
    case DPF_IMPL_AVX512: return blocks_avx512;
#endif
    default: return NULL;
    }
}

int dpf_chacha_impl_available(int impl)
{
    if (impl_fn(impl) == NULL) return 0;
#if defined(DPF_X86)
    return x86_has(impl);
#else
    return 1;
#endif
}

static int best_impl = DPF_IMPL_SCALAR;

int dpf_chacha_best_impl(void) { return best_impl; }

const char *dpf_chacha_impl_name(int impl)
{
    static const char *names[DPF_IMPL_COUNT] = {"best", "scalar",
#if defined(__aarch64__) || defined(__ARM_NEON)
                                                 "neon",
#else
                                                 "sse2",
#endif
                                                 "avx2", "avx512"};
    if (impl == DPF_IMPL_BEST) impl = best_impl;
    return (impl > 0 && impl < DPF_IMPL_COUNT) ? names[impl] : "none";
}

int dpf_chacha_keystream(int impl, const uint8_t key[32], const uint8_t nonce[12],
                         uint64_t counter, uint8_t *out, size_t nblocks)
{
    uint32_t k[8], n[3], *w;
    size_t i;
    blocks_fn fn;
    if (impl == DPF_IMPL_BEST) impl = best_impl;
    if (!dpf_chacha_impl_available(impl)) return -1;
    fn = impl_fn(impl);
    for (i = 0; i < 8; i++) k[i] = load32_le(key + 4 * i);
    for (i = 0; i < 3; i++) n[i] = load32_le(nonce + 4 * i);
    w = (uint32_t *)malloc(nblocks * 64 + 1);
    if (!w) return -1;
    fn(k, n, counter, w, nblocks);
    for (i = 0; i < 16 * nblocks; i++) store32_le(out + 4 * i, w[i]);
    dpf_secure_zero(w, nblocks * 64);
    free(w);
    return 0;
}
/* ------------------------------------------------------------------ set-up */

int dpf_chacha_global_init(void)
{
    static int done = 0;
    if (done) return 0;
    done = 1;
    best_impl = DPF_IMPL_SCALAR;
    if (dpf_chacha_impl_available(DPF_IMPL_VEC128)) best_impl = DPF_IMPL_VEC128;
    if (dpf_chacha_impl_available(DPF_IMPL_AVX2)) best_impl = DPF_IMPL_AVX2;
    if (dpf_chacha_impl_available(DPF_IMPL_AVX512)) best_impl = DPF_IMPL_AVX512;
    return dpf_fork_init();
}

/* ------------------------------------------------------------------ generator */

dpf_chacha_t *dpf_chacha_alloc(int mode, int *mapped)
{
    dpf_chacha_t *c = NULL;
    *mapped = 0;
    if (mode == DPF_CHACHA_OS) {
        /* Own pages, zeroed in a child even if it was forked by a raw clone() that ran
         * no atfork handler: the zero magic then forces a rekey from the OS.  NULL (an
         * older kernel, or not Linux): calloc below, and the process id check. */
        c = (dpf_chacha_t *)dpf_wiped_pages_alloc(sizeof(dpf_chacha_t));
        if (c != NULL) *mapped = 1;
    }
    if (c == NULL) {
        c = (dpf_chacha_t *)calloc(1, sizeof(dpf_chacha_t));
        if (c == NULL) return NULL;
    }
    c->magic = DPF_CHACHA_MAGIC;
    c->mode = (uint32_t)mode;
    c->impl = (uint32_t)best_impl;
    /* Without a wipe-on-fork page, a fork that runs no atfork handler (a raw clone) is
     * caught by the process id at the next refill. */
    if (mode == DPF_CHACHA_OS && !*mapped) c->pid = dpf_process_id();
    return c;
}

void dpf_chacha_free(dpf_chacha_t *c, int mapped)
{
    if (c == NULL) return;
    if (mapped) {   /* only Linux maps OS-keyed states */
        dpf_secure_zero(c, sizeof *c);
        dpf_wiped_pages_free(c, sizeof(dpf_chacha_t));
        return;
    }
    dpf_secure_zero(c, sizeof *c);
    free(c);
}

int dpf_chacha_key_os(dpf_chacha_t *c)
{
    uint8_t k[32];
    if (dpf_os_entropy(k, sizeof k) != DPF_OK) return DPF_E_ENTROPY;
    dpf_chacha_key(c, k, NULL, 0);
    dpf_secure_zero(k, sizeof k);
    return DPF_OK;
}

void dpf_chacha_key(dpf_chacha_t *c, const uint8_t key[32], const uint8_t nonce[12],
                    uint64_t counter)
{
    int i;
    for (i = 0; i < 8; i++) c->key[i] = load32_le(key + 4 * i);
    for (i = 0; i < 3; i++) c->nonce[i] = nonce ? load32_le(nonce + 4 * i) : 0;
    c->counter = counter;
    c->pos = c->len = 0;
    c->has_half = 0;
    c->half = 0;
    c->magic = DPF_CHACHA_MAGIC;
    c->fork_gen = dpf_fork_generation;
    dpf_secure_zero(c->buf, sizeof c->buf);
}

/* The fork check of every refill: a forked child (wiped page, or atfork generation moved)
 * never reuses the parent's key or buffer.  Only OS-mode states can be wiped, since only
 * they live in MADV_WIPEONFORK pages; a rekey empties the buffer. */
static void chacha_refresh(dpf_chacha_t *c)
{
    if (c->magic == 0 || (c->mode == DPF_CHACHA_OS && (c->fork_gen != dpf_fork_generation ||
                                                       (c->pid && c->pid != dpf_process_id())))) {
        c->mode = DPF_CHACHA_OS;
        c->impl = (uint32_t)best_impl;
        if (c->pid) c->pid = dpf_process_id();
        if (dpf_chacha_key_os(c) != DPF_OK) {
            fputs("dpfast: no OS entropy to rekey ChaCha20 in a forked child\n", stderr);
            abort(); /* never continue with the parent's stream */
        }
    }
    /* Seeded and stream states are deterministic by definition: a child continues
     * them exactly as the parent would (documented), like any seeded numpy generator,
     * so a buffer that is merely from before a fork is still handed out. */
    c->fork_gen = dpf_fork_generation;
}

/* Erase the 4 words of a key in place: four volatile stores, cheaper than a call for the
 * two erasures of every refill. */
static void erase_key_words(uint64_t w[4])
{
    volatile uint64_t *v = w;
    v[0] = 0; v[1] = 0; v[2] = 0; v[3] = 0;
}

/* The words handed out before a batch: the next key in keyed modes (fast key erasure). */
static size_t batch_lead(const dpf_chacha_t *c)
{
    return c->mode == DPF_CHACHA_STREAM ? 0 : 4;
}

/* One refill's DPF_CHACHA_BLOCKS blocks into w[0 .. DPF_CHACHA_WORDS): in keyed modes the
 * first batch_lead(c) words become the next key (the old one is gone) and are zeroed, the
 * rest is output; in STREAM mode all of it is output and the counter moves on. */
static void chacha_batch(dpf_chacha_t *c, uint64_t *w)
{
    uint32_t *w32 = (uint32_t *)w;
    size_t lead = batch_lead(c);
    blocks_fn fn = impl_fn((int)c->impl);
    if (fn == NULL) fn = blocks_scalar;
    if (c->mode == DPF_CHACHA_STREAM) {
        fn(c->key, c->nonce, c->counter, w32, DPF_CHACHA_BLOCKS);
        c->counter += DPF_CHACHA_BLOCKS;
    } else {
        fn(c->key, c->nonce, 0, w32, DPF_CHACHA_BLOCKS);
        memcpy(c->key, w32, 32);
        erase_key_words(w);
    }
#if defined(__BYTE_ORDER__) && (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
    {   /* words are defined as the little-endian reading of the keystream */
        size_t i;
        for (i = lead; i < DPF_CHACHA_WORDS; i++) {
            uint32_t lo = w32[2 * i], hi = w32[2 * i + 1];
            w[i] = ((uint64_t)hi << 32) | lo;
        }
    }
#else
    (void)lead;
#endif
}

void dpf_chacha_refill(dpf_chacha_t *c)
{
    chacha_refresh(c);
    if (c->pos < c->len) return;
    chacha_batch(c, c->buf);
    c->pos = (uint32_t)batch_lead(c);
    c->len = DPF_CHACHA_WORDS;
}

/* Bulk fills skip the buffer: once it is empty, every whole batch is computed straight
 * into the caller's array, so the words are written once instead of being written,
 * copied and erased.  In keyed modes a batch starts with the next key: it is computed
 * into out - lead, over the last lead words already handed out in this call, which are
 * saved before and written back after (so the first batch of a call that finds the
 * buffer empty goes through the buffer).  The stream is exactly the buffered one, and
 * neither the key nor any output stays in memory dpfast owns. */
void dpf_chacha_fill(dpf_chacha_t *c, uint64_t *out, size_t n)
{
    size_t done = 0;
    while (n > 0) {
        size_t avail, take;
        if (c->pos >= c->len || c->fork_gen != dpf_fork_generation) {
            chacha_refresh(c);
            if (c->pos >= c->len) {
                size_t lead = batch_lead(c);
                if (n >= DPF_CHACHA_WORDS - lead && done >= lead) {
                    uint64_t saved[4]; /* lead is 0 or 4 */
                    if (lead) memcpy(saved, out - 4, sizeof saved);
                    chacha_batch(c, out - lead);
                    if (lead) {
                        memcpy(out - 4, saved, sizeof saved);
                        erase_key_words(saved);
                    }
                    out += DPF_CHACHA_WORDS - lead;
                    n -= DPF_CHACHA_WORDS - lead;
                    done += DPF_CHACHA_WORDS - lead;
                    continue;
                }
                chacha_batch(c, c->buf);
                c->pos = (uint32_t)lead;
                c->len = DPF_CHACHA_WORDS;
            }
        }
        avail = c->len - c->pos;
        take = n < avail ? n : avail;
        memcpy(out, c->buf + c->pos, take * sizeof(uint64_t));
        memset(c->buf + c->pos, 0, take * sizeof(uint64_t));
        c->pos += (uint32_t)take;
        out += take;
        n -= take;
        done += take;
    }
}

uint32_t dpf_chacha_next_u32(dpf_chacha_t *c)
{
    uint64_t v;
    if (c->fork_gen != dpf_fork_generation) dpf_chacha_refill(c); /* may rekey and drop half */
    if (c->has_half) {
        c->has_half = 0;
        return c->half;
    }
    v = dpf_chacha_next_u64(c);
    c->half = (uint32_t)(v >> 32);
    c->has_half = 1;
    return (uint32_t)v;
}

/* clang-format on */
