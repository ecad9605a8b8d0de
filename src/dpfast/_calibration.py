"""Noise calibrations: the scale of noise that makes a mechanism (epsilon, delta)-DP.

Every function here rounds in the direction that only adds noise: a returned sigma is
never smaller than the exact one, and floating error in the privacy condition is
absorbed by a relative margin checked against a 50-digit computation in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from . import _validation as _v
from ._errors import PrivacyParameterError
from .accounting import zcdp_delta

# Relative margin added to bisection results, far larger than the floating error of the
# privacy conditions below (checked against mpmath in tests/test_calibration.py).
_MARGIN = 1e-9
_SQRT2 = math.sqrt(2.0)


def _phi(x: float) -> float:
    """Standard normal CDF; erfc keeps full relative accuracy in the lower tail."""
    return 0.5 * math.erfc(-x / _SQRT2)


def _log_phi(x: float) -> float:
    """log Phi(x), finite far into the lower tail (asymptotic series past erfc's range)."""
    p = _phi(x)
    if p > 1e-300:
        return math.log(p)
    # Phi(x) = phi(x)/|x| * (1 - 1/x^2 + 3/x^4 - ...) for x -> -inf; the first terms
    # bracket it, and the lower bracket errs towards more noise here.
    return (
        -0.5 * x * x - math.log(-x) - 0.5 * math.log(2 * math.pi) + math.log1p(-1 / (x * x))
    )


def analytic_gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """delta of the Gaussian mechanism with this sigma (Balle & Wang 2018, Theorem 8):
    Phi(D/(2s) - e s/D) - e^e Phi(-D/(2s) - e s/D)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = _phi(a - b)
    # past e^709 the subtracted term exceeds 1 >= first: delta is 0 (and exp would overflow)
    second = math.exp(min(epsilon + _log_phi(-a - b), 709.0))
    return max(first - second, 0.0)


def _bisect_sigma(
    delta_of: Callable[[float], float], target: float, lo: float, hi: float
) -> float:
    """Smallest sigma (to 1e-12 relative) with delta_of(sigma) <= target, rounded up.

    The bracket comes from public parameters; one that is not a finite positive range
    (a scale beyond the doubles) is refused rather than searched forever."""
    if not 0.0 < lo <= hi < math.inf:
        raise PrivacyParameterError(
            f"the noise scale for these parameters is outside the range of doubles "
            f"(bracket [{lo!r}, {hi!r}]); use a larger epsilon or a smaller sensitivity"
        )
    for _ in range(4096):
        if delta_of(hi) <= target:
            break
        lo, hi = hi, hi * 2.0
        if hi == math.inf:
            raise PrivacyParameterError("no finite noise scale meets this delta")
    for _ in range(4096):
        if not (delta_of(lo) <= target and lo > 1e-300):
            break
        lo, hi = lo / 2.0, lo
    for _ in range(200):
        mid = lo * math.sqrt(hi / lo)  # geometric mean, without underflow
        if delta_of(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi * (1.0 + _MARGIN)


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Dwork & Roth Theorem 3.22: sigma = c Delta / epsilon with c^2 > 2 ln(1.25/delta);
    valid only for epsilon in (0, 1)."""
    if not epsilon < 1.0:
        raise PrivacyParameterError(
            "epsilon must be < 1 for the classic Gaussian calibration (Dwork & Roth "
            f"Theorem 3.22); got {epsilon!r}. Use calibration='analytic', valid for every "
            "epsilon > 0"
        )
    c = math.sqrt(2.0 * math.log(1.25 / delta))
    # strict inequality c^2 > 2 ln(1.25/delta), and rounding of sqrt/log: step up
    return math.nextafter(c * (1.0 + _MARGIN), math.inf) * sensitivity / epsilon


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest sigma with analytic_gaussian_delta(sigma) <= delta (Balle & Wang 2018,
    Algorithm 1, solved here by bisection), valid for every epsilon > 0."""
    guess = sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    return _bisect_sigma(
        lambda s: analytic_gaussian_delta(s, epsilon, sensitivity),
        delta,
        guess / 4.0,
        guess,
    )


def gaussian_sigma(
    epsilon: object,
    delta: object,
    l2_sensitivity: float = 1.0,
    calibration: str = "analytic",
) -> float:
    """The noise standard deviation of the (continuous) Gaussian mechanism.

    Parameters
    ----------
    epsilon : float > 0
        For ``calibration="classic"`` it must also be < 1.
    delta : float in (0, 1)
    l2_sensitivity : float > 0
        The l2 sensitivity of the released vector over add/remove neighbours.
    calibration : {"analytic", "classic"}
        ``"classic"``: sigma = c Delta_2 / epsilon with c^2 > 2 ln(1.25/delta)
        (Dwork & Roth Theorem 3.22).  ``"analytic"``: the smallest sigma whose exact
        privacy curve meets (epsilon, delta) (Balle & Wang 2018), never larger than the
        classic one and valid for every epsilon.

    Returns
    -------
    float
        sigma, rounded up (relative margin 1e-9) so that floating error never makes it
        too small.

    References
    ----------
    Dwork & Roth, *The Algorithmic Foundations of Differential Privacy*, Theorem 3.22.
    Balle & Wang, "Improving the Gaussian Mechanism for Differential Privacy: Analytical
    Calibration and Optimal Denoising", ICML 2018, Theorem 8 and Algorithm 1.
    """
    epsilon = _v.epsilon(epsilon)
    delta = _v.delta(delta, allow_zero=False)
    l2_sensitivity = _v.positive("l2_sensitivity", l2_sensitivity)
    calibration = _v.choice("calibration", calibration, ("analytic", "classic"))
    if calibration == "classic":
        return classic_gaussian_sigma(epsilon, delta, l2_sensitivity)
    return analytic_gaussian_sigma(epsilon, delta, l2_sensitivity)


# ------------------------------------------------------------------ discrete Gaussian


def _dg_tail_bounds(j: float, sigma: float) -> tuple[float, float]:
    """Bounds on T(j) = P[Y >= j] for Y discrete Gaussian N_Z(0, sigma^2), j >= 1.

    With f(y) = exp(-y^2/(2 sigma^2)) and N = sum_y f(y) = sigma sqrt(2 pi) theta, where
    1 <= theta <= 1 + 3 exp(-2 pi^2 sigma^2) (Poisson summation):
      * f decreasing on y >= 0: int_j^inf f <= sum_{y>=j} f(y) <= f(j) + int_j^inf f;
      * f also convex on y >= sigma, so for j - 1/2 >= sigma (Hermite-Hadamard and the
        trapezoid rule): int_j^inf f + f(j)/2 <= sum_{y>=j} f(y) <= int_{j-1/2}^inf f,
        a bracket whose width is O(f'(j)) instead of f(j)."""
    q = 0.5 * math.erfc(j / (sigma * _SQRT2))  # Phi^c(j / sigma)
    pdf = math.exp(-0.5 * (j / sigma) ** 2) / math.sqrt(2.0 * math.pi) / sigma
    theta = 1.0 + 3.0 * math.exp(-2.0 * math.pi**2 * sigma**2)
    if j - 0.5 >= sigma:
        return (q + 0.5 * pdf) / theta, 0.5 * math.erfc((j - 0.5) / (sigma * _SQRT2))
    return q / theta, q + pdf


# Safety margins of the tail bounds' floating-point evaluation (issue 9: delta <= 2e-36
# came out below the exact value).  exp and erfc are evaluated at arguments x with
# |x| <= 746 that carry a relative rounding error of a few 2^-53, which moves the result
# by up to |x| * 2^-50 <= 7e-13 relative; plus a few ulp of the functions themselves.
# 1e-11 relative covers all of it; 2^-1050 absolute covers the subnormal range, where
# relative error is meaningless (each of at most 2^24 terms is off by at most 2^-1074).
_BOUND_REL = 1e-11
_BOUND_ABS = 2.0**-1050

# Below this sigma the tails are summed term by term (exact up to float rounding, which
# is bounded and added); above it the integral bounds are tighter than 1e-7 relative.
_DIRECT_SIGMA = 2000.0


def _dg_tail_bounds_direct(j: int, sigma: float) -> tuple[float, float]:
    """Bounds on T(j) = P[Y >= j], j >= 1, by summing the pmf over |y| <= L, L = 40 sigma + j, and
    bounding the rest (f(L+1) + int_{L+1}^inf f <= 2 f(L) for L >= sigma^2)."""
    import numpy as np

    # beyond 40 sigma every term is below 2^-1074 (exp(-800)): a j farther out gives
    # t = 0 and the bound `rest`, without an array of j terms (j can be 2^31 when
    # epsilon is huge and sigma small: 16 GiB)
    L = int(40.0 * sigma) + min(abs(j), int(40.0 * sigma)) + 2
    y = np.arange(0, L + 1, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):  # tiny sigma: terms are 0
        f = np.exp(-0.5 * (y / sigma) * (y / sigma))
    rest = 2.0 * (
        float(f[-1]) + math.exp(-0.5 * (L / sigma) * (L / sigma)) * sigma * sigma / L
    )
    body = math.fsum(f[1:])
    n_lo = 1.0 + 2.0 * body
    n_hi = n_lo + 2.0 * rest
    t = math.fsum(f[j:]) if j <= L else 0.0
    # each exp(-x) is within (x + 4) 2^-53 relative of the exact term (x <= 746: the
    # rounding of x itself dominates; see _BOUND_REL) or 2^-1074 absolute when subnormal,
    # and fsum is correctly rounded; the caller widens the result by _BOUND_REL and
    # _BOUND_ABS, which cover those errors
    r = 2.0**-48
    return t * (1 - r) / (n_hi * (1 + r)), (t * (1 + r) + rest) / (n_lo * (1 - r))


def discrete_gaussian_delta_upper(sigma: float, epsilon: float, shift: int) -> float:
    """An upper bound on delta of N_Z(0, sigma^2) noise added to an integer with
    sensitivity `shift` (an integer >= 1), at epsilon.

    The exact value is the hockey-stick divergence
    sum_y max(0, p(y) - e^eps p(y - s)) = P[Y < a] - e^eps P[Y < a - s], a = s/2 - sigma^2
    eps / s (Canonne, Kamath & Steinke 2020, Theorem 7); largest at the largest shift.  It
    is bounded by direct summation for small sigma (slack about 1e-7 relative) and with
    _dg_tail_bounds for large sigma (slack about 1e-6 relative on the mechanisms' grid,
    where the value is the analytic Gaussian one)."""
    s = shift
    a = s / 2.0 - sigma * sigma * epsilon / s
    m = math.ceil(a) - 1  # the largest integer < a
    bounds = _dg_tail_bounds_direct if sigma <= _DIRECT_SIGMA else _dg_tail_bounds

    def cdf_bounds(x: int) -> tuple[float, float]:
        """Bounds on F(x) = P[Y <= x] from the tail bounds, by symmetry."""
        if x < 0:
            return bounds(-x, sigma)  # P[Y <= x] = P[Y >= -x]
        lo, hi = bounds(x + 1, sigma)  # P[Y <= x] = 1 - P[Y >= x + 1]
        # 1 - v is rounded by at most 2^-54 absolute
        return max(1.0 - hi - 2.0**-53, 0.0), min(1.0 - lo + 2.0**-53, 1.0)

    upper1 = cdf_bounds(m)[1] * (1.0 + _BOUND_REL) + _BOUND_ABS
    lower2 = max(cdf_bounds(m - s)[0] * (1.0 - _BOUND_REL) - _BOUND_ABS, 0.0)
    # e^eps * lower2, capped where it already exceeds 1 >= upper1 (exp would overflow);
    # exp(eps + log x) is within 745 * 2^-52 relative of e^eps x (or 2^-1074 absolute
    # when subnormal), both inside the margins applied here
    second = 0.0
    if lower2 > 0.0:
        second = math.exp(min(epsilon + math.log(lower2), 709.0))
        second = max(second * (1.0 - _BOUND_REL) - _BOUND_ABS, 0.0)
    # delta > 0 always (the loss is unbounded below), so an upper bound is never 0
    return min(max(math.nextafter(upper1 - second, math.inf), _BOUND_ABS), 1.0)


# ------------------------------------------------------- discrete Gaussian, any dimension
#
# Claim.  Let s > 0, eta = 2 sum_{k>=1} exp(-2 pi^2 s^2 k^2) and R = ((1 + eta)/(1 - eta))^d.
# If sigma >= s and the continuous Gaussian mechanism with noise s1 = sqrt(sigma^2 - s^2)
# is (eps1, delta1)-DP for l2 sensitivity Delta, then adding N_Z(0, sigma^2)^d noise to
# points of R^d (the data rounded to the integer grid) is (eps1 + 2 ln R, R delta1)-DP for
# l2 sensitivity Delta, in every dimension d and for every direction of the shift.
#
# Proof sketch.  (1) Poisson summation: sum_{z in Z} exp(-(z - x)^2/(2 s^2)) =
# s sqrt(2 pi) sum_k exp(-2 pi^2 s^2 k^2) cos(2 pi k x), which lies in s sqrt(2 pi)
# [1 - eta, 1 + eta] for every real x; over Z^d the sum is a product of d such factors.
# (2) A two-stage sampler: draw X ~ N(c, s1^2 I) (continuous), then Y from the discrete
# Gaussian on Z^d centred at X with parameter s.  By (1) its normaliser is
# (s sqrt(2 pi))^d Theta(X) with Theta in [(1 - eta)^d, (1 + eta)^d], so
# P[Y = y] = int N(x; c, s1^2) N(y; x, s^2) / Theta(x) dx lies within [(1+eta)^-d,
# (1-eta)^-d] times int N(x; c, s1^2) N(y; x, s^2) dx = N(y; c, sigma^2).  The discrete
# Gaussian D_c(y) = N(y; c, sigma^2) / sum_z N(z; c, sigma^2) has, by (1) with sigma >= s,
# a normaliser in the same range; so D_c(y) / P[Y = y] lies in [1/R, R] for every y.
# (3) Y is post-processing of X, the continuous Gaussian mechanism (its second stage does
# not look at c).  For any set S and neighbours c, c':  D_c(S) <= R P_c(S) <=
# R (e^eps1 P_c'(S) + delta1) <= R^2 e^eps1 D_c'(S) + R delta1.  QED.
# This is the convolution argument of Peikert (CRYPTO 2010, Theorem 3.1) with the
# smoothing bound of Micciancio & Regev (2007); Canonne, Kamath & Steinke (2020, Theorem
# 15 and its discussion) reach the same conclusion, that the discrepancy decays like
# exp(-2 pi^2 s^2).  On the mechanisms' grid sigma is about 2^24 steps, s = 8 costs a
# relative 2^-43 in sigma and 2 ln R < 10^-540 d: the secure sigma is the analytic one.
#
# The candidate widths s; the best (smallest sigma) is used.  Small s helps small sigma
# (integer data), large s large dimensions.
_SMOOTHING = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


def _smoothing_log_ratio(s: float, dimension: int) -> float:
    """An upper bound on ln R = d (ln(1 + eta) - ln(1 - eta)) for width s (claim above)."""
    a = 2.0 * math.pi**2 * s * s
    e = max(math.exp(-a), 2.0**-1070)  # an upper bound even where exp underflows
    # sum_{k>=1} e^(a k^2) <= e^-a sum_{j>=0} e^(-3 a j), since k^2 - 1 >= 3 (k - 1)
    eta = 2.0 * e / (1.0 - e**3) * (1.0 + 1e-12)
    if not eta < 0.5:
        return math.inf
    # ln(1+x) - ln(1-x) <= 2x / (1 - x)
    return dimension * (2.0 * eta / (1.0 - eta)) * (1.0 + 1e-12)


def _smoothed_parameters(
    epsilon: float, delta: float, s: float, dimension: int
) -> tuple[float, float] | None:
    """(eps1, delta1), rounded down, that the continuous mechanism must meet; None when
    width s leaves no room."""
    lr = _smoothing_log_ratio(s, dimension)
    eps1 = math.nextafter(epsilon - 2.0 * lr, 0.0)
    delta1 = math.nextafter(delta * math.exp(-lr) * (1.0 - 1e-15), 0.0)
    if not (eps1 > 0.0 and delta1 > 0.0):
        return None
    return eps1, delta1


def discrete_gaussian_vector_delta_upper(
    sigma: float, epsilon: float, sensitivity: float, dimension: int, s: float
) -> float:
    """An upper bound on delta (at epsilon) of N_Z(0, sigma^2)^d noise for l2 sensitivity
    `sensitivity`, by the convolution claim above with width s (inf if it does not apply)."""
    lr = _smoothing_log_ratio(s, dimension)
    if not (sigma > s and 2.0 * lr < epsilon):
        return math.inf
    s1 = math.nextafter(math.sqrt((sigma - s) * (sigma + s)) * (1.0 - 1e-15), 0.0)
    eps1 = math.nextafter(epsilon - 2.0 * lr, 0.0)
    d1 = analytic_gaussian_delta(s1, eps1, sensitivity)
    return math.nextafter(d1 * math.exp(lr) * (1.0 + 1e-12), math.inf)


def discrete_gaussian_vector_sigma(
    epsilon: float, delta: float, sensitivity: float, dimension: int
) -> tuple[float, float | None]:
    """(sigma, s): the smallest sigma (rounded up) the convolution claim proves for
    `dimension` coordinates, and the width s that proves it; (inf, None) if none does."""
    best: tuple[float, float | None] = (math.inf, None)
    for s in _SMOOTHING:
        params = _smoothed_parameters(epsilon, delta, s, dimension)
        if params is None:
            continue
        s1 = analytic_gaussian_sigma(params[0], params[1], sensitivity)
        sigma = math.nextafter(math.hypot(s1, s) * (1.0 + 1e-15), math.inf)
        if sigma < best[0]:
            best = (sigma, s)
    return best


def discrete_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float, dimension: int = 1
) -> float:
    """The smallest sigma (rounded up) for which adding N_Z(0, sigma^2) noise to each of
    `dimension` integer coordinates with l2 sensitivity `sensitivity` is provably
    (epsilon, delta)-DP.

    Three proofs, the smallest sigma wins: any dimension, the convolution claim above
    (within 2^-40 relative of the continuous analytic sigma once sigma >= 2^20); any
    dimension, the (Delta^2/(2 sigma^2))-zCDP of the discrete Gaussian (CKS 2020, Theorem
    14) converted with zcdp_delta (their Corollary 13), which helps only at small sigma;
    one coordinate, the exact privacy curve (their Theorem 7) at the largest integer
    shift floor(sensitivity), bounded rigorously by discrete_gaussian_delta_upper."""
    guess = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    zcdp = _bisect_sigma(
        lambda sg: zcdp_delta(0.5 * (sensitivity / sg) ** 2, epsilon),
        delta,
        guess / 2.0,
        guess * 2.0,
    )
    vector = discrete_gaussian_vector_sigma(epsilon, delta, sensitivity, dimension)[0]
    if dimension != 1:
        return min(vector, zcdp)  # each is a proof; use the best
    s = max(math.floor(sensitivity), 1)
    guess = analytic_gaussian_sigma(epsilon, delta, float(s))
    one = _bisect_sigma(
        lambda sg: discrete_gaussian_delta_upper(sg, epsilon, s),
        delta,
        guess / 2.0,
        guess * 2.0,
    )
    return min(one, vector, zcdp)
