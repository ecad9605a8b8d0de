/* The streaming sparse vector technique: AboveThreshold, Sparse and NumericSparse
 * (Dwork & Roth, "The Algorithmic Foundations of Differential Privacy", 2014, section 3.6,
 * Algorithms 1-3) with their query loops in C.
 *
 * One dpf_svt_t is one stream.  It holds the public configuration, the progress counters
 * and, in two fields that no accessor returns, the secret noise of the current threshold.
 * Lyu, Su & Li ("Understanding the Sparse Vector Technique for Differential Privacy",
 * PVLDB 10(6), 2017) list the variants that are not private: releasing the noisy
 * threshold or the per-query noise, or the noisy query value, or answering after the
 * c-th positive.  Nothing here can do that: the only outputs are the top/bottom bits and,
 * for NumericSparse, a value with fresh noise.
 *
 * Two paths:
 *   DPF_SVT_SECURE  inputs floored to a power-of-two grid g (public), integer noise,
 *                   exact integer comparisons.  Threshold and released-value noise is an
 *                   exact discrete Laplace (or the constant-time bitwise sampler, with its
 *                   certified slack); query noise comes from one 64-bit word per query
 *                   through a certified inversion (see sparse.c), the same instructions
 *                   for every query whatever its value.
 *   DPF_SVT_FAST    continuous Laplace in double precision with exact thinning over
 *                   blocks (simulation only; not floating-point safe, Mironov 2012).
 *
 * Callers serialise access to a dpf_svt_t and to its generator (one lock each).
 * Pure C99; no Python.h.
 */
#ifndef DPFAST_SPARSE_H
#define DPFAST_SPARSE_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/rng.h"
#include "dpfast/status.h"
#include "dpfast/discrete.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { DPF_SVT_SECURE = 1, DPF_SVT_FAST = 2 };

/* Secure path limits.  |value / g| and |threshold / g| must be below DPF_SVT_VALUE_LIMIT
 * (so every sum below fits in int64); the query-noise parameter inv_l must not exceed
 * DPF_SVT_MAX_INV_L (so that the inversion error stays below one grid unit). */
#define DPF_SVT_VALUE_LIMIT 2305843009213693952.0   /* 2^61 */
#define DPF_SVT_MAX_INV_L 1099511627776.0           /* 2^40 */
#define DPF_SVT_NOISE_INF ((int64_t)1 << 62)        /* the query noise's atom at +inf */
#define DPF_SVT_THRESHOLD_LIMIT ((int64_t)1 << 48) /* |threshold noise| (never reached) */
/* The query noise's atom: a word below 2^(64 - A) gives N = +inf (probability 2^-A), with
 * A public, chosen by the caller in [MIN, MAX] (see the privacy argument in sparse.c). */
#define DPF_SVT_ATOM_BITS_MIN 20
#define DPF_SVT_ATOM_BITS_MAX 48
/* Query noise is computed DPF_SVT_CHUNK queries at a time (SIMD) from DPF_SVT_CHUNK
 * words, one per query, at fixed query positions: query i uses chunk i / CHUNK whatever
 * the batching, so a batch and the same queries one step at a time give the same
 * answers. */
#define DPF_SVT_CHUNK 64

/* An exact discrete Laplace of scale s_num/s_den (grid units), or its constant-time
 * counterpart (prepared once). */
typedef struct dpf_svt_dlap {
    uint64_t s_num, s_den;
    int constant_time;
    dpf_dlap_ct_t ct;
} dpf_svt_dlap_t;

typedef struct dpf_svt dpf_svt_t;

struct dpf_svt {
    /* ---- public configuration (set once by an init function) */
    int mode; /* DPF_SVT_SECURE or DPF_SVT_FAST */
    int numeric; /* 1: NumericSparse (release f_i + fresh noise at a top) */
    int64_t cutoff; /* c: halt after the c-th top */
    /* secure */
    double grid, inv_grid; /* g = 2^j and 1/g, both exact */
    int64_t default_thr; /* floor(T / g) */
    double q_inv_l; /* query noise: q = 2^(-1/q_inv_l) per grid unit */
    double q_c1; /* log2(1 + q) */
    uint64_t q_pos; /* about 2^64 q/(1+q): the sign split of the inversion */
    uint64_t q_atom; /* 2^(64 - q_atom_bits): words below it give N = +inf */
    int q_atom_bits; /* A: the atom has probability 2^-A */
    dpf_svt_dlap_t thr_noise; /* threshold noise, scale sigma K */
    dpf_svt_dlap_t val_noise; /* NumericSparse released-value noise */
    /* fast */
    double threshold; /* T */
    double thr_scale, q_scale, val_scale;
    /* ---- progress (public) */
    int64_t count; /* tops so far */
    uint64_t consumed; /* queries answered */
    int halted;
    int started;
    int forked; /* halted because the process forked after the start */
    uint32_t fork_gen; /* dpf_fork_generation at the start */
    uint64_t pid; /* the process that started the stream (a raw clone() runs
                                * no atfork handler, so the id is checked too) */
    int impl; /* DPF_IMPL_* computing the query noise (chacha.h) */
    /* that code: noise (and default-threshold bounds) of a chunk from its words */
    void (*noise_chunk)(const dpf_svt_t *, uint64_t *, int64_t *, double *, uint64_t);
    int (*any_top)(const double *, const double *, size_t); /* some v[j] >= b[j]? */
    int use_bounds; /* |floor(T/g)| < 2^50: compare in doubles (see sparse.c) */
    /* ---- secret: the current threshold noise and the pre-computed noise of the next
     * queries of the current chunk.  Never returned by any function; each query's noise
     * is erased once used (overwritten by the next chunk, or erased before dpf_svt_feed
     * returns). */
    int64_t secret_thr_int; /* secure: T-hat = T + secret_thr_int (grid units) */
    double secret_thr_dbl; /* fast:   T-hat = T + secret_thr_dbl */
    uint32_t secret_qpos; /* next unused entry of secret_qnoise (CHUNK: none left) */
    int64_t secret_qnoise[DPF_SVT_CHUNK];
    /* with the default threshold: query j is a top iff f_j / g >= secret_qbound[j] */
    double secret_qbound[DPF_SVT_CHUNK];
};

/* Configure a secure stream.  Scales are in grid units: the threshold noise is a discrete
 * Laplace of scale thr_num/thr_den, the released value's (numeric only) val_num/val_den;
 * the query noise has parameter q_inv_l and an atom of mass 2^-atom_bits at +inf.
 * DPF_E_PARAM for an invalid parameter (atom_bits outside [DPF_SVT_ATOM_BITS_MIN,
 * DPF_SVT_ATOM_BITS_MAX] included), DPF_E_RANGE if T/g is too large or inv_l exceeds
 * DPF_SVT_MAX_INV_L, or a status of the constant-time sampler's preparation. */
int dpf_svt_init_secure(dpf_svt_t *s, int64_t cutoff, int numeric, double grid,
                        double threshold, double q_inv_l, int atom_bits, uint64_t thr_num,
                        uint64_t thr_den, uint64_t val_num, uint64_t val_den,
                        int constant_time);

/* Configure a fast (simulation) stream with Laplace scales in value units. */
int dpf_svt_init_fast(dpf_svt_t *s, int64_t cutoff, int numeric, double threshold,
                      double thr_scale, double q_scale, double val_scale);

/* The certified total-variation slack of one threshold draw and of one value draw (zero
 * unless the constant-time sampler is used). */
double dpf_svt_thr_slack(const dpf_svt_t *s);
double dpf_svt_val_slack(const dpf_svt_t *s);

/* Draw the first noisy threshold (Algorithm 1, first line).  Once only. */
int dpf_svt_start(dpf_svt_t *s, dpf_rng_t *r);

/* Check a batch before anything is drawn: every value (and threshold, t may be NULL;
 * t_stride 0 repeats t[0]) must be finite and, on the secure path, within the grid's
 * range.  DPF_E_RANGE with *bad = the index and *which = 0 (values) or 1 (thresholds). */
int dpf_svt_validate(const dpf_svt_t *s, const double *v, const double *t, size_t t_stride,
                     size_t n, size_t *bad, int *which);

/* Answer queries in order until n are answered or the stream halts.  top[i] gets 1/0;
 * for a numeric stream val[i] gets the released value or NaN.  *done gets the number
 * answered.  The batch must have passed dpf_svt_validate.  A halted stream answers
 * nothing (DPF_E_PARAM).  DPF_E_RANGE only if a noise draw cannot be represented (the
 * stream then halts without answering that query).  In a process forked after the start
 * the stream halts (forked = 1) and its secrets are erased: a forked copy would answer
 * with the same noisy threshold and noise as its parent, like a pickled copy. */
int dpf_svt_feed(dpf_svt_t *s, dpf_rng_t *r, const double *v, const double *t,
                 size_t t_stride, size_t n, uint8_t *top, double *val, size_t *done);

/* Erase the secret and the configuration. */
void dpf_svt_wipe(dpf_svt_t *s);

/* The secure query noise of one chunk computed from DPF_SVT_CHUNK words (query j uses
 * words[j]) by implementation impl (DPF_IMPL_SCALAR, ..., or DPF_IMPL_BEST), and with
 * bounds != NULL the comparison bounds for R + floor(T/g) = rt that the same pass
 * computes for the default threshold.  Exposed for tests of the inversion; a pure
 * function of its arguments, and the same for every implementation.  -1 if impl is not
 * available. */
int dpf_svt_query_noise_chunk(const dpf_svt_t *s, int impl, const uint64_t *words,
                              int64_t *out, double *bounds, int64_t rt);

#ifdef __cplusplus
}
#endif
#endif
