/* Grid release: see grid.h.  Why this is exact, line by line:
 *
 *  - g = 2^k and 1/g = 2^-k are exact (normal) doubles for |k| <= 1000, so x * (1/g) is exact
 *    (no overflow: we only take this branch when |x| < 2^53 g) and round_half_even
 *    rounds it to the nearest integer m, ties to even (default rounding mode, never
 *    changed here).
 *  - When |x| >= 2^53 g, the spacing of doubles near x is >= g, so x is already a
 *    multiple of g: m = x / g without rounding.
 *  - xr = m * g is then exact, and so is z * g when |z| < 2^53.  One IEEE addition of
 *    the two exact grid values returns the correctly rounded exact sum g (m + z): a
 *    function of m + z only, as the privacy argument needs (Mironov 2012, §5; the
 *    integer mechanism is the geometric / discrete Laplace or discrete Gaussian one). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "dpfast/common.h"
#include "dpfast/grid.h"
#include "dpfast/status.h"

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "the grid release needs IEEE double arithmetic without excess precision"
#endif

#define TWO52 4503599627370496.0
#define TWO53 9007199254740992.0

/* rint(v) without a libm call: for |v| < 2^52, adding and subtracting 2^52 (with v's
 * sign) rounds v to an integer, ties to even, in the default rounding mode; from 2^52 on
 * every double is an integer.  A zero result may be -0.0, as with rint; the release then
 * adds +0.0 or a nonzero value, and IEEE addition never returns -0.0 from that. */
static DPF_INLINE double round_half_even(double v)
{
    const double c = v < 0.0 ? -TWO52 : TWO52;
    return fabs(v) < TWO52 ? (v + c) - c : v;
}

/* 2^k for -1022 <= k <= 1023, a normal double (biased exponent k + 1023, zero
 * mantissa): ldexp's value without its libm call, which cost as much as the rest of a
 * one-value release. */
static DPF_INLINE double pow2(int k)
{
    const uint64_t bits = (uint64_t)(k + 1023) << 52;
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* Coarse grids, k >= DPF_GRID_K_COARSE (2^53 g >= 2^1024, so every finite x takes the
 * rounding branch): m g can round to +-2^1024 = +-inf (x near the largest double) and z g
 * can overflow too, so xr + z g could be inf - inf = NaN, a value that tells neighbours
 * apart.  There |m| <= 2^(1024 - k) <= 2^53 and |z| < 2^53, so m + z is one IEEE
 * addition, correctly rounded, and the product by g = 2^k is exact or overflows to the
 * correctly signed infinity: the output is the correctly rounded g (m + z) (IEEE
 * overflow rounding included), a function of m + z alone, never NaN. */
#define DPF_GRID_K_COARSE 971

int dpf_grid_add(const double *x, const int64_t *z, double *out, size_t n, int k)
{
    const double g = pow2(k), inv_g = pow2(-k), big = TWO53 * g;
    int bad = 0;
    size_t i;
    if (k >= DPF_GRID_K_COARSE) {
        for (i = 0; i < n; i++) {
            const int64_t zi = z[i];
            bad |= (zi >= (int64_t)1 << 53) | (zi <= -((int64_t)1 << 53));
            out[i] = (round_half_even(x[i] * inv_g) + (double)zi) * g;
        }
        return bad ? DPF_E_RANGE : DPF_OK;
    }
    for (i = 0; i < n; i++) {
        const double xi = x[i];
        const int64_t zi = z[i];
        const double xr = fabs(xi) < big ? round_half_even(xi * inv_g) * g : xi;
        bad |= (zi >= (int64_t)1 << 53) | (zi <= -((int64_t)1 << 53));
        out[i] = xr + (double)zi * g;
    }
    return bad ? DPF_E_RANGE : DPF_OK;
}
