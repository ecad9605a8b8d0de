/* Selection and randomized response kernels (see dpfast/selection.h for the contract).
 *
 * References
 *   [DR14]  Dwork & Roth, The Algorithmic Foundations of Differential Privacy, ch. 3.
 *   [CKS20] Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy",
 *           NeurIPS 2020 (exact Bernoulli(exp(-x)), geometric, discrete Laplace).
 *   [MS20]  McKenna & Sheldon, "Permute-and-Flip", NeurIPS 2020.
 *   [DKSSWXZ21] Ding, Kifer, Saghaian, Steinke, Wang, Xiao, Zhang, "The Permute-and-Flip
 *           Mechanism is Identical to Report-Noisy-Max with Exponential Noise", 2021.
 *   [DR19]  Durfee & Rogers, "Practical Differentially Private Top-k Selection with
 *           Pay-what-you-get Composition", NeurIPS 2019.
 *
 * The exact samplers used here (uniform below n, rational Bernoulli, Bernoulli(exp(-x)),
 * geometric, discrete Laplace) are the ones of csrc/exact.c; this file only composes
 * them.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "dpfast/arith.h"
#include "dpfast/discrete.h"
#include "dpfast/selection.h"

/* ---------------------------------------------------------------- 128-bit helpers */

typedef struct {
    uint64_t hi, lo;
} w128;

static DPF_INLINE w128 mul64(uint64_t a, uint64_t b)
{
    w128 r;
    r.lo = dpf_mul64(a, b, &r.hi);
    return r;
}

static DPF_INLINE w128 w_shl64(uint64_t x, unsigned k)   /* x << k, k < 128 */
{
    w128 r;
    if (k == 0) {
        r.hi = 0;
        r.lo = x;
    } else if (k < 64) {
        r.hi = x >> (64 - k);
        r.lo = x << k;
    } else {
        r.hi = x << (k - 64);
        r.lo = 0;
    }
    return r;
}

static DPF_INLINE w128 w_add(w128 a, w128 b)
{
    w128 r;
    r.lo = a.lo + b.lo;
    r.hi = a.hi + b.hi + (r.lo < a.lo);
    return r;
}

static DPF_INLINE w128 w_sub(w128 a, w128 b)
{
    w128 r;
    r.lo = a.lo - b.lo;
    r.hi = a.hi - b.hi - (a.lo < b.lo);
    return r;
}

static DPF_INLINE int w_lt(w128 a, w128 b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}
static DPF_INLINE int w_is0(w128 a)
{
    return (a.hi | a.lo) == 0;
}

static DPF_INLINE w128 w_shr(w128 x, unsigned s)   /* s < 64 */
{
    w128 r;
    if (s == 0) return x;
    r.lo = (x.lo >> s) | (x.hi << (64 - s));
    r.hi = x.hi >> s;
    return r;
}

/* Uniform on [0, n), n > 0, exactly: rejection from the next power of two. */
static w128 w_uniform_below(dpf_rng_t *r, w128 n)
{
    int bits = n.hi ? 64 + dpf_bitlen64(n.hi) : dpf_bitlen64(n.lo);
    for (;;) {
        w128 v;
        if (bits > 64) {
            int hb = bits - 64;
            v.hi =
                dpf_next_u64(r) & (hb == 64 ? ~(uint64_t)0 : ((((uint64_t)1) << hb) - 1));
            v.lo = dpf_next_u64(r);
        } else {
            v.hi = 0;
            v.lo = dpf_next_u64(r) &
                   (bits == 64 ? ~(uint64_t)0 : ((((uint64_t)1) << bits) - 1));
        }
        if (w_lt(v, n)) return v;
    }
}

/* ---------------------------------------------------------------- score -> grid gap */

/* gap_f64's rounding and error bounds assume every double operation rounds to 53 bits
 * (not x87 extended precision). */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0 && FLT_EVAL_METHOD != -1
#error                                                                                     \
    "dpfast selection.c needs FLT_EVAL_METHOD == 0 (SSE2 doubles), not extended precision"
#endif

#define LAYERS 50            /* layers 0..48 exact, 49 = "deep" (x >= 49) */
#define DEEP 49
#define EXCL 0xFF            /* a candidate already chosen (top-k peeling) */
#define DMAXF 1125899906842624.0   /* 2^50 as a double */
#define MAGIC                                                                              \
    6755399441055744.0   /* 1.5 * 2^52: (MAGIC - t) - MAGIC rounds t to an integer */

/* d = round((u* - u_i) / G), saturated at DMAX.
 *
 * Privacy (why rounding in floating point is harmless here).  Write w_i for the real number
 * -d_i + u* / G, so the sampled weights exp(-gamma d_i) are proportional to exp(gamma w_i).
 * Let v_i = max(u_i/G, u* / G - DMAX), the clamped utility: max of two functions of
 * sensitivity Delta/G, so v_i has sensitivity Delta/G.  In any IEEE rounding mode:
 *   - (u_i - u*) is computed with error <= 2^-52 |result|, and only results with
 *     |result| < DMAX G (1 + 2^-52) avoid saturation, so that error is < G/4;
 *   - multiplying by 1/G = 2^-j is exact (or underflows below 2^-1022, far below 1);
 *   - rounding to an integer errs by < 1 (<= 1/2 in the default mode);
 *   - saturation happens only when the true gap is > DMAX - 1 - 1/4 grid units.
 * Hence |w_i - v_i| < 5/4 for every i (< 3/4 in round-to-nearest), and w has sensitivity
 * < Delta/G + 5/2 <= Delta/G + 3, which is the D the Python layer divides epsilon by
 * (selection.py, _grid).  Shifting by u* (data-dependent) changes no probability: it is a
 * common factor of every weight (Def. 3.4, [DR14]). */
static DPF_INLINE uint64_t gap_f64(double ui, double umax, double inv_grid)
{
    double t = (ui - umax) * inv_grid;     /* <= 0; -inf if the difference overflowed */
    if (!(t > -DMAXF)) return DPF_SEL_DMAX;
    return (uint64_t)(int64_t)((MAGIC - t) - MAGIC);   /* in [0, 2^50] */
}

/* int64 scores are their own grid (G = 1): the gap is exact.  u* >= u_i, so the unsigned
 * difference is the true one, in [0, 2^64). */
static DPF_INLINE uint64_t gap_i64(int64_t ui, int64_t umax)
{
    return (uint64_t)umax - (uint64_t)ui;
}

/* d + shift saturated at 2^64 - 1: an int64 gap can reach 2^64 - 1, so even a shift below
 * 2^62 (tests only) could wrap it to a small gap; saturating only lowers a weight that is
 * already below exp(-gamma 2^62). */
static DPF_INLINE uint64_t add_sat(uint64_t d, uint64_t shift)
{
    return d > UINT64_MAX - shift ? UINT64_MAX : d + shift;
}

static DPF_INLINE uint64_t gap_at(const void *u, int kind, size_t i, const void *umax,
                                  double inv_grid)
{
    if (kind == DPF_SCORES_F64)
        return gap_f64(((const double *)u)[i], *(const double *)umax, inv_grid);
    return gap_i64(((const int64_t *)u)[i], *(const int64_t *)umax);
}

/* x = gamma d in units of 2^-s: the exact product g d (< 2^127). */
static DPF_INLINE unsigned layer_of(w128 x, unsigned s)
{
    w128 n = w_shr(x, s);
    if (n.hi != 0 || n.lo >= DEEP) return DEEP;
    return (unsigned)n.lo;
}

/* ---------------------------------------------------------------- maxima */

static int argmax_excl(const void *u, int kind, size_t m, const uint8_t *skip, size_t *idx)
{
    size_t i, best = (size_t)-1;
    if (kind == DPF_SCORES_F64) {
        const double *x = (const double *)u;
        double b = 0.0;
        for (i = 0; i < m; i++) {
            if (skip && skip[i] == EXCL) continue;
            if (!(x[i] - x[i] == 0.0)) return DPF_E_PARAM;    /* NaN or infinite */
            if (best == (size_t)-1 || x[i] > b) {
                b = x[i];
                best = i;
            }
        }
    } else {
        const int64_t *x = (const int64_t *)u;
        int64_t b = 0;
        for (i = 0; i < m; i++) {
            if (skip && skip[i] == EXCL) continue;
            if (best == (size_t)-1 || x[i] > b) {
                b = x[i];
                best = i;
            }
        }
    }
    if (best == (size_t)-1) return DPF_E_PARAM;
    *idx = best;
    return DPF_OK;
}

int dpf_scores_argmax(const void *u, int kind, size_t m, size_t *idx)
{
    return argmax_excl(u, kind, m, NULL, idx);
}

/* ---------------------------------------------------------------- exact layer coins */

/* Bernoulli(c e^-k) for an integer c < e^k, exactly, by the Poisson representation:
 *   c e^-k = sum_j beta_j P(N = j),  N ~ Poisson(k),
 * with beta_j = 1 for j < J, beta_J = (c - sum_{j<J} k^j/j!) J!/k^J in [0, 1), 0 beyond:
 * draw N, answer 1 if N < J, Bernoulli(beta_J) if N = J, 0 if N > J.  Every number involved
 * is an integer; no exp is evaluated. */
typedef struct {
    uint32_t k, J;
    uint64_t bnum, bden;
} cexp_t;

static cexp_t F7;                 /* 2^10 e^-7 = 0.9338... */
static cexp_t FR[7];              /* 2^LB[r] e^-r, r = 1..6 */
static const unsigned LB[7] = {0, 1, 2, 4, 5, 7, 8};   /* floor(10 r / 7) */
static int layer_a[LAYERS];       /* a(n) = 10 floor(n/7) + LB[n mod 7] <= n log2(e) */

/* With P(J) = J! sum_{j<J} k^j/j!:  sum_{j<=J} k^j/j! = (P(J) + k^J)/J!  and
 * P(J+1) = (J+1)(P(J) + k^J).  J is the first index where the partial sum exceeds c; it
 * exists because the partial sums increase to e^k > c.  All values fit in 64 bits for the
 * (c, k) used here (J <= 15). */
static void cexp_build(cexp_t *t, uint64_t c, uint32_t k)
{
    uint64_t P = 0, fact = 1, kp = 1;
    uint32_t J = 0;
    while (c * fact >= P + kp) {
        P = (J + 1) * (P + kp);
        fact *= J + 1;
        kp *= k;
        J++;
    }
    t->k = k;
    t->J = J;
    t->bnum = c * fact - P;       /* beta_J = bnum / bden in [0, 1) */
    t->bden = kp;
}

void dpf_selection_init(void)
{
    static int done = 0;
    int r, n;
    if (done) return;
    cexp_build(&F7, 1024, 7);
    for (r = 1; r < 7; r++) cexp_build(&FR[r], ((uint64_t)1) << LB[r], (uint32_t)r);
    for (n = 0; n < LAYERS; n++) layer_a[n] = 10 * (n / 7) + (int)LB[n % 7];
    done = 1;
}

/* For the tests: the constants of the coins (k, J, bnum, bden), index 0 = F7. */
void dpf_selection_constants(uint64_t out[7][4])
{
    int r;
    out[0][0] = F7.k;
    out[0][1] = F7.J;
    out[0][2] = F7.bnum;
    out[0][3] = F7.bden;
    for (r = 1; r < 7; r++) {
        out[r][0] = FR[r].k;
        out[r][1] = FR[r].J;
        out[r][2] = FR[r].bnum;
        out[r][3] = FR[r].bden;
    }
}

typedef struct {
    uint64_t w;
    int n;
} bitbuf_t;

static DPF_INLINE int next_bit(dpf_rng_t *r, bitbuf_t *b)
{
    int v;
    if (b->n == 0) {
        b->w = dpf_next_u64(r);
        b->n = 64;
    }
    v = (int)(b->w & 1);
    b->w >>= 1;
    b->n--;
    return v;
}

/* Poisson(1), exactly, by rejection from P(j) = 2^-(j+1): the ratio of e^-1/j! to it is at
 * most 4/e (j = 1, 2), so accept j with probability (e^-1/j!) / (2^-(j+1) 4/e) =
 * 2^(j-1)/j!, which is 1/2 for j = 0, 1 for j = 1, 2 and prod_{i=3..j} (2/i) beyond:
 * rational coins only. */
static int poisson1(dpf_rng_t *r, bitbuf_t *bb, uint64_t *out)
{
    for (;;) {
        uint64_t j = 0, i;
        int ok = 1;
        while (next_bit(r, bb)) j++;
        if (j == 0) ok = next_bit(r, bb);
        for (i = 3; i <= j && ok; i++) {
            ok = dpf_bernoulli_rational(r, 2, i);
            if (ok < 0) return -ok;
        }
        if (ok) {
            *out = j;
            return DPF_OK;
        }
    }
}

/* 1 with probability c e^-k (see cexp_t); negative status on error. */
static int bern_cexp(dpf_rng_t *r, bitbuf_t *bb, const cexp_t *c)
{
    uint64_t N = 0, p;
    uint32_t t;
    for (t = 0; t < c->k; t++) {
        int st = poisson1(r, bb, &p);
        if (st != DPF_OK) return -st;
        N += p;
        if (N > c->J) return 0;
    }
    if (N < c->J) return 1;
    return dpf_bernoulli_rational(r, c->bnum, c->bden);
}

/* Layer n's acceptance: Bernoulli(2^a(n) e^-n) with n = 7q + r, a(n) = 10q + LB[r], as the
 * product of q coins Bernoulli(2^10 e^-7) and one Bernoulli(2^LB[r] e^-r). */
static int layer_coin(dpf_rng_t *r, bitbuf_t *bb, unsigned n)
{
    unsigned q = n / 7, rr = n % 7, i;
    for (i = 0; i < q; i++) {
        int c = bern_cexp(r, bb, &F7);
        if (c <= 0) return c;
    }
    return rr ? bern_cexp(r, bb, &FR[rr]) : 1;
}

/* Bernoulli(exp(-(x / 2^s - n))) for a member of layer n, x = g d (exact).  For n < DEEP the
 * exponent is the fraction F / 2^s in [0, 1); in the deep layer it is (floor - 49) + F/2^s,
 * drawn as that many Bernoulli(e^-1) coins and one Bernoulli(e^-F/2^s) ([CKS20], Alg. 1). */
static int member_coin(dpf_rng_t *r, w128 x, unsigned s, unsigned n)
{
    uint64_t F = s ? (x.lo & ((((uint64_t)1) << s) - 1)) : 0;
    uint64_t den = ((uint64_t)1) << s;
    if (n == DEEP) {
        w128 N = w_sub(w_shr(x, s), w_shl64(DEEP, 0));
        w128 one = {0, 1};
        while (!w_is0(N)) {
            int c = dpf_bernoulli_exp(r, 1, 1);
            if (c <= 0) return c;
            N = w_sub(N, one);
        }
    }
    return dpf_bernoulli_exp(r, F, den);
}

/* Index of the j-th (0-based) candidate in layer L. */
static size_t find_jth(const uint8_t *layer, size_t m, unsigned L, uint64_t j)
{
    size_t i = 0;
    uint64_t seen = 0;
    for (; i + 64 <= m; i += 64) {
        unsigned c = 0, t;
        for (t = 0; t < 64; t++) c += (layer[i + t] == L);
        if (seen + c > j) break;
        seen += c;
    }
    for (; i < m; i++)
        if (layer[i] == L) {
            if (seen == j) return i;
            seen++;
        }
    return (size_t)-1;   /* unreachable when j < count of layer L */
}

/* Layers of the candidates in play (layer[i] != EXCL) below the maximum u[imax]. */
static void build_layers(const void *u, int kind, size_t m, size_t imax,
                         const dpf_sel_grid_t *gp, uint64_t shift, uint8_t *layer,
                         uint64_t cnt[LAYERS])
{
    uint64_t c4[4][LAYERS];
    size_t i;
    unsigned s = gp->s;
    uint64_t g = gp->g;
    int L;
    memset(c4, 0, sizeof c4);
    if (kind == DPF_SCORES_F64) {
        const double *x = (const double *)u;
        double um = x[imax], inv = gp->inv_grid;
        for (i = 0; i < m; i++) {
            unsigned n;
            if (layer[i] == EXCL) continue;
            n = layer_of(mul64(g, gap_f64(x[i], um, inv) + shift), s);
            layer[i] = (uint8_t)n;
            c4[i & 3][n]++;
        }
    } else {
        const int64_t *x = (const int64_t *)u;
        int64_t um = x[imax];
        for (i = 0; i < m; i++) {
            unsigned n;
            if (layer[i] == EXCL) continue;
            n = layer_of(mul64(g, add_sat(gap_i64(x[i], um), shift)), s);
            layer[i] = (uint8_t)n;
            c4[i & 3][n]++;
        }
    }
    for (L = 0; L < LAYERS; L++) cnt[L] = c4[0][L] + c4[1][L] + c4[2][L] + c4[3][L];
}

/* One draw of the exponential mechanism over the candidates in play.
 *
 * Target: P(i) proportional to exp(-x_i), x_i = gamma d_i = g d_i / 2^s, exactly.
 * Layers: n_i = min(floor(x_i), 49).  Rejection sampling with the envelope 2^-a(n_i):
 *   1. propose layer n with probability proportional to C_n 2^-a(n) (C_n candidates in it):
 *      integer weights C_n 2^(70 - a(n)) < 2^110, an exact uniform draw below their sum;
 *   2. accept the layer with probability 2^a(n) e^-n (layer_coin; <= 1 since
 *      a(n) <= n log2(e): 10/7 < log2(e) and LB[r] <= r log2(e));
 *   3. pick a member i of layer n uniformly (probability 1/C_n);
 *   4. accept i with probability e^-(x_i - n) (member_coin).
 * A round returns i with probability 2^-a(n) 2^a(n) e^-n e^-(x_i - n) / Z' = e^-x_i / Z',
 * so the output law is exactly the exponential mechanism's (Def. 3.4, [DR14]).  Every step
 * is an exact sampler on integers; no floating point touches a probability.
 * A round succeeds with probability >= 0.9338^6 * 0.54 * e^-1 > 0.12 (layers 0..48) and the
 * deep layer is proposed with probability < m 2^-70.
 * Timing: the layer pass is O(m) whatever the data; the number of rounds (geometric, mean
 * < 8) and each round's cost depend on the scores.  This path is not constant time. */
static int em_draw(dpf_rng_t *r, const void *u, int kind, size_t m,
                   const dpf_sel_grid_t *gp, uint64_t shift, uint8_t *layer, size_t *out)
{
    uint64_t cnt[LAYERS];
    w128 W[LAYERS], total = {0, 0};
    size_t imax, i;
    unsigned n;
    bitbuf_t bb = {0, 0};
    int st = argmax_excl(u, kind, m, layer, &imax);
    if (st != DPF_OK) return st;
    build_layers(u, kind, m, imax, gp, shift, layer, cnt);
    for (n = 0; n < LAYERS; n++) {
        W[n] = w_shl64(cnt[n], (unsigned)(70 - layer_a[n]));
        total = w_add(total, W[n]);
    }
    for (;;) {
        w128 v = w_uniform_below(r, total), acc = {0, 0};
        uint64_t j;
        int c;
        for (n = 0; n < LAYERS; n++) {
            acc = w_add(acc, W[n]);
            if (w_lt(v, acc)) break;
        }
        c = layer_coin(r, &bb, n);
        if (c < 0) return -c;
        if (!c) continue;
        j = dpf_uniform_below(r, cnt[n]);
        i = find_jth(layer, m, n, j);
        if (i == (size_t)-1) return DPF_E_PARAM;
        {
            const void *umax = kind == DPF_SCORES_F64
                                   ? (const void *)((const double *)u + imax)
                                   : (const void *)((const int64_t *)u + imax);
            w128 x = mul64(gp->g, add_sat(gap_at(u, kind, i, umax, gp->inv_grid), shift));
            c = member_coin(r, x, gp->s, n);
        }
        if (c < 0) return -c;
        if (c) {
            *out = i;
            return DPF_OK;
        }
    }
}

int dpf_em_secure_shifted(dpf_rng_t *r, const void *u, int kind, size_t m,
                          const dpf_sel_grid_t *grid, uint64_t shift, size_t *out)
{
    uint8_t *layer;
    int st;
    if (m == 0 || (uint64_t)m > DPF_SEL_MAX_CANDIDATES || grid->s > 63) return DPF_E_PARAM;
    if (kind == DPF_SCORES_F64 ? shift > DPF_SEL_DMAX : shift >= ((uint64_t)1) << 62)
        return DPF_E_PARAM;   /* (int64 gaps saturate: add_sat) */
    layer = (uint8_t *)calloc(m, 1);
    if (!layer) return DPF_E_NOMEM;
    st = em_draw(r, u, kind, m, grid, shift, layer, out);
    free(layer);
    return st;
}

int dpf_em_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                  const dpf_sel_grid_t *grid, size_t *out)
{
    return dpf_em_secure_shifted(r, u, kind, m, grid, 0, out);
}

/* Peeling top-k: k adaptive rounds of the exponential mechanism, each over the candidates
 * not chosen yet (the range of a round depends only on earlier outputs).  Each round is
 * (2 gamma D)-DP, so k rounds cost k times that by basic composition (Thm 3.16, [DR14]);
 * the Python layer divides epsilon by k. */
int dpf_topk_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                    const dpf_sel_grid_t *grid, size_t k, int64_t *out)
{
    uint8_t *layer;
    int st;
    if (m == 0 || k > m || (uint64_t)m > DPF_SEL_MAX_CANDIDATES || grid->s > 63)
        return DPF_E_PARAM;
    layer = (uint8_t *)calloc(m, 1);
    if (!layer) return DPF_E_NOMEM;
    st = dpf_topk_secure_rounds(r, u, kind, m, grid, layer, 0, k, out);
    free(layer);
    return st;
}

/* Rounds [t0, t1) of the peeling above, with the caller's exclusion buffer (m bytes, zero
 * before round 0, kept between calls): the caller may stop between calls (Ctrl-C) without
 * touching the privacy-critical round itself. */
int dpf_topk_secure_rounds(dpf_rng_t *r, const void *u, int kind, size_t m,
                           const dpf_sel_grid_t *grid, uint8_t *layer, size_t t0, size_t t1,
                           int64_t *out)
{
    size_t t, i;
    int st = DPF_OK;
    if (m == 0 || t1 > m || t0 > t1 || (uint64_t)m > DPF_SEL_MAX_CANDIDATES || grid->s > 63)
        return DPF_E_PARAM;
    for (t = t0; t < t1; t++) {
        st = em_draw(r, u, kind, m, grid, 0, layer, &i);
        if (st != DPF_OK) break;
        out[t] = (int64_t)i;
        layer[i] = EXCL;
    }
    return st;
}

/* ---------------------------------------------------------------- secure noisy max */

typedef struct {
    int64_t hi;
    uint64_t lo;
} s128;

static DPF_INLINE s128 s128_diff(int64_t z, uint64_t d)     /* z - d, exactly */
{
    s128 v;
    uint64_t lo = (uint64_t)z;
    v.hi = (z < 0 ? -1 : 0) - (int64_t)(lo < d);
    v.lo = lo - d;
    return v;
}

static DPF_INLINE int s128_cmp(s128 a, s128 b)
{
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return 0;
}

/* argmax_i (Z_i - d_i) with ties broken uniformly at random (reservoir: the c-th tie
 * replaces the current choice with probability 1/c, exactly).
 *
 * Exponential noise (permute-and-flip).  On integer scores, continuous Exponential noise of
 * rate gamma splits into its integer part, Geometric with ratio e^-gamma, and an independent
 * fractional part with the same law for every candidate (memorylessness).  So the argmax of
 * the continuous noisy scores is the argmax of the geometric ones with uniform tie-breaking:
 * this is exactly one-sided exponential noisy max ([DR14] before Thm 3.13), which has the
 * law of permute-and-flip [MS20, DKSSWXZ21] -- not the exponential mechanism's, as [DR14]
 * Thm 3.13 states (an erratum: two candidates with scores 0 and c already tell the two
 * laws apart).
 *
 * Laplace noise: exact discrete Laplace P(Z = z) proportional to exp(-gamma |z|).
 *
 * Privacy of both (the argument of Claim 3.9 [DR14], on integers).  Add an independent
 * uniform U_j on [0,1) to every Z_j: uniform tie-breaking is the argmax of V_j - d_j with
 * V_j = Z_j + U_j.  Fix V_j for j != i; i wins iff V_i > T = max_{j!=i} (V_j - d_j) + d_i, so
 * P(i wins) = S(T), S the survival function of V.  On a neighbouring data set the gaps are
 * d'_j and T' <= T + Q with Q = max_{j!=i} (d_j - d'_j) + (d'_i - d_i): an INTEGER, and Q is
 * at most the width W of the interval in which all the utilities move (selection.py,
 * _grid), hence Q <= floor(W).  For integer shifts n >= 0, S(t + n) >= e^(-gamma n) S(t)
 * for every real t (term by term, since P(Z = z+1) >= e^-gamma P(Z = z) for all z; this
 * fails for non-integer shifts, which is why Q's integrality matters).  So
 * P'(i) = S(T') >= S(T + Q) >= e^(-gamma Q) S(T) >= e^(-gamma W) P(i), and symmetrically:
 * gamma W <= epsilon-DP. */
/* From this many candidates on, the noise comes from the prepared exact samplers of
 * prepared.c (the same law; a set-up of about 0.1 ms, then several times faster). */
#define SEL_PREPARED_MIN 4096

int dpf_noisy_max_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                         const dpf_sel_grid_t *gp, int noise, size_t *out)
{
    enum { B = 256 };
    int64_t z[B];
    size_t imax, i, best = 0;
    uint64_t ties = 0, s_num;
    s128 bv = {0, 0};
    const void *umax;
    dpf_dlap_exact_t *prep = NULL;
    int st;
    if (m == 0 || gp->s > 63) return DPF_E_PARAM;
    if (gp->g == 0) return DPF_E_RANGE;
    st = argmax_excl(u, kind, m, NULL, &imax);
    if (st != DPF_OK) return st;
    umax = kind == DPF_SCORES_F64 ? (const void *)((const double *)u + imax)
                                  : (const void *)((const int64_t *)u + imax);
    s_num = ((uint64_t)1) << gp->s; /* noise scale 1/gamma = 2^s / g grid units */
    if (m >= SEL_PREPARED_MIN) {
        prep = (dpf_dlap_exact_t *)malloc(sizeof *prep);
        if (!prep) return DPF_E_NOMEM;
        st = dpf_dlap_exact_prepare(prep, s_num, gp->g, 64);
        if (st != DPF_OK) {
            free(prep);
            return st;
        }
    }
    for (i = 0; i < m; i += B) {
        size_t nb = m - i < B ? m - i : B, t;
        if (prep)
            st = noise == DPF_NOISE_LAPLACE
                     ? dpf_discrete_laplace_exact_fill(r, prep, z, nb)
                     : dpf_geometric_exact_fill(r, prep, z, nb);
        else
            st = noise == DPF_NOISE_LAPLACE
                     ? dpf_discrete_laplace_fill(r, s_num, gp->g, z, nb)
                     : dpf_geometric_fill(r, s_num, gp->g, z, nb);
        if (st != DPF_OK) {
            free(prep);
            return st;
        }
        for (t = 0; t < nb; t++) {
            s128 v = s128_diff(z[t], gap_at(u, kind, i + t, umax, gp->inv_grid));
            int c = ties ? s128_cmp(v, bv) : 1;
            if (c > 0) {
                bv = v;
                best = i + t;
                ties = 1;
            } else if (c == 0) {
                ties++;
                if (dpf_uniform_below(r, ties) == 0) best = i + t;
            }
        }
    }
    free(prep);
    *out = best;
    return DPF_OK;
}

/* ---------------------------------------------------------------- fast (simulation) */

#define TWO_M64 5.421010862427522e-20 /* 2^-64 */
#define LOG2E_LO 1.4426950408889 /* just below log2(e): floor(delta*it) is safe */
#define FAST_BLOCK 256 /* words per block: 512 candidates */

static void fill_words(dpf_rng_t *r, uint64_t *buf, size_t n)
{
    size_t i;
    if (r->cc) {
        dpf_chacha_fill(r->cc, buf, n);
        return;
    }
    for (i = 0; i < n; i++) buf[i] = r->next_u64(r->state);
}

/* The noise of one candidate from its 32-bit chunk c (plus fresh bits when needed).
 * V = (w + 1) 2^-64 in (0, 1], w a uniform 64-bit word whose top bits come from c. */
static DPF_INLINE double noise_full(dpf_rng_t *r, uint32_t c, int kind)
{
    if (kind == DPF_NOISE_LAPLACE) {
        /* bit 0 of c: the sign; bits 1..31: the top of V */
        uint64_t w = (((uint64_t)(c >> 1)) << 33) | (dpf_next_u64(r) >> 31);
        double e = -log(((double)w + 1.0) * TWO_M64);
        return (c & 1) ? -e : e;
    } else {
        uint64_t w = (((uint64_t)c) << 32) | (dpf_next_u64(r) >> 32);
        double v = ((double)w + 1.0) * TWO_M64;
        if (kind == DPF_NOISE_EXPONENTIAL) return -log(v);
        return -log(-log1p(-v)); /* Gumbel: -log(-log(1 - V)) */
    }
}

/* True when the candidate provably cannot beat the current best: its noise is <= delta.
 * With k = floor(delta log2 e) (delta >= 0), e^-delta <= 2^-k, and
 *   Gumbel       -log(-log(1-V)) <= delta  <=  -log(1-V) >= e^-delta  <=  V >= 2^-k,
 *   Exponential  -log V <= delta           <=  V >= 2^-k,
 *   Laplace      a negative sign, or -log V <= delta;
 * V > t 2^-b when t holds the top b bits of V, so t >= max(1, 2^b >> k) implies V >= 2^-k.
 * Branch-free: the outcome is a coin flip the predictor would miss. */
static DPF_INLINE int pruned(uint32_t c, double delta, int kind)
{
    double dd = delta > 0.0 ? (delta < 40.0 ? delta : 40.0) : 0.0; /* NaN -> 0: keep */
    unsigned k = (unsigned)(dd * LOG2E_LO); /* 0 .. 57 */
    if (kind == DPF_NOISE_LAPLACE) {
        uint64_t thr = (((uint64_t)1) << 31) >> (k > 31 ? 31 : k); /* >= 1 */
        return (int)((c & 1) & (delta >= 0.0)) | (int)((uint64_t)(c >> 1) >= thr);
    } else {
        uint64_t thr = (((uint64_t)1) << 32) >> (k > 32 ? 32 : k); /* >= 1 */
        return (uint64_t)c >= thr;
    }
}

int dpf_noisy_max_fast(dpf_rng_t *r, const double *u, size_t m, double gamma, int noise,
                       size_t *out)
{
    uint64_t buf[FAST_BLOCK];
    size_t imax, i, best;
    double um, B;
    int st = argmax_excl(u, DPF_SCORES_F64, m, NULL, &imax);
    if (st != DPF_OK) return st;
    um = u[imax];
    best = imax;
    B = noise_full(r, (uint32_t)dpf_next_u64(r), noise); /* gamma (u* - u*) = 0 */
    for (i = 0; i < m; i += 2 * FAST_BLOCK) {
        size_t nb = m - i < 2 * FAST_BLOCK ? m - i : 2 * FAST_BLOCK, t;
        const uint32_t *c32 = (const uint32_t *)buf;
        fill_words(r, buf, (nb + 1) / 2);
        for (t = 0; t < nb; t++) {
            double w = gamma * (u[i + t] - um); /* <= 0, or -inf: never NaN */
            uint32_t c = c32[t];
            double val;
            if (pruned(c, B - w, noise) | (i + t == imax)) continue;
            val = w + noise_full(r, c, noise);
            if (val > B) {
                B = val;
                best = i + t;
            }
        }
    }
    memset(buf, 0, sizeof buf);
    *out = best;
    return DPF_OK;
}

/* min-heap of (value, index) on value */
static void heap_sift_down(double *hv, int64_t *hi, size_t n, size_t p)
{
    for (;;) {
        size_t l = 2 * p + 1, s = p;
        if (l < n && hv[l] < hv[s]) s = l;
        if (l + 1 < n && hv[l + 1] < hv[s]) s = l + 1;
        if (s == p) return;
        {
            double tv = hv[p];
            hv[p] = hv[s];
            hv[s] = tv;
        }
        {
            int64_t ti = hi[p];
            hi[p] = hi[s];
            hi[s] = ti;
        }
        p = s;
    }
}

static void heap_sift_up(double *hv, int64_t *hi, size_t p)
{
    while (p > 0) {
        size_t q = (p - 1) / 2;
        if (!(hv[p] < hv[q])) return;
        {
            double tv = hv[p];
            hv[p] = hv[q];
            hv[q] = tv;
        }
        {
            int64_t ti = hi[p];
            hi[p] = hi[q];
            hi[q] = ti;
        }
        p = q;
    }
}

/* One-shot Gumbel top-k: the indices of the k largest gamma (u_i - u*) + G_i, largest first.
 * Its law is that of k rounds of peeling exponential mechanism [DR19]. */
int dpf_topk_fast(dpf_rng_t *r, const double *u, size_t m, double gamma, size_t k,
                  int64_t *out)
{
    uint64_t buf[FAST_BLOCK];
    size_t imax, i, n = 0;
    double um, *hv;
    int64_t *hidx;
    int st;
    if (k == 0 || k > m) return DPF_E_PARAM;
    st = argmax_excl(u, DPF_SCORES_F64, m, NULL, &imax);
    if (st != DPF_OK) return st;
    um = u[imax];
    hv = (double *)malloc(k * sizeof *hv);
    hidx = (int64_t *)malloc(k * sizeof *hidx);
    if (!hv || !hidx) {
        free(hv);
        free(hidx);
        return DPF_E_NOMEM;
    }
    for (i = 0; i < m; i += 2 * FAST_BLOCK) {
        size_t nb = m - i < 2 * FAST_BLOCK ? m - i : 2 * FAST_BLOCK, t;
        const uint32_t *c32 = (const uint32_t *)buf;
        fill_words(r, buf, (nb + 1) / 2);
        for (t = 0; t < nb; t++) {
            double w = gamma * (u[i + t] - um), val;
            uint32_t c = c32[t];
            if (n == k && pruned(c, hv[0] - w, DPF_NOISE_GUMBEL)) continue;
            val = w + noise_full(r, c, DPF_NOISE_GUMBEL);
            if (n < k) {
                hv[n] = val;
                hidx[n] = (int64_t)(i + t);
                heap_sift_up(hv, hidx, n);
                n++;
            } else if (val > hv[0]) {
                hv[0] = val;
                hidx[0] = (int64_t)(i + t);
                heap_sift_down(hv, hidx, k, 0);
            }
        }
    }
    memset(buf, 0, sizeof buf);
    /* pop the smallest first into the back of out: largest first */
    while (n > 0) {
        out[n - 1] = hidx[0];
        n--;
        hv[0] = hv[n];
        hidx[0] = hidx[n];
        heap_sift_down(hv, hidx, n, 0);
    }
    free(hv);
    free(hidx);
    return DPF_OK;
}

/* ---------------------------------------------------------------- randomized response */

/* Claim 3.5 [DR14]: tails (first coin 0): the truth; heads: the second coin.  Branch-free
 * in the truth: the running time does not depend on the respondent's answer. */
void dpf_rr_coins(dpf_rng_t *r, const uint8_t *truth, uint8_t *out, size_t n)
{
    uint64_t w = 0;
    int left = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        uint8_t first, second, mask;
        if (left == 0) {
            w = dpf_next_u64(r);
            left = 32;
        }
        first = (uint8_t)(w & 1);
        second = (uint8_t)((w >> 1) & 1);
        w >>= 2;
        left--;
        mask = (uint8_t)(0 - first);
        out[i] = (uint8_t)((second & mask) | ((truth[i] & 1) & (uint8_t)~mask));
    }
}

/* Bernoulli(t / 2^64) by lazy comparison of a uniform 64-bit integer U with t: its top byte
 * decides unless it equals t's top byte (probability 1/256), then 56 more bits decide
 * (U < t exactly; U = t counts as not below).  So the law is exactly t / 2^64 and the work
 * does not depend on the truth. */
void dpf_rr_binary(dpf_rng_t *r, const uint8_t *truth, uint8_t *out, size_t n, uint64_t t)
{
    uint64_t w = 0, tl = t & ((((uint64_t)1) << 56) - 1);
    unsigned th = (unsigned)(t >> 56);
    int left = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned b;
        uint8_t flip;
        if (left == 0) {
            w = dpf_next_u64(r);
            left = 8;
        }
        b = (unsigned)(w & 0xff);
        w >>= 8;
        left--;
        flip = (uint8_t)(b < th);
        if (DPF_UNLIKELY(b == th)) flip = (uint8_t)((dpf_next_u64(r) >> 8) < tl);
        out[i] = (uint8_t)((truth[i] & 1) ^ flip);
    }
}

void dpf_rr_kary(dpf_rng_t *r, const int64_t *truth, int64_t *out, size_t n, uint64_t k,
                 uint64_t t)
{
    uint64_t w = 0, tl = t & ((((uint64_t)1) << 56) - 1);
    unsigned th = (unsigned)(t >> 56);
    int left = 0;
    size_t i;
    if (t == ~(uint64_t)0) {
        /* epsilon so small that the certified threshold would reach (k-1)/k: answer
         * uniformly on [0, k), independently of the truth (0-DP) */
        for (i = 0; i < n; i++) out[i] = (int64_t)dpf_uniform_below(r, k);
        return;
    }
    for (i = 0; i < n; i++) {
        unsigned b;
        int flip;
        if (left == 0) {
            w = dpf_next_u64(r);
            left = 8;
        }
        b = (unsigned)(w & 0xff);
        w >>= 8;
        left--;
        flip = b < th;
        if (DPF_UNLIKELY(b == th)) flip = (dpf_next_u64(r) >> 8) < tl;
        if (flip) {
            /* uniform on the k - 1 values other than the truth (Lemire, exact) */
            int64_t v = (int64_t)dpf_uniform_below(r, k - 1);
            out[i] = v + (v >= truth[i]);
        } else {
            out[i] = truth[i];
        }
    }
}
