"""Gaussian differential privacy (Dong, Roth & Su 2022): exact composition of Gaussian
mechanisms and its exact (epsilon, delta) curve.

A Gaussian mechanism with l2 sensitivity Delta and noise N(0, sigma^2) is mu-GDP with
mu = Delta / sigma: its privacy curve is exactly that of N(0, 1) against N(mu, 1).  The
adaptive composition of mu_i-GDP mechanisms is sqrt(sum mu_i^2)-GDP, again exactly
(the composed pair of Gaussians is a Gaussian pair), so for Gaussian noise alone this is
the tightest accountant there is.  Subsampled Gaussians are *not* GDP with a closed form
(the CLT of Dong, Roth & Su is asymptotic): use the PLD accountant for them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .. import _validation as _v
from .._errors import PrivacyParameterError
from .._typing import PrivacyParam, Real
from ._numeric import _CLOSED_FORM_SLACK, _INF, _finite, _real_sequence, _sum_up, _up

_SQRT2 = math.sqrt(2.0)
_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# libm's erfc is within a few ulps (glibc documents <= 5 on x86-64); 16 ulps covers it and
# the handful of operations around it.
_ERFC_SLACK = 16.0 * _CLOSED_FORM_SLACK


def _log_phi_bounds(x: float) -> tuple[float, float]:
    """(lower, upper) bounds on ln Phi(x), the standard normal CDF.

    erfc while Phi(x) > 1e-300 (relative error within _ERFC_SLACK); below, Gordon's
    inequality phi(x) |x|/(1 + x^2) <= Phi(x) <= phi(x)/|x| for x < 0."""
    if x < -1e150:  # x^2 overflows: Phi(x) is below every positive float
        return -_INF, -_INF
    p = 0.5 * math.erfc(-x / _SQRT2)
    if p > 1e-300:
        return math.log(p * (1.0 - _ERFC_SLACK)), math.log(p * (1.0 + _ERFC_SLACK))
    log_pdf = -0.5 * x * x - _LN_SQRT_2PI
    lo = log_pdf + math.log(-x) - math.log1p(x * x)
    hi = log_pdf - math.log(-x)
    return lo - 1e-15 * abs(lo), hi + 1e-15 * abs(hi)


def _gdp_delta_up(mu: float, epsilon: float) -> float:
    """An upper bound on delta(epsilon) of N(0,1) vs N(mu,1), mu > 0:
    Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) (Balle & Wang 2018, Thm 8;
    Dong, Roth & Su 2022, Cor. 2.13).  The first term is bounded above and the
    subtracted one below, so cancellation cannot make the result too small."""
    r = epsilon / mu
    _, hi1 = _log_phi_bounds(0.5 * mu - r)
    lo2, _ = _log_phi_bounds(-0.5 * mu - r)
    first = math.exp(hi1)
    second = math.exp(min(epsilon + lo2, 709.0))
    d = first - second
    if d <= 0.0:
        # delta(epsilon) > 0 for every finite epsilon (Gaussian losses are unbounded):
        # the smallest positive float is the safe side of an underflowed or cancelled value.
        return math.ulp(0.0)
    return min(1.0, math.nextafter(d + 4.0 * _CLOSED_FORM_SLACK * first, _INF))


def gaussian_gdp(sigma: Real, sensitivity: Real = 1.0) -> float:
    """mu of the Gaussian mechanism: mu = Delta_2 / sigma.

    Parameters
    ----------
    sigma : float
        Noise standard deviation > 0.
    sensitivity : float, default 1.0
        l2 sensitivity Delta_2 > 0.

    Returns
    -------
    float
        mu, rounded up.

    Privacy
    -------
    Adding N(0, sigma^2) to a query of l2 sensitivity Delta is (Delta/sigma)-GDP, and
    no smaller mu holds (Dong, Roth & Su 2022, Thm 2.7).

    References
    ----------
    J. Dong, A. Roth, W. Su, "Gaussian Differential Privacy", JRSS B 84(1), 2022.
    """
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.positive("sensitivity", sensitivity)
    mu = _finite("mu", sensitivity / sigma)
    return _up(mu) if mu > 0.0 else math.ulp(0.0)


def gdp_compose(mus: Iterable[Real]) -> float:
    """Composition of GDP mechanisms: mu = sqrt(sum mu_i^2).

    Parameters
    ----------
    mus : sequence of float
        mu_i >= 0.

    Returns
    -------
    float
        The composed mu, rounded up.

    Privacy
    -------
    The adaptive composition of mu_i-GDP mechanisms is sqrt(sum mu_i^2)-GDP, exactly
    (Dong, Roth & Su 2022, Cor. 3.3).

    References
    ----------
    J. Dong, A. Roth, W. Su, JRSS B 2022, Cor. 3.3.
    """
    arr = _real_sequence("mus", mus)
    if arr.shape[0] == 0:
        return 0.0
    top = float(arr.max())
    if top == 0.0:
        return 0.0
    scaled = arr / top  # no overflow or underflow of the squares
    s = _sum_up(scaled * scaled)
    return _finite("mu", _up(top * math.sqrt(s)))


def gdp_delta(mu: Real, epsilon: PrivacyParam) -> float:
    """delta(epsilon) of a mu-GDP mechanism (exact curve, rounded up).

    Parameters
    ----------
    mu : float
        mu >= 0.
    epsilon : float
        epsilon >= 0.

    Returns
    -------
    float
        delta = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2), rounded up.

    Privacy
    -------
    A mu-GDP mechanism is (epsilon, delta)-DP for exactly these pairs (Dong, Roth & Su
    2022, Cor. 2.13; for one Gaussian mechanism, Balle & Wang 2018, Thm 8).

    References
    ----------
    J. Dong, A. Roth, W. Su, JRSS B 2022, Cor. 2.13.  B. Balle, Y.-X. Wang, "Improving
    the Gaussian Mechanism for Differential Privacy", ICML 2018, Thm 8.
    """
    mu = _v.nonnegative("mu", mu)
    epsilon = _v.nonnegative("epsilon", epsilon)
    if mu == 0.0:
        return 0.0
    return _gdp_delta_up(mu, epsilon)


def gdp_to_dp(mu: Real, delta: PrivacyParam) -> float:
    """The smallest epsilon at which a mu-GDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    mu : float
        mu >= 0.
    delta : float
        delta in (0, 1).

    Returns
    -------
    float
        epsilon >= 0, rounded up: the bisection returns the end of its bracket at which the
        upward-rounded delta curve is <= delta.

    Privacy
    -------
    See :func:`gdp_delta`; the curve is decreasing in epsilon.

    References
    ----------
    J. Dong, A. Roth, W. Su, JRSS B 2022, Cor. 2.13.
    """
    mu = _v.nonnegative("mu", mu)
    delta = _v.delta(delta, allow_zero=False)
    if mu == 0.0:
        return 0.0
    if _gdp_delta_up(mu, 0.0) <= delta:
        return 0.0
    # delta(eps) <= Phi(mu/2 - eps/mu) <= exp(-(eps/mu - mu/2)^2/2) for eps >= mu^2/2.
    hi = _finite("epsilon", mu * (0.5 * mu + math.sqrt(2.0 * -math.log(delta))) + 1.0)
    while _gdp_delta_up(mu, hi) > delta:
        hi = _finite("epsilon", 2.0 * hi)
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if _gdp_delta_up(mu, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def gdp_mu(epsilon: PrivacyParam, delta: PrivacyParam) -> float:
    """The largest mu for which mu-GDP implies (epsilon, delta)-DP (rounded down).

    Parameters
    ----------
    epsilon : float
        epsilon > 0.
    delta : float
        delta in (0, 1).

    Returns
    -------
    float
        mu > 0 with ``gdp_delta(mu, epsilon) <= delta``.

    Privacy
    -------
    delta(epsilon) of mu-GDP increases with mu, so any mechanism that is mu'-GDP with
    mu' <= the returned mu is (epsilon, delta)-DP.

    References
    ----------
    J. Dong, A. Roth, W. Su, JRSS B 2022, Cor. 2.13.
    """
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta, allow_zero=False)
    lo, hi = 1e-300, 1.0
    while _gdp_delta_up(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e300:
            raise PrivacyParameterError("no finite mu bounds these parameters")
    while _gdp_delta_up(lo, epsilon) > delta:
        # delta(eps) -> 0 as mu -> 0 for eps > 0, so this ends unless eps is subnormal.
        lo = lo * 1e-10
        if lo < 1e-307:
            raise PrivacyParameterError(
                f"epsilon is too small for any mu > 1e-300; got {epsilon!r}"
            )
    for _ in range(400):
        mid = math.sqrt(lo) * math.sqrt(hi)
        if not lo < mid < hi:
            break
        if _gdp_delta_up(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def gdp_sigma(
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    count: int = 1,
    sensitivity: Real = 1.0,
) -> float:
    """The smallest sigma such that ``count`` Gaussian releases are (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        epsilon > 0.
    delta : float
        delta in (0, 1).
    count : int, default 1
        Number of composed Gaussian mechanisms (each with this sigma and sensitivity).
    sensitivity : float, default 1.0
        l2 sensitivity of each release, > 0.

    Returns
    -------
    float
        sigma = sqrt(count) Delta / mu(epsilon, delta), rounded up.  Equal (to ~1e-12) to
        the analytic Gaussian calibration with sensitivity sqrt(count) Delta.

    Privacy
    -------
    count mechanisms with mu_i = Delta/sigma compose to mu = sqrt(count) Delta / sigma
    (Dong, Roth & Su 2022, Cor. 3.3); :func:`gdp_mu` gives the largest admissible mu.

    References
    ----------
    J. Dong, A. Roth, W. Su, JRSS B 2022.
    """
    count = _v.integer("count", count, minimum=1)
    sensitivity = _v.positive("sensitivity", sensitivity)
    mu = gdp_mu(epsilon, delta)
    sigma = math.sqrt(count) * sensitivity / mu
    return _finite("sigma", _up(sigma))
