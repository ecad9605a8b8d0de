/* Contribution bounding and partition selection for grouped releases (dpfast.grouped).
 *
 * Privacy argument of dpf_bound_contributions.  Each unit's kept records are chosen by
 * fresh randomness of that unit only, as a function of that unit's own records: so
 * adding or removing one unit changes the bounded multiset of records by that unit's
 * kept records alone, which lie in at most max_partitions partitions with at most
 * max_contributions records each.  The release on the bounded data, as a mixture over
 * this unit's sampling of releases on neighbouring bounded data, keeps their guarantee
 * (DP is preserved under mixtures).  That is where the sensitivities of dpfast.grouped
 * come from: L0 = max_partitions, Linf = max_contributions (times the value bound).
 *
 * Uniform subsets are drawn by selection sampling (Knuth, TAOCP vol. 2, 3.4.2,
 * Algorithm S): scanning d items and keeping item t with probability
 * need / (d - t) yields every subset of size k with probability 1 / C(d, k).  Each
 * probability is realised exactly with Lemire's bounded integers (dpf_uniform_below).
 * Records are brought together by unit with a two-level counting sort (by blocks of
 * unit codes, then by unit inside each block, so that both passes stay in cache), then
 * sorted by partition inside each unit: O(n + n_units) plus the small per-unit sorts.
 */
#include <math.h>
#include <stdlib.h>

#include "dpfast/discrete.h"
#include "dpfast/grouped.h"

/* Keep a uniformly random k-subset of d items: returns whether item t (scanned in order,
 * `*need` still to choose among d - t) is kept. */
static DPF_INLINE int select_next(dpf_rng_t *r, uint64_t *need, uint64_t remaining)
{
    if (*need == 0) return 0;
    /* need == remaining: every rest item is kept with probability 1, no draw needed */
    if (*need >= remaining || dpf_uniform_below(r, remaining) < *need) {
        (*need)--;
        return 1;
    }
    return 0;
}

static DPF_INLINE int64_t grid_value(double v, const dpf_value_grid_t *g)
{
    /* NaN never reaches here; +-inf clamp to the bounds like every other value */
    double c = v < g->lo ? g->lo : (v > g->hi ? g->hi : v);
    double q = rint(c * g->inv_step);   /* exact product: inv_step is a power of two */
    int64_t iq = (int64_t)q;
    return iq < g->qlo ? g->qlo : (iq > g->qhi ? g->qhi : iq);
}

typedef struct rec {
    int64_t key;   /* partition code */
    int64_t q;     /* value in grid steps (0 for counts only) */
} rec_t;

static int rec_cmp(const void *a, const void *b)
{
    int64_t x = ((const rec_t *)a)->key, y = ((const rec_t *)b)->key;
    return (x > y) - (x < y);
}

/* Groups a unit's records by partition.  The order inside a partition does not matter:
 * selection sampling draws a uniform subset of whatever order it scans. */
static void sort_by_key(rec_t *a, size_t m)
{
    size_t i, j;
    if (m > 24) {
        qsort(a, m, sizeof(rec_t), rec_cmp);
        return;
    }
    for (i = 1; i < m; i++) {
        rec_t t = a[i];
        for (j = i; j > 0 && a[j - 1].key > t.key; j--) a[j] = a[j - 1];
        a[j] = t;
    }
}

typedef struct rec_u {
    rec_t rec;
    uint64_t unit;
} rec_u_t;

/* Bound one unit's records a[0..m): keep a uniform subset of min(d, max_partitions) of
 * its d partitions and, in each kept one, of min(c, max_contributions) of its c records. */
static void bound_unit(dpf_rng_t *r, rec_t *a, size_t m, uint64_t max_partitions,
                       uint64_t max_contributions, int64_t *count, int64_t *qsum,
                       int64_t *units)
{
    size_t j, run;
    uint64_t d = 0, need;
    sort_by_key(a, m);
    for (j = 0; j < m; j++)
        if (j == 0 || a[j].key != a[j - 1].key) d++;
    need = d < max_partitions ? d : max_partitions;
    for (j = 0, run = 0; j < m; run++) {
        size_t e = j + 1;
        int64_t kk = a[j].key;
        while (e < m && a[e].key == kk) e++;
        if (select_next(r, &need, d - run)) {
            uint64_t c = (uint64_t)(e - j),
                     take = c < max_contributions ? c : max_contributions;
            uint64_t t = 0;
            size_t x;
            int64_t s = 0;
            for (x = j; x < e; x++, t++) {
                if (!select_next(r, &take, c - t)) continue;
                count[kk]++;
                s += a[x].q;
            }
            if (qsum) qsum[kk] += s;
            if (units) units[kk]++;
        }
        j = e;
    }
}

/* Units are grouped in two counting-sort passes that stay in cache: first into at most
 * GROUP_BUCKETS buckets of consecutive unit codes, then, bucket by bucket, by unit. */
#define GROUP_BUCKETS 1024

int dpf_bound_contributions(dpf_rng_t *r, size_t n, const int64_t *unit, size_t n_units,
                            const int64_t *key, size_t n_keys, const double *value,
                            const dpf_value_grid_t *grid, uint64_t max_partitions,
                            uint64_t max_contributions, int64_t *count, int64_t *qsum,
                            int64_t *units)
{
    size_t boff[GROUP_BUCKETS + 1] = {0};
    size_t *uoff = NULL;
    rec_u_t *tmp = NULL;
    rec_t *buf = NULL;
    size_t i, k, b, nb = 0, width, biggest = 0;
    int shift = 0;
    int st = DPF_OK;

    if ((uint64_t)n >= (uint64_t)0xFFFFFFFFu || max_partitions == 0 ||
        max_contributions == 0)
        return DPF_E_PARAM;
    for (k = 0; k < n_keys; k++) {
        count[k] = 0;
        if (qsum) qsum[k] = 0;
        if (units) units[k] = 0;
    }
    if (n == 0 || n_units == 0) return DPF_OK;
    while (((n_units - 1) >> shift) >= GROUP_BUCKETS) shift++;
    nb = ((n_units - 1) >> shift) + 1;
    width = (size_t)1 << shift;

    /* records kept for bounding: a public key and a non-NaN value (NaN records are
     * dropped before bounding, +-inf are clamped by grid_value) */
    for (i = 0; i < n; i++) {
        int64_t kk = key[i], uu = unit[i];
        if (kk < 0 || (value && isnan(value[i]))) continue;
        if ((uint64_t)kk >= n_keys || uu < 0 || (uint64_t)uu >= n_units) return DPF_E_PARAM;
        boff[((uint64_t)uu >> shift) + 1]++;
    }
    for (b = 0; b < nb; b++) {
        if (boff[b + 1] > biggest) biggest = boff[b + 1];
        boff[b + 1] += boff[b];
    }
    tmp = (rec_u_t *)malloc((boff[nb] ? boff[nb] : 1) * sizeof(rec_u_t));
    buf = (rec_t *)malloc((biggest ? biggest : 1) * sizeof(rec_t));
    uoff = (size_t *)malloc((width + 1) * sizeof(size_t));
    if (!tmp || !buf || !uoff) {
        st = DPF_E_NOMEM;
        goto done;
    }
    /* pass 1: by bucket, rounding each value to the grid on the way */
    for (i = 0; i < n; i++) {
        int64_t kk = key[i];
        rec_u_t *d;
        if (kk < 0 || (value && isnan(value[i]))) continue;
        d = &tmp[boff[(uint64_t)unit[i] >> shift]++];
        d->rec.key = kk;
        d->rec.q = value ? grid_value(value[i], grid) : 0;
        d->unit = (uint64_t)unit[i];
    }
    /* pass 2, per bucket (boff[b] is now the end of bucket b): by unit, then bound */
    for (b = 0; b < nb; b++) {
        size_t lo = b ? boff[b - 1] : 0, hi = boff[b], j, u;
        uint64_t base = (uint64_t)b << shift;
        if (lo == hi) continue;
        for (u = 0; u <= width; u++) uoff[u] = 0;
        for (j = lo; j < hi; j++) uoff[tmp[j].unit - base + 1]++;
        for (u = 0; u < width; u++) uoff[u + 1] += uoff[u];
        for (j = lo; j < hi; j++) buf[uoff[tmp[j].unit - base]++] = tmp[j].rec;
        /* uoff[u] is now the end of unit base + u in buf */
        for (u = 0; u < width; u++) {
            size_t a = u ? uoff[u - 1] : 0;
            if (uoff[u] > a)
                bound_unit(r, buf + a, uoff[u] - a, max_partitions, max_contributions,
                           count, qsum, units);
        }
    }
done:
    free(uoff);
    free(tmp);
    free(buf);
    return st;
}

void dpf_select_partitions(dpf_rng_t *r, const int64_t *units, size_t n_keys,
                           const uint64_t *table, size_t n_table, uint8_t *keep)
{
    size_t p;
    for (p = 0; p < n_keys; p++) {
        uint64_t c = (uint64_t)units[p];
        /* P[keep] = table[c] / 2^64 exactly: a uniform 64-bit word below the threshold */
        keep[p] = c >= n_table ? 1 : (uint8_t)(dpf_next_u64(r) < table[c]);
    }
}
