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
 * We draw N from two 64-bit words U = hi 2^64 + lo, u = U / 2^128, by inverting the
 * discrete Laplace survival function with q = 2^(-L), L = 1/inv_l:
 *     u <  q/(1+q):  N*(u) =  floor(-log2(u (1+q)) inv_l)            (N* >= 1)
 *     u >= q/(1+q):  N*(u) = -floor(-log2((1-u)(1+q)) inv_l)         (N* <= 0)
 *     hi == 0     :  N = +inf (an atom of mass 2^-64)
 * and compute N as N*(u) up to an error |N - N*| <= 1 (error analysis in the "query
 * noise" section below).  Any function of U compared with d gives (a).  For (b): with S~ the
 * survival of N* (exact inverse, 2^-128 resolution, the atom), S~(d) = max(2^-64,
 * ceil(2^128 S(d)) 2^-128), so S~(a)/S~(b) <= (S(a)/S(b)) (1 + 2^-64) for a < b; and since
 * N* - 1 <= N <= N* + 1,  P(N >= d) <= S~(d-1) and P(N >= d + 2K) >= S~(d + 2K + 1).  So
 *     P(N >= d) <= q^-(2K+2) (1 + 2^-64) P(N >= d + 2K),
 * i.e. the query noise pays sensitivity K + 1 grid units (K for the grid, 1 for the
 * inversion).  The Python layer chooses inv_l so that (2K+2) ln2 / inv_l + 2^-64 <=
 * eps'/2, hence the mechanism is eps'-DP per AboveThreshold instance exactly, with no
 * slack left over.  (The output law is that of a discrete Laplace of scale
 * inv_l/ln2 except where z* lies within inv_l 2^-44 of an integer.)
 *
 * Per query the work is the same whatever the data.  The noise of DPF_SVT_CHUNK queries
 * is computed at once (SIMD) from 2 CHUNK words when the previous chunk is used up, at
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
 * The inversion of the header comment, for one query with words (hi, lo):
 *   side:  N >= 1 iff hi < q_pos_hi; on the other side x = 2^128 - U = ~U + 1
 *   xd  = x as a double (four exact 32-bit conversions, two rounded additions)
 *   xd  = m 2^e, m in [1/sqrt2, sqrt2)  (bit fields, an exact halving)
 *   log2 m = (2/ln2) atanh(s), s = (m-1)/(m+1), a degree-17 odd polynomial
 *   z   = ((128 - e) - c1 - log2 m) inv_l = -log2(x 2^-128 (1+q)) inv_l
 *   N   = floor(z) (N >= 1 side) or -floor(z); N = +inf (2^62) when hi == 0.
 *
 * Error of z against the exact z*, with u = 2^-53 (every quantity is a normal double):
 *   xd = x (1 + e1), |e1| <= 3u  -> |log2 xd - log2 x| <= 3u/ln2 < 4.4u
 *   s: m - 1 exact (Sterbenz), m + 1 and the division round once: relative <= 2u
 *   log2 m, |.| <= 0.51: series truncation < 4.8e-16 < 4.4u (terms after s^17 sum to less
 *   than 0.1716 * 2.886 * 0.02944^9/19/(1 - 0.02944)), Horner and products a few u
 *   relative -> absolute < 8u
 *   c1 = log2(1+q) from libm on a public value: <= u;  (128 - e) exact
 *   (k - c1) and (. - log2 m): results below 2^11 in magnitude (k <= 1151 only for the
 *   discarded atom lane; below 130 otherwise): each rounding <= 64u
 *   so |w - w*| < 4.4u + 8u + u + 128u < 142u, and z = w inv_l adds a rounding of at most
 *   130 inv_l u plus inv_l's own (relative u):  |z - z*| < inv_l (142 + 260) u
 *   < inv_l 2^-44.3.  With inv_l <= 2^40 that is below 2^-4, so N is within one of N*,
 *   all the privacy argument needs.  (Under a non-default rounding mode u becomes 2^-52
 *   and the bound 2^-3; the floor below is exact in every rounding mode.)
 * Near the side split both formulas give the same integer (z crosses 1 on one side and 0
 * on the other exactly at u = q/(1+q)), so q_pos_hi need not be exact.
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
#define MANT_BITS 0x000fffffffffffffULL
#define EXP_ONE 0x0010000000000000ULL
#define TWO32 4294967296.0
#define TWO64 18446744073709551616.0
#define SQRT2 1.4142135623730950488

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

/* Exact for a < 2^32: the bits of 2^52 + a, minus 2^52. */
static DPF_INLINE double u32_to_d(uint64_t a) { return bits_to_d(a | MAGIC52_BITS) - MAGIC52; }

/* The reference (scalar) implementation; the vector ones below mirror it operation for
 * operation. */
NO_CONTRACT_ATTR static int64_t noise_one(const dpf_svt_t *s, uint64_t hi, uint64_t lo)
{
    NO_CONTRACT
    uint64_t pos = (uint64_t)0 - (uint64_t)(hi < s->q_pos_hi);   /* all ones: N >= 1 */
    uint64_t flip = ~pos;
    uint64_t xh = hi ^ flip, xl = lo ^ flip;
    double dh = u32_to_d(xh >> 32) * TWO32 + u32_to_d(xh & 0xffffffffULL);
    double dl = u32_to_d(xl >> 32) * TWO32 + u32_to_d(xl & 0xffffffffULL);
    double one = bits_to_d(flip & ONE_BITS);
    double a = dh * TWO64;
    double b = dl + one;
    double xd = a + b;
    uint64_t bits = d_to_bits(xd);
    int64_t e = (int64_t)(bits >> 52) - 1023;
    double m = bits_to_d((bits & MANT_BITS) | ONE_BITS);
    uint64_t adj = (uint64_t)0 - (uint64_t)(m > SQRT2);
    double sv, s2, p, lg, k, z, t, rb;
    int64_t nz, neg, n, atom;
    m = bits_to_d(d_to_bits(m) - (adj & EXP_ONE));
    e -= (int64_t)adj;
    sv = (m - 1.0) / (m + 1.0);
    s2 = sv * sv;
    p = LC8 * s2;  p = p + LC7;
    p = p * s2;    p = p + LC6;
    p = p * s2;    p = p + LC5;
    p = p * s2;    p = p + LC4;
    p = p * s2;    p = p + LC3;
    p = p * s2;    p = p + LC2;
    p = p * s2;    p = p + LC1;
    p = p * s2;    p = p + LC0;
    lg = sv * p;
    k = bits_to_d((uint64_t)(128 - e) | MAGIC52_BITS) - MAGIC52;
    z = k - s->q_c1;
    z = z - lg;
    z = z * s->q_inv_l;
    t = z + MAGIC_RND;
    rb = t - MAGIC_RND;
    nz = (int64_t)(d_to_bits(t) - MAGIC_RND_BITS) - (int64_t)(rb > z);
    neg = (int64_t)flip;
    n = (nz ^ neg) - neg;
    atom = -(int64_t)(hi == 0);
    return (n & ~atom) | (DPF_SVT_NOISE_INF & atom);
}

static void chunk_scalar(const dpf_svt_t *s, const uint64_t *w, int64_t *out)
{
    int j;
    for (j = 0; j < DPF_SVT_CHUNK; j++) out[j] = noise_one(s, w[j], w[DPF_SVT_CHUNK + j]);
}

#if (defined(__GNUC__) || defined(__clang__)) && !defined(DPF_NO_SIMD)
#define SVT_HAVE_VEC 1
/* LANES queries side by side with the GCC/Clang vector extension (casts between vector
 * types of one size reinterpret bits; comparisons give all-ones lanes). */
#define DEFINE_NOISE_CHUNK(NAME, LANES, ATTR)                                         \
    typedef double NAME##_d __attribute__((vector_size(8 * (LANES))));                \
    typedef uint64_t NAME##_u __attribute__((vector_size(8 * (LANES))));              \
    typedef int64_t NAME##_i __attribute__((vector_size(8 * (LANES))));               \
    ATTR NO_CONTRACT_ATTR static void NAME(const dpf_svt_t *s, const uint64_t *w,     \
                                           int64_t *out)                              \
    {                                                                                 \
        NO_CONTRACT                                                                   \
        int j;                                                                        \
        const NAME##_u pos_hi = (NAME##_u){0} + s->q_pos_hi;                           \
        const NAME##_d c1 = (NAME##_d){0} + s->q_c1, inv_l = (NAME##_d){0} + s->q_inv_l; \
        for (j = 0; j < DPF_SVT_CHUNK; j += (LANES)) {                                \
            NAME##_u hi, lo, pos, flip, xh, xl, bits, adj;                            \
            NAME##_d dh, dl, one, a, b, xd, m, sv, s2, p, lg, k, z, t, rb;            \
            NAME##_i e, nz, neg, n, atom;                                             \
            memcpy(&hi, w + j, sizeof hi);                                            \
            memcpy(&lo, w + DPF_SVT_CHUNK + j, sizeof lo);                            \
            pos = (NAME##_u)(hi < pos_hi);                                            \
            flip = ~pos;                                                              \
            xh = hi ^ flip;                                                           \
            xl = lo ^ flip;                                                           \
            dh = ((NAME##_d)((xh >> 32) | MAGIC52_BITS) - MAGIC52) * TWO32            \
                 + ((NAME##_d)((xh & 0xffffffffULL) | MAGIC52_BITS) - MAGIC52);       \
            dl = ((NAME##_d)((xl >> 32) | MAGIC52_BITS) - MAGIC52) * TWO32            \
                 + ((NAME##_d)((xl & 0xffffffffULL) | MAGIC52_BITS) - MAGIC52);       \
            one = (NAME##_d)(flip & ONE_BITS);                                        \
            a = dh * TWO64;                                                           \
            b = dl + one;                                                             \
            xd = a + b;                                                               \
            bits = (NAME##_u)xd;                                                      \
            e = (NAME##_i)(bits >> 52) - 1023;                                        \
            m = (NAME##_d)((bits & MANT_BITS) | ONE_BITS);                            \
            adj = (NAME##_u)(m > SQRT2);                                              \
            m = (NAME##_d)((NAME##_u)m - (adj & EXP_ONE));                            \
            e = e - (NAME##_i)adj;                                                    \
            sv = (m - 1.0) / (m + 1.0);                                               \
            s2 = sv * sv;                                                             \
            p = LC8 * s2;  p = p + LC7;                                               \
            p = p * s2;    p = p + LC6;                                               \
            p = p * s2;    p = p + LC5;                                               \
            p = p * s2;    p = p + LC4;                                               \
            p = p * s2;    p = p + LC3;                                               \
            p = p * s2;    p = p + LC2;                                               \
            p = p * s2;    p = p + LC1;                                               \
            p = p * s2;    p = p + LC0;                                               \
            lg = sv * p;                                                              \
            k = (NAME##_d)((NAME##_u)(128 - e) | MAGIC52_BITS) - MAGIC52;             \
            z = k - c1;                                                               \
            z = z - lg;                                                               \
            z = z * inv_l;                                                            \
            t = z + MAGIC_RND;                                                        \
            rb = t - MAGIC_RND;                                                       \
            nz = ((NAME##_i)t - (NAME##_i)((NAME##_u){0} + MAGIC_RND_BITS))           \
                 + (NAME##_i)(rb > z);                                                \
            neg = (NAME##_i)flip;                                                     \
            n = (nz ^ neg) - neg;                                                     \
            atom = (NAME##_i)(hi == 0);                                               \
            n = (n & ~atom) | (((NAME##_i){0} + DPF_SVT_NOISE_INF) & atom);           \
            memcpy(out + j, &n, sizeof n);                                            \
        }                                                                             \
    }

#if defined(__x86_64__) || defined(__i386__)
#define SVT_X86 1
DEFINE_NOISE_CHUNK(chunk_vec128, 2, __attribute__((target("sse2"))))
DEFINE_NOISE_CHUNK(chunk_avx2, 4, __attribute__((target("avx2"))))
DEFINE_NOISE_CHUNK(chunk_avx512, 8, __attribute__((target("avx512f"))))
#elif defined(__aarch64__) || defined(__ARM_NEON)
DEFINE_NOISE_CHUNK(chunk_vec128, 2, )
#endif
#endif

typedef void (*chunk_fn)(const dpf_svt_t *, const uint64_t *, int64_t *);

static chunk_fn chunk_fn_of(int impl)
{
    switch (impl) {
    case DPF_IMPL_SCALAR: return chunk_scalar;
#if defined(SVT_HAVE_VEC) && (defined(SVT_X86) || defined(__aarch64__) || defined(__ARM_NEON))
    case DPF_IMPL_VEC128: return chunk_vec128;
#endif
#if defined(SVT_HAVE_VEC) && defined(SVT_X86)
    case DPF_IMPL_AVX2: return chunk_avx2;
    case DPF_IMPL_AVX512: return chunk_avx512;
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

int dpf_svt_query_noise_chunk(const dpf_svt_t *s, int impl, const uint64_t *words,
                              int64_t *out)
{
    chunk_fn f = chunk_impl(impl);
    if (f == NULL) return -1;
    f(s, words, out);
    return 0;
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
    for (j = s->secret_qpos; j < DPF_SVT_CHUNK; j++) qb[j] = top_bound(rt, (uint64_t)qn[j], g);
}

/* Erase words in a way the compiler may not elide (dpf_secure_zero's byte loop would cost
 * more than the noise itself here): memset, then a barrier that makes the memory look
 * read, or word stores through a volatile pointer. */
static void wipe_words(uint64_t *p, size_t n)
{
#if defined(__GNUC__) || defined(__clang__)
    memset(p, 0, n * sizeof *p);
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    volatile uint64_t *q = (volatile uint64_t *)p;
    while (n--) *q++ = 0;
#endif
}

/* The next chunk of query noise: 2 CHUNK fresh words (a bulk fill from a dpfast
 * generator), erased once used. */
static void refill_query_noise(dpf_svt_t *s, dpf_rng_t *r)
{
    uint64_t w[2 * DPF_SVT_CHUNK];
    int j;
    if (r->cc != NULL) {
        dpf_chacha_fill(r->cc, w, 2 * DPF_SVT_CHUNK);
    } else {
        for (j = 0; j < 2 * DPF_SVT_CHUNK; j++) w[j] = r->next_u64(r->state);
    }
    s->noise_chunk(s, w, s->secret_qnoise);
    wipe_words(w, 2 * DPF_SVT_CHUNK);
    s->secret_qpos = 0;
    update_bounds(s);
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
                        double threshold, double q_inv_l, uint64_t thr_num, uint64_t thr_den,
                        uint64_t val_num, uint64_t val_den, int constant_time)
{
    int st, ex;
    double q, t;
    if ((st = common_init(s, DPF_SVT_SECURE, cutoff, numeric)) != DPF_OK) return st;
    /* g must be a power of two, so that v / g and v * (1/g) are exact */
    if (!(grid > 0.0) || !(grid < INFINITY) || frexp(grid, &ex) != 0.5) return DPF_E_PARAM;
    if (!(q_inv_l > 0.0)) return DPF_E_PARAM;
    if (q_inv_l > DPF_SVT_MAX_INV_L) return DPF_E_RANGE;
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
    s->q_pos_hi = (uint64_t)ldexp(q / (1.0 + q), 64);
    s->impl = resolve_impl(DPF_IMPL_BEST);
    s->noise_chunk = chunk_impl(s->impl);
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
               ? s->val_noise.ct.slack : 0.0;
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
    if (!(bad >> 63)) return n;            /* |x| bits <= lim bits - 1 everywhere */
    for (i = 0; i < n; i++)
        if (!(fabs(x[i * stride]) < lim)) return i;   /* NaN fails every comparison */
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
 * and including that index, so nothing past an answered query is ever written; erases
 * the noise of every query it answers. */
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
        int any = 0;
        for (j = 0; j < m; j++) any |= v[i + j] >= qb[j];
        if (!any) {
            memset(top + i, 0, m);
            memset(qn, 0, m * sizeof *qn);             /* used: erase */
            memset(qb, 0, m * sizeof *qb);
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
            else
                is_top = qn[j] + (floor_i64(v[i + j] * ig) - tq) >= thr;
            top[i + j] = (uint8_t)is_top;
            if (DPF_UNLIKELY(is_top)) {
                first = j;
                break;
            }
        }
    }
    for (j = 0; j < m && j <= first; j++) {             /* used: erase */
        qn[j] = 0;
        qb[j] = 0.0;
    }
    return i + first;
}

static int secure_feed(dpf_svt_t *s, dpf_rng_t *r, const double *v, const double *t,
                       size_t t_stride, size_t n, uint8_t *top, double *val, size_t *done)
{
    size_t i = 0, j, m, k;
    int st = DPF_OK;
    while (i < n) {
        /* every CHUNK-th query, whatever the data: the next chunk's noise */
        if (s->secret_qpos >= DPF_SVT_CHUNK) refill_query_noise(s, r);
        m = DPF_SVT_CHUNK - s->secret_qpos;
        if (m > n - i) m = n - i;
        k = secure_run(s, v, t, t_stride, i, m, top);
        s->secret_qpos += (uint32_t)(k < i + m ? k - i + 1 : m);  /* noise used so far */
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
                s->halted = 1;      /* query k stays unanswered */
                break;
            }
            /* f + x is the DP integer; the float is computed from it alone. */
            val[k] = ((double)(f + x) + 0.5) * s->grid;
        }
        i = k + 1;
        st = after_top(s, r);
        if (s->halted) break;
    }
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
        size_t hit = end;                   /* first top in [i, end), or end */
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
    else
        st = fast_feed(s, r, v, t, t_stride, n, top, val, done);
    s->consumed += *done;
    return st;
}
