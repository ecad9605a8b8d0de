/* Samplers for the drop-in backends: see compat.h. */
#include <float.h>
#include <math.h>

#include "dpfast/common.h"
#include "dpfast/compat.h"
#include "dpfast/continuous.h"
#include "dpfast/status.h"

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "the bounded grid release needs IEEE double arithmetic without excess precision"
#endif

#define TWO52 4503599627370496.0

static DPF_INLINE double round_half_even(double v)
{
    /* as in grid.c: exact for |v| < 2^52, and every double beyond is an integer */
    const double c = v < 0.0 ? -TWO52 : TWO52;
    return fabs(v) < TWO52 ? (v + c) - c : v;
}

static DPF_INLINE int64_t cap_steps(double v)
{
    const double cap = (double)DPF_BOUNDED_MAX_STEPS;
    if (!(v > -cap)) return -DPF_BOUNDED_MAX_STEPS;   /* also -inf */
    if (!(v < cap)) return DPF_BOUNDED_MAX_STEPS;
    return (int64_t)v;                                 /* an integer-valued double */
}

/* Bounded-domain ("truncated") Laplace, Holohan, Antonatos, Braghin, Mac Aonghusa, "The
 * Bounded Laplace Mechanism in Differential Privacy", JPC 2020: the output law is the
 * Laplace law centred at the input, conditioned on the domain.  Here it is the discrete
 * Laplace on the grid (Mironov 2012: only grid points can come out, each a function of
 * the integer n alone), conditioned on [lo, hi] by rejection, which yields the
 * conditional law exactly: each attempt is an independent exact draw, and the first one
 * in [lo, hi] is distributed as a draw conditioned on [lo, hi].  Acceptance probability
 * is >= P[Z = 0] > 0 because c lies in [lo, hi].  Running time depends on c (not constant
 * time); with c inside the domain the expected attempts vary by at most a factor of two
 * over c. */
int dpf_laplace_bounded_grid(dpf_rng_t *r, const dpf_dlap_exact_t *t, const double *x,
                             double *out, size_t n, int k, double lower, double upper)
{
    const double g = ldexp(1.0, k), inv_g = ldexp(1.0, -k);
    const int64_t lo = cap_steps(ceil(lower * inv_g)), hi = cap_steps(floor(upper * inv_g));
    size_t i;
    for (i = 0; i < n; i++) {
        int64_t c = cap_steps(round_half_even(x[i] * inv_g)), z;
        c = c < lo ? lo : (c > hi ? hi : c);
        for (;;) {
            const int st = dpf_discrete_laplace_exact_fill(r, t, &z, 1);
            if (st != DPF_OK) return st;
            /* |c|, |lo|, |hi| <= 2^61: the differences cannot overflow */
            if (z >= lo - c && z <= hi - c) break;
        }
        /* (double)(c + z) is one correct rounding of the integer, then an exact scaling */
        out[i] = (double)(c + z) * g;
    }
    return DPF_OK;
}

void dpf_laplace_bounded_fast(dpf_rng_t *r, double scale, const double *x, double *out,
                              size_t n, double lower, double upper)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double y = x[i];
        if (scale > 0.0) {
            do {
                y = x[i] + scale * dpf_std_laplace(r);
            } while (!(y >= lower && y <= upper));
        }
        out[i] = y;
    }
}

/* Marsaglia & Tsang, "A Simple Method for Generating Gamma Variables", ACM TOMS 26(3),
 * 2000: for shape a >= 1, d = a - 1/3, c = 1/sqrt(9d), X normal, V = (1 + cX)^3, accept
 * dV when ln U < X^2/2 + d - dV + d ln V.  For a < 1: Gamma(a) = Gamma(a + 1) U^(1/a)
 * (their section 6). */
static double std_gamma(dpf_rng_t *r, double a)
{
    double boost = 1.0;
    if (a <= 0.0) return 0.0;
    if (a < 1.0) {
        boost = pow(dpf_next_double_oc(r), 1.0 / a);
        a += 1.0;
    }
    {
        const double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
        for (;;) {
            double xn, v, u;
            do {
                xn = dpf_std_normal(r);
                v = 1.0 + c * xn;
            } while (v <= 0.0);
            v = v * v * v;
            u = dpf_next_double_oc(r);
            if (u < 1.0 - 0.0331 * (xn * xn) * (xn * xn)) return boost * d * v;
            if (log(u) < 0.5 * xn * xn + d * (1.0 - v + log(v))) return boost * d * v;
        }
    }
}

void dpf_gamma_fill(dpf_rng_t *r, double shape, double scale, double *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = scale * std_gamma(r, shape);
}

static DPF_INLINE int leading_zeros(uint64_t w)
{
    int z = 0;
    if (!(w >> 32)) {
        z += 32;
        w <<= 32;
    }
    if (!(w >> 48)) {
        z += 16;
        w <<= 16;
    }
    if (!(w >> 56)) {
        z += 8;
        w <<= 8;
    }
    if (!(w >> 60)) {
        z += 4;
        w <<= 4;
    }
    if (!(w >> 62)) {
        z += 2;
        w <<= 2;
    }
    if (!(w >> 63)) {
        z += 1;
    }
    return z;
}

/* Downey, "Generating Pseudo-random Floating-Point Values" (2007): a uniform real U in
 * [0, 1) lies in [2^e, 2^(e+1)) with probability 2^(e+1) for e = -1, -2, ..., i.e. e is
 * -1 minus the number of leading zero bits of an infinite random bit string; inside its
 * binade U is uniform, so its top 52 bits below the leading one are 52 fresh uniform bits.
 * The result is U rounded down to a double (every double in [2^-1022, 1) is reachable,
 * with probability its spacing); below 2^-1022 (probability 2^-1022) the subnormal result
 * is U rounded by ldexp. */
void dpf_uniform_fp_fill(dpf_rng_t *r, double *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        int e = -1;
        uint64_t w = dpf_next_u64(r);
        while (w == 0) {
            e -= 64;
            if (e < -1100) break;               /* far below the smallest subnormal */
            w = dpf_next_u64(r);
        }
        if (w == 0) {
            out[i] = 0.0;
            continue;
        }
        e -= leading_zeros(w);
        out[i] = ldexp(1.0 + (double)(dpf_next_u64(r) >> 12) * ldexp(1.0, -52), e);
    }
}
