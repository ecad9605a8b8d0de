/* The operating system under the generator (csrc/entropy.c): OS entropy, fork safety and
 * erasure of memory.  The lowest layer of the C core: it includes and calls nothing of
 * dpfast's but status.h and common.h.
 *
 * Fork safety has two mechanisms, so that a child never repeats a word of its parent
 * (chacha.h says how OS-keyed generators use them):
 *   - dpf_fork_generation, incremented in every child by a pthread_atfork handler;
 *   - pages the kernel zeroes in every child (Linux MADV_WIPEONFORK), which also catches a
 *     raw clone() that runs no atfork handler; elsewhere the process id is compared.
 *
 * Pure C99; no Python.h. */
#ifndef DPFAST_ENTROPY_H
#define DPFAST_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

#include "dpfast/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Incremented in every forked child (pthread_atfork).  A buffer filled under an older
 * generation is never handed out. */
extern volatile uint32_t dpf_fork_generation;

/* One-time set-up of the fork handlers (called once, by dpf_chacha_global_init).
 * Returns 0 on success. */
int dpf_fork_init(void);

/* n bytes of private anonymous memory, zeroed by the kernel in every forked child
 * (MADV_WIPEONFORK); NULL where the kernel or the platform does not offer it.  Release with
 * dpf_wiped_pages_free(p, n). */
void *dpf_wiped_pages_alloc(size_t n);
void dpf_wiped_pages_free(void *p, size_t n);

/* The calling process's id (getpid; GetCurrentProcessId on Windows). */
uint64_t dpf_process_id(void);

/* Fill buf with n bytes of OS entropy: 0 on success, DPF_E_ENTROPY otherwise. */
int dpf_os_entropy(void *buf, size_t n);

/* Overwrite memory in a way the compiler may not elide. */
void dpf_secure_zero(void *p, size_t n);

#ifdef __cplusplus
}
#endif
#endif
