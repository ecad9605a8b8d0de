/* ChaCha20 keystream generator (RFC 8439) used as dpfast's CSPRNG.
 *
 * Three modes share one buffered state:
 *   DPF_CHACHA_OS      keyed from the operating system; fast key erasure; rekeyed from the
 *                      OS in a forked child before it can repeat a word of its parent.
 *   DPF_CHACHA_SEEDED  keyed from a caller's seed; fast key erasure; deterministic.
 *   DPF_CHACHA_STREAM  the raw RFC 8439 keystream for (key, nonce, counter): no erasure,
 *                      so that published test vectors can be checked word for word.
 *
 * Fast key erasure (Bernstein, "Fast-key-erasure random-number generators", 2017): each
 * refill computes DPF_CHACHA_BLOCKS blocks under the current key, takes the first 32
 * bytes as the next key and hands out the rest; every word is zeroed as it is handed out,
 * so a later memory disclosure reveals no past output and no key that produced it.
 *
 * Pure C99; no Python.h.  Thread safety is the caller's: one lock per generator.
 */
#ifndef DPFAST_CHACHA_H
#define DPFAST_CHACHA_H

#include <stddef.h>
#include <stdint.h>

#include "dpfast/common.h"
#include "dpfast/entropy.h"   /* the layer below: OS entropy and fork safety */

#ifdef __cplusplus
extern "C" {
#endif

#define DPF_CHACHA_BLOCKS 32                       /* blocks per refill */
#define DPF_CHACHA_WORDS (DPF_CHACHA_BLOCKS * 8)   /* 64-bit words per refill */

enum { DPF_CHACHA_OS = 1, DPF_CHACHA_SEEDED = 2, DPF_CHACHA_STREAM = 3 };

/* Block-function implementations; dpf_chacha_impl_available tells which this CPU runs. */
enum {
    DPF_IMPL_BEST = 0,
    DPF_IMPL_SCALAR = 1,
    DPF_IMPL_VEC128 = 2, /* SSE2 or NEON */
    DPF_IMPL_AVX2 = 3,
    DPF_IMPL_AVX512 = 4,
    DPF_IMPL_COUNT = 5
};

typedef struct dpf_chacha {
    uint64_t buf[DPF_CHACHA_WORDS]; /* keystream not yet handed out (from pos to len) */
    uint32_t pos, len;
    uint32_t fork_gen;      /* dpf_fork_generation when the buffer was filled */
    uint32_t mode;
    uint32_t key[8];
    uint32_t nonce[3];
    uint32_t impl;          /* DPF_IMPL_* used for refills */
    uint64_t counter;       /* next block counter (STREAM mode) */
    uint32_t half;          /* the unused high half of a word split by next_u32 */
    uint32_t has_half;
    uint64_t magic;         /* DPF_CHACHA_MAGIC while keyed; zero in a wiped page */
    uint64_t pid;           /* OS mode outside a wipe-on-fork page: the keying process */
} dpf_chacha_t;

#define DPF_CHACHA_MAGIC 0x64706661737443ULL

/* One-time set-up: CPU dispatch and the fork handlers (dpf_fork_init).  Returns 0 on
 * success. */
int dpf_chacha_global_init(void);

/* Allocate a zeroed state; OS-mode states go in their own pages with MADV_WIPEONFORK
 * where the kernel offers it (*mapped is then 1; the caller keeps it for free, since the
 * page itself may be wiped).  NULL when out of memory. */
dpf_chacha_t *dpf_chacha_alloc(int mode, int *mapped);
/* Wipe and free. */
void dpf_chacha_free(dpf_chacha_t *c, int mapped);

/* Key an OS-mode state from the OS; 0 on success, DPF_E_ENTROPY otherwise. */
int dpf_chacha_key_os(dpf_chacha_t *c);
/* Key a SEEDED or STREAM state. */
void dpf_chacha_key(dpf_chacha_t *c, const uint8_t key[32], const uint8_t nonce[12],
                    uint64_t counter);

/* Refill the buffer (called by dpf_chacha_next_u64 when it is empty or stale). */
void dpf_chacha_refill(dpf_chacha_t *c);

/* Fill out[0..n) with the next n words.  Once the buffer is empty, whole refills are
 * computed straight into out (the same stream, without the buffer's copy and erase);
 * the words handed out are never in the buffer and no key is left in out. */
void dpf_chacha_fill(dpf_chacha_t *c, uint64_t *out, size_t n);

static DPF_INLINE uint64_t dpf_chacha_next_u64(dpf_chacha_t *c)
{
    uint64_t v;
    if (DPF_UNLIKELY(c->pos >= c->len || c->fork_gen != dpf_fork_generation))
        dpf_chacha_refill(c);
    v = c->buf[c->pos];
    c->buf[c->pos++] = 0;   /* erase what has been handed out */
    return v;
}

uint32_t dpf_chacha_next_u32(dpf_chacha_t *c);

/* Compute nblocks raw keystream blocks (64 bytes each, little endian) with a given
 * implementation; for tests and benchmarks.  Returns 0, or -1 if impl is not available. */
int dpf_chacha_keystream(int impl, const uint8_t key[32], const uint8_t nonce[12],
                         uint64_t counter, uint8_t *out, size_t nblocks);
int dpf_chacha_impl_available(int impl);
int dpf_chacha_best_impl(void);
const char *dpf_chacha_impl_name(int impl);

#ifdef __cplusplus
}
#endif
#endif
