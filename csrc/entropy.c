/* The operating system under the generator (entropy.h): OS entropy, fork safety
 * (the fork generation, the process id, wipe-on-fork pages) and erasure of memory.
 * Below chacha.c in the layers of docs/security-model.md ("C layers"). */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "dpfast/entropy.h"
#include "dpfast/status.h"

#include <stdlib.h>   /* arc4random_buf on macOS and the BSDs */
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#include <bcrypt.h>
#else
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#endif

volatile uint32_t dpf_fork_generation = 1;

/* ------------------------------------------------------------------ erasure */

/* memset called through a volatile pointer: the compiler cannot know which function it
 * calls, so it cannot drop the stores as dead (OpenSSL's OPENSSL_cleanse, crypto/mem_clr.c,
 * does the same); unlike a volatile byte loop it runs at memset's speed. */
static void *(*const volatile dpf_memset_v)(void *, int, size_t) = memset;

void dpf_secure_zero(void *p, size_t n)
{
    dpf_memset_v(p, 0, n);
}

/* ------------------------------------------------------------------ OS entropy */

int dpf_os_entropy(void *buf, size_t n)
{
    unsigned char *p = (unsigned char *)buf;
#if defined(_WIN32)
    while (n > 0) {
        ULONG chunk = n > 0x10000000u ? 0x10000000u : (ULONG)n;
        if (!BCRYPT_SUCCESS(
                BCryptGenRandom(NULL, p, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
            return DPF_E_ENTROPY;
        p += chunk;
        n -= chunk;
    }
    return DPF_OK;
#elif defined(__APPLE__) || defined(__OpenBSD__) || defined(__FreeBSD__) ||                \
    defined(__NetBSD__) || defined(__DragonFly__)
    arc4random_buf(p, n); /* cannot fail: keyed from the kernel */
    return DPF_OK;
#else
#if defined(SYS_getrandom)
    while (n > 0) {
        long got = syscall(SYS_getrandom, p, n > 33554431 ? 33554431 : n, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOSYS) break; /* a kernel older than 3.17: use /dev/urandom */
            return DPF_E_ENTROPY;
        }
        p += got;
        n -= (size_t)got;
    }
    if (n == 0) return DPF_OK;
#endif
    {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return DPF_E_ENTROPY;
        while (n > 0) {
            ssize_t got = read(fd, p, n);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                close(fd);
                return DPF_E_ENTROPY;
            }
            p += got;
            n -= (size_t)got;
        }
        close(fd);
        return DPF_OK;
    }
#endif
}

/* ------------------------------------------------------------------ fork safety */

void *dpf_wiped_pages_alloc(size_t n)
{
#if defined(__linux__) && defined(MADV_WIPEONFORK)
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        if (madvise(p, n, MADV_WIPEONFORK) == 0) return p;
        munmap(p, n);   /* an older kernel: the caller falls back */
    }
#else
    (void)n;
#endif
    return NULL;
}

void dpf_wiped_pages_free(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_WIPEONFORK)
    munmap(p, n);
#else
    (void)p;
    (void)n;
#endif
}

#if defined(__linux__) && defined(MADV_WIPEONFORK)
/* A page the kernel zeroes in every child (of fork() or of a raw clone() without
 * CLONE_VM, which runs no atfork handler): it holds this process's id once read, so
 * dpf_process_id is a load instead of a system call (a stream checks it on every
 * feed).  A child reads 0 and asks the kernel again.  NULL where the kernel refuses
 * MADV_WIPEONFORK: then every call asks the kernel. */
static volatile uint64_t *pid_page = NULL;
#endif

uint64_t dpf_process_id(void)
{
#if defined(_WIN32)
    return (uint64_t)GetCurrentProcessId();
#else
#if defined(__linux__) && defined(MADV_WIPEONFORK)
    if (pid_page != NULL) {
        uint64_t p = *pid_page;
        if (p == 0) *pid_page = p = (uint64_t)getpid(); /* every thread stores the same */
        return p;
    }
#endif
    return (uint64_t)getpid();
#endif
}

#if !defined(_WIN32)
static void after_fork_child(void)
{
    /* Every buffer filled before the fork is now stale; OS-mode states rekey. */
    dpf_fork_generation++;
    if (dpf_fork_generation == 0) dpf_fork_generation = 1;
}
#endif

int dpf_fork_init(void)
{
#if !defined(_WIN32)
    if (pthread_atfork(NULL, NULL, after_fork_child) != 0) return -1;
#endif
#if defined(__linux__) && defined(MADV_WIPEONFORK)
    pid_page = (volatile uint64_t *)dpf_wiped_pages_alloc(4096);
#endif
    return 0;
}
