/* Exact prepared samplers (see prepared.h): certified one-word coins, drawn up to three per
 * word, with an exact continuation on ties.  References as in exact.c. */
#include <stdlib.h>
#include <string.h>
#include "dpfast/arith.h"
#include "dpfast/certified.h"
#include "dpfast/exact.h"
#include "dpfast/prepared.h"

/* ================================================================ exact, prepared
 *
 * See discrete.h.  Exactness: Y = B V + U with V = floor(Y/B), U = Y mod B independent,
 * V ~ Geometric(q^B) and U ∝ q^u on [0, B) (the decomposition of Algorithm 2 above).  The
 * binary digits of V are independent, digit j being 1 with probability
 * p_j = q_B^(2^j)/(1 + q_B^(2^j)), q_B = exp(-beta): P(V = v) = (1 - q_B) prod_j q_B^(d_j 2^j)
 * factorises over the digits.  floor(V/2^D) is Geometric(q_B^(2^D)); the coin
 * "V >= 2^D" has probability q_B^(2^D), and given it the rest is memoryless.  Every coin
 * is exact (see groups_draw / group_tie), so the law of the output is exact.
 */

/* Tuned on x86-64 (bench/bench_discrete.py): a block of t/4 keeps the rejection for U
 * mostly predictable (acceptance >= 0.88); the digits of V stop at the first
 * 2^j beta >= 6, so P(V >= 2^D) <= e^-6 and that rare case is finished by [CKS] coins. */
#define XB_DIV 4
#define XY_STOP 6

static void coin_set(dpf_coin_t *c, uint64_t k, uint64_t num, uint64_t s_num, int ratio,
                     const dpf_fxi_t *e1, uint32_t shift)
{
    dpf_fxi_t p;
    c->y_int = k;
    c->y_num = num;
    c->ratio = (uint32_t)ratio;
    dpf_fx_coin_p(&p, k, num, s_num, ratio, e1, DPF_CTN);
    /* p < 1 here (p <= 1/2 for ratio coins, p <= e^-6 for the high coin): limb DPF_CTN-2 of p
     * is floor(2^64 p) */
    c->lo = p.lo.w[DPF_CTN - 2] >> shift;
    c->hi = p.hi.w[DPF_CTN - 2] >> shift;
    if (p.hi.w[DPF_CTN - 1] != 0) c->hi = UINT64_MAX >> shift;
}

/* [C_m] = [P(joint outcome <= m)] of `count` independent coins with probabilities [p]
 * (outcome bit i = coin first + i is 1 with probability p_(first+i)): a sum of products
 * of nonnegative intervals, rounded outwards. */
static void group_cumulative(dpf_fxi_t *C, const dpf_fxi_t *p, uint32_t first, uint32_t count,
                             uint32_t m, int n)
{
    dpf_fx_t one;
    uint32_t o, i;
    dpf_fx_int(&one, 1, n);
    dpf_fx_zero(&C->lo);
    dpf_fx_zero(&C->hi);
    for (o = 0; o <= m; o++) {
        dpf_fxi_t prod;
        prod.lo = one;
        prod.hi = one;
        for (i = 0; i < count; i++) {
            const dpf_fxi_t *q = &p[first + i];
            dpf_fx_t flo, fhi;
            if ((o >> i) & 1) {
                flo = q->lo;
                fhi = q->hi;
            } else {                      /* 1 - p: [1 - hi, 1 - lo] */
                dpf_fx_sub(&flo, &one, &q->hi, n);
                dpf_fx_sub(&fhi, &one, &q->lo, n);
            }
            dpf_fx_mul(&prod.lo, &prod.lo, &flo, 0, n);
            dpf_fx_mul(&prod.hi, &prod.hi, &fhi, 1, n);
        }
        dpf_fx_add(&C->lo, &C->lo, &prod.lo, n);
        dpf_fx_add(&C->hi, &C->hi, &prod.hi, n);
    }
}

/* The thresholds of one group; 0 if two of its certified intervals touch (a word could
 * then tie with two of them), in which case the caller makes the group smaller. */
static int group_set(dpf_coin_group_t *g, const dpf_fxi_t *p, uint32_t first, uint32_t count,
                     uint32_t shift)
{
    uint32_t j, nt = (1u << count) - 1;
    g->first = first;
    g->count = count;
    for (j = 0; j < nt; j++) {
        dpf_fxi_t C;
        group_cumulative(&C, p, first, count, j, DPF_CTN);
        g->lo[j] = C.lo.w[DPF_CTN - 1] ? UINT64_MAX >> shift : C.lo.w[DPF_CTN - 2] >> shift;
        g->hi[j] = C.hi.w[DPF_CTN - 1] ? UINT64_MAX >> shift : C.hi.w[DPF_CTN - 2] >> shift;
        if (j > 0 && g->lo[j] <= g->hi[j - 1]) return 0;
    }
    return 1;
}

/* Coins 0..ncoins-1 in groups of up to DPF_COIN_GROUP; returns the number of groups. */
static uint32_t groups_build(dpf_coin_group_t *g, const dpf_fxi_t *p, uint32_t ncoins,
                             uint32_t shift)
{
    uint32_t ng = 0, first = 0, k;
    while (first < ncoins) {
        k = ncoins - first < DPF_COIN_GROUP ? ncoins - first : DPF_COIN_GROUP;
        while (k > 1 && !group_set(&g[ng], p, first, k, shift)) k--;
        if (k == 1) group_set(&g[ng], p, first, 1, shift);
        first += k;
        ng++;
    }
    return ng;
}

int dpf_dlap_exact_prepare(dpf_dlap_exact_t *t, uint64_t s_num, uint64_t s_den,
                           unsigned fast_bits)
{
    dpf_fxi_t e1;
    uint64_t c, bnum, k, rr;
    uint32_t j, shift;
    if (s_num == 0 || s_den == 0 || fast_bits < 1 || fast_bits > 64) return DPF_E_PARAM;
    memset(t, 0, sizeof *t);
    c = dpf_gcd64(s_num, s_den);
    s_num /= c;
    s_den /= c;
    shift = 64 - fast_bits;
    t->s_num = s_num;
    t->s_den = s_den;
    t->shift = shift;
    /* B = floor(t/4) for t >= 32 (then beta = B s_den / s_num is in (7/32, 1/4] and
     * B s_den <= s_num/4 fits), else B = 1 (beta = 1/t) */
    t->block = s_num / s_den >= 8 * XB_DIV ? s_num / s_den / XB_DIV : 1;
    bnum = t->block * s_den;
    dpf_fx_exp_m1(&e1, DPF_CTN);
    /* y_j = 2^j beta = k + rr/s_num exactly */
    k = bnum / s_num;
    rr = bnum % s_num;
    for (j = 0; k < XY_STOP && j < DPF_DLAP_CT_MAX_DIGITS; j++) {
        int carry;
        coin_set(&t->coin[j], k, rr, s_num, 1, &e1, shift);
        carry = rr >= s_num - rr;
        rr = carry ? rr - (s_num - rr) : 2 * rr;
        k = 2 * k + (uint64_t)carry;
    }
    t->digits = j;
    coin_set(&t->coin[j], k, rr, s_num, 0, &e1, shift);                        /* V >= 2^D */
    coin_set(&t->coin[j + 1], s_den / s_num, s_den % s_num, s_num, 1, &e1, shift);   /* sign */
    {
        dpf_fxi_t p[DPF_DLAP_CT_MAX_DIGITS + 2];
        uint32_t i;
        for (i = 0; i < j + 2; i++)
            dpf_fx_coin_p(&p[i], t->coin[i].y_int, t->coin[i].y_num, s_num,
                          (int)t->coin[i].ratio, &e1, DPF_CTN);
        t->n_geo = groups_build(t->geo, p, j + 1, shift);
        t->n_lap = groups_build(t->lap, p, j + 2, shift);
    }
    return DPF_OK;
}

/* Certified 704-bit intervals of the coins' p, computed on first need, per fill call (the
 * prepared table stays read-only and shareable between threads). */
typedef struct {
    uint64_t have;
    int have_e1;
    dpf_fxi_t e1;
    dpf_fxi_t p[DPF_DLAP_CT_MAX_DIGITS + 2];
} tie_cache_t;

/* [U < p] for the uniform real U whose first 64 bits are w, when the fast test could not
 * decide: U lies in [u, u + 2^(-64 nw)) after nw words; 1 once that interval is below the
 * certified 704-bit interval of p, 0 once it is at or above it, else one more word. */
static int lazy_vs_interval(dpf_rng_t *r, uint64_t w, const dpf_fxi_t *p, int *err)
{
    const int n = DPF_FXMAX;
    uint64_t words[DPF_FXMAX];
    dpf_fx_t u, uhi;
    int nw = 1, j;
    words[0] = w;
    for (;;) {
        dpf_fx_zero(&u);
        for (j = 0; j < nw; j++) u.w[n - 2 - j] = words[j];
        uhi = u;
        dpf_fx_add_at(&uhi, n - 1 - nw, n);
        if (dpf_fx_cmp(&uhi, &p->lo, n) <= 0) return 1;
        if (dpf_fx_cmp(&u, &p->hi, n) >= 0) return 0;
        if (nw == n - 1) {   /* undecided after 704 bits: probability < 2^-600 */
            *err = DPF_E_RANGE;
            return 0;
        }
        words[nw++] = dpf_next_u64(r);
    }
}

/* The 704-bit interval of coin i's p, computed on first need. */
static const dpf_fxi_t *coin_p_cached(const dpf_dlap_exact_t *t, uint32_t i, tie_cache_t *tc)
{
    const dpf_coin_t *c = &t->coin[i];
    if (!((tc->have >> i) & 1)) {
        if (!tc->have_e1) {
            dpf_fx_exp_m1(&tc->e1, DPF_FXMAX);
            tc->have_e1 = 1;
        }
        dpf_fx_coin_p(&tc->p[i], c->y_int, c->y_num, t->s_num, (int)c->ratio, &tc->e1,
                      DPF_FXMAX);
        tc->have |= (uint64_t)1 << i;
    }
    return &tc->p[i];
}

/* A word tied with threshold j of group g (the thresholds below it are certainly below
 * U, those above certainly above): the outcome is j if U < C_j, else j + 1, decided
 * exactly against the 704-bit interval of C_j. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static uint64_t group_tie(dpf_rng_t *r, const dpf_dlap_exact_t *t, const dpf_coin_group_t *g,
                          uint32_t j, uint64_t w, tie_cache_t *tc, int *err)
{
    dpf_fxi_t C;
    uint32_t i;
    for (i = 0; i < g->count; i++) coin_p_cached(t, g->first + i, tc);
    group_cumulative(&C, tc->p, g->first, g->count, j, DPF_FXMAX);
    return lazy_vs_interval(r, w, &C, err) ? j : j + 1;
}

/* All coins of a layout, one word per group: bit i of the result is coin i.  Each
 * threshold is compared without a branch; the counts below and above agree except on a
 * tie (probability about 2^-64 per threshold). */
static DPF_INLINE uint64_t groups_draw(dpf_rng_t *r, const dpf_dlap_exact_t *t,
                                       const dpf_coin_group_t *g, uint32_t ng,
                                       tie_cache_t *tc, int *err)
{
    uint64_t bits = 0;
    uint32_t k, j;
    for (k = 0; k < ng; k++) {
        const uint64_t w = dpf_next_u64(r), wk = w >> t->shift;
        const uint32_t nt = (1u << g[k].count) - 1;
        uint64_t below = 0, maybe = 0;
        for (j = 0; j < nt; j++) {
            below += (uint64_t)(wk > g[k].hi[j]);
            maybe += (uint64_t)(wk >= g[k].lo[j]);
        }
        if (DPF_UNLIKELY(below != maybe))
            below = group_tie(r, t, &g[k], (uint32_t)below, w, tc, err);
        bits |= below << g[k].first;
    }
    return bits;
}

/* Y = B V + U from the coins' bits (digits of V, then the coin "V >= 2^D"). */
static int xgeo_finish(dpf_rng_t *r, const dpf_dlap_exact_t *t, uint64_t bits, uint64_t *out)
{
    const int D = (int)t->digits;
    uint64_t v = bits & (((uint64_t)1 << D) - 1), u = 0, hi, lo;
    if (DPF_UNLIKELY((bits >> D) & 1)) {
        /* V >= 2^D: floor(V/2^D) = 1 + Geometric(exp(-y_D)) (memoryless), by [CKS] coins */
        const dpf_coin_t *c = &t->coin[D];
        uint64_t h = 1;
        while (dpf_bern_exp_split(r, c->y_int, c->y_num, t->s_num))
            if (++h > ((uint64_t)INT64_MAX >> D)) return DPF_E_RANGE;
        if (h > (((uint64_t)INT64_MAX - v) >> D)) return DPF_E_RANGE;
        v += h << D;
    }
    if (t->block > 1) {
        do u = dpf_uniform_below(r, t->block);
        while (!dpf_bern_exp_le1(r, u * t->s_den, t->s_num));
    }
    lo = dpf_mul64(t->block, v, &hi);
    if (DPF_UNLIKELY(hi != 0 || lo > (uint64_t)INT64_MAX - u)) return DPF_E_RANGE;
    *out = lo + u;
    return DPF_OK;
}

static int xgeo(dpf_rng_t *r, const dpf_dlap_exact_t *t, tie_cache_t *tc, uint64_t *out)
{
    int err = 0;
    const uint64_t bits = groups_draw(r, t, t->geo, t->n_geo, tc, &err);
    if (DPF_UNLIKELY(err)) return err;
    return xgeo_finish(r, t, bits, out);
}

/* X = Y or -(Y+1) with a Bernoulli(q/(1+q)) sign (coin D+1): P(X = x) = (1-q)/(1+q) q^|x|. */
static int xdlap(dpf_rng_t *r, const dpf_dlap_exact_t *t, tie_cache_t *tc, int64_t *out)
{
    uint64_t y, neg;
    int err = 0, st;
    const uint64_t bits = groups_draw(r, t, t->lap, t->n_lap, tc, &err);
    if (DPF_UNLIKELY(err)) return err;
    neg = (bits >> (t->digits + 1)) & 1;
    st = xgeo_finish(r, t, bits, &y);
    if (st != DPF_OK) return st;
    *out = (int64_t)(y ^ ((uint64_t)0 - neg));
    return DPF_OK;
}

int dpf_geometric_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out, size_t n)
{
    tie_cache_t tc;
    size_t i;
    tc.have = 0;
    tc.have_e1 = 0;
    for (i = 0; i < n; i++) {
        uint64_t y;
        int st = xgeo(r, t, &tc, &y);
        if (st != DPF_OK) return st;
        out[i] = (int64_t)y;
    }
    return DPF_OK;
}

int dpf_discrete_laplace_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                                    size_t n)
{
    tie_cache_t tc;
    size_t i;
    tc.have = 0;
    tc.have_e1 = 0;
    for (i = 0; i < n; i++) {
        int st = xdlap(r, t, &tc, out + i);
        if (st != DPF_OK) return st;
    }
    return DPF_OK;
}

#define DG_TABLE_TMAX 1024
#define DG_TABLE_SPAN 16   /* the table covers |y| <= 16 t: P(|Y| > 16 t) < e^-16 */

/* Acceptance table: A(x) = exp(-(x - mu)^2 / (2 sigma^2)), mu = sigma^2/t, by the exact
 * recurrence A(0) = exp(-sigma^2/(2 t^2)) = exp(-a/(2 b t^2)),
 * A(x+1) = A(x) exp(1/t) E(x), E(x) = exp(-(2x+1) c) = E(x-1) exp(-2c), c = b/(2a)
 * (since (x+1-mu)^2 - (x-mu)^2 = 2x + 1 - 2 mu and 2 mu c = 1/t), with outward rounding.
 * Each factor is certified, every product is rounded down (lower bounds) or up (upper
 * bounds); A stays below e^(1/2) times its start, so the absolute error stays within a
 * few ulp per step (192-bit precision, at most 16385 steps). */
static int dg_table(dpf_dgauss_exact_t *g, uint32_t shift)
{
    const int n = DPF_CTN;
    dpf_fxi_t e1, A, E, G, Q2;
    dpf_fx_t flo, fhi;
    uint64_t Nn[6], Dd[6], x, ymax;
    int dn2;
    g->table = NULL;
    g->ymax = 0;
    if (g->t > DG_TABLE_TMAX) return DPF_OK;
    ymax = DG_TABLE_SPAN * g->t;
    g->table = (uint64_t *)malloc(sizeof(uint64_t) * 2 * (size_t)(ymax + 1));
    if (g->table == NULL) return DPF_E_NOMEM;
    g->ymax = ymax;
    dpf_fx_exp_m1(&e1, n);
    /* A(0) = exp(-a / (2 b t^2)): 2 b t^2 = D / a */
    {
        uint64_t tt[2], btt[4];
        tt[0] = dpf_mul64(g->t, g->t, &tt[1]);
        Nn[0] = g->sigma2_den;
        dpf_big_mul(btt, Nn, 1, tt, 2);          /* b t^2 */
        dn2 = dpf_big_len(Dd, dpf_big_shl(Dd, btt, 3, 1));
        Nn[0] = g->sigma2_num;
        dpf_fx_exp_neg_big(&A, Nn, 1, Dd, dn2, &e1, n);
    }
    /* G = exp(1/t): the series at 1/t rounded down and up */
    dpf_fx_ratio(&flo, 0, 1, g->t, 0, n);
    dpf_fx_ratio(&fhi, 0, 1, g->t, 1, n);
    dpf_fx_exp_pos(&G.lo, &G.hi, &flo, &fhi, n);
    /* E(0) = exp(-c) = exp(-b/(2a)), Q2 = exp(-2c) = exp(-b/a) */
    Nn[0] = g->sigma2_den;
    Dd[0] = g->sigma2_num;
    dpf_fx_exp_neg_big(&Q2, Nn, 1, Dd, 1, &e1, n);
    Dd[1] = g->sigma2_num >> 63;             /* 2a, two limbs */
    Dd[0] = g->sigma2_num << 1;
    dpf_fx_exp_neg_big(&E, Nn, 1, Dd, 2, &e1, n);
    for (x = 0; x <= ymax; x++) {
        uint64_t lo = A.lo.w[n - 1] ? UINT64_MAX : A.lo.w[n - 2];
        uint64_t hi = A.hi.w[n - 1] ? UINT64_MAX : A.hi.w[n - 2];
        g->table[2 * x] = lo >> shift;
        g->table[2 * x + 1] = hi >> shift;
        dpf_fx_mul(&A.lo, &A.lo, &G.lo, 0, n);
        dpf_fx_mul(&A.lo, &A.lo, &E.lo, 0, n);
        dpf_fx_mul(&A.hi, &A.hi, &G.hi, 1, n);
        dpf_fx_mul(&A.hi, &A.hi, &E.hi, 1, n);
        dpf_fx_mul(&E.lo, &E.lo, &Q2.lo, 0, n);
        dpf_fx_mul(&E.hi, &E.hi, &Q2.hi, 1, n);
    }
    return DPF_OK;
}

int dpf_dgauss_exact_prepare(dpf_dgauss_exact_t *g, uint64_t sigma2_num, uint64_t sigma2_den,
                             unsigned fast_bits)
{
    int st;
    memset(g, 0, sizeof *g);
    g->sigma2_num = sigma2_num;
    g->sigma2_den = sigma2_den;
    st = dpf_dg_setup(&g->sigma2_num, &g->sigma2_den, &g->t, g->bt, g->D, &g->dn);
    if (st != DPF_OK) return st;
    st = dpf_dlap_exact_prepare(&g->proposal, g->t, 1, fast_bits);
    if (st != DPF_OK) return st;
    return dg_table(g, g->proposal.shift);
}

void dpf_dgauss_exact_free(dpf_dgauss_exact_t *g)
{
    free(g->table);
    g->table = NULL;
    g->ymax = 0;
}

/* 704-bit intervals of the acceptance coins of |y| < 256, computed on first need per call. */
#define DG_TIE_CACHE 256
typedef struct {
    int have_e1;
    dpf_fxi_t e1;
    unsigned char *have;
    dpf_fxi_t *p;
} acc_cache_t;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int dg_accept_tie(dpf_rng_t *r, const dpf_dgauss_exact_t *g, uint64_t x, uint64_t w,
                         acc_cache_t *ac, int *err)
{
    uint64_t N[6];
    dpf_fxi_t p, *pp = &p;
    if (!ac->have_e1) {
        dpf_fx_exp_m1(&ac->e1, DPF_FXMAX);
        ac->have_e1 = 1;
    }
    if (x < DG_TIE_CACHE && ac->p == NULL) {
        ac->p = (dpf_fxi_t *)malloc(sizeof(dpf_fxi_t) * DG_TIE_CACHE);
        ac->have = (unsigned char *)calloc(DG_TIE_CACHE, 1);
        if (ac->p == NULL || ac->have == NULL) {
            free(ac->p);
            free(ac->have);
            ac->p = NULL;
            ac->have = NULL;
        }
    }
    if (x < DG_TIE_CACHE && ac->p != NULL) {
        pp = &ac->p[x];
        if (ac->have[x]) return lazy_vs_interval(r, w, pp, err);
        ac->have[x] = 1;
    }
    dpf_dg_square(N, g->sigma2_num, g->bt, x);
    dpf_fx_exp_neg_big(pp, N, 6, g->D, g->dn, &ac->e1, DPF_FXMAX);
    return lazy_vs_interval(r, w, pp, err);
}

int dpf_discrete_gaussian_exact_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g, int64_t *out,
                                     size_t n)
{
    tie_cache_t tc;
    acc_cache_t ac;
    size_t i;
    int st = DPF_OK;
    const uint32_t shift = g->proposal.shift;
    tc.have = 0;
    tc.have_e1 = 0;
    ac.have_e1 = 0;
    ac.have = NULL;
    ac.p = NULL;
    for (i = 0; i < n && st == DPF_OK; i++) {
        for (;;) {
            int64_t y;
            uint64_t x;
            int acc, err = 0;
            st = xdlap(r, &g->proposal, &tc, &y);
            if (st != DPF_OK) break;
            x = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
            if (DPF_LIKELY(x <= g->ymax && g->table != NULL)) {
                uint64_t w = dpf_next_u64(r), wk = w >> shift;
                uint64_t lo = g->table[2 * x], hi = g->table[2 * x + 1];
                if (DPF_LIKELY(wk - lo > hi - lo)) acc = wk < lo;
                else acc = dg_accept_tie(r, g, x, w, &ac, &err);
                if (err) {
                    st = err;
                    break;
                }
            } else {
                acc = dpf_dg_accept(r, g->sigma2_num, g->bt, g->D, g->dn, y);
                if (acc < 0) {
                    st = -acc;
                    break;
                }
            }
            if (acc) {
                out[i] = y;
                break;
            }
        }
    }
    free(ac.p);
    free(ac.have);
    return st;
}
