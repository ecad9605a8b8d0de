/* Portability macros shared by the C core (gcc, clang, MSVC). */
#ifndef DPFAST_COMMON_H
#define DPFAST_COMMON_H

#if defined(_MSC_VER) && !defined(__cplusplus)
#define DPF_INLINE __inline            /* MSVC's C mode spells it this way */
#else
#define DPF_INLINE inline
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DPF_LIKELY(x) __builtin_expect(!!(x), 1)
#define DPF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DPF_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define DPF_LIKELY(x) (x)
#define DPF_UNLIKELY(x) (x)
#define DPF_NOINLINE __declspec(noinline)
#else
#define DPF_LIKELY(x) (x)
#define DPF_UNLIKELY(x) (x)
#define DPF_NOINLINE
#endif

#endif
