/* Where kernels get random words: a dpfast ChaCha20 state read inline from its buffer,
 * or any numpy BitGenerator through the two fields of its bitgen_t that we need (copied
 * by the Cython layer, so this header needs no numpy or Python header). */
#ifndef DPFAST_RNG_H
#define DPFAST_RNG_H

#include "dpfast/chacha.h"

typedef struct dpf_rng {
    dpf_chacha_t *cc;                 /* non-NULL: the fast path */
    void *state;                      /* else bitgen_t.state ... */
    uint64_t (*next_u64)(void *);     /* ... and bitgen_t.next_uint64 */
} dpf_rng_t;

static DPF_INLINE uint64_t dpf_next_u64(dpf_rng_t *r)
{
    if (DPF_LIKELY(r->cc != NULL)) return dpf_chacha_next_u64(r->cc);
    return r->next_u64(r->state);
}

#define DPF_2POW_M53 (1.0 / 9007199254740992.0)

/* Uniform on [0, 1): 53 random bits. */
static DPF_INLINE double dpf_next_double(dpf_rng_t *r)
{
    return (double)(dpf_next_u64(r) >> 11) * DPF_2POW_M53;
}

/* Uniform on (0, 1]: never 0, so its log is finite. */
static DPF_INLINE double dpf_next_double_oc(dpf_rng_t *r)
{
    return (double)((dpf_next_u64(r) >> 11) + 1) * DPF_2POW_M53;
}

#endif
