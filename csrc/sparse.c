/* Streaming sparse vector technique: AboveThreshold, Sparse, NumericSparse.
 *
 * Dwork & Roth (2014), section 3.6.  With sensitivity-1 queries (every noise below is
 * multiplied by the sensitivity, or expressed in grid units on the secure path):
 *   Algorithm 1 (AboveThreshold, Thm 3.23, eps-DP):
 *       T^ = T + Lap(2/eps); per query nu_i = Lap(4/eps); top iff f_i + nu_i >= T^, halt.
 *   Algorithm 2 (Sparse, Thm 3.25): AboveThreshold restarted c times with sigma = 2/eps':
 *       threshold noise Lap(sigma), query noise Lap(2 sigma), a fresh threshold after each
 *       top, halt at the c-th.
 *   Algorithm 3 (NumericSparse, Thm 3.27): Sparse, and at each top the value
 *       f_i + Lap(sigma(eps2)) with fresh noise.
 * A stream here is one instance of Algorithm 2 with c = cutoff (AboveThreshold: c = 1);
 * the Python layer computes sigma from (eps, delta, c) and passes the scales.
 *
 * What never leaves this file (Lyu, Su & Li 2017, section 3): the threshold noise, the
 * query noise and the noisy query value.  The outputs are top/bottom and, for
 * NumericSparse, f_i + fresh noise.  After the c-th top the stream is halted for good.
 *
 * ---------------------------------------------------------------- the secure path
 *
 * Grid (Mironov 2012, "On significance of the least significant bits for differential
 * privacy", section 5: snap to a power-of-two grid so that floating-point arithmetic is
 * exact).  g = 2^j is public.  F_i = floor(f_i / g) and Tq_i = floor(T_i / g) are exact
 * (division by a power of two, then a floor, in double, then an exact conversion).  If
 * |f(D) - f(D')| <= Delta then |F(D) - F(D')| <= K = ceil(Delta / g): flooring never adds
 * more than the fractional part, so the grid costs Delta_eff = K g < Delta + g, and
 * nothing at all when Delta is a multiple of g.
 *
 * In grid units the algorithm is Algorithm 2 with integer sensitivity K:
 *     top_i  iff  N_i + (F_i - Tq_i) >= R
 * R is the threshold noise, an exact discrete Laplace of scale sigma K
 * (P(R = x) proportional to exp(-|x| / (sigma K))): shifting R by K changes its pmf by at
 * most exp(1/sigma) = exp(eps'/2), which is what the proof of Thm 3.23 uses (the change of
 * variables t^ = t + g(D) - g(D'), |t^ - t| <= 1, now on Z).
 *
 * Query noise.  The proof of Thm 3.23 uses only two properties of the query noise N:
 *   (a) the top probability S(d) = P(N >= d) is non-increasing in d (the bottom factors
 *       of the earlier queries only get larger when the threshold moves up), and
 *   (b) S(d) <= exp(eps'/2) S(d + 2K) for every d (the last query, whose value and the
 *       threshold may move by 2K against each other).
 * We draw N from ONE 64-bit word W, u = W / 2^64, by inverting the discrete Laplace
 * survival function S(d) (P(N = n) proportional to q^|n|, q = 2^(-L), L = 1/inv_l):
 *     W <  2^(64-A)  :  N = +inf                    (the atom, mass 2^-A)
 *     u <  q/(1+q)   :  N*(u) =  floor(-log2(u (1+q)) inv_l)            (N* >= 1)
 *     u >= q/(1+q)   :  N*(u) = -floor(-log2((1-u)(1+q)) inv_l)         (N* <= 0)
 * with A an integer in [20, 48] that the Python layer chooses from eps' (public), and
 * compute N as N*(u) up to an error |N - N*| <= 1 (error analysis in the "query noise"
 * section below).  In exact arithmetic {N* >= d} is {u < S(d)}, or {u <= S(d)} (they
 * differ at the boundary point only), with S(d) = q^d/(1+q) for d >= 1 and
 * 1 - q^(1-d)/(1+q) for d <= 0: the discrete Laplace survival function.
 *
 * (a) holds for any random variable N.
 * (b): let N' be N* with the atom (+inf for W < 2^(64-A)), S~ its survival function, W
 * uniform on 2^64 values.  The number c(d) of words with u < S(d) (or u <= S(d)) lies in
 * [2^64 S(d), 2^64 S(d) + 1].  If S(d) >= 2^-A the atom's words (u < 2^-A) are among them,
 * so S~(d) = c(d) 2^-64; if S(d) < 2^-A no word outside the atom has u <= S(d), so
 * S~(d) = 2^-A.  In short
 *     S~(d) = max(2^-A, c(d) 2^-64),   2^64 S(d) <= c(d) <= 2^64 S(d) + 1.
 * Claim: for a < b,  S~(a) / S~(b) <= (S(a) / S(b)) (1 + 2^(A-64)).
 *   Case S(b) >= 2^-A: S~(b) >= S(b), and S(a) >= S(b) >= 2^-A, so
 *     S~(a) <= S(a) + 2^-64 = S(a) (1 + 2^-64 / S(a)) <= S(a) (1 + 2^(A-64)).
 *   Case S(b) < 2^-A: no word outside the atom has u <= S(b), so S~(b) = 2^-A.  If
 *     S(a) < 2^-A, S~(a) = 2^-A too and the ratio is 1 <= S(a)/S(b).  Otherwise
 *     S~(a) <= S(a) (1 + 2^(A-64)) as above, and S~(a)/S~(b) <= 2^A S(a) (1 + 2^(A-64))
 *     < (S(a)/S(b)) (1 + 2^(A-64)).
 * Since N* - 1 <= N <= N* + 1 (and N = N* on the atom), P(N >= d) <= S~(d-1) and
 * P(N >= d + 2K) >= S~(d + 2K + 1); and S(d-1)/S(d+2K+1) <= q^-(2K+2) (the discrete
 * Laplace is log-concave, so S(d)/S(d+1) grows with d, up to its value 1/q for d >= 1).
 * So
 *     P(N >= d) <= q^-(2K+2) (1 + 2^(A-64)) P(N >= d + 2K),
 * i.e. the query noise pays sensitivity K + 1 grid units (K for the grid, 1 for the
 * inversion) and a factor 1 + 2^(A-64) for the 64-bit resolution and the atom.  The
 * Python layer chooses inv_l so that (2K+2) ln2 / inv_l + 2^(A-63) <= eps'/2 (q^-(2K+2) =
 * exp((2K+2) ln2 / inv_l), and ln(1 + 2^(A-64)) <= 2^(A-64), half the slack charged),
 * hence the mechanism is eps'-DP per AboveThreshold instance.  A is the largest integer
 * <= 48 with 2^(A-63) <= 2^-10 eps'/2, but at least 20: the slack is at most 1/1024 of
 * eps'/2 (unless A = 20, for eps' below about 2^-32, where it is larger but still charged
 * in full), and the atom, a top whatever the value, has probability 2^-A <= 2^-20 per
 * query (an accuracy cost, see _svt_accuracy.py).  (N* has the law of a discrete Laplace
 * of scale inv_l/ln2 up to the 2^-64 resolution and the atom, and N = N* except where z*
 * lies within inv_l 2^-45 of an integer.)
 *
 * Per query the work is the same whatever the data.  The noise of DPF_SVT_CHUNK queries
 * is computed at once (SIMD) from CHUNK words when the previous chunk is used up, at
 * fixed query positions, so a batch and single steps give the same answers.  Each query
 * then costs one exact comparison of its value with a bound computed from the noise and
 * the public threshold (top_bound; pre-computed per chunk for the default threshold), so
 * no arithmetic ever touches the data on this path (but for the floor of a value
 * released by NumericSparse, and thresholds beyond 2^50 grid steps).  The only
 * branches that depend on the result are on the tops (a public output: a new threshold,
 * or the halt).  The threshold draw (and the
 * released value's noise) runs only at a top; with constant_time = 0 it is the exact CKS
 * sampler, whose running time grows with |noise| (documented), with constant_time = 1 the
 * bitwise sampler of consttime.c (constant time, a certified total-variation slack that
 * the Python layer adds to delta).
 *
 * ---------------------------------------------------------------- the fast path
 *
 * Given the noisy threshold, the events [f_i + nu_i >= T_i + rho] are independent
 * Bernoulli(p_i), p_i = P(nu >= x_i), x_i = rho - (f_i - T_i).  In a block whose largest
 * p_i is p_max <= 1/16 we draw the Bernoulli(p_max) candidates by geometric skips and
 * accept a candidate i with probability p_i / p_max (thinning); the first accepted one is
 * the block's first top, with exactly the law of per-query sampling.  Dense blocks draw
 * nu_i per query.  Double precision throughout: a simulation, not floating-point safe.
 */
#include <math.h>
#include <string.h>

#include "dpfast/sparse.h"
#include "dpfast/continuous.h"

/* ---------------------------------------------------------------- secure helpers */

/* floor(x) as int64 for |x| < 2^62, without libm and without a branch: truncate, then
 * subtract one where truncation went up.  (double)t is exact: t is an integer of a double
 * below 2^52, or x itself. */
static DPF_INLINE int64_t floor_i64(double x)
{
    int64_t t = (int64_t)x;
    return t - (int64_t)(x < (double)t);
}

/* ---------------------------------------------------------------- query noise
 *
 * The inversion of the header comment, for one query with word W:
 *   side:  N >= 1 iff W < q_pos; on the other side x = 2^64 - W = ~W + 1, else x = W
 *   xd  = x as a double: (x >> 32) 2^32 and (x mod 2^32) + [other side] are exact (32-bit
 *         conversions, an integer below 2^33), their sum rounds once
 *   xd  = m 2^e, m in [c, 2c), c = 1/sqrt2 rounded (the reduction of musl's log: e =
 *         (bits(xd) - bits(c)) >> 52 arithmetically, m = xd 2^-e by subtracting e from the
 *         exponent field: exact, m normal; xd = 0, the atom's W = 0, gives e = -1023, m = 1)
 *   log2 m = (2/ln2) atanh(s), s = (m-1)/(m+1), a degree-17 odd polynomial: s p(s^2),
 *         p of degree 8 by Estrin's scheme (depth 4 instead of Horner's 8: latency)
 *   z   = ((64 - e) - c1 - log2 m) inv_l = -log2(x 2^-64 (1+q)) inv_l
 *   N   = floor(z) (N >= 1 side) or -floor(z); N = +inf (2^62) when W < q_atom = 2^(64-A).
 *
 * Error of z against the exact z*, with u = 2^-53 (every quantity is a normal double; x >= 1
 * outside the atom: x >= 2^(64-A) on the N >= 1 side, x >= 1 on the other):
 *   xd = x (1 + e1), |e1| <= u (exact below 2^53)   -> |log2 xd - log2 x| <= 1.5u
 *   s: m - 1 exact (Sterbenz), m + 1 and the division round once: relative <= 2u
 *     (-> |d log2 m| <= 0.1716 * 2u * 2.886 / (1 - 0.1716^2) < 1.1u)
 *   log2 m, |.| <= 0.51: series truncation < 4.8e-16 < 4.4u (terms after s^17 sum to less
 *   than 0.1716 * 2.886 * 0.02944^9/19/(1 - 0.02944)).  Every coefficient and power of
 *   s^2 is positive, so each rounding multiplies a term by (1 + d), |d| <= u: in the
 *   Estrin tree below a term passes at most 11 roundings, and the rounding of s^2 adds at
 *   most 8 more to its powers -> p relative < 20u; with s (relative 2u) and the product
 *   s p: relative < 23u -> absolute < 12u (this includes the 1.1u above)
 *   c1 = log2(1+q) from libm on public values (q = exp2(-1/inv_l), log1p, / ln 2): < 5u
 *   (64 - e) exact, at most 64 (N >= 1 side: at most A <= 48)
 *   (k - c1) and (. - log2 m): results below 65 in magnitude: each rounding <= 64u
 *   so |w - w*| < 1.5u + 12u + 4.4u + 5u + 128u < 151u, and z = w inv_l adds a rounding of
 *   at most 65 inv_l u:  |z - z*| < 216 inv_l u < inv_l 2^-45.2.  With inv_l <= 2^40 that
 *   is below 2^-5, so N is within one of N* (|z - z*| < 1), all the privacy argument
 *   needs.  (Under a non-default rounding mode u becomes 2^-52 and the bound 2^-4; the
 *   floor below is exact in every rounding mode.)
 *   The atom's words (W = 0 included: xd = 0, e = -1023, k = 1087, |z| < 2^51) are
 *   computed like the others and then replaced: no branch, no special operand.
 * Near the side split both formulas give the same integer (z crosses 1 on one side and 0
 * on the other exactly at u = q/(1+q)), so q_pos need not be exact.
 *
 * Constant time: integer and IEEE operations only -- no branch, no table, no libm, no
 * subnormal operand.  Every implementation (scalar, SSE2/NEON, AVX2, AVX-512) performs the
 * same correctly rounded operations in the same order, and contraction into fused
 * multiply-adds is disabled, so all give bit-identical results. */

#define MAGIC52 4503599627370496.0               /* 2^52 */
#define MAGIC52_BITS 0x4330000000000000ULL
#define MAGIC_RND 6755399441055744.0              /* 1.5 * 2^52 */
#define MAGIC_RND_BITS 0x4338000000000000ULL
#define ONE_BITS 0x3ff0000000000000ULL
#define EXP_FIELD 0xfff0000000000000ULL
#define RED_OFF 0x3fe6a09e667f3bcdULL                /* the bits of 1/sqrt2, rounded */
#define TWO32 4294967296.0

#if defined(__clang__)
#define NO_CONTRACT _Pragma("clang fp contract(off)")
#define NO_CONTRACT_ATTR
#elif defined(__GNUC__)
#define NO_CONTRACT
#define NO_CONTRACT_ATTR __attribute__((optimize("fp-contract=off")))
#else
#define NO_CONTRACT
#define NO_CONTRACT_ATTR
#endif

/* C_k = 2 / ((2k+1) ln 2) */
#define LC0 2.8853900817779268147
#define LC1 0.96179669392597560491
#define LC2 0.57707801635558536294
#define LC3 0.41219858311113240210
#define LC4 0.32059889797532520164
#define LC5 0.26230818925253880134
#define LC6 0.22195308321368667806
#define LC7 0.19235933878519512098
#define LC8 0.16972882834987805967

static DPF_INLINE double bits_to_d(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static DPF_INLINE uint64_t d_to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* v >> 52 as a signed (arithmetic) shift, without relying on the implementation-defined
 * right shift of a negative int64 in C99. */
static DPF_INLINE int64_t sra52(uint64_t v)
{
    return (int64_t)(v >> 52) - (int64_t)((v >> 63) << 12);
}

/* Exact for a < 2^32: the bits of 2^52 + a, minus 2^52. */
static DPF_INLINE double u32_to_d(uint64_t a)
{
    return bits_to_d(a | MAGIC52_BITS) - MAGIC52;
}

/* The exact comparison without arithmetic on the data.  With the integer
 *     b = (R + floor(T_i/g)) - N,
 * the top condition floor(f/g) + N - floor(T_i/g) >= R is floor(f/g) >= b, that is
 * f/g >= b (b is an integer), that is f >= b g: a comparison of the query value itself
 * with a bound computed from the noise and the public threshold only (no multiplication
 * of the data, so no subnormal slow path that would time it).  |R| <= 2^48
 * (new_threshold), |N| < 2^48 except the atom, and we use this form only when
 * |floor(T_i/g)| < 2^50, so |b| < 2^51: (double)b is exact (the bits of 1.5 2^52 + b,
 * minus 1.5 2^52), and so is b g (g a power of two; an overflow to +-inf keeps the
 * comparison with a finite f exact).  The atom (N = 2^62: bit 62 set, bit 63 clear) gets
 * -inf: always a top, as N = +inf requires.  Integer and IEEE operations only. */
static DPF_INLINE double top_bound(uint64_t rt, uint64_t n, double g)
{
    uint64_t atom = 0 - ((n >> 62) & ~(n >> 63) & 1);
    double d = (bits_to_d(rt - n + MAGIC_RND_BITS) - MAGIC_RND) * g;
    return bits_to_d((d_to_bits(d) & ~atom) | (0xfff0000000000000ULL & atom));
}

#define SVT_BOUND_LIMIT ((int64_t)1 << 50)

/* The reference (scalar) implementation; the vector ones below mirror it operation for
 * operation. */
NO_CONTRACT_ATTR static int64_t noise_one(const dpf_svt_t *s, uint64_t w)
{
    NO_CONTRACT
    uint64_t pos = (uint64_t)0 - (uint64_t)(w < s->q_pos);      /* all ones: N >= 1 */
    uint64_t flip = ~pos;
    uint64_t x = w ^ flip;
    double one = bits_to_d(flip & ONE_BITS);
    double a = u32_to_d(x >> 32) * TWO32;
    double b = u32_to_d(x & 0xffffffffULL) + one;
    double xd = a + b;
    uint64_t bits = d_to_bits(xd);
    uint64_t red = bits - RED_OFF;
    int64_t e = sra52(red);
    double m = bits_to_d(bits - (red & EXP_FIELD));
    double sv, s2, s4, s8, q0, q1, q2, q3, p, lg, k, z, t, rb;
    int64_t nz, neg, n, atom;
    sv = (m - 1.0) / (m + 1.0);
    s2 = sv * sv;
    s4 = s2 * s2;
    s8 = s4 * s4;
    q0 = LC1 * s2;
    q0 = q0 + LC0;
    q1 = LC3 * s2;
    q1 = q1 + LC2;
    q2 = LC5 * s2;
    q2 = q2 + LC4;
    q3 = LC7 * s2;
    q3 = q3 + LC6;
    q1 = q1 * s4;
    q0 = q0 + q1;
    q3 = q3 * s4;
    q2 = q2 + q3;
    q3 = LC8 * s8;
    q2 = q2 + q3;
    q2 = q2 * s8;
    p = q0 + q2;
    lg = sv * p;
    k = bits_to_d((uint64_t)(64 - e) | MAGIC52_BITS) - MAGIC52;
    z = k - s->q_c1;
    z = z - lg;
    z = z * s->q_inv_l;
    t = z + MAGIC_RND;
    rb = t - MAGIC_RND;
    nz = (int64_t)(d_to_bits(t) - MAGIC_RND_BITS) - (int64_t)(rb > z);
    neg = (int64_t)flip;
    n = (nz ^ neg) - neg;
    atom = -(int64_t)(w < s->q_atom);
    return (n & ~atom) | (DPF_SVT_NOISE_INF & atom);
}

/* A chunk kernel: out[j] = the noise of words[j], each word erased once read, and with
 * bounds != NULL (the default threshold) bounds[j] = top_bound(rt, out[j], g) in the same
 * pass (rt = R + floor(T/g)). */
static void chunk_scalar(const dpf_svt_t *s, uint64_t *words, int64_t *out, double *bounds,
                         uint64_t rt)
{
    int j;
    for (j = 0; j < DPF_SVT_CHUNK; j++) {
        int64_t n = noise_one(s, words[j]);
        words[j] = 0;
        out[j] = n;
        if (bounds) bounds[j] = top_bound(rt, (uint64_t)n, s->grid);
    }
}

/* Whether some v[j] >= b[j], j < m: a branch-free reduction (whether a run of queries
 * holds a top is public, the answers say so; which one is not, until it is answered). */
static int chunk_scalar_any(const double *v, const double *b, size_t m)
{
    size_t j;
    int any = 0;
    for (j = 0; j < m; j++) any |= v[j] >= b[j];
    return any;
}

#if (defined(__GNUC__) || defined(__clang__)) && !defined(DPF_NO_SIMD)
#define SVT_HAVE_VEC 1
/* LANES queries side by side with the GCC/Clang vector extension (casts between vector
 * types of one size reinterpret bits; comparisons give all-ones lanes).  Three steps
 * have two exact forms, chosen per instruction set (the results are the same):
 *   XD(T, x, flip): the double nearest to x + 1 (flip all ones) or x (flip zero), one
 *       rounding of the exact value: the 32-bit halves (exact) summed once, or AVX-512DQ's
 *       correctly rounded 64-bit conversion of x - flip (which wraps only at x + 1 = 2^64,
 *       an atom's word W = 0: its result is discarded).
 *   FLOORI(T, z): floor(z) as an integer for |z| < 2^51: the 1.5 2^52 trick corrected by
 *       one (exact in every rounding mode), or a floor rounding and an exact conversion.
 *   I2D(T, b): an integer |b| < 2^51 as a double, exactly.  */
#define XD_SPLIT(T, x, flip)                                                               \
    (((T##_d)(((x) >> 32) | MAGIC52_BITS) - MAGIC52) * TWO32 +                             \
     (((T##_d)(((x) & 0xffffffffULL) | MAGIC52_BITS) - MAGIC52) +                          \
      (T##_d)((flip) & ONE_BITS)))
#define FLOORI_MAGIC(T, z)                                                                 \
    (((T##_i)((z) + MAGIC_RND) - (T##_i)((T##_u){0} + MAGIC_RND_BITS)) +                   \
     (T##_i)((((z) + MAGIC_RND) - MAGIC_RND) > (z)))
#define I2D_MAGIC(T, b) ((T##_d)((T##_u)(b) + MAGIC_RND_BITS) - MAGIC_RND)

#define DEFINE_NOISE_CHUNK(NAME, LANES, ATTR, XD, FLOORI, I2D)                             \
    typedef double NAME##_d __attribute__((vector_size(8 * (LANES))));                     \
    typedef uint64_t NAME##_u __attribute__((vector_size(8 * (LANES))));                   \
    typedef int64_t NAME##_i __attribute__((vector_size(8 * (LANES))));                    \
    ATTR NO_CONTRACT_ATTR static void NAME(const dpf_svt_t *s, uint64_t *words,            \
                                           int64_t *out, double *bounds, uint64_t rt)      \
    {                                                                                      \
        NO_CONTRACT                                                                        \
        int j;                                                                             \
        const NAME##_u rtv = (NAME##_u){0} + rt, zero = (NAME##_u){0};                     \
        const NAME##_d g = (NAME##_d){0} + s->grid;                                        \
        const NAME##_u q_pos = (NAME##_u){0} + s->q_pos;                                   \
        const NAME##_u q_atom = (NAME##_u){0} + s->q_atom;                                 \
        const NAME##_d c1 = (NAME##_d){0} + s->q_c1, inv_l = (NAME##_d){0} + s->q_inv_l;   \
        for (j = 0; j < DPF_SVT_CHUNK; j += (LANES)) {                                     \
            NAME##_u w, flip, bits, red;                                                   \
            NAME##_d xd, m, sv, s2, s4, s8, q0, q1, q2, q3, p, lg, k, z;                   \
            NAME##_i e, n, atom;                                                           \
            memcpy(&w, words + j, sizeof w);                                               \
            memcpy(words + j, &zero, sizeof zero);                                         \
            flip = (NAME##_u)(w >= q_pos);                                                 \
            xd = XD(NAME, w ^ flip, flip);                                                 \
            bits = (NAME##_u)xd;                                                           \
            red = bits - RED_OFF;                                                          \
            e = (NAME##_i)red >> 52;                                                       \
            m = (NAME##_d)(bits - (red & EXP_FIELD));                                      \
            sv = (m - 1.0) / (m + 1.0);                                                    \
            s2 = sv * sv;                                                                  \
            s4 = s2 * s2;                                                                  \
            s8 = s4 * s4;                                                                  \
            q0 = LC1 * s2;                                                                 \
            q0 = q0 + LC0;                                                                 \
            q1 = LC3 * s2;                                                                 \
            q1 = q1 + LC2;                                                                 \
            q2 = LC5 * s2;                                                                 \
            q2 = q2 + LC4;                                                                 \
            q3 = LC7 * s2;                                                                 \
            q3 = q3 + LC6;                                                                 \
            q1 = q1 * s4;                                                                  \
            q0 = q0 + q1;                                                                  \
            q3 = q3 * s4;                                                                  \
            q2 = q2 + q3;                                                                  \
            q3 = LC8 * s8;                                                                 \
            q2 = q2 + q3;                                                                  \
            q2 = q2 * s8;                                                                  \
            p = q0 + q2;                                                                   \
            lg = sv * p;                                                                   \
            k = I2D(NAME, 64 - e);                                                         \
            z = k - c1;                                                                    \
            z = z - lg;                                                                    \
            z = z * inv_l;                                                                 \
            n = FLOORI(NAME, z);                                                           \
            n = (n ^ (NAME##_i)flip) - (NAME##_i)flip;                                     \
            atom = (NAME##_i)(w < q_atom);                                                 \
            n = (n & ~atom) | (((NAME##_i){0} + DPF_SVT_NOISE_INF) & atom);                \
            memcpy(out + j, &n, sizeof n);                                                 \
            if (bounds) {                     /* top_bound, lane by lane */                \
                z = I2D(NAME, rtv - (NAME##_u)n);                                          \
                z = z * g;                                                                 \
                z = (NAME##_d)(((NAME##_u)z & ~(NAME##_u)atom) |                           \
                               ((NAME##_u)atom & 0xfff0000000000000ULL));                  \
                memcpy(bounds + j, &z, sizeof z);                                          \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    ATTR static int NAME##_any(const double *v, const double *b, size_t m)                 \
    {                                                                                      \
        size_t j = 0;                                                                      \
        int l, any = 0;                                                                    \
        NAME##_i acc = {0};                                                                \
        for (; j + (LANES) <= m; j += (LANES)) {                                           \
            NAME##_d x, y;                                                                 \
            memcpy(&x, v + j, sizeof x);                                                   \
            memcpy(&y, b + j, sizeof y);                                                   \
            acc |= (NAME##_i)(x >= y);                                                     \
        }                                                                                  \
        for (; j < m; j++) any |= v[j] >= b[j];                                            \
        for (l = 0; l < (LANES); l++) any |= acc[l] != 0;                                  \
        return any;                                                                        \
    }

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SVT_X86 1
#define XD_DQ(T, x, flip) __builtin_convertvector((x) - (flip), T##_d)
#define FLOORI_DQ(T, z)                                                                    \
    __builtin_convertvector((T##_d)_mm512_roundscale_pd(                                   \
                                (__m512d)(z), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC),  \
                            T##_i)
#define I2D_DQ(T, b) __builtin_convertvector((T##_i)(b), T##_d)
DEFINE_NOISE_CHUNK(chunk_vec128, 2, __attribute__((target("sse2"))), XD_SPLIT, FLOORI_MAGIC,
                   I2D_MAGIC)
DEFINE_NOISE_CHUNK(chunk_avx2, 4, __attribute__((target("avx2"))), XD_SPLIT, FLOORI_MAGIC,
                   I2D_MAGIC)
DEFINE_NOISE_CHUNK(chunk_avx512, 8, __attribute__((target("avx512f,avx512dq"))), XD_DQ,
                   FLOORI_DQ, I2D_DQ)
#elif defined(__aarch64__) || defined(__ARM_NEON)
DEFINE_NOISE_CHUNK(chunk_vec128, 2, , XD_SPLIT, FLOORI_MAGIC, I2D_MAGIC)
#endif
#endif

typedef void (*chunk_fn)(const dpf_svt_t *, uint64_t *, int64_t *, double *, uint64_t);
typedef int (*any_fn)(const double *, const double *, size_t);

static chunk_fn chunk_fn_of(int impl)
{
    switch (impl) {
    case DPF_IMPL_SCALAR: return chunk_scalar;
#if defined(SVT_HAVE_VEC) &&                                                               \
    (defined(SVT_X86) || defined(__aarch64__) || defined(__ARM_NEON))
    case DPF_IMPL_VEC128: return chunk_vec128;
#endif
#if defined(SVT_HAVE_VEC) && defined(SVT_X86)
    case DPF_IMPL_AVX2: return chunk_avx2;
    /* our AVX-512 kernel needs DQ too (every AVX-512 CPU but Xeon Phi has it) */
    case DPF_IMPL_AVX512: return __builtin_cpu_supports("avx512dq") ? chunk_avx512 : NULL;
#endif
    default: return NULL;
    }
}

/* Implementation impl if this build has it and the CPU runs it (dpf_chacha_impl_available
 * tells the CPU's instruction sets); DPF_IMPL_BEST: the widest such one, down to the
 * scalar code, which always exists. */
static int resolve_impl(int impl)
{
    if (impl == DPF_IMPL_BEST) {
        for (impl = DPF_IMPL_COUNT - 1; impl > DPF_IMPL_SCALAR; impl--)
            if (dpf_chacha_impl_available(impl) && chunk_fn_of(impl) != NULL) break;
    }
    return impl;
}

static chunk_fn chunk_impl(int impl)
{
    impl = resolve_impl(impl);
    if (!dpf_chacha_impl_available(impl)) return NULL;
    return chunk_fn_of(impl);
}

/* The comparison reduction in the instruction set of the noise kernel. */
static any_fn any_fn_of(int impl)
{
    switch (impl) {
#if defined(SVT_HAVE_VEC) &&                                                               \
    (defined(SVT_X86) || defined(__aarch64__) || defined(__ARM_NEON))
    case DPF_IMPL_VEC128: return chunk_vec128_any;
#endif
#if defined(SVT_HAVE_VEC) && defined(SVT_X86)
    case DPF_IMPL_AVX2: return chunk_avx2_any;
    case DPF_IMPL_AVX512: return chunk_avx512_any;
#endif
    default: return chunk_scalar_any;
    }
}

int dpf_svt_query_noise_chunk(const dpf_svt_t *s, int impl, const uint64_t *words,
                              int64_t *out, double *bounds, int64_t rt)
{
    chunk_fn f = chunk_impl(impl);
    uint64_t w[DPF_SVT_CHUNK];
    if (f == NULL) return -1;
    memcpy(w, words, sizeof w);
    f(s, w, out, bounds, (uint64_t)rt);
    return 0;
}

/* The bounds of the rest of the chunk for the default threshold (vectorised by the
 * compiler); recomputed after every new threshold. */
static void update_bounds(dpf_svt_t *s)
{
    const uint64_t rt = (uint64_t)(s->secret_thr_int + s->default_thr);
    const int64_t *qn = s->secret_qnoise;
    double *qb = s->secret_qbound;
    const double g = s->grid;
    uint32_t j;
    if (!s->use_bounds) return;
    for (j = s->secret_qpos; j < DPF_SVT_CHUNK; j++)
        qb[j] = top_bound(rt, (uint64_t)qn[j], g);
}

/* The next chunk of query noise: CHUNK fresh words, one per query (a bulk fill from a
 * dpfast generator), erased by the kernel as it reads them (through a function pointer,
 * so the stores cannot be elided; the barrier keeps them if it is ever inlined).  The
 * kernel also writes the bounds of the default threshold, and overwrites the previous
 * chunk's noise and bounds. */
static void refill_query_noise(dpf_svt_t *s, dpf_rng_t *r)
{
    uint64_t w[DPF_SVT_CHUNK];
    int j;
    if (r->cc != NULL) {
        dpf_chacha_fill(r->cc, w, DPF_SVT_CHUNK);
    } else {
        for (j = 0; j < DPF_SVT_CHUNK; j++) w[j] = r->next_u64(r->state);
    }
    s->noise_chunk(s, w, s->secret_qnoise, s->use_bounds ? s->secret_qbound : NULL,
                   (uint64_t)(s->secret_thr_int + s->default_thr));
#if defined(__GNUC__) || defined(__clang__)
    __asm__ __volatile__("" : : "r"(w) : "memory");
#endif
    s->secret_qpos = 0;
}

/* Erase n bytes in a way the compiler may not elide: memset, then a barrier that makes
 * the memory look read (inlined, so no call per run); elsewhere, dpf_secure_zero. */
static void wipe(void *p, size_t n)
{
#if defined(__GNUC__) || defined(__clang__)
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    dpf_secure_zero(p, n);
#endif
}

/* Erase the noise and bounds of queries [a, b) of the current chunk (used ones). */
static void erase_used(dpf_svt_t *s, size_t a, size_t b)
{
    if (b > DPF_SVT_CHUNK) b = DPF_SVT_CHUNK;
    if (a >= b) return;
    wipe(s->secret_qnoise + a, (b - a) * sizeof *s->secret_qnoise);
    wipe(s->secret_qbound + a, (b - a) * sizeof *s->secret_qbound);
}

/* The one place where the secure path draws threshold and released-value noise: the
 * exact discrete Laplace of Canonne, Kamath & Steinke (2020, Algorithm 2), or the
 * constant-time bitwise sampler (certified slack), from exact.c and consttime.c. */
static int svt_dlap(dpf_rng_t *r, const dpf_svt_dlap_t *p, int64_t *out)
{
    if (p->constant_time) {
        *out = dpf_discrete_laplace_ct(r, &p->ct);
        return DPF_OK;
    }
    return dpf_discrete_laplace(r, p->s_num, p->s_den, out);
}

static int dlap_prepare(dpf_svt_dlap_t *p, uint64_t num, uint64_t den, int constant_time)
{
    if (num == 0 || den == 0) return DPF_E_PARAM;
    p->s_num = num;
    p->s_den = den;
    p->constant_time = constant_time ? 1 : 0;
    if (p->constant_time) return dpf_dlap_ct_prepare(&p->ct, num, den);
    return DPF_OK;
}

/* ---------------------------------------------------------------- configuration */

static int common_init(dpf_svt_t *s, int mode, int64_t cutoff, int numeric)
{
    memset(s, 0, sizeof *s);
    if (cutoff < 1) return DPF_E_PARAM;
    s->mode = mode;
    s->cutoff = cutoff;
    s->numeric = numeric ? 1 : 0;
    return DPF_OK;
}

int dpf_svt_init_secure(dpf_svt_t *s, int64_t cutoff, int numeric, double grid,
                        double threshold, double q_inv_l, int atom_bits, uint64_t thr_num,
                        uint64_t thr_den, uint64_t val_num, uint64_t val_den,
                        int constant_time)
{
    int st, ex;
    double q, t;
    if ((st = common_init(s, DPF_SVT_SECURE, cutoff, numeric)) != DPF_OK) return st;
    /* g must be a power of two, so that v / g and v * (1/g) are exact */
    if (!(grid > 0.0) || !(grid < INFINITY) || frexp(grid, &ex) != 0.5) return DPF_E_PARAM;
    if (!(q_inv_l > 0.0)) return DPF_E_PARAM;
    if (q_inv_l > DPF_SVT_MAX_INV_L) return DPF_E_RANGE;
    if (atom_bits < DPF_SVT_ATOM_BITS_MIN || atom_bits > DPF_SVT_ATOM_BITS_MAX)
        return DPF_E_PARAM;
    s->grid = grid;
    s->inv_grid = ldexp(1.0, 1 - ex);
    if (!(s->inv_grid < INFINITY)) return DPF_E_RANGE;
    t = threshold * s->inv_grid;
    if (!(fabs(t) < DPF_SVT_VALUE_LIMIT)) return DPF_E_RANGE;
    s->threshold = threshold;
    s->default_thr = floor_i64(t);
    /* q = 2^(-1/inv_l): public constants of the inversion (libm on public values only) */
    s->q_inv_l = q_inv_l;
    q = exp2(-1.0 / q_inv_l);
    s->q_c1 = log1p(q) / log(2.0);
    s->q_pos = (uint64_t)ldexp(q / (1.0 + q), 64); /* q/(1+q) < 1/2: no overflow */
    s->q_atom_bits = atom_bits;
    s->q_atom = (uint64_t)1 << (64 - atom_bits);
    s->impl = resolve_impl(DPF_IMPL_BEST);
    s->noise_chunk = chunk_impl(s->impl);
    s->any_top = any_fn_of(s->impl);
    s->secret_qpos = DPF_SVT_CHUNK;
    s->use_bounds = s->default_thr < SVT_BOUND_LIMIT && s->default_thr > -SVT_BOUND_LIMIT;
    if ((st = dlap_prepare(&s->thr_noise, thr_num, thr_den, constant_time)) != DPF_OK)
        return st;
    if (s->numeric &&
        (st = dlap_prepare(&s->val_noise, val_num, val_den, constant_time)) != DPF_OK)
        return st;
    return DPF_OK;
}

int dpf_svt_init_fast(dpf_svt_t *s, int64_t cutoff, int numeric, double threshold,
                      double thr_scale, double q_scale, double val_scale)
{
    int st;
    if ((st = common_init(s, DPF_SVT_FAST, cutoff, numeric)) != DPF_OK) return st;
    if (!(fabs(threshold) < INFINITY)) return DPF_E_PARAM;
    if (!(thr_scale > 0.0 && thr_scale < INFINITY)) return DPF_E_PARAM;
    if (!(q_scale > 0.0 && q_scale < INFINITY)) return DPF_E_PARAM;
    if (numeric && !(val_scale > 0.0 && val_scale < INFINITY)) return DPF_E_PARAM;
    s->threshold = threshold;
    s->thr_scale = thr_scale;
    s->q_scale = q_scale;
    s->val_scale = val_scale;
    return DPF_OK;
}

double dpf_svt_thr_slack(const dpf_svt_t *s)
{
    return (s->mode == DPF_SVT_SECURE && s->thr_noise.constant_time) ? s->thr_noise.ct.slack
                                                                     : 0.0;
}

double dpf_svt_val_slack(const dpf_svt_t *s)
{
    return (s->mode == DPF_SVT_SECURE && s->numeric && s->val_noise.constant_time)
               ? s->val_noise.ct.slack
               : 0.0;
}

void dpf_svt_wipe(dpf_svt_t *s)
{
    dpf_secure_zero(s, sizeof *s);
}

/* A fresh noisy threshold: Algorithm 1 line 1, Algorithm 2 after each top.  Drawn before
 * any query it is used for, and kept only in the secret fields. */
static int new_threshold(dpf_svt_t *s, dpf_rng_t *r)
{
    if (s->mode == DPF_SVT_SECURE) {
        int64_t x;
        int st = svt_dlap(r, &s->thr_noise, &x);
        if (st != DPF_OK) return st;
        /* |R| > 2^48 has probability below exp(-2^8) per draw at the largest scale that
         * inv_l <= 2^40 allows (sigma K < 2^40); refuse it rather than compute with it */
        if (x > DPF_SVT_THRESHOLD_LIMIT || x < -DPF_SVT_THRESHOLD_LIMIT) return DPF_E_RANGE;
        s->secret_thr_int = x;
        if (s->secret_qpos < DPF_SVT_CHUNK) update_bounds(s);
    } else {
        s->secret_thr_dbl = s->thr_scale * dpf_std_laplace(r);
    }
    return DPF_OK;
}

int dpf_svt_start(dpf_svt_t *s, dpf_rng_t *r)
{
    int st;
    if (s->mode != DPF_SVT_SECURE && s->mode != DPF_SVT_FAST) return DPF_E_PARAM;
    if (s->started) return DPF_E_PARAM;
    if ((st = new_threshold(s, r)) != DPF_OK) {
        s->halted = 1;
        return st;
    }
    s->fork_gen = dpf_fork_generation;
    s->pid = dpf_process_id();
    s->started = 1;
    return DPF_OK;
}

/* Index of the first x[i * stride] with !(|x| < lim), or n, for lim > 0.  A branch-free
 * reduction first, on the bit patterns (for non-negative doubles their order as integers
 * is their numeric order, and NaN lies above +inf), which the compiler vectorises even
 * for baseline SSE2; the search only when something is wrong. */
static size_t first_out_of_range(const double *x, size_t stride, size_t n, double lim)
{
    const uint64_t lb = d_to_bits(lim) - 1, absmask = 0x7fffffffffffffffULL;
    uint64_t bad = 0;
    size_t i;
    if (stride == 1) {
        for (i = 0; i < n; i++) bad |= lb - (d_to_bits(x[i]) & absmask);
    } else {
        for (i = 0; i < n; i++) bad |= lb - (d_to_bits(x[i * stride]) & absmask);
    }
    if (!(bad >> 63)) return n; /* |x| bits <= lim bits - 1 everywhere */
    for (i = 0; i < n; i++)
        if (!(fabs(x[i * stride]) < lim)) return i; /* NaN fails every comparison */
    return n;
}

int dpf_svt_validate(const dpf_svt_t *s, const double *v, const double *t, size_t t_stride,
                     size_t n, size_t *bad, int *which)
{
    size_t i;
    /* |v / g| < 2^61 as |v| < 2^61 g (exact, or +inf: then every finite v passes, as it
     * should): no arithmetic on the data, so no subnormal slow path. */
    double lim = s->mode == DPF_SVT_SECURE ? DPF_SVT_VALUE_LIMIT * s->grid : INFINITY;
    if ((i = first_out_of_range(v, 1, n, lim)) < n) {
        *bad = i;
        *which = 0;
        return DPF_E_RANGE;
    }
    if (t != NULL) {
        size_t m = t_stride ? n : (n ? 1 : 0);
        if ((i = first_out_of_range(t, t_stride ? t_stride : 1, m, lim)) < m) {
            *bad = i;
            *which = 1;
            return DPF_E_RANGE;
        }
    }
    return DPF_OK;
}

/* ---------------------------------------------------------------- the loops */

/* Book-keeping of a top at query i: count it; halt at the c-th (Algorithm 2, "if
 * count >= c then Halt"), otherwise draw the next threshold (fresh noise, never reused). */
static int after_top(dpf_svt_t *s, dpf_rng_t *r)
{
    int st;
    s->count++;
    if (s->count >= s->cutoff) {
        s->halted = 1;
        return DPF_OK;
    }
    if ((st = new_threshold(s, r)) != DPF_OK) s->halted = 1;
    return st;
}

/* The comparisons of queries [i, i + m) of the current chunk (no top among them is
 * handled here): returns the index of the first top, or i + m.  Writes top[] only up to
 * and including that index, so nothing past an answered query is ever written.  (The
 * noise of the queries it answers is erased by secure_feed: overwritten by the next
 * chunk, or erased before it returns.) */
static size_t secure_run(dpf_svt_t *s, const double *v, const double *t, size_t t_stride,
                         size_t i, size_t m, uint8_t *top)
{
    const double ig = s->inv_grid, g = s->grid;
    const int64_t thr = s->secret_thr_int;
    int64_t *qn = s->secret_qnoise + s->secret_qpos;
    double *qb = s->secret_qbound + s->secret_qpos;
    size_t j, first = m;
    if (t == NULL && s->use_bounds) {
        /* The m comparisons without a branch (a vectorised reduction); whether the run
         * holds a top is public (the answers say so), and only then is it searched. */
        if (!s->any_top(v + i, qb, m)) {
            memset(top + i, 0, m);
            return i + m;
        }
        for (j = 0; j < m; j++) {
            int is_top = v[i + j] >= qb[j];
            top[i + j] = (uint8_t)is_top;
            if (is_top) {
                first = j;
                break;
            }
        }
    } else {
        for (j = 0; j < m; j++) {
            /* Algorithm 1/2 with the threshold T_i (public): top iff f_i + nu_i >= T_i + R
             * in grid units, as f_i >= b g (above) when |floor(T_i/g)| < 2^50, else in
             * integers (|nu| <= 2^62, |f - tq| < 2^62: no overflow). */
            int64_t tq = t ? floor_i64(t[(i + j) * t_stride] * ig) : s->default_thr;
            int is_top;
            if (tq < SVT_BOUND_LIMIT && tq > -SVT_BOUND_LIMIT)
                is_top = v[i + j] >= top_bound((uint64_t)(thr + tq), (uint64_t)qn[j], g);
            else is_top = qn[j] + (floor_i64(v[i + j] * ig) - tq) >= thr;
            top[i + j] = (uint8_t)is_top;
            if (DPF_UNLIKELY(is_top)) {
                first = j;
                break;
            }
        }
    }
    return i + first;
}

static int secure_feed(dpf_svt_t *s, dpf_rng_t *r, const double *v, const double *t,
                       size_t t_stride, size_t n, uint8_t *top, double *val, size_t *done)
{
    size_t i = 0, j, m, k;
    size_t used_from = s->secret_qpos; /* first entry of the chunk this call uses */
    int st = DPF_OK;
    while (i < n) {
        /* every CHUNK-th query, whatever the data: the next chunk's noise */
        if (s->secret_qpos >= DPF_SVT_CHUNK) {
            refill_query_noise(s, r);
            used_from = 0;
        }
        m = DPF_SVT_CHUNK - s->secret_qpos;
        if (m > n - i) m = n - i;
        k = secure_run(s, v, t, t_stride, i, m, top);
        s->secret_qpos += (uint32_t)(k < i + m ? k - i + 1 : m); /* noise used so far */
        if (val)
            for (j = i; j < k; j++) val[j] = NAN;
        if (k == i + m) {
            i = k;
            continue;
        }
        /* a top at query k */
        if (s->numeric) {
            /* Algorithm 3: a_k = f_k + Lap(sigma(eps2)) with fresh noise (never nu_k:
             * releasing f_k + nu_k is the broken variant of Lyu, Su & Li 2017). */
            int64_t x, f = floor_i64(v[k] * s->inv_grid);
            st = svt_dlap(r, &s->val_noise, &x);
            if (st == DPF_OK && (x > ((int64_t)1 << 62) || x < -((int64_t)1 << 62)))
                st = DPF_E_RANGE;
            if (st != DPF_OK) {
                s->halted = 1; /* query k stays unanswered */
                break;
            }
            /* f + x is the DP integer; the float is computed from it alone. */
            val[k] = ((double)(f + x) + 0.5) * s->grid;
        }
        i = k + 1;
        st = after_top(s, r);
        if (s->halted) break;
    }
    erase_used(s, used_from, s->secret_qpos); /* nothing used outlives the call */
    *done = i;
    return st;
}

/* P(nu >= x) for nu ~ Laplace(b) */
static DPF_INLINE double lap_sf(double x, double b)
{
    return x >= 0.0 ? 0.5 * exp(-x / b) : 1.0 - 0.5 * exp(x / b);
}

#define FAST_BLOCK 256
#define FAST_DENSE 0.0625

/* Fast path: see the header comment. */
static int fast_feed(dpf_svt_t *s, dpf_rng_t *r, const double *v, const double *t,
                     size_t t_stride, size_t n, uint8_t *top, double *val, size_t *done)
{
    size_t i = 0, j;
    int st = DPF_OK;
    const double b = s->q_scale;
    const double T = s->threshold;
    const double nan = NAN;
    while (i < n) {
        size_t end = n - i < FAST_BLOCK ? n : i + FAST_BLOCK;
        size_t hit = end; /* first top in [i, end), or end */
        double rho = s->secret_thr_dbl, mx, xmin, pmax;
        /* largest f_j - T_j of the block, four accumulators for instruction parallelism */
        double m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
        if (t == NULL) {
            for (j = i; j + 4 <= end; j += 4) {
                m0 = v[j] > m0 ? v[j] : m0;
                m1 = v[j + 1] > m1 ? v[j + 1] : m1;
                m2 = v[j + 2] > m2 ? v[j + 2] : m2;
                m3 = v[j + 3] > m3 ? v[j + 3] : m3;
            }
            for (; j < end; j++) m0 = v[j] > m0 ? v[j] : m0;
            m0 = m1 > m0 ? m1 : m0;
            m2 = m3 > m2 ? m3 : m2;
            mx = (m2 > m0 ? m2 : m0) - T;
        } else {
            for (j = i; j < end; j++) {
                double d = v[j] - t[j * t_stride];
                m0 = d > m0 ? d : m0;
            }
            mx = m0;
        }
        xmin = rho - mx;
        pmax = lap_sf(xmin, b);
        if (pmax > FAST_DENSE) {
            for (j = i; j < end; j++) {
                double tj = t ? t[j * t_stride] : T;
                if (b * dpf_std_laplace(r) >= rho - (v[j] - tj)) {
                    hit = j;
                    break;
                }
            }
        } else {
            /* Thinning: candidates form a Bernoulli(pmax) sequence (geometric gaps);
             * candidate j is a top with probability p_j / pmax = exp(-(x_j - xmin)/b),
             * both x >= 0 since pmax <= 1/16.  The first accepted candidate is the first
             * top, with the law of independent Bernoulli(p_j) draws. */
            double mu = -log1p(-pmax);
            j = i;
            for (;;) {
                double gap = dpf_std_exponential(r) / mu;
                double xj, tj;
                if (!(gap < (double)(end - j))) break;
                j += (size_t)gap;
                tj = t ? t[j * t_stride] : T;
                xj = rho - (v[j] - tj);
                if (b * dpf_std_exponential(r) >= xj - xmin) {
                    hit = j;
                    break;
                }
                j++;
                if (j >= end) break;
            }
        }
        for (j = i; j < hit; j++) top[j] = 0;
        if (val)
            for (j = i; j < hit; j++) val[j] = nan;
        if (hit == end) {
            i = end;
            continue;
        }
        top[hit] = 1;
        if (val) val[hit] = v[hit] + s->val_scale * dpf_std_laplace(r); /* fresh noise */
        i = hit + 1;
        st = after_top(s, r);
        if (s->halted) break;
    }
    *done = i;
    return st;
}

int dpf_svt_feed(dpf_svt_t *s, dpf_rng_t *r, const double *v, const double *t,
                 size_t t_stride, size_t n, uint8_t *top, double *val, size_t *done)
{
    int st;
    *done = 0;
    if (s->started && !s->halted &&
        (s->fork_gen != dpf_fork_generation || s->pid != dpf_process_id())) {
        /* a child of fork(): its copy of the secrets must not answer anything */
        dpf_secure_zero(&s->secret_thr_int, sizeof s->secret_thr_int);
        dpf_secure_zero(&s->secret_thr_dbl, sizeof s->secret_thr_dbl);
        dpf_secure_zero(s->secret_qnoise, sizeof s->secret_qnoise);
        dpf_secure_zero(s->secret_qbound, sizeof s->secret_qbound);
        s->halted = 1;
        s->forked = 1;
    }
    if (!s->started || s->halted) return DPF_E_PARAM;
    if (s->numeric && val == NULL) return DPF_E_PARAM;
    if (!s->numeric) val = NULL;
    if (s->mode == DPF_SVT_SECURE)
        st = secure_feed(s, r, v, t, t_stride, n, top, val, done);
    else st = fast_feed(s, r, v, t, t_stride, n, top, val, done);
    s->consumed += *done;
    return st;
}
