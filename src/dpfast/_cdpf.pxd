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
    uint32_t dpf_fork_generation
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
    ctypedef struct dpf_coin_t:
        uint64_t y_int, y_num, lo, hi
        uint32_t ratio
    ctypedef struct dpf_dlap_exact_t:
        uint64_t s_num, s_den, block
        uint32_t digits, shift
        dpf_coin_t coin[64]
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
