/* Constant-time discrete samplers and their certified slack (see consttime.h). */
#include <stdlib.h>
#include <string.h>
#include "dpfast/arith.h"
#include "dpfast/certified.h"
#include "dpfast/consttime.h"

/* ================================================================ constant time: Laplace
 *
 * Bitwise geometric.  For M ~ Geometric(q), P(M = sum_j d_j 2^j) = (1-q) prod_j q^(d_j 2^j),
 * which factorises: the digits d_j are independent with P(d_j = 1) = p_j = q^(2^j)/(1 +
 * q^(2^j)).  Two digits are drawn from one uniform word w by inverting their joint law:
 * m = d_2k + 2 d_2k+1 = #{i < 3 : w >= T_i}, which is exactly m with probability
 * (T_m - T_(m-1))/2^64 (T_-1 = 0, T_3 = 2^64).  Digits j >= D are dropped: the result is
 * M mod 2^D, which differs from M only when M >= 2^D, an event of probability q^(2^D).
 * The sign: X >= 0 with probability 1/(1+q) and, given X < 0, -X-1 is again
 * Geometric(q); so X = M or ~M = -M-1 with a Bernoulli(q/(1+q)) coin (= p_0), and
 * P(X = x) = (1-q)/(1+q) q^|x| exactly.
 *
 * Slack: coupling each pair with its exact pair (TV of a pair <= the sum of its three
 * threshold errors, as for any inverted cumulative table: 1/2 sum_m |dP(m)| <=
 * 1/2 sum_m (eps_m + eps_(m-1))), the sign with the exact sign, and M mod 2^D with M:
 *   TV(output, exact) <= sum_thresholds |T/2^64 - C| + q^(2^D) (+ the sign's error).
 * Each |T/2^64 - C| is bounded from the certified interval of C (dpf_fx_threshold).
 *
 * Work per draw: 1 + ceil(D/2) words (ceil(D/2) for the geometric), 3 unsigned compares
 * per word summed without a branch; D depends only on the scale.
 */

/* 1 - x for x in [0, 1] */
static void dpf_fx_one_minus(dpf_fx_t *z, const dpf_fx_t *x, int n)
{
    dpf_fx_t one;
    dpf_fx_int(&one, 1, n);
    dpf_fx_sub(z, &one, x, n);
}

/* Threshold of a cumulative probability C, kept >= the previous threshold (a table must
 * be monotone for the count of thresholds <= w to invert it); err >= |T/2^64 - C|. */
static uint64_t ct_threshold(const dpf_fxi_t *C, uint64_t prev, dpf_fx_t *err, int n)
{
    uint64_t T = dpf_fx_threshold(C, err, n);
    if (T < prev) {
        dpf_fx_t tf, e2;
        T = prev;
        dpf_fx_zero(&tf);
        tf.w[n - 2] = T;
        dpf_fx_absdiff(err, &tf, &C->lo, n);
        dpf_fx_absdiff(&e2, &tf, &C->hi, n);
        if (dpf_fx_cmp(&e2, err, n) > 0) *err = e2;
    }
    return T;
}

int dpf_dlap_ct_prepare(dpf_dlap_ct_t *t, uint64_t s_num, uint64_t s_den)
{
    const int n = DPF_CTN;
    dpf_fxi_t e1, p, dig[DPF_DLAP_CT_MAX_DIGITS];
    dpf_fx_t sum, err;
    uint64_t c, k, rr;
    uint32_t j, D;
    if (s_num == 0 || s_den == 0) return DPF_E_PARAM;
    memset(t, 0, sizeof *t);
    c = dpf_gcd64(s_num, s_den);
    s_num /= c;
    s_den /= c;
    t->s_num = s_num;
    t->s_den = s_den;
    dpf_fx_exp_m1(&e1, n);
    dpf_fx_zero(&sum);
    /* y_j = 2^j s_den / s_num = k + rr/s_num, exactly; q^(2^j) = exp(-y_j) */
    k = s_den / s_num;
    rr = s_den % s_num;
    for (j = 0; k < 45; j++) {
        int carry;
        if (j == DPF_DLAP_CT_MAX_DIGITS) return DPF_E_RANGE;
        dpf_fx_coin_p(&dig[j], k, rr, s_num, 1, &e1, n);
        carry = rr >= s_num - rr;   /* 2 rr >= s_num, without overflow */
        rr = carry ? rr - (s_num - rr) : 2 * rr;
        k = 2 * k + (uint64_t)carry;
    }
    t->digits = D = j;
    /* pairs of digits: cumulative law of m = d_2k + 2 d_2k+1, outward rounded */
    for (j = 0; j < D; j += 2) {
        uint64_t *T = t->threshold[j / 2];
        dpf_fxi_t C, na, nb, ab;
        dpf_fx_one_minus(&na.lo, &dig[j].hi, n);          /* 1 - a */
        dpf_fx_one_minus(&na.hi, &dig[j].lo, n);
        if (j + 1 == D) {                             /* a pair of one: C_0 = 1 - a */
            T[0] = ct_threshold(&na, 0, &err, n);
            dpf_fx_add(&sum, &sum, &err, n);
            T[1] = T[2] = UINT64_MAX;                 /* unused */
            break;
        }
        dpf_fx_one_minus(&nb.lo, &dig[j + 1].hi, n);      /* 1 - b */
        dpf_fx_one_minus(&nb.hi, &dig[j + 1].lo, n);
        dpf_fx_mul(&C.lo, &na.lo, &nb.lo, 0, n);          /* C_0 = (1-a)(1-b) */
        dpf_fx_mul(&C.hi, &na.hi, &nb.hi, 1, n);
        T[0] = ct_threshold(&C, 0, &err, n);
        dpf_fx_add(&sum, &sum, &err, n);
        T[1] = ct_threshold(&nb, T[0], &err, n);      /* C_1 = 1 - b */
        dpf_fx_add(&sum, &sum, &err, n);
        dpf_fx_mul(&ab.hi, &dig[j].hi, &dig[j + 1].hi, 1, n);
        dpf_fx_mul(&ab.lo, &dig[j].lo, &dig[j + 1].lo, 0, n);
        dpf_fx_one_minus(&C.lo, &ab.hi, n);               /* C_2 = 1 - ab */
        dpf_fx_one_minus(&C.hi, &ab.lo, n);
        T[2] = ct_threshold(&C, T[1], &err, n);
        dpf_fx_add(&sum, &sum, &err, n);
    }
    /* truncation: q^(2^D) = exp(-y_D) */
    dpf_fx_coin_p(&p, k, rr, s_num, 0, &e1, n);
    dpf_fx_add(&sum, &sum, &p.hi, n);
    t->slack_geometric = dpf_fx_to_double_up(&sum, n);
    /* sign coin: q/(1+q) = p_0 */
    dpf_fx_coin_p(&p, s_den / s_num, s_den % s_num, s_num, 1, &e1, n);
    t->sign_threshold = dpf_fx_threshold(&p, &err, n);
    dpf_fx_add(&sum, &sum, &err, n);
    t->slack = dpf_fx_to_double_up(&sum, n);
    return DPF_OK;
}

/* The geometric value from ceil(D/2) words: pair k gives digits 2k and 2k+1. */
static DPF_INLINE uint64_t geo_ct_words(const dpf_dlap_ct_t *t, const uint64_t *w)
{
    const uint32_t D = t->digits, full = D / 2;
    uint64_t v = 0;
    uint32_t k;
    for (k = 0; k < full; k++) {
        const uint64_t *T = t->threshold[k];
        uint64_t x = w[k];
        uint64_t m = (uint64_t)(x >= T[0]) + (uint64_t)(x >= T[1]) + (uint64_t)(x >= T[2]);
        v |= m << (2 * k);
    }
    if (D & 1) v |= (uint64_t)(w[full] >= t->threshold[full][0]) << (D - 1);
    return v;
}

int64_t dpf_geometric_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
{
    uint64_t w[DPF_DLAP_CT_MAX_PAIRS], v;
    uint32_t k, words = (t->digits + 1) / 2;
    for (k = 0; k < words; k++) w[k] = dpf_next_u64(r);
    v = geo_ct_words(t, w);
    dpf_secure_zero(w, sizeof w);
    return (int64_t)v;
}

int64_t dpf_discrete_laplace_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
{
    uint64_t neg = (uint64_t)(dpf_next_u64(r) < t->sign_threshold);
    uint64_t m = (uint64_t)dpf_geometric_ct(r, t);
    return (int64_t)(m ^ ((uint64_t)0 - neg));   /* neg: ~m = -m - 1 */
}

/* The fills take their words in blocks (one bulk copy from the ChaCha20 buffer, or one
 * call per word for a foreign generator) sized to whole draws, so the number of words, the
 * compares and the memory accesses depend only on n and the table. */
#define CT_BLOCK 256

static void ct_words(dpf_rng_t *r, uint64_t *buf, size_t k)
{
    size_t i;
    if (r->cc != NULL) {
        dpf_chacha_fill(r->cc, buf, k);
        return;
    }
    for (i = 0; i < k; i++) buf[i] = r->next_u64(r->state);
}

static void dlap_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out, size_t n,
                         int sign)
{
    uint64_t buf[CT_BLOCK];
    const uint32_t words = (t->digits + 1) / 2, per = words + (uint32_t)sign;
    const size_t batch = per ? CT_BLOCK / per : CT_BLOCK;
    size_t i = 0;
    while (i < n) {
        size_t m = n - i < batch ? n - i : batch, l;
        const uint64_t *w = buf;
        ct_words(r, buf, m * per);
        for (l = 0; l < m; l++) {
            uint64_t neg = 0, v;
            if (sign) neg = (uint64_t)(*w++ < t->sign_threshold);
            v = geo_ct_words(t, w);
            w += words;
            out[i + l] = (int64_t)(v ^ ((uint64_t)0 - neg));
        }
        i += m;
    }
    dpf_secure_zero(buf, sizeof buf);
}

int dpf_geometric_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out, size_t n)
{
    dlap_ct_fill(r, t, out, n, 0);
    return DPF_OK;
}

int dpf_discrete_laplace_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out,
                                 size_t n)
{
    dlap_ct_fill(r, t, out, n, 1);
    return DPF_OK;
}

/* ================================================================ constant time: Gaussian
 *
 * Inversion of the law of |X| by a full table scan.  With sigma^2 = a/b, c = b/(2a) and
 * e_m = exp(-c m^2), P(|X| = 0) = 1/N, P(|X| = m) = 2 e_m / N, N = 1 + 2 sum_{m>=1} e_m.
 * The e_m are computed as e_{m+1} = e_m r_m, r_m = exp(-c(2m+1)) = r_{m-1} exp(-2c), with
 * outward rounding (all factors are in [0, 1], so the error grows by at most 2 ulp per
 * step).  The table stops at the least M with the certified tail bound
 *   sum_{m>M} e_m <= int_M^inf exp(-c x^2) dx <= exp(-c M^2) / (2 c M) = e_M a/(b M)
 * at most 2^-66 (the sum N goes on until that bound is below 2^-160).  threshold[k] ≈ 2^64 P(|X| <= k) for k < M; the magnitude is
 * #{k < M : w >= threshold[k]} for one uniform word w, so P(m) = (T_m - T_{m-1})/2^64 with
 * T_{-1} = 0 and T_M = 2^64 (the table ends at its first entry equal to 2^64 - 1, which can
 * only happen when P(|X| > k) < 2^-65).  The sign is one fair bit (X = -m or m; m = 0 is unaffected).
 *
 * Slack: with eps_k >= |T_k/2^64 - P(|X| <= k)| and tau = P(|X| > M) <= 2 tail / N,
 *   TV = 1/2 sum_m |P~(m) - P(m)| <= sum_{k<M} eps_k + tau.
 * Work per draw: 2 words and M compares, the same for every value drawn; the table is read
 * in order, so no memory address depends on the value either.
 */

int dpf_dgauss_ct_prepare(dpf_dgauss_ct_t *t, uint64_t sigma2_num, uint64_t sigma2_den)
{
    dpf_fxi_t e1, r, q, e, rest, *S = NULL;
    dpf_fx_t one, flo, fhi, tail, lim, lim2, beyond, Nlo, Nhi, ilo, ihi, err, sum, tmp;
    uint64_t a, b, g, h, l, Q, R, m, M = 0, Mtab;
    int status = DPF_OK;
    if (sigma2_num == 0 || sigma2_den == 0) return DPF_E_PARAM;
    g = dpf_gcd64(sigma2_num, sigma2_den);
    a = sigma2_num / g;
    b = sigma2_den / g;
    t->sigma2_num = a;
    t->sigma2_den = b;
    t->size = 0;
    t->slack = 1.0;
    S = (dpf_fxi_t *)malloc(sizeof(dpf_fxi_t) * (DPF_DGAUSS_CT_MAX + 1));
    if (S == NULL) return DPF_E_NOMEM;
    dpf_fx_exp_m1(&e1, DPF_CTN);
    dpf_fx_int(&one, 1, DPF_CTN);
    dpf_fx_zero(&lim);
    lim.w[DPF_CTN - 3] = (uint64_t)1 << 62;   /* 2^-66 */
    dpf_fx_zero(&lim2);
    lim2.w[0] = (uint64_t)1 << 32;        /* 2^-160 */
    /* c k = n + f exactly for k = 1 (r_0) and k = 2 (q): c k = k b / (2a).  k b < 2^65,
     * Q = floor(k b / a), c k = floor(Q/2) + ((Q mod 2) a + R) / (2a). */
    {
        uint64_t k;
        for (k = 1; k <= 2; k++) {
            dpf_fxi_t *dst = k == 1 ? &r : &q;
            l = dpf_mul64(k, b, &h);
            if (h >= a) { /* c k >= 2^64: exp(-c k) is below one ulp */
                dpf_fx_zero(&dst->lo);
                dpf_fx_zero(&dst->hi);
                dst->hi.w[0] = 1;
                continue;
            }
            Q = dpf_div128(h, l, a, &R);
            l = dpf_mul64(Q & 1, a, &h);
            l += R;
            h += l < R;
            dpf_fx_ratio(&flo, h, l, a, 0, DPF_CTN); /* ((Q mod 2) a + R)/a in [0, 2) */
            dpf_fx_ratio(&fhi, h, l, a, 1, DPF_CTN);
            dpf_fx_half(&flo, &flo, 0, DPF_CTN);
            dpf_fx_half(&fhi, &fhi, 1, DPF_CTN);
            dpf_fx_exp_neg(dst, Q >> 1, &flo, &fhi, &e1, DPF_CTN);
        }
    }
    /* e_0 = 1; S_k = 1 + 2 sum_{1<=m<=k} e_m for k <= M (the table).  The sum goes on to
     * M2, where the tail bound is <= 2^-160, so that N (and every threshold) is known to
     * about 2^-150; rest = sum_{M<m<=M2} e_m. */
    e.lo = one;
    e.hi = one;
    S[0].lo = one;
    S[0].hi = one;
    dpf_fx_zero(&rest.lo);
    dpf_fx_zero(&rest.hi);
    for (m = 1;; m++) {
        dpf_fx_mul(&e.lo, &e.lo, &r.lo, 0, DPF_CTN); /* e_m = e_{m-1} r_{m-1} */
        dpf_fx_mul(&e.hi, &e.hi, &r.hi, 1, DPF_CTN);
        dpf_fx_mul(&r.lo, &r.lo, &q.lo, 0, DPF_CTN); /* r_m = r_{m-1} exp(-2c) */
        dpf_fx_mul(&r.hi, &r.hi, &q.hi, 1, DPF_CTN);
        if (M == 0) {
            dpf_fx_add(&S[m].lo, &S[m - 1].lo, &e.lo, DPF_CTN);
            dpf_fx_add(&S[m].lo, &S[m].lo, &e.lo, DPF_CTN);
            dpf_fx_add(&S[m].hi, &S[m - 1].hi, &e.hi, DPF_CTN);
            dpf_fx_add(&S[m].hi, &S[m].hi, &e.hi, DPF_CTN);
        } else {
            dpf_fx_add(&rest.lo, &rest.lo, &e.lo, DPF_CTN);
            dpf_fx_add(&rest.hi, &rest.hi, &e.hi, DPF_CTN);
        }
        /* tail bound sum_{m' > m} e_m' <= e_m a / (b m) */
        if (!dpf_fx_mul_u64(&tail, &e.hi, a, DPF_CTN)) {
            dpf_fx_div_u64(&tail, &tail, b, 1, DPF_CTN);
            dpf_fx_div_u64(&tail, &tail, m, 1, DPF_CTN);
            if (M == 0 && dpf_fx_cmp(&tail, &lim, DPF_CTN) <= 0) M = m;
            if (M != 0 && dpf_fx_cmp(&tail, &lim2, DPF_CTN) <= 0) break;
        }
        if (M == 0 && m == DPF_DGAUSS_CT_MAX) {
            status = DPF_E_RANGE;
            goto done;
        }
        if (m == 3 * (uint64_t)DPF_DGAUSS_CT_MAX) { /* cannot happen once M <= MAX */
            status = DPF_E_RANGE;
            goto done;
        }
    }
    /* N in [S_M.lo + 2 rest.lo, S_M.hi + 2 rest.hi + 2 tail] */
    Mtab = M;
    dpf_fx_add(&Nlo, &S[M].lo, &rest.lo, DPF_CTN);
    dpf_fx_add(&Nlo, &Nlo, &rest.lo, DPF_CTN);
    dpf_fx_add(&beyond, &rest.hi, &tail, DPF_CTN); /* >= sum_{m>M} e_m */
    dpf_fx_add(&Nhi, &S[M].hi, &beyond, DPF_CTN);
    dpf_fx_add(&Nhi, &Nhi, &beyond, DPF_CTN);
    dpf_fx_div(&ilo, &one, &Nhi, 0, DPF_CTN);
    dpf_fx_div(&ihi, &one, &Nlo, 1, DPF_CTN);
    dpf_fx_zero(&sum);
    for (m = 0; m < M; m++) {
        dpf_fxi_t C;
        uint64_t T;
        dpf_fx_mul(&C.lo, &S[m].lo, &ilo, 0, DPF_CTN);
        dpf_fx_mul(&C.hi, &S[m].hi, &ihi, 1, DPF_CTN);
        T = dpf_fx_threshold(&C, &err, DPF_CTN);
        if (m > 0 && T < t->threshold[m - 1]) { /* keep the table monotone */
            dpf_fx_t tf, e2;
            T = t->threshold[m - 1];
            dpf_fx_zero(&tf);
            tf.w[DPF_CTN - 2] = T;
            dpf_fx_absdiff(&err, &tf, &C.lo, DPF_CTN);
            dpf_fx_absdiff(&e2, &tf, &C.hi, DPF_CTN);
            if (dpf_fx_cmp(&e2, &err, DPF_CTN) > 0) err = e2;
        }
        t->threshold[m] = T;
        dpf_fx_add(&sum, &sum, &err, DPF_CTN);
        if (T == UINT64_MAX) { /* later entries could only repeat 2^64 - 1: stop here */
            M = m + 1;
            break;
        }
    }
    /* tau = P(|X| > M) = (N - S_M)/N <= (S_max.hi - S_M.lo + 2 beyond) ihi, where S_max is
     * the last stored partial sum (beyond bounds everything after it) */
    dpf_fx_add(&tmp, &S[Mtab].hi, &beyond, DPF_CTN);
    dpf_fx_add(&tmp, &tmp, &beyond, DPF_CTN);
    dpf_fx_sub(&tmp, &tmp, &S[M].lo, DPF_CTN);
    dpf_fx_mul(&tmp, &tmp, &ihi, 1, DPF_CTN);
    dpf_fx_add(&sum, &sum, &tmp, DPF_CTN);
    t->size = (uint32_t)M;
    t->slack = dpf_fx_to_double_up(&sum, DPF_CTN);
done:
    free(S);
    return status;
}

static DPF_INLINE uint64_t dg_scan(const uint64_t *T, uint32_t M, uint64_t w)
{
    uint64_t m = 0;
    uint32_t k;
    for (k = 0; k < M; k++) m += (uint64_t)(w >= T[k]);
    return m;
}

int64_t dpf_discrete_gaussian_ct(dpf_rng_t *r, const dpf_dgauss_ct_t *t)
{
    uint64_t w = dpf_next_u64(r);
    uint64_t s = dpf_next_u64(r) & 1;
    uint64_t m = dg_scan(t->threshold, t->size, w);
    return (int64_t)((m ^ ((uint64_t)0 - s)) + s); /* s: -m */
}

/* Eight draws per pass over the table: m[l] = #{k < M : w[l] >= T[k]}.  The vector
 * versions (chosen by the CPU, never by the data) compare all eight words with one
 * broadcast threshold per step; every version does the same M steps for any words. */
typedef void (*dg_scan8_fn)(const uint64_t *T, uint32_t M, const uint64_t *w, uint64_t *m);

static void dg_scan8_scalar(const uint64_t *T, uint32_t M, const uint64_t *w, uint64_t *m)
{
    uint32_t k, l;
    for (l = 0; l < 8; l++) m[l] = 0;
    for (k = 0; k < M; k++)
        for (l = 0; l < 8; l++) m[l] += (uint64_t)(w[l] >= T[k]);
}

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define DPF_DG_VEC 1
typedef uint64_t dg_v8 __attribute__((vector_size(64)));
#define DEFINE_DG_SCAN8(NAME, ATTR)                                                        \
    ATTR static void NAME(const uint64_t *T, uint32_t M, const uint64_t *w, uint64_t *m)   \
    {                                                                                      \
        dg_v8 W, acc = {0, 0, 0, 0, 0, 0, 0, 0};                                           \
        uint32_t k;                                                                        \
        memcpy(&W, w, sizeof W);                                                           \
        for (k = 0; k < M; k++)                                                            \
            acc -= (dg_v8)(W >= ((dg_v8){0, 0, 0, 0, 0, 0, 0, 0} + T[k]));                 \
        memcpy(m, &acc, sizeof acc);                                                       \
    }
DEFINE_DG_SCAN8(dg_scan8_avx2, __attribute__((target("avx2"))))
DEFINE_DG_SCAN8(dg_scan8_avx512, __attribute__((target("avx512f"))))
#endif

static dg_scan8_fn dg_scan8_pick(void)
{
#if defined(DPF_DG_VEC)
    if (dpf_chacha_impl_available(DPF_IMPL_AVX512)) return dg_scan8_avx512;
    if (dpf_chacha_impl_available(DPF_IMPL_AVX2)) return dg_scan8_avx2;
#endif
    return dg_scan8_scalar;
}

/* One word of sign bits per 64 draws. */
int dpf_discrete_gaussian_ct_fill(dpf_rng_t *r, const dpf_dgauss_ct_t *t, int64_t *out,
                                  size_t n)
{
    size_t i = 0;
    uint64_t signs = 0;
    int left = 0;
    const dg_scan8_fn scan = dg_scan8_pick();
    while (i < n) {
        uint64_t w[8], m[8];
        size_t l, cnt = n - i < 8 ? n - i : 8;
        for (l = 0; l < 8; l++) w[l] = l < cnt ? dpf_next_u64(r) : 0;
        scan(t->threshold, t->size, w, m);
        for (l = 0; l < cnt; l++) {
            uint64_t s;
            if (left == 0) {
                signs = dpf_next_u64(r);
                left = 64;
            }
            s = signs & 1;
            signs >>= 1;
            left--;
            out[i + l] = (int64_t)((m[l] ^ ((uint64_t)0 - s)) + s);
        }
        i += cnt;
    }
    return DPF_OK;
}
