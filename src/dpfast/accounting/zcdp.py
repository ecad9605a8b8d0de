"""Zero-concentrated differential privacy (Bun & Steinke 2016; Canonne, Kamath & Steinke 2020
for the tight conversion).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy.typing as npt

from .. import _validation as _v
from .._typing import PrivacyParam, Real
from ._numeric import (
    _CLOSED_FORM_SLACK,
    _INF,
    _down,
    _finite,
    _positive_floor,
    _real_sequence,
    _sum_up,
    _up,
)


def gaussian_zcdp(sigma: Real, sensitivity: Real = 1.0) -> float:
    """zCDP of the Gaussian mechanism: rho = Delta_2^2 / (2 sigma^2).

    Parameters
    ----------
    sigma : float
        Standard deviation > 0 of the Gaussian noise.
    sensitivity : float, default 1.0
        l2 sensitivity Delta_2 > 0.

    Returns
    -------
    float
        rho, rounded up.

    Privacy
    -------
    Adding N(0, sigma^2) to a query of l2 sensitivity Delta is
    (Delta^2/(2 sigma^2))-zCDP (Bun & Steinke 2016, Prop. 1.6).

    References
    ----------
    M. Bun, T. Steinke, "Concentrated Differential Privacy: Simplifications, Extensions,
    and Lower Bounds", TCC 2016.
    """
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.positive("sensitivity", sensitivity)
    # (Delta/sigma)^2 / 2: sigma * sigma alone underflows to 0 for sigma < 1e-162.
    ratio = sensitivity / sigma
    return _positive_floor(_up(_finite("rho", 0.5 * ratio * ratio)))


def pure_dp_to_zcdp(epsilon: PrivacyParam) -> float:
    """rho = epsilon^2 / 2 for an epsilon-DP mechanism.

    Parameters
    ----------
    epsilon : float
        epsilon >= 0.

    Returns
    -------
    float
        rho, rounded up.

    Privacy
    -------
    Every epsilon-DP mechanism is (epsilon^2/2)-zCDP (Bun & Steinke 2016, Prop. 1.4).

    References
    ----------
    M. Bun, T. Steinke, TCC 2016.
    """
    epsilon = _v.nonnegative("epsilon", epsilon)
    rho = _up(_finite("rho", epsilon * epsilon / 2.0))
    return rho if epsilon == 0.0 else _positive_floor(rho)


def zcdp_compose(rhos: Iterable[Real] | npt.NDArray[Any]) -> float:
    """Composition of zCDP mechanisms: the rhos add up.

    Parameters
    ----------
    rhos : sequence of float
        rho_i >= 0.

    Returns
    -------
    float
        sum rho_i, rounded up.

    Privacy
    -------
    The adaptive composition of rho_i-zCDP mechanisms is (sum rho_i)-zCDP (Bun & Steinke
    2016, Lemma 1.7 / Lemma 2.3).  It stays valid when the rho_i are chosen adaptively
    and the composition stops before the sum exceeds a fixed budget (a Renyi filter,
    Feldman & Zrnic 2021), which :class:`PrivacyBudget` in "zcdp" mode relies on.

    References
    ----------
    M. Bun, T. Steinke, TCC 2016.  V. Feldman, T. Zrnic, "Individual Privacy Accounting
    via a Renyi Filter", NeurIPS 2021.
    """
    arr = _real_sequence("rhos", rhos)
    return _finite("sum(rhos)", _sum_up(arr))


def _zcdp_tight_epsilon(rho: float, log_inv_delta: float) -> float:
    """min over alpha > 1 of alpha rho + (L - ln alpha)/(alpha - 1) + ln(1 - 1/alpha).

    d/dalpha of that expression is rho - (L - ln alpha)/(alpha-1)^2, which is negative
    then positive: its unique zero solves rho (alpha-1)^2 = L - ln alpha (left side
    increasing, right side decreasing), found by bisection on alpha - 1.
    """
    L = log_inv_delta
    # In terms of t = alpha - 1.  At hi, rho t^2 >= L >= L - ln(1 + t); the root also has
    # t <= e^L - 1 (where L - ln(1 + t) turns negative).  sqrt(L)/sqrt(rho), not
    # sqrt(L/rho): the quotient overflows for subnormal rho.
    lo, hi = 0.0, min(math.sqrt(L) / math.sqrt(rho), math.expm1(min(L, 709.0)))
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if rho * mid * mid - (L - math.log1p(mid)) < 0.0:
            lo = mid
        else:
            hi = mid
    best = _INF
    for t in (lo, hi):  # the objective is flat at its minimum: either end is accurate
        if t <= 0.0:
            continue
        # Any alpha gives a valid bound; evaluate it rounded up.  The three terms can
        # nearly cancel (tiny rho), so the error bound is absolute: a few ulps of each.
        alpha = 1.0 + t
        terms = (alpha * rho, (L - math.log1p(t)) / t, -math.log1p(1.0 / t))
        val = math.fsum(terms) + 16.0 * _CLOSED_FORM_SLACK * sum(abs(x) for x in terms)
        best = min(best, val)
    return best


def zcdp_to_dp(rho: Real, delta: PrivacyParam, *, method: str = "tight") -> float:
    """Convert rho-zCDP to (epsilon, delta)-DP.

    Parameters
    ----------
    rho : float
        rho >= 0.
    delta : float
        delta in (0, 1).
    method : {"tight", "simple"}
        ``"simple"``: epsilon = rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke 2016,
        Prop. 1.3).  ``"tight"`` (default): the conversion of Canonne, Kamath & Steinke
        2020 (Cor. 13): the smallest epsilon with
        inf_{alpha>1} exp((alpha-1)(alpha rho - epsilon))/(alpha-1) (1 - 1/alpha)^alpha <= delta,
        i.e. epsilon = min_alpha alpha rho + (ln(1/delta) - ln alpha)/(alpha-1) + ln(1 - 1/alpha).
        It is never larger than the simple one (same alpha, two extra negative terms).

    Returns
    -------
    float
        epsilon >= 0, rounded up.

    Privacy
    -------
    A rho-zCDP mechanism is (epsilon, delta)-DP for the returned epsilon.  The tight form
    follows from (alpha, alpha rho)-RDP for all alpha: with L the privacy loss,
    (1 - e^(eps - L))_+ <= e^((alpha-1)(L - eps)) (1 - 1/alpha)^(alpha-1) / alpha pointwise
    (maximise over L), and E[e^((alpha-1)L)] <= e^((alpha-1) alpha rho).

    References
    ----------
    M. Bun, T. Steinke, TCC 2016, Prop. 1.3.
    C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
    NeurIPS 2020, Prop. 12 and Cor. 13 (see also Asoodeh et al. 2021).
    """
    rho = _v.nonnegative("rho", rho)
    delta = _v.delta(delta, allow_zero=False)
    method = _v.choice("method", method, ("tight", "simple"))
    if rho == 0.0:
        return 0.0
    L = -math.log(delta)
    if method == "simple":
        eps = _up(_finite("epsilon", rho + 2.0 * math.sqrt(rho) * math.sqrt(L)))
        return _positive_floor(eps)  # > 0 in exact arithmetic for rho > 0
    eps = _zcdp_tight_epsilon(rho, L)
    return _up(_finite("epsilon", max(0.0, eps)), 2.0**-44)


def _zcdp_tight_log_delta(rho: float, epsilon: float) -> float:
    """ln of inf_{alpha>1} exp((alpha-1)(alpha rho - eps)) (1 - 1/alpha)^(alpha-1) / alpha.

    The exponent is convex in alpha; its derivative (2 alpha - 1) rho - eps + ln(1 - 1/alpha)
    increases from -inf, so its zero is found by bisection."""
    # At alpha = 2 + (eps + 1)/rho the derivative is > 0; capped where it overflows
    # (any alpha gives a valid bound, and 1e300 is far past the optimum then).
    lo, hi = 1.0, min(2.0 + (epsilon + 1.0) / rho, 1e300)
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if (2.0 * mid - 1.0) * rho - epsilon + math.log1p(-1.0 / mid) < 0.0:
            lo = mid
        else:
            hi = mid
    best = _INF
    for alpha in (lo, hi):
        if alpha <= 1.0:
            continue
        t = alpha - 1.0
        terms = (t * (alpha * rho - epsilon), -t * math.log1p(1.0 / t), -math.log(alpha))
        # Rounded up by an absolute bound on the error of the (cancelling) terms.
        val = math.fsum(terms) + 16.0 * _CLOSED_FORM_SLACK * (
            sum(abs(x) for x in terms) + t * epsilon
        )
        best = min(best, val)
    return best


def zcdp_delta(rho: Real, epsilon: PrivacyParam, *, method: str = "tight") -> float:
    """The delta at which a rho-zCDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    rho : float
        rho >= 0.
    epsilon : float
        epsilon >= 0.
    method : {"tight", "simple"}
        ``"simple"``: delta = exp(-(epsilon - rho)^2 / (4 rho)) for epsilon > rho
        (the inverse of Bun & Steinke Prop. 1.3); ``"tight"``: Canonne, Kamath & Steinke
        2020 Cor. 13, delta = inf_{alpha>1} exp((alpha-1)(alpha rho - epsilon))/(alpha-1) (1-1/alpha)^alpha.

    Returns
    -------
    float
        delta in [0, 1], rounded up.

    Privacy
    -------
    See :func:`zcdp_to_dp`; this is its inverse (for each method).

    References
    ----------
    M. Bun, T. Steinke, TCC 2016, Prop. 1.3.  C. Canonne, G. Kamath, T. Steinke,
    NeurIPS 2020, Cor. 13.
    """
    rho = _v.nonnegative("rho", rho)
    epsilon = _v.nonnegative("epsilon", epsilon)
    method = _v.choice("method", method, ("tight", "simple"))
    if rho == 0.0:
        return 0.0
    if method == "simple":
        if epsilon <= rho:
            return 1.0
        d = epsilon - rho
        exponent = -(d / (4.0 * rho)) * d if d > 1.0 else -(d * d) / (4.0 * rho)
        # exp magnifies the exponent's rounding error by |exponent| (a few ulps of it).
        slack = 8.0 * _CLOSED_FORM_SLACK * (1.0 + abs(exponent))
        return min(1.0, _positive_floor(_up(math.exp(max(exponent, -746.0)), slack)))
    log_d = _zcdp_tight_log_delta(rho, epsilon)
    slack = 2.0**-40 + 8.0 * _CLOSED_FORM_SLACK * abs(log_d)
    return min(1.0, _positive_floor(_up(math.exp(min(max(log_d, -746.0), 0.0)), slack)))


def zcdp_budget(
    epsilon: PrivacyParam, delta: PrivacyParam, *, method: str = "tight"
) -> float:
    """The largest rho whose conversion to (epsilon, delta)-DP meets the target.

    Parameters
    ----------
    epsilon : float
        Target epsilon > 0.
    delta : float
        Target delta in (0, 1).
    method : {"tight", "simple"}
        Conversion used (see :func:`zcdp_to_dp`).  ``"simple"`` has the closed form
        rho = (sqrt(epsilon + L) - sqrt(L))^2 with L = ln(1/delta).

    Returns
    -------
    float
        rho, rounded down, such that ``zcdp_to_dp(rho, delta, method=method) <= epsilon``.

    Privacy
    -------
    Any interaction that is rho-zCDP for the returned rho is (epsilon, delta)-DP.

    References
    ----------
    M. Bun, T. Steinke, TCC 2016, Prop. 1.3.  C. Canonne, G. Kamath, T. Steinke,
    NeurIPS 2020, Cor. 13.
    """
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta, allow_zero=False)
    method = _v.choice("method", method, ("tight", "simple"))
    L = -math.log(delta)
    # (sqrt(rho) + sqrt(L))^2 = epsilon + L, written without cancellation.
    simple = epsilon * epsilon / (math.sqrt(epsilon + L) + math.sqrt(L)) ** 2
    lo = _down(simple, 2.0**-40)
    while lo > 0.0 and zcdp_to_dp(lo, delta, method=method) > epsilon:
        lo = _down(lo, 2.0**-30)
    if method == "simple":
        return lo
    hi = max(2.0 * lo, 1e-300)
    while zcdp_to_dp(hi, delta, method="tight") <= epsilon:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if zcdp_to_dp(mid, delta, method="tight") <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo
