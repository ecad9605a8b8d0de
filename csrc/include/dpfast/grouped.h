/* Grouped releases: per-unit contribution bounding and private partition selection, the
 * C kernels behind dpfast.grouped.  Pure C99, no Python.h.  The Python layer validates
 * every argument, maps units and partition keys to dense codes and computes the public
 * value grid and the selection thresholds; these kernels only sample and accumulate.
 */
#ifndef DPFAST_GROUPED_H
#define DPFAST_GROUPED_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/rng.h"
#include "dpfast/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The public value grid: a value v is clamped to [lo, hi], rounded to the nearest multiple
 * of step = 2^j (inv_step = 2^-j, exact) and kept within [qlo, qhi] grid steps. */
typedef struct dpf_value_grid {
    double lo, hi, inv_step;
    int64_t qlo, qhi;
} dpf_value_grid_t;

/* Contribution bounding (the sampling of PipelineDP and Tumult, exact and uniform):
 * records i in [0, n) have a unit code unit[i] in [0, n_units) and a partition code
 * key[i] in [0, n_keys); key[i] < 0 marks a record to ignore (a key outside the public
 * partitions).  value may be NULL (counts only); a NaN value drops its record.
 *
 * For every unit independently: of the distinct partitions it has records in, a uniformly
 * random subset of min(d, max_partitions) is kept; in each kept partition, a uniformly
 * random subset of min(c, max_contributions) of its records is kept.  Kept records add 1
 * to count[key], their grid value to qsum[key] (if qsum != NULL), and each (unit, kept
 * partition) adds 1 to units[key] (if units != NULL).  Outputs are overwritten.
 *
 * Requires n < 2^32 (so |qsum| < 2^32 * 2^31 fits in int64) and |qlo|, |qhi| <= 2^31.
 * DPF_E_NOMEM if the scratch arrays (about 5 n words) cannot be allocated. */
int dpf_bound_contributions(dpf_rng_t *r, size_t n, const int64_t *unit, size_t n_units,
                            const int64_t *key, size_t n_keys, const double *value,
                            const dpf_value_grid_t *grid, uint64_t max_partitions,
                            uint64_t max_contributions, int64_t *count, int64_t *qsum,
                            int64_t *units);

/* Private partition selection by a threshold table: partition p is kept with probability
 * 1 if units[p] >= n_table, else table[units[p]] / 2^64 (one fresh word per partition
 * whose count is below n_table).  table[0] must be 0: an empty partition is never kept. */
void dpf_select_partitions(dpf_rng_t *r, const int64_t *units, size_t n_keys,
                           const uint64_t *table, size_t n_table, uint8_t *keep);

#ifdef __cplusplus
}
#endif

#endif
