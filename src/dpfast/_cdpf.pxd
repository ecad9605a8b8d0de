# Declarations of the C core (csrc/include/dpfast/*.h), once, for the Cython layer.
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t

cdef extern from "dpfast/status.h":
    enum:
        DPF_OK
        DPF_E_ENTROPY
        DPF_E_NOMEM
        DPF_E_RANGE
        DPF_E_PARAM

cdef extern from "dpfast/chacha.h" nogil:
    enum:
        DPF_CHACHA_OS
        DPF_CHACHA_SEEDED
        DPF_CHACHA_STREAM
        DPF_CHACHA_WORDS
        DPF_IMPL_BEST
        DPF_IMPL_SCALAR
        DPF_IMPL_VEC128
        DPF_IMPL_AVX2
        DPF_IMPL_AVX512
        DPF_IMPL_COUNT
    ctypedef struct dpf_chacha_t:
        uint64_t buf[1]
        uint32_t pos, len, mode, impl, has_half, half, fork_gen
        uint32_t key[8]
        uint32_t nonce[3]
        uint64_t counter
    int dpf_chacha_global_init()
    dpf_chacha_t *dpf_chacha_alloc(int mode, int *mapped)
    void dpf_chacha_free(dpf_chacha_t *c, int mapped)
    int dpf_chacha_key_os(dpf_chacha_t *c)
    void dpf_chacha_key(dpf_chacha_t *c, const uint8_t *key, const uint8_t *nonce,
                        uint64_t counter)
    void dpf_chacha_refill(dpf_chacha_t *c)
    void dpf_chacha_fill(dpf_chacha_t *c, uint64_t *out, size_t n)
    uint64_t dpf_chacha_next_u64(dpf_chacha_t *c)
    uint32_t dpf_chacha_next_u32(dpf_chacha_t *c)
    int dpf_chacha_keystream(int impl, const uint8_t *key, const uint8_t *nonce,
                             uint64_t counter, uint8_t *out, size_t nblocks)
    int dpf_chacha_impl_available(int impl)
    int dpf_chacha_best_impl()
    const char *dpf_chacha_impl_name(int impl)

cdef extern from "dpfast/entropy.h" nogil:
    uint32_t dpf_fork_generation
    int dpf_os_entropy(void *buf, size_t n)
    void dpf_secure_zero(void *p, size_t n)

cdef extern from "dpfast/rng.h" nogil:
    ctypedef struct dpf_rng_t:
        dpf_chacha_t *cc
        void *state
        uint64_t (*next_u64)(void *) noexcept nogil
    uint64_t dpf_next_u64(dpf_rng_t *r)
    double dpf_next_double(dpf_rng_t *r)

cdef extern from "dpfast/continuous.h" nogil:
    void dpf_continuous_init()
    double dpf_std_exponential(dpf_rng_t *r)
    double dpf_std_normal(dpf_rng_t *r)
    double dpf_std_laplace(dpf_rng_t *r)
    double dpf_std_gumbel(dpf_rng_t *r)
    void dpf_uniform_fill(dpf_rng_t *r, double low, double width, double *out, size_t n)
    void dpf_exponential_fill(dpf_rng_t *r, double scale, double *out, size_t n)
    void dpf_normal_fill(dpf_rng_t *r, double sigma, double *out, size_t n)
    void dpf_laplace_fill(dpf_rng_t *r, double scale, double *out, size_t n)
    void dpf_gumbel_fill(dpf_rng_t *r, double scale, double *out, size_t n)

cdef extern from "dpfast/grid.h" nogil:
    int dpf_grid_add(const double *x, const int64_t *z, double *out, size_t n, int k)

cdef extern from "dpfast/discrete.h" nogil:
    enum:
        DPF_BIG_MAX_LIMBS
        DPF_DLAP_CT_MAX_DIGITS
        DPF_DGAUSS_CT_MAX
    ctypedef struct dpf_dlap_ct_t:
        uint64_t s_num, s_den
        uint32_t digits
        uint64_t threshold[31][3]
        uint64_t sign_threshold
        double slack_geometric
        double slack
    ctypedef struct dpf_dgauss_ct_t:
        uint64_t sigma2_num, sigma2_den
        uint32_t size
        double slack
        uint64_t threshold[4096]
    uint64_t dpf_uniform_below(dpf_rng_t *r, uint64_t n)
    int dpf_uniform_below_fill(dpf_rng_t *r, uint64_t n, int64_t *out, size_t count)
    int dpf_bernoulli_rational(dpf_rng_t *r, uint64_t num, uint64_t den)
    int dpf_bernoulli_rational_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out,
                                    size_t n)
    int dpf_bernoulli_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den, size_t limbs)
    int dpf_bernoulli_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                               size_t limbs, int64_t *out, size_t n)
    int dpf_bernoulli_exp(dpf_rng_t *r, uint64_t num, uint64_t den)
    int dpf_bernoulli_exp_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out, size_t n)
    int dpf_bernoulli_exp_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                              size_t limbs)
    int dpf_bernoulli_exp_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                                   size_t limbs, int64_t *out, size_t n)
    int dpf_geometric(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out)
    int dpf_geometric_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out, size_t n)
    int dpf_discrete_laplace(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out)
    int dpf_discrete_laplace_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                                  size_t n)
    int dpf_discrete_gaussian(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                              int64_t *out)
    int dpf_discrete_gaussian_fill(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                                   int64_t *out, size_t n)
    int dpf_dlap_ct_prepare(dpf_dlap_ct_t *t, uint64_t s_num, uint64_t s_den)
    int64_t dpf_discrete_laplace_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
    int dpf_discrete_laplace_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out,
                                      size_t n)
    int64_t dpf_geometric_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
    int dpf_geometric_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out, size_t n)
    int dpf_dgauss_ct_prepare(dpf_dgauss_ct_t *t, uint64_t sigma2_num, uint64_t sigma2_den)
    int64_t dpf_discrete_gaussian_ct(dpf_rng_t *r, const dpf_dgauss_ct_t *t)
    int dpf_discrete_gaussian_ct_fill(dpf_rng_t *r, const dpf_dgauss_ct_t *t, int64_t *out,
                                       size_t n)
    # Only the fields the Cython layer reads (prepared.h has the whole struct).
    ctypedef struct dpf_dlap_exact_t:
        uint64_t s_num, s_den, block
        uint32_t digits, shift
        uint32_t n_geo, n_lap
    ctypedef struct dpf_dgauss_exact_t:
        uint64_t sigma2_num, sigma2_den, t, ymax
        uint64_t *table
        dpf_dlap_exact_t proposal
    int dpf_dlap_exact_prepare(dpf_dlap_exact_t *t, uint64_t s_num, uint64_t s_den,
                               unsigned fast_bits)
    int dpf_geometric_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out, size_t n)
    int dpf_discrete_laplace_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                                        size_t n)
    int dpf_dgauss_exact_prepare(dpf_dgauss_exact_t *g, uint64_t sigma2_num, uint64_t sigma2_den,
                                 unsigned fast_bits)
    int dpf_discrete_gaussian_exact_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g, int64_t *out,
                                         size_t n)
    void dpf_dgauss_exact_free(dpf_dgauss_exact_t *g)
    int dpf_exp_neg_interval(const uint64_t *num, const uint64_t *den, size_t limbs, unsigned prec,
                             uint64_t *lo, uint64_t *hi)

cdef extern from "dpfast/sparse.h" nogil:
    # Only the public fields of dpf_svt_t: the secret threshold noise is deliberately not
    # declared, so no Cython code can read it.
    enum:
        DPF_SVT_SECURE
        DPF_SVT_FAST
        DPF_SVT_CHUNK
    double DPF_SVT_VALUE_LIMIT
    double DPF_SVT_MAX_INV_L
    int DPF_SVT_ATOM_BITS_MIN
    int DPF_SVT_ATOM_BITS_MAX
    ctypedef struct dpf_svt_t:
        int mode
        int numeric
        int64_t cutoff
        double grid
        double q_inv_l
        double q_c1
        uint64_t q_pos
        uint64_t q_atom
        int q_atom_bits
        int impl
        int64_t count
        uint64_t consumed
        int halted
        int started
        int forked
        uint32_t fork_gen
    int dpf_svt_init_secure(dpf_svt_t *s, int64_t cutoff, int numeric, double grid,
                            double threshold, double q_inv_l, int atom_bits,
                            uint64_t thr_num, uint64_t thr_den, uint64_t val_num,
                            uint64_t val_den, int constant_time)
    int dpf_svt_init_fast(dpf_svt_t *s, int64_t cutoff, int numeric, double threshold,
                          double thr_scale, double q_scale, double val_scale)
    double dpf_svt_thr_slack(const dpf_svt_t *s)
    double dpf_svt_val_slack(const dpf_svt_t *s)
    int dpf_svt_start(dpf_svt_t *s, dpf_rng_t *r)
    int dpf_svt_validate(const dpf_svt_t *s, const double *v, const double *t,
                         size_t t_stride, size_t n, size_t *bad, int *which)
    int dpf_svt_feed(dpf_svt_t *s, dpf_rng_t *r, const double *v, const double *t,
                     size_t t_stride, size_t n, uint8_t *top, double *val, size_t *done)
    void dpf_svt_wipe(dpf_svt_t *s)
    int dpf_svt_query_noise_chunk(const dpf_svt_t *s, int impl, const uint64_t *words,
                                  int64_t *out, double *bounds, int64_t rt)

cdef extern from "dpfast/selection.h" nogil:
    enum:
        DPF_SCORES_F64
        DPF_SCORES_I64
        DPF_NOISE_GUMBEL
        DPF_NOISE_EXPONENTIAL
        DPF_NOISE_LAPLACE
    ctypedef struct dpf_sel_grid_t:
        double inv_grid
        uint64_t g
        uint32_t s
    void dpf_selection_init()
    void dpf_selection_constants(uint64_t out[7][4])
    int dpf_scores_argmax(const void *u, int kind, size_t m, size_t *idx)
    int dpf_em_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                      const dpf_sel_grid_t *grid, size_t *out)
    int dpf_em_secure_shifted(dpf_rng_t *r, const void *u, int kind, size_t m,
                              const dpf_sel_grid_t *grid, uint64_t shift, size_t *out)
    int dpf_topk_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                        const dpf_sel_grid_t *grid, size_t k, int64_t *out)
    int dpf_noisy_max_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                             const dpf_sel_grid_t *grid, int noise, size_t *out)
    int dpf_noisy_max_fast(dpf_rng_t *r, const double *u, size_t m, double gamma, int noise,
                           size_t *out)
    int dpf_topk_fast(dpf_rng_t *r, const double *u, size_t m, double gamma, size_t k,
                      int64_t *out)
    void dpf_rr_coins(dpf_rng_t *r, const uint8_t *truth, uint8_t *out, size_t n)
    void dpf_rr_binary(dpf_rng_t *r, const uint8_t *truth, uint8_t *out, size_t n, uint64_t t)
    void dpf_rr_kary(dpf_rng_t *r, const int64_t *truth, int64_t *out, size_t n, uint64_t k,
                     uint64_t t)

from libc.stdint cimport int8_t

cdef extern from "dpfast/boost.h" nogil:
    void dpf_boost_premultiply(const double *v, const int8_t *c, size_t m, double down,
                               double up, double *a)
    int dpf_boost_grid(double g_min, double r, double g_max, size_t n_max, double *g,
                       size_t *n_out)
    int dpf_boost_grid_sums(const double *a, size_t m, const double *g, size_t n,
                            size_t *cnt, double *sum, double *S)
    int dpf_boost_solve_w(const double *a, size_t m, double target, double *work, double *w,
                          size_t *ncapped)
    void dpf_boost_cap(const double *a, size_t m, double w, double *v, size_t *ncapped,
                       double *mass)
    int dpf_boost_sample(dpf_rng_t *r, const double *v, size_t m, size_t k, uint64_t *cum,
                         int64_t *out)
cdef extern from "dpfast/grouped.h" nogil:
    ctypedef struct dpf_value_grid_t:
        double lo
        double hi
        double inv_step
        int64_t qlo
        int64_t qhi
    int dpf_bound_contributions(dpf_rng_t *r, size_t n, const int64_t *unit, size_t n_units,
                                const int64_t *key, size_t n_keys, const double *value,
                                const dpf_value_grid_t *grid, uint64_t max_partitions,
                                uint64_t max_contributions, int64_t *count, int64_t *qsum,
                                int64_t *units)
    void dpf_select_partitions(dpf_rng_t *r, const int64_t *units, size_t n_keys,
                               const uint64_t *table, size_t n_table, uint8_t *keep)

cdef extern from "dpfast/release.h" nogil:
    enum:
        DPF_REL_MAXDIM
    int dpf_rel_reduce(const double *src, int ndim, const int64_t *shape, uint32_t keep,
                       double *out)
    int dpf_rel_expand_mul(double *w, int ndim, const int64_t *shape, uint32_t keep,
                           const double *factor)
    double dpf_rel_slice_sum(const double *w, int ndim, const int64_t *shape,
                             uint32_t fixed, const int64_t *vals)
    void dpf_rel_slice_scale(double *w, int ndim, const int64_t *shape, uint32_t fixed,
                             const int64_t *vals, double factor)
    int dpf_rel_mw_cells(double *w, int ndim, const int64_t *shape, size_t nq,
                         const uint32_t *masks, const int64_t *vals, const double *targets,
                         int passes, double n, double *Z)
    int dpf_rel_mw_marginal(double *w, int ndim, const int64_t *shape, uint32_t keep,
                            const double *targets, double n, double *Z, double *scratch)

cdef extern from "dpfast/consttime.h" nogil:
    uint64_t dpf_ticks()


# hardening (issue 9): interruptible peeling top-k
cdef extern from "dpfast/selection.h" nogil:
    int dpf_topk_secure_rounds(dpf_rng_t *r, const void *u, int kind, size_t m,
                               const dpf_sel_grid_t *grid, uint8_t *layer, size_t t0,
                               size_t t1, int64_t *out)

cdef extern from "dpfast/compat.h" nogil:
    int64_t DPF_BOUNDED_MAX_STEPS
    int dpf_laplace_bounded_grid(dpf_rng_t *r, const dpf_dlap_exact_t *t, const double *x,
                                 double *out, size_t n, int k, double lower, double upper)
    void dpf_laplace_bounded_fast(dpf_rng_t *r, double scale, const double *x, double *out,
                                  size_t n, double lower, double upper)
    void dpf_gamma_fill(dpf_rng_t *r, double shape, double scale, double *out, size_t n)
    void dpf_uniform_fp_fill(dpf_rng_t *r, double *out, size_t n)

from libc.stdint cimport int32_t

cdef extern from "dpfast/release.h" nogil:
    int dpf_rel_csr_check(int64_t N, size_t nq, const int64_t *indptr,
                          const int32_t *indices)
    void dpf_rel_csr_matvec(const double *w, size_t nq, const int64_t *indptr,
                            const int32_t *indices, const double *vals, double *out)
    int dpf_rel_mw_rows(double *w, int64_t N, const int64_t *indptr,
                        const int32_t *indices, const double *vals, size_t nr,
                        const int64_t *rows, const double *targets, int passes, double n,
                        double *Z)
    ctypedef struct dpf_rel_plan_t:
        int ndim
        const int64_t *shape
        int nsteps
        const int32_t *parent
        const uint32_t *keep
        const int32_t *sndim
        const int64_t *soff
        const int64_t *sshape
        const int64_t *toff
        int m
        const int32_t *fsrc
        const uint32_t *fkeep
        const int64_t *offsets
    int dpf_rel_plan_check(const dpf_rel_plan_t *p, int64_t ntables, int64_t nout)
    int dpf_rel_plan_answer(const dpf_rel_plan_t *p, const double *w, double *tables,
                            double *out)
    int dpf_rel_mw_joint(const dpf_rel_plan_t *p, double *w, const double *targets,
                         int passes, double n, double *vals, double *facs, double *est,
                         double *f, uint8_t *touched)
