/* Continuous samplers for the simulation path.
 *
 * Exponential and normal use the ziggurat method (Marsaglia & Tsang, "The ziggurat method
 * for generating random variables", J. Stat. Softw. 5(8), 2000) with 256 layers; each
 * draw takes one 64-bit word in the common case: 8 bits pick the layer, 1 bit the sign,
 * 55 bits the position.  Laplace(b) = sign * b * Exp(1); Gumbel(0, b) = -b log Exp(1).
 * The tables are built at import from the published base-layer edges r. */
#include <math.h>
#include <string.h>
#include "dpfast/continuous.h"

/* x with its sign bit flipped when bit 8 of u is set: branch-free, since the sign is a
 * fair coin that a branch predictor would miss half of the time. */
static DPF_INLINE double flip_sign(double x, uint64_t u)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    b ^= (u & 0x100) << 55;
    memcpy(&x, &b, sizeof b);
    return x;
}

#define ZL 256
#define ZSCALE 36028797018963968.0   /* 2^55 */

/* Published right edges of the base layer for 256 layers (Marsaglia & Tsang 2000). */
static const double ZE_R = 7.69711747013104972;   /* exponential */
static const double ZN_R = 3.6541528853610088;    /* normal */

typedef struct {
    double w[ZL];      /* layer width / 2^55 */
    double f[ZL + 1];  /* density (unnormalised) at each layer's right edge; f[ZL] = 1 */
    uint64_t k[ZL];    /* 2^55 * (next edge / this edge): below it the point is inside */
} zig_t;

static zig_t zexp, znorm;

static double f_exp(double x)
{
    return exp(-x);
}
static double finv_exp(double y)
{
    return -log(y);
}
static double f_norm(double x)
{
    return exp(-0.5 * x * x);
}
static double finv_norm(double y)
{
    return sqrt(-2.0 * log(y));
}

/* Edges X[0..ZL]: X[0] = v/f(r) is the base layer's width counting its tail, X[1] = r,
 * and each next edge makes the layer's area v: X[i](f(X[i+1]) - f(X[i])) = v. */
static void zig_build(zig_t *z, double r, double v, double (*f)(double),
                      double (*finv)(double))
{
    double X[ZL + 1];
    int i;
    X[0] = v / f(r);
    X[1] = r;
    for (i = 1; i < ZL - 1; i++) X[i + 1] = finv(v / X[i] + f(X[i]));
    X[ZL] = 0.0;
    for (i = 0; i < ZL; i++) {
        z->w[i] = X[i] / ZSCALE;
        z->k[i] = (uint64_t)(X[i + 1] / X[i] * ZSCALE);
        z->f[i] = f(X[i]);
    }
    z->f[ZL] = 1.0;
}

void dpf_continuous_init(void)
{
    static int done = 0;
    if (done) return;
    /* v = area of each layer = r f(r) + the tail's area beyond r. */
    zig_build(&zexp, ZE_R, ZE_R * exp(-ZE_R) + exp(-ZE_R), f_exp, finv_exp);
    /* sqrt(pi/2) erfc(r/sqrt 2) is the normal tail's area. */
    zig_build(&znorm, ZN_R,
              ZN_R * f_norm(ZN_R) +
                  1.2533141373155002512 * erfc(ZN_R * 0.70710678118654752440),
              f_norm, finv_norm);
    done = 1;
}

/* The rare path: a point in a layer's wedge, or in the base layer's tail.
 * Returns the accepted |x|, or -1 to start over with a fresh word. */
DPF_NOINLINE static double exp_slow(dpf_rng_t *r, unsigned i, double x)
{
    if (i == 0) return ZE_R - log(dpf_next_double_oc(r)); /* memoryless tail */
    if (zexp.f[i] + dpf_next_double(r) * (zexp.f[i + 1] - zexp.f[i]) < exp(-x)) return x;
    return -1.0;
}

DPF_NOINLINE static double norm_slow(dpf_rng_t *r, unsigned i, double x)
{
    if (i == 0) {
        /* Marsaglia (1964) tail: x = r + E1/r accepted when 2 E2 > (E1/r)^2. */
        for (;;) {
            double t = -log(dpf_next_double_oc(r)) / ZN_R;
            double y = -log(dpf_next_double_oc(r));
            if (y + y > t * t) return ZN_R + t;
        }
    }
    if (znorm.f[i] + dpf_next_double(r) * (znorm.f[i + 1] - znorm.f[i]) < exp(-0.5 * x * x))
        return x;
    return -1.0;
}

/* Exp(1); *sign_word receives the word whose bit 8 is a fair coin (for Laplace). */
static DPF_INLINE double zig_exp(dpf_rng_t *r, uint64_t *sign_word)
{
    for (;;) {
        uint64_t u = dpf_next_u64(r);
        unsigned i = (unsigned)(u & 0xff);
        uint64_t a = u >> 9;
        double x = (double)a * zexp.w[i];
        *sign_word = u;
        if (DPF_LIKELY(a < zexp.k[i])) return x;
        x = exp_slow(r, i, x);
        if (x >= 0.0) return x;
    }
}

static DPF_INLINE double zig_norm(dpf_rng_t *r)
{
    for (;;) {
        uint64_t u = dpf_next_u64(r);
        unsigned i = (unsigned)(u & 0xff);
        uint64_t a = u >> 9;
        double x = (double)a * znorm.w[i];
        if (DPF_LIKELY(a < znorm.k[i])) return flip_sign(x, u);
        x = norm_slow(r, i, x);
        if (x >= 0.0) return flip_sign(x, u);
    }
}

static DPF_INLINE double gumbel1(dpf_rng_t *r)
{
    uint64_t u;
    double e;
    do {
        e = zig_exp(r, &u);
    } while (e == 0.0); /* P = 2^-55 per draw; log(0) = -inf */
    return -log(e);
}

double dpf_std_exponential(dpf_rng_t *r)
{
    uint64_t u;
    return zig_exp(r, &u);
}
double dpf_std_normal(dpf_rng_t *r)
{
    return zig_norm(r);
}
double dpf_std_laplace(dpf_rng_t *r)
{
    uint64_t u;
    double x = zig_exp(r, &u);
    return flip_sign(x, u);
}
double dpf_std_gumbel(dpf_rng_t *r)
{
    return gumbel1(r);
}

void dpf_uniform_fill(dpf_rng_t *r, double low, double width, double *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = low + width * dpf_next_double(r);
}

void dpf_exponential_fill(dpf_rng_t *r, double scale, double *out, size_t n)
{
    size_t i;
    uint64_t u;
    for (i = 0; i < n; i++) out[i] = scale * zig_exp(r, &u);
}

void dpf_normal_fill(dpf_rng_t *r, double sigma, double *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sigma * zig_norm(r);
}

void dpf_laplace_fill(dpf_rng_t *r, double scale, double *out, size_t n)
{
    size_t i;
    uint64_t u;
    for (i = 0; i < n; i++) {
        double x = zig_exp(r, &u); /* sets u: keep it a separate statement */
        out[i] = scale * flip_sign(x, u);
    }
}

void dpf_gumbel_fill(dpf_rng_t *r, double scale, double *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = scale * gumbel1(r);
}
