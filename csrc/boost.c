/* Boosting for People: reweighting kernels (see dpfast/boost.h).
 *
 * Privacy rests on three facts, each argued in docs/learn.md ("The reweighting kernels'
 * arguments", cited below as R1-R4) and realised here:
 *  - the grid is a function of public numbers only (dpf_boost_grid; R1);
 *  - S(g) changes by at most 1 between neighbouring data sets because item i's term
 *    min(a_i/g, 1) lies in [0, 1] and every other a_j is a function of the public history
 *    and row j (R2), so the exponential mechanism over -|S(g) - tau| (drawn by
 *    dpfast.selection, not here) is epsilon_w-DP;
 *  - the sampled law has item weights in [0, 2^K] and total >= 2^K L_t (dpf_boost_sample),
 *    which is all the statistical-distance bound sigma_l (R4, erratum E7) uses.
 * Floating-point error in S (about 1e-12 m) is far below the sensitivity 1 and is not a
 * privacy argument: the exponential mechanism's guarantee holds for any scores whose
 * neighbouring values differ by <= 1, and the float S of neighbours differ by at most
 * 1 + a few ulps of m, which dpfast.selection's secure grid absorbs in its slack
 * (its W = 2 Delta/G + 5 grid units with G = 2^-12). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpfast/boost.h"
#include "dpfast/discrete.h"

void dpf_boost_premultiply(const double *v, const int8_t *c, size_t m, double down,
                           double up, double *a)
{
    for (size_t i = 0; i < m; i++) a[i] = v[i] * (c[i] > 0 ? down : up);
}

int dpf_boost_grid(double g_min, double r, double g_max, size_t n_max, double *g,
                   size_t *n_out)
{
    if (!(g_min > 0.0 && g_min <= 1e300 && r > 1.0 && r <= 1e300 && g_max > 0.0 &&
          g_max <= 1e300) ||
        n_max < 1)
        return DPF_E_PARAM;
    size_t n = 0;
    double x = g_min;
    while (n + 1 < n_max && x < g_max) {
        g[n++] = x;
        x *= r;
    }
    g[n++] = g_max;          /* the top point: S(g_max) <= tau (R1) */
    *n_out = n;
    return DPF_OK;
}

/* Largest j with g[j] <= x, or -1 if x < g[0] (g ascending, n >= 1).  The log estimate
 * is within a cell or two of the answer for the geometric part; the loops make it exact
 * with respect to the table, whatever the rounding of the logarithm. */
static ptrdiff_t grid_cell(double x, const double *g, size_t n, double lg0, double inv_lr)
{
    ptrdiff_t j;
    double e = (log(x) - lg0) * inv_lr;
    if (!(e >= 0.0)) j = 0;                   /* also NaN: start at the bottom */
    else if (e >= (double)(n - 1)) j = (ptrdiff_t)n - 1;
    else j = (ptrdiff_t)e;
    while (j + 1 < (ptrdiff_t)n && g[j + 1] <= x) j++;
    while (j >= 0 && g[j] > x) j--;
    return j;
}

int dpf_boost_grid_sums(const double *a, size_t m, const double *g, size_t n, size_t *cnt,
                        double *sum, double *S)
{
    if (n < 1) return DPF_E_PARAM;
    double lg0 = log(g[0]);
    double inv_lr = n >= 3 ? 1.0 / (log(g[1]) - lg0) : 0.0;
    memset(cnt, 0, (n + 1) * sizeof(size_t));
    memset(sum, 0, (n + 1) * sizeof(double));
    for (size_t i = 0; i < m; i++) {
        size_t c = (size_t)(grid_cell(a[i], g, n, lg0, inv_lr) + 1);   /* 0 .. n */
        cnt[c]++;
        sum[c] += a[i];
    }
    /* a_i < g[j]  <=>  its cell index (largest j' with g[j'] <= a_i, plus one) is <= j. */
    size_t below_n = 0;
    double below_s = 0.0;
    for (size_t j = 0; j < n; j++) {
        below_n += cnt[j];
        below_s += sum[j];
        S[j] = (double)(m - below_n) + below_s / g[j];
    }
    return DPF_OK;
}

static int desc(const void *p, const void *q)
{
    double x = *(const double *)p, y = *(const double *)q;
    return (x < y) - (x > y);
}

int dpf_boost_solve_w(const double *a, size_t m, double target, double *work, double *w,
                      size_t *ncapped)
{
    if (m < 1 || !(target > 0.0 && target < (double)m)) return DPF_E_PARAM;
    double *s = work, *R = work + m;
    double M = 0.0;
    for (size_t i = 0; i < m; i++) {
        if (!(a[i] > 0.0 && a[i] <= DBL_MAX)) return DPF_E_PARAM;
        if (a[i] > M) M = a[i];
    }
    /* S is scale-equivariant (R3): solve on a / M, whose sums stay
     * below m, and scale w back.  Terms that underflow weigh < 1e-308 of the largest. */
    for (size_t i = 0; i < m; i++) s[i] = a[i] / M;
    qsort(s, m, sizeof(double), desc);
    /* Suffix sums R_c = sum_{j >= c} s_j, smallest terms first (accurate). */
    double acc = 0.0;
    for (size_t j = m; j-- > 0;) {
        acc += s[j];
        R[j] = acc;
    }
    /* R3: if exactly the c largest items are capped, S(w) = c + R_c / w, so
     * w = R_c / (target - c); the right c is the smallest c in [0, ceil(target) - 1] with
     * s_c (target - c) < R_c, a predicate that is monotone in c
     * (phi(c+1) - phi(c) = (target - c - 1)(s_{c+1} - s_c) <= 0), true at the top end
     * because target < m.  Binary search for it. */
    size_t lo = 0, hi = (size_t)ceil(target) - 1;
    if (hi > m - 1) hi = m - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid] * (target - (double)mid) < R[mid]) hi = mid;
        else lo = mid + 1;
    }
    *w = (R[lo] / (target - (double)lo)) * M;
    *ncapped = lo;
    return DPF_OK;
}

void dpf_boost_cap(const double *a, size_t m, double w, double *v, size_t *ncapped,
                   double *mass)
{
    size_t capped = 0;
    double total = 0.0;
    for (size_t i = 0; i < m; i++) {
        double x = a[i] / w;
        if (a[i] >= w) {
            x = 1.0;
            capped++;
        }   /* min(a/w, 1), Figure 2 step 5 */
        v[i] = x;
        total += x;
    }
    *ncapped = capped;
    *mass = total;
}

int dpf_boost_sample(dpf_rng_t *r, const double *v, size_t m, size_t k, uint64_t *cum,
                     int64_t *out)
{
    if (m < 1 || m > ((size_t)1 << 40)) return DPF_E_PARAM;
    int bits = 0;
    while (bits < 64 && ((uint64_t)m >> bits) != 0) bits++;
    int K = 63 - bits;                          /* sum q_i <= m 2^K < 2^63 */
    uint64_t acc = 0;
    for (size_t i = 0; i < m; i++) {
        if (!(v[i] > 0.0 && v[i] <= 1.0)) return DPF_E_PARAM;
        /* ldexp by a power of two is exact for normal v; ceil rounds the weight up, so
         * q_i in [1, 2^K] and Q >= 2^K sum v (see boost.h). */
        acc += (uint64_t)ceil(ldexp(v[i], K));
        cum[i] = acc;
    }
    for (size_t t = 0; t < k; t++) {
        uint64_t u = dpf_uniform_below(r, acc);      /* exact uniform on [0, Q) */
        size_t lo = 0, hi = m - 1;                   /* first i with cum[i] > u */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cum[mid] > u) hi = mid;
            else lo = mid + 1;
        }
        out[t] = (int64_t)lo;
    }
    return DPF_OK;
}
