/* Exact discrete Gaussian by blocks: rejection from a step-function envelope.
 *
 * References
 *   [vN51] J. von Neumann, "Various techniques used in connection with random digits", 1951
 *          (the rejection method).
 *   [D86]  L. Devroye, "Non-Uniform Random Variate Generation", Springer 1986, Ch. II.3
 *          (the rejection method: a dominating envelope, acceptance f/e).
 *   [CA74] H. C. Chen, Y. Asau, "On generating random variates from an empirical
 *          distribution", AIIE Transactions 6 (1974) (guide tables for inversion).
 *   [CKS]  C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
 *          Privacy", NeurIPS 2020: Algorithm 3 (the previous sampler, still the scalar one
 *          and reachable with span2 = 0; its sign/zero handling is reused here).
 *
 * Target: P(Y = y) proportional to f(y) = exp(-y^2 / (2 sigma^2)) on Z, sigma^2 = a/b,
 * t = floor(sigma) + 1 > sigma.  Block width m = 2^bits, the largest with m <= t/16 (m = 1
 * for t < 32; t/32 at sigma near 2^32, where P below must fit a word), J blocks with
 * (J m)^2 >= span2 sigma^2 (span2 = 70: f(J m) <= e^-35), q = exp(-1/t).
 *
 * Claim 1 (sign).  If Z >= 0 has P(Z = z) proportional to f(z) and S is a fair sign
 * independent of Z, then Y = S Z given not (S = -, Z = 0) has P(Y = y) = f(|y|)/(2F) / c
 * for every y (F = sum f(z), c the probability of keeping): the law of Y.  ([CKS] Alg. 3.)
 * Claim 1' (m = 1, sigma < 31).  If instead P(Z = z) is proportional to f(z) (2 - [z = 0])
 * (the law of |Y|), Y = S Z with no rejection has the law of Y; Claims 2-4 hold for this
 * folded law with every weight w_j, j >= 1 (and the tail's), doubled: with m = 1 the blocks
 * are single points, so the envelope still equals the folded law on every block.
 *
 * Claim 2 (envelope).  e(z) = f(j m) on the block j m <= z < (j + 1) m, j < J, and
 * e(z) = f(J m) q^(z - J m) for z >= J m.  Then f <= e: f decreases on z >= 0; on the tail,
 * z^2 - (J m)^2 = (z - J m)(z + J m) >= 2 J m (z - J m), so f(z) <= f(J m) exp(-(z - J m)
 * J m / sigma^2) <= f(J m) q^(z - J m), as J m / sigma^2 >= 1/sigma > 1/t (span2 >= 1 gives
 * J m >= sigma).  Its mass is M = m sum_{j<J} f(j m) + f(J m) / (1 - q).
 *
 * Claim 3 (proposal).  Choose a bucket B in {0..J} with P(B = j) = w_j / W, w_j = f(j m) for
 * j < J and w_J = f(J m) / (m (1 - q)), W = sum w_j; for B = j < J put Z = j m + u with u
 * uniform on [0, m); for B = J put Z = J m + D, D ~ Geometric(q).  Then P(Z = z) =
 * e(z) / (m W) = e(z) / M for every z >= 0: the envelope's normalised law.
 *
 * Claim 4 (acceptance, [vN51], [D86] II.3).  Accepting Z with probability f(Z)/e(Z) <= 1,
 * from fresh randomness, and starting again otherwise, gives P(Z = z) proportional to f(z):
 *   - block j: f(z)/f(j m) = exp(-u (2 j m + u) / (2 sigma^2)) = exp(-P b / (2 a)), with the
 *     integer P = u (2 j m + u) < 2^64 (checked at set-up);
 *   - tail: f(z)/e(z) = exp(-E_d), E_d = [t b d (d + 2 J m) - 2 a d] / (2 a t) >= 0 by
 *     Claim 2 (t b (d + 2 J m) >= 2 t b J m >= 2 a): an exact multi-word Bernoulli(exp(-E_d))
 *     (exact.c), as is D (dpf_geometric).  P(B = J) < 2^-50 at span2 = 70.
 * Acceptance is about 1/(1 + 0.4 m/sigma) >= 0.97 per trial (Euler-Maclaurin on
 * sum f(j m)), against 0.76 for [CKS] Algorithm 3 at large sigma, and a trial costs one word.
 *
 * Claim 5 (one word per trial).  The bits of a uniform word are independent fair bits.  Of
 * the trial's word w: bits [0, bits) are u, bit `bits` is S, the next BK_PB bits start the
 * acceptance uniform V, the top ubits = 64 - bits - 1 - BK_PB (>= 24) start the bucket's
 * uniform U; any further bits of U or V come from fresh words, drawn only by this trial.  So
 * B, u, S and V are independent with the laws above, and trials are independent.
 *
 * Claim 6 (exact comparisons; the certified-threshold discipline of tables.h).  B is
 * #{j < J : C_j <= U}, C_j = (w_0 + .. + w_j) / W (inversion; a guide table [CA74]
 * indexed by w's top bits starts the scan).  The C_j are certified 192-bit intervals
 * (outward rounding in certified.c, nothing from libm), stored as 64-bit floor bounds: U is
 * certainly below or above C_j unless its leading bits equal the bound's, and then the
 * comparison continues exactly, with fresh words for U, against a 704-bit interval of C_j
 * (all J computed once per fill call, on the first such tie).  V < p for the acceptance p is
 * decided by an enclosure plo <= 2^64 p <= phi from 64-bit integer arithmetic: E 2^54 =
 * P K, K = 2^53 b / a in [kf, kf + 1) / 2^ks, so floor(P kf / 2^ks) <= E 2^54 <=
 * floor(P (kf + 1) / 2^ks) + 1, then exp(-E) by expfix.h (a certified table of exp(-i/32)
 * times a Taylor enclosure, crude first), V being first known through its BK_PB bits in
 * w (V in [v, v + 1) / 2^BK_PB) and then through a fresh word's bits (p = 1 exactly when
 * u = 0).  A V inside [plo, phi] continues exactly against a 704-bit interval of
 * exp(-P b / (2a)).  Undecided after 704 bits (probability below 2^-600): DPF_E_RANGE, no
 * value.
 */
#include <stdlib.h>
#include <string.h>
#include "dpfast/arith.h"
#include "dpfast/certified.h"
#include "dpfast/exact.h"
#include "dpfast/expfix.h"
#include "dpfast/tables.h"
#include "dpfast/dgauss.h"

#define BK_PB 8 /* V's bits taken from the trial's word */
#define BK_VSHIFT (64 - BK_PB)
#define BK_GUIDE_SHIFT (64 - DPF_XT_GUIDE_BITS)

/* N = x^2 b (x = j m < 2^40), three words; returns the length (>= 1). */
static int sq_b(uint64_t N[4], uint64_t x, uint64_t b)
{
    uint64_t s[2];
    s[0] = dpf_mul64(x, x, &s[1]);
    dpf_big_mul_u64(N, s, 2, b);
    return dpf_big_len(N, 3) ? dpf_big_len(N, 3) : 1;
}

/* floor(2^64 v) of a certified value v in [0, 1], saturated at 2^64 - 1. */
static uint64_t word_of(const dpf_fx_t *v, int n)
{
    return v->w[n - 1] ? UINT64_MAX : v->w[n - 2];
}

/* The certified cumulative thresholds C_0..C_(J-1) at precision n, in c[0..J-1]
 * (c holds J + 1 intervals: Claim 3's weights, then their prefix sums, then / W).  The
 * weights follow the exact recurrence w_0 = 1, w_(j+1) = w_j G_j, G_j = exp(-(2j + 1) c),
 * G_(j+1) = G_j exp(-2c), c = m^2 b / (2a) (as (j+1)^2 - j^2 = 2j + 1), each product
 * rounded down for the lower bounds and up for the upper ones: about 3 J ulp of drift, far
 * below the 2^-57 between thresholds. */
static void bk_cumulative(const dpf_dgblock_t *k, dpf_fxi_t *c, int n)
{
    const uint32_t J = k->nblk;
    uint64_t N[4], D[2], one = 1;
    dpf_fxi_t e1, q, G, Q2, S;
    dpf_fx_t unit, dlo, dhi, rlo, rhi;
    uint32_t j;
    int nn;
    dpf_fx_exp_m1(&e1, n);
    nn = sq_b(N, k->m, k->b);
    D[0] = k->a << 1;
    D[1] = k->a >> 63;
    dpf_fx_exp_neg_big(&G, N, nn, D, 2, &e1, n); /* exp(-c) */
    dpf_fx_exp_neg_big(&Q2, N, nn, &k->a, 1, &e1, n); /* exp(-2c) */
    dpf_fx_int(&c[0].lo, 1, n);
    c[0].hi = c[0].lo;
    for (j = 0; j < J; j++) {
        dpf_fx_mul(&c[j + 1].lo, &c[j].lo, &G.lo, 0, n);
        dpf_fx_mul(&c[j + 1].hi, &c[j].hi, &G.hi, 1, n);
        dpf_fx_mul(&G.lo, &G.lo, &Q2.lo, 0, n);
        dpf_fx_mul(&G.hi, &G.hi, &Q2.hi, 1, n);
    }
    /* w_J = f(J m) / (m (1 - q)), q = exp(-1/t): 1 - q in [1 - q.hi, 1 - q.lo], times m
     * exactly (m (1 - q) < m / t < 1) */
    dpf_fx_exp_neg_big(&q, &one, 1, &k->t, 1, &e1, n);
    dpf_fx_int(&unit, 1, n);
    dpf_fx_sub(&dlo, &unit, &q.hi, n);
    dpf_fx_sub(&dhi, &unit, &q.lo, n);
    dpf_fx_mul_u64(&dlo, &dlo, k->m, n);
    dpf_fx_mul_u64(&dhi, &dhi, k->m, n);
    dpf_fx_div(&c[J].lo, &c[J].lo, &dhi, 0, n);
    dpf_fx_div(&c[J].hi, &c[J].hi, &dlo, 1, n);
    if (k->m == 1) { /* Claim 1': the folded law, weight 2 f(z) for z >= 1 (exact) */
        for (j = 1; j <= J; j++) {
            dpf_fx_add(&c[j].lo, &c[j].lo, &c[j].lo, n);
            dpf_fx_add(&c[j].hi, &c[j].hi, &c[j].hi, n);
        }
    }
    /* prefix sums (exact: W < 128), then C_j in [sum_lo / W_hi, sum_hi / W_lo] through the
     * reciprocals rounded down and up */
    for (j = 1; j <= J; j++) {
        dpf_fx_add(&c[j].lo, &c[j].lo, &c[j - 1].lo, n);
        dpf_fx_add(&c[j].hi, &c[j].hi, &c[j - 1].hi, n);
    }
    S = c[J];
    dpf_fx_div(&rlo, &unit, &S.hi, 0, n);
    dpf_fx_div(&rhi, &unit, &S.lo, 1, n);
    for (j = 0; j < J; j++) {
        dpf_fx_mul(&c[j].lo, &c[j].lo, &rlo, 0, n);
        dpf_fx_mul(&c[j].hi, &c[j].hi, &rhi, 1, n);
    }
}

/* (x m)^2 b >= span2 a ? */
static int covers(uint64_t x, uint64_t b, uint64_t a, unsigned span2)
{
    uint64_t N[4], A[2];
    A[0] = dpf_mul64(a, span2, &A[1]);
    sq_b(N, x, b);
    return dpf_big_cmp(N, 3, A, 2) >= 0;
}

int dpf_dgblock_prepare(dpf_dgblock_t *k, uint64_t a, uint64_t b, uint64_t t,
                        unsigned fast_bits, unsigned span2)
{
    uint64_t Nb[4], q = 0, rem, hi, lo, pmax;
    dpf_fxi_t *c;
    uint32_t J, j;
    int ks, len, i, fits = 0;
    memset(k, 0, sizeof *k);
    if (t < DPF_DGBLOCK_TMIN || fast_bits < 1 || fast_bits > 64 || span2 < 1 || b == 0)
        return DPF_E_PARAM;
    k->a = a;
    k->b = b;
    k->t = t;
    k->bits = t >= 16 ? (uint32_t)dpf_bitlen64(t) - 5 : 0; /* largest: 2^(bits + 4) <= t */
    if (k->bits > 31) return DPF_E_RANGE; /* sigma >= 2^36: not needed */
    /* K = 2^53 b / a: the largest ks <= 63 with kf = floor(2^(53 + ks) b / a) < 2^64
     * (m = 1: u = 0, P = 0 and the coin is 1; K is not needed, kf = 0) */
    if (k->bits == 0) {
        fits = 1;
        k->ks = 1;
        q = 0;
    }
    for (ks = 63; ks >= 1 && !fits; ks--) {
        len = dpf_big_shl(Nb, &b, 1, 53 + ks);
        rem = 0;
        fits = 1;
        for (i = len - 1; i >= 0; i--) {
            q = dpf_div128(rem, Nb[i], a, &rem);
            if (i > 0 && q != 0) fits = 0;
        }
        if (fits) k->ks = (uint32_t)ks;
    }
    if (!fits) return DPF_E_RANGE;
    k->kf = q;
    /* J, and the largest P = u (2 j m + u) must fit a word and its E 2^54 bound stay below
     * 2^62; near sigma = 2^32 that takes one halving of m (m = t/32) */
    for (;; k->bits--) {
        k->m = (uint64_t)1 << k->bits;
        for (J = 1; J <= DPF_XT_MAX && !covers((uint64_t)J << k->bits, b, a, span2); J++) {
        }
        if (J > DPF_XT_MAX) return DPF_E_RANGE; /* span2 too large for the table */
        lo = dpf_mul64(k->m - 1, 2 * (uint64_t)(J - 1) * k->m + k->m - 1, &hi);
        pmax = lo;
        if (hi == 0) {
            lo = dpf_mul64(pmax, k->kf, &hi);
            lo += pmax;
            hi += lo < pmax;
            lo = (hi << (64 - k->ks)) | (lo >> k->ks);
            if ((hi >> k->ks) == 0 && lo < ((uint64_t)1 << 62)) break;
        }
        if (k->bits == 0) return DPF_E_RANGE; /* not reached: P = 0 when m = 1 */
    }
    k->nblk = J;
    k->ubits = 64 - k->bits - 1 - BK_PB;
    k->shift = 64 - (fast_bits < k->ubits ? fast_bits : k->ubits);
    k->cshift = 64 - fast_bits;
    c = (dpf_fxi_t *)malloc(sizeof(dpf_fxi_t) * (J + 1));
    if (c == NULL) return DPF_E_NOMEM;
    bk_cumulative(k, c, DPF_CTN);
    for (j = 0; j < J; j++) {
        const uint64_t clo = word_of(&c[j].lo, DPF_CTN), chi = word_of(&c[j].hi, DPF_CTN);
        /* adjacent thresholds differ by w_j / W > 2^-57 (f(j m) > e^-35 for j < J, W < 82), the
         * intervals are ~2^-180 wide: their words never touch (checked all the same) */
        if (j > 0 && clo <= word_of(&c[j - 1].hi, DPF_CTN)) {
            free(c);
            return DPF_E_RANGE;
        }
        k->thr[j].lo = clo >> k->shift;
        k->thr[j].hi = chi >> k->shift;
    }
    free(c);
    dpf_guide_build(k->thr, J, k->guide, k->shift);
    return DPF_OK;
}

/* Per fill call: exp(-1) and the 704-bit thresholds, computed on first need. */
typedef struct {
    int have_e1;
    dpf_fxi_t e1;
    dpf_fxi_t *c;
} bk_state_t;

/* Claim 6: U ties with C_j (its leading bits equal the bound's); the exact continuation. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static uint32_t bk_tie(dpf_rng_t *r, const dpf_dgblock_t *k, bk_state_t *s, uint64_t w,
                       uint32_t j, int *err)
{
    const uint32_t J = k->nblk, ub = k->ubits;
    const uint64_t wk = w >> k->shift;
    uint64_t words[DPF_FXMAX];
    int nw = 1;
    if (s->c == NULL) {
        s->c = (dpf_fxi_t *)malloc(sizeof(dpf_fxi_t) * (J + 1));
        if (s->c == NULL) {
            *err = DPF_E_NOMEM;
            return J;
        }
        bk_cumulative(k, s->c, DPF_FXMAX);
    }
    /* U's first 64 bits: w's top ubits, then a fresh word's (w's low bits are u, S, V) */
    words[0] = (w >> (64 - ub) << (64 - ub)) | (dpf_next_u64(r) >> ub);
    for (; j < J; j++) {
        if (wk < k->thr[j].lo) break; /* U < C_j certainly */
        if (wk > k->thr[j].hi) continue; /* U >= C_j certainly */
        if (dpf_u_below(r, words, &nw, &s->c[j], err) || *err) break;
    }
    return j;
}

/* Claim 4's block coin past the crude first look: 1 if V < p = exp(-P b / (2a)), given
 * V's first BK_PB bits v and E 2^54 in [elo, ehi]. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int bk_coin(dpf_rng_t *r, const dpf_dgblock_t *k, const uint64_t (*e_tab)[2],
                   bk_state_t *s, uint64_t P, uint64_t elo, uint64_t ehi, uint64_t v,
                   int *err)
{
    const uint64_t plo = dpf_exp54(e_tab, ehi, 0), phi = dpf_exp54(e_tab, elo, 1);
    uint64_t w, wk, words[DPF_FXMAX], N[2], D[2];
    dpf_fxi_t p;
    int nw = 1;
    if (k->cshift == 0) {
        const uint64_t cmin = v << BK_VSHIFT, cmax = cmin | (UINT64_MAX >> BK_PB);
        if (cmax < plo) return 1;
        if (cmin > phi) return 0;
    }
    w = (v << BK_VSHIFT) | (dpf_next_u64(r) >> BK_PB); /* V's first 64 bits */
    wk = w >> k->cshift;
    if (wk < plo >> k->cshift) return 1;
    if (wk > phi >> k->cshift) return 0;
    if (!s->have_e1) {
        dpf_fx_exp_m1(&s->e1, DPF_FXMAX);
        s->have_e1 = 1;
    }
    N[0] = dpf_mul64(P, k->b, &N[1]);
    D[0] = k->a << 1;
    D[1] = k->a >> 63;
    dpf_fx_exp_neg_big(&p, N, 2, D, 2, &s->e1, DPF_FXMAX);
    words[0] = w;
    return dpf_u_below(r, words, &nw, &p, err);
}

/* Claims 3 and 4 on the tail bucket: *z = J m + D and the exact coin exp(-E_d). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int bk_tail(dpf_rng_t *r, const dpf_dgblock_t *k, uint64_t *z, int *err)
{
    const uint64_t jm = (uint64_t)k->nblk << k->bits;
    uint64_t x[2], y[3], num[4], ad[2], sub[3], at[2], den[4];
    int64_t d;
    int st = dpf_geometric(r, k->t, 1, &d), v;
    if (st != DPF_OK || (uint64_t)d > (uint64_t)INT64_MAX - jm) {
        *err = st != DPF_OK ? st : DPF_E_RANGE;
        return 0;
    }
    *z = jm + (uint64_t)d;
    /* num = t b d (d + 2 J m) - 2 a d, den = 2 a t (d + 2 J m < 2^64: d < 2^63 - J m) */
    x[0] = dpf_mul64((uint64_t)d, (uint64_t)d + 2 * jm, &x[1]);
    dpf_big_mul_u64(y, x, 2, k->t);
    dpf_big_mul_u64(num, y, 3, k->b);
    ad[0] = dpf_mul64(k->a, (uint64_t)d, &ad[1]);
    dpf_big_shl(sub, ad, 2, 1);
    dpf_big_sub(num, 4, sub, 3);
    at[0] = dpf_mul64(k->a, k->t, &at[1]);
    memset(den, 0, sizeof den);
    dpf_big_shl(den, at, 2, 1);
    v = dpf_bernoulli_exp_big(r, num, den, 4);
    if (v < 0) {
        *err = -v;
        return 0;
    }
    return v;
}

/* Claim 6: P = u (2 j m + u) and floor(P kf / 2^ks) <= E 2^54 <= floor(P (kf + 1) / 2^ks) + 1
 * (P < 2^64 and the bounds below 2^62 for every j < J, u < m: checked at set-up). */
static DPF_INLINE uint64_t bk_exponent(const dpf_dgblock_t *k, uint64_t jm, uint64_t u,
                                       uint64_t *elo, uint64_t *ehi)
{
    const uint64_t P = u * (2 * jm + u), ks = k->ks;
    uint64_t hi, lo = dpf_mul64(P, k->kf, &hi), lo2 = lo + P, hi2 = hi + (lo2 < lo);
    *elo = (hi << (64 - ks)) | (lo >> ks);
    *ehi = ((hi2 << (64 - ks)) | (lo2 >> ks)) + 1;
    return P;
}

/* Claim 4's block coin for the proposal j m + u, V's first bits v: the crude look from the
 * trial's word (most trials end here), then bk_coin. */
static DPF_INLINE int bk_block_coin(dpf_rng_t *r, const dpf_dgblock_t *k,
                                    const uint64_t (*e_tab)[2], bk_state_t *s, uint64_t jm,
                                    uint64_t u, uint64_t v, int *err)
{
    uint64_t elo, ehi;
    const uint64_t P = bk_exponent(k, jm, u, &elo, &ehi);
    /* p = 1 when u = 0 (always when m = 1); else V < 1 - x <= p, evaluated without a
     * branch on the common path */
    int acc = (P == 0) | ((k->cshift == 0) & (((v << BK_VSHIFT) | (UINT64_MAX >> BK_PB)) <
                                              dpf_exp54_crude(e_tab, ehi, 0)));
    if (DPF_UNLIKELY(!acc)) acc = bk_coin(r, k, e_tab, s, P, elo, ehi, v, err);
    return acc;
}

int dpf_dgblock_coin_fill(dpf_rng_t *r, const dpf_dgblock_t *k, const uint64_t (*e_tab)[2],
                          uint64_t j, uint64_t u, int64_t *out, size_t n)
{
    bk_state_t s;
    size_t i;
    int err = 0;
    if (k == NULL || j >= k->nblk || u >= k->m) return DPF_E_PARAM;
    s.have_e1 = 0;
    s.c = NULL;
    for (i = 0; i < n && !err; i++)
        out[i] = bk_block_coin(r, k, e_tab, &s, j << k->bits, u,
                               dpf_next_u64(r) >> BK_VSHIFT, &err);
    return err;
}

int dpf_dgblock_coin_bounds(const dpf_dgblock_t *k, const uint64_t (*e_tab)[2], uint64_t j,
                            uint64_t u, int crude, uint64_t *plo, uint64_t *phi)
{
    uint64_t elo, ehi;
    if (k == NULL || j >= k->nblk || u >= k->m) return DPF_E_PARAM;
    bk_exponent(k, j << k->bits, u, &elo, &ehi);
    *plo = crude ? dpf_exp54_crude(e_tab, ehi, 0) : dpf_exp54(e_tab, ehi, 0);
    *phi = crude ? dpf_exp54_crude(e_tab, elo, 1) : dpf_exp54(e_tab, elo, 1);
    return DPF_OK;
}

int dpf_dgblock_threshold(const dpf_dgblock_t *k, uint64_t j, uint64_t *lo, uint64_t *hi)
{
    if (k == NULL || j >= k->nblk) return DPF_E_PARAM;
    *lo = k->thr[j].lo;
    *hi = k->thr[j].hi;
    return DPF_OK;
}

int dpf_dgblock_fill(dpf_rng_t *r, const dpf_dgblock_t *k, const uint64_t (*e_tab)[2],
                     int64_t *out, size_t n)
{
    const uint32_t J = k->nblk, bits = k->bits, shift = k->shift;
    const uint64_t mask = k->m - 1;
    const uint64_t nofold = k->m != 1;
    bk_state_t s;
    size_t i;
    int st = DPF_OK;
    s.have_e1 = 0;
    s.c = NULL;
    /* As in prepared.c: every proposal is written to out[i]; i advances on acceptance. */
    for (i = 0; i < n;) {
        const uint64_t w = dpf_next_u64(r), wk = w >> shift;
        const uint64_t neg = (w >> bits) & 1, v = (w >> (bits + 1)) & ((1u << BK_PB) - 1);
        uint32_t j = k->guide[w >> BK_GUIDE_SHIFT];
        uint64_t z;
        int acc, err = 0;
        while (j < J && wk > k->thr[j].hi) j++; /* U >= C_j certainly */
        if (DPF_UNLIKELY(j < J && wk >= k->thr[j].lo)) {
            j = bk_tie(r, k, &s, w, j, &err);
            if (DPF_UNLIKELY(err)) {
                st = err;
                break;
            }
        }
        if (DPF_LIKELY(j < J)) {
            const uint64_t u = w & mask, jm = (uint64_t)j << bits;
            z = jm + u;
            acc = bk_block_coin(r, k, e_tab, &s, jm, u, v, &err);
        } else {
            acc = bk_tail(r, k, &z, &err);
        }
        if (DPF_UNLIKELY(err)) {
            st = err;
            break;
        }
        /* Claim 1: (-, 0) is redrawn; Claim 1' (m = 1): -0 = 0 is kept */
        acc &= !(int)(neg & (uint64_t)(z == 0) & nofold);
        out[i] = (int64_t)((z ^ ((uint64_t)0 - neg)) + neg);
        i += (size_t)acc;
    }
    free(s.c);
    return st;
}
