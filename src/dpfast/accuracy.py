"""Accuracy bounds of the standard mechanisms, and their inverses.

Every ``*_error`` function returns an error ``alpha`` that the mechanism exceeds with
probability at most ``beta``; every ``*_epsilon`` (or ``*_sigma``) function returns the
smallest privacy parameter (or largest noise) for which that bound is at most a target
``alpha`` at confidence ``1 - beta``.  They are the theorems' bounds (union bounds included),
not the exact error quantiles: conservative, and exact for one Laplace coordinate.

A flat module of functions; arguments are keyword-only after the first and validated like
the mechanisms' (finite, in range, never bool).

References
----------
Dwork & Roth, The Algorithmic Foundations of Differential Privacy, 2014: Fact 3.7,
Thm 3.8 (Laplace), Thm 3.11 and Cor. 3.12 (exponential mechanism), Claim 3.9 (report
noisy max), Thm 3.22 (Gaussian), Thm 3.24, 3.26, 3.28 (sparse vector; the last corrected
for delta > 0, see dpfast._svt_accuracy).  Hoeffding, "Probability inequalities for sums of bounded
random variables", JASA 1963 (randomized response).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from . import _validation as _v
from ._errors import PrivacyParameterError
from ._svt_accuracy import (  # noqa: F401  (sparse vector bounds, Thm 3.24, 3.26, 3.28)
    above_threshold_alpha,
    above_threshold_epsilon,
    numeric_sparse_alpha,
    numeric_sparse_epsilon,
    sparse_alpha,
    sparse_epsilon,
)
from ._typing import PrivacyParam, Real

__all__ = [
    "laplace_error",
    "laplace_epsilon",
    "exponential_mechanism_error",
    "exponential_mechanism_epsilon",
    "report_noisy_max_error",
    "report_noisy_max_epsilon",
    "gaussian_error",
    "gaussian_max_sigma",
    "gaussian_mechanism_error",
    "gaussian_mechanism_epsilon",
    "randomized_response_error",
    "randomized_response_epsilon",
    "above_threshold_alpha",
    "above_threshold_epsilon",
    "sparse_alpha",
    "sparse_epsilon",
    "numeric_sparse_alpha",
    "numeric_sparse_epsilon",
]


def _beta(beta: Real) -> float:
    return _v.open_probability("beta", beta)


def _count(name: str, value: int) -> int:
    # at most 2**62 (reports, coordinates, codes): beyond it float(n) loses meaning and
    # 10**400 would overflow the arithmetic below
    return _v.integer(name, value, minimum=1, maximum=2**62)


# ---------------------------------------------------------------- Laplace


def laplace_error(
    epsilon: PrivacyParam,
    *,
    beta: Real,
    sensitivity: Real = 1.0,
    k: int = 1,
) -> float:
    """``alpha = ln(k/beta) Delta/epsilon``: the Laplace mechanism on k coordinates
    (noise scale ``Delta/epsilon`` each) has ``P[max_i |y_i - f_i(x)| >= alpha] <= beta``.

    Theorem 3.8 (Fact 3.7, ``P[|Y| >= t b] = e^-t``, and a union bound over k); equality
    for k = 1.  Applies to :func:`dpfast.mechanisms.laplace_mechanism` with
    ``sensitivity=Delta`` and to noisy counts/histograms (Delta = 1 per cell).
    """
    epsilon = _v.epsilon(epsilon)
    beta = _beta(beta)
    sensitivity = _v.positive("sensitivity", sensitivity)
    k = _count("k", k)
    return math.log(k / beta) * sensitivity / epsilon


def laplace_epsilon(
    alpha: Real, *, beta: Real, sensitivity: Real = 1.0, k: int = 1
) -> float:
    """The smallest epsilon with :func:`laplace_error` ``<= alpha``:
    ``epsilon = ln(k/beta) Delta/alpha``."""
    alpha = _v.positive("alpha", alpha)
    beta = _beta(beta)
    sensitivity = _v.positive("sensitivity", sensitivity)
    k = _count("k", k)
    return math.log(k / beta) * sensitivity / alpha


# ---------------------------------------------------------------- exponential mechanism


def _em_scale(epsilon: float, sensitivity: float, monotonic: bool) -> float:
    if not isinstance(monotonic, bool):
        raise TypeError(f"monotonic must be a bool; got {type(monotonic).__name__}")
    return (1.0 if monotonic else 2.0) * sensitivity / epsilon


def exponential_mechanism_error(
    epsilon: PrivacyParam,
    *,
    n_candidates: int,
    beta: Real,
    sensitivity: Real = 1.0,
    n_optimal: int = 1,
    monotonic: bool = False,
) -> float:
    """``alpha = (2 Delta/epsilon)(ln(|R|/|R_OPT|) + ln(1/beta))``: the exponential mechanism's
    output has ``P[u(out) <= OPT - alpha] <= beta``.

    Theorem 3.11 with ``t = ln(1/beta)`` (Cor. 3.12 when ``n_optimal = 1``); ``Delta/epsilon``
    instead of ``2 Delta/epsilon`` for the monotone variant.  The same bound holds for
    permute-and-flip and for report noisy max with exponential noise of scale
    ``2 Delta/epsilon``: a candidate more than alpha below OPT can win only if its noise
    exceeds alpha, and a union bound over the ``|R|`` candidates gives beta.
    """
    epsilon = _v.epsilon(epsilon)
    beta = _beta(beta)
    sensitivity = _v.positive("sensitivity", sensitivity)
    m = _count("n_candidates", n_candidates)
    n_opt = _v.integer("n_optimal", n_optimal, minimum=1, maximum=m)
    return _em_scale(epsilon, sensitivity, monotonic) * (
        math.log(m / n_opt) + math.log(1.0 / beta)
    )


def exponential_mechanism_epsilon(
    alpha: Real,
    *,
    n_candidates: int,
    beta: Real,
    sensitivity: Real = 1.0,
    n_optimal: int = 1,
    monotonic: bool = False,
) -> float:
    """The smallest epsilon with :func:`exponential_mechanism_error` ``<= alpha``:
    ``epsilon = (2 Delta/alpha)(ln(|R|/|R_OPT|) + ln(1/beta))``."""
    alpha = _v.positive("alpha", alpha)
    beta = _beta(beta)
    sensitivity = _v.positive("sensitivity", sensitivity)
    m = _count("n_candidates", n_candidates)
    n_opt = _v.integer("n_optimal", n_optimal, minimum=1, maximum=m)
    return _em_scale(alpha, sensitivity, monotonic) * (
        math.log(m / n_opt) + math.log(1.0 / beta)
    )


# ---------------------------------------------------------------- report noisy max


def report_noisy_max_error(
    epsilon: PrivacyParam,
    *,
    n_candidates: int,
    beta: Real,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    noise: str = "laplace",
) -> float:
    """Error of report noisy max: ``P[u(out) <= OPT - alpha] <= beta`` with noise scale
    ``b = 2 Delta/epsilon`` (``Delta/epsilon`` monotone) and

    * Laplace: ``alpha = 2 b ln(m/beta)``: with probability ``>= 1 - beta`` every
      ``|Y_i| < b ln(m/beta)`` (Thm 3.8's union bound), and then the winner's score is
      within twice that of OPT;
    * exponential (permute-and-flip): ``alpha = b ln(m/beta)``, the noise being nonnegative
      (Cor. 3.12's bound).
    """
    epsilon = _v.epsilon(epsilon)
    beta = _beta(beta)
    sensitivity = _v.positive("sensitivity", sensitivity)
    m = _count("n_candidates", n_candidates)
    noise = _v.choice("noise", noise, ("laplace", "exponential"))
    b = _em_scale(epsilon, sensitivity, monotonic)
    return (2.0 if noise == "laplace" else 1.0) * b * math.log(m / beta)


def report_noisy_max_epsilon(
    alpha: Real,
    *,
    n_candidates: int,
    beta: Real,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    noise: str = "laplace",
) -> float:
    """The smallest epsilon with :func:`report_noisy_max_error` ``<= alpha``."""
    alpha = _v.positive("alpha", alpha)
    beta = _beta(beta)
    sensitivity = _v.positive("sensitivity", sensitivity)
    m = _count("n_candidates", n_candidates)
    noise = _v.choice("noise", noise, ("laplace", "exponential"))
    return (
        (2.0 if noise == "laplace" else 1.0)
        * _em_scale(alpha, sensitivity, monotonic)
        * math.log(m / beta)
    )


# ---------------------------------------------------------------- Gaussian


def _z(beta: float, k: int) -> float:
    """The Gaussian quantile with two-sided tail beta/k: P[|N(0,1)| >= z] = beta/k."""
    return NormalDist().inv_cdf(1.0 - beta / (2.0 * k))


def gaussian_error(sigma: Real, *, beta: Real, k: int = 1) -> float:
    """``alpha = sigma z_{1 - beta/(2k)}``: k coordinates of N(0, sigma^2) noise have
    ``P[max_i |Y_i| >= alpha] <= beta`` (the exact two-sided normal tail per coordinate and a
    union bound; equality for k = 1)."""
    sigma = _v.positive("sigma", sigma)
    beta = _beta(beta)
    k = _count("k", k)
    return sigma * _z(beta, k)


def gaussian_max_sigma(alpha: Real, *, beta: Real, k: int = 1) -> float:
    """The largest sigma with :func:`gaussian_error` ``<= alpha``.

    (Called ``gaussian_sigma`` before: that name also meant
    :func:`dpfast.mechanisms.gaussian_sigma`, sigma from (epsilon, delta); the old name
    here still works, with a ``DeprecationWarning``, for one release.)"""
    alpha = _v.positive("alpha", alpha)
    beta = _beta(beta)
    k = _count("k", k)
    return alpha / _z(beta, k)


def _classic_c(delta: float) -> float:
    return math.sqrt(2.0 * math.log(1.25 / delta))


def gaussian_mechanism_error(
    epsilon: PrivacyParam,
    *,
    delta: PrivacyParam,
    beta: Real,
    l2_sensitivity: float = 1.0,
    k: int = 1,
) -> float:
    """Error of the classic Gaussian mechanism of Thm 3.22,
    ``sigma = sqrt(2 ln(1.25/delta)) Delta_2/epsilon`` (valid for ``epsilon < 1``), as
    :func:`gaussian_error` of that sigma."""
    epsilon = _v.epsilon(epsilon)
    if not epsilon < 1.0:
        raise PrivacyParameterError(
            f"epsilon must be < 1 for the classic Gaussian calibration "
            f"(Thm 3.22); got {epsilon!r}"
        )
    delta = _v.delta(delta, allow_zero=False)
    l2 = _v.positive("l2_sensitivity", l2_sensitivity)
    return gaussian_error(_classic_c(delta) * l2 / epsilon, beta=beta, k=k)


def gaussian_mechanism_epsilon(
    alpha: Real, *, delta: PrivacyParam, beta: Real, l2_sensitivity: float = 1.0, k: int = 1
) -> float:
    """The smallest epsilon with :func:`gaussian_mechanism_error` ``<= alpha``; raises if
    it is not below 1 (Thm 3.22 covers only ``epsilon < 1``: use the analytic calibration)."""
    sigma = gaussian_max_sigma(alpha, beta=beta, k=k)
    delta = _v.delta(delta, allow_zero=False)
    l2 = _v.positive("l2_sensitivity", l2_sensitivity)
    eps = _classic_c(delta) * l2 / sigma
    if not eps < 1.0:
        raise PrivacyParameterError(
            f"alpha={alpha!r} needs epsilon={eps!r} >= 1, outside the classic Gaussian "
            "calibration (Thm 3.22); use dpfast.mechanisms.gaussian_mechanism's analytic "
            "calibration"
        )
    return eps


# ---------------------------------------------------------------- randomized response


def _rr_t(n: int, beta: float, k: int) -> float:
    return math.sqrt(math.log(2.0 * (1 if k == 2 else k) / beta) / (2.0 * n))


def randomized_response_error(
    epsilon: PrivacyParam, *, n: int, beta: Real, k: int = 2
) -> float:
    """``alpha``: the unbiased randomized-response estimates from n reports are all within
    alpha of the true frequencies with probability ``>= 1 - beta``.

    The report frequencies are means of n independent indicators, so by Hoeffding
    ``P[|y_c - E y_c| >= t] <= 2 exp(-2 n t^2)``; with a union bound over the k codes (one
    for the boolean mechanism) ``t = sqrt(ln(2k/beta)/(2n))``, and the estimator divides by
    ``a - b = (e^eps - 1)/(e^eps + k - 1)`` (``tanh(eps/2)`` for k = 2), so
    ``alpha = t / (a - b)``.  (dpfast's certified flip probability lowers ``a - b`` by at
    most 2^-62.)
    """
    epsilon = _v.epsilon(epsilon)
    n = _count("n", n)
    beta = _beta(beta)
    k = _v.integer("k", k, minimum=2, maximum=2**62)
    gap = math.expm1(epsilon) / (math.exp(epsilon) + k - 1) if epsilon < 700 else 1.0
    alpha = _rr_t(n, beta, k) / gap if gap > 0.0 else math.inf
    if not alpha < math.inf:
        raise PrivacyParameterError(
            f"epsilon={epsilon!r} is so small that the error bound exceeds the largest double "
            "(the reports carry almost no information)"
        )
    return alpha


def randomized_response_epsilon(alpha: Real, *, n: int, beta: Real, k: int = 2) -> float:
    """The smallest epsilon with :func:`randomized_response_error` ``<= alpha``:
    ``epsilon = ln((1 + c (k - 1))/(1 - c))`` with ``c = t/alpha`` (``2 atanh(c)`` for
    k = 2); raises if ``c >= 1`` (no epsilon reaches alpha with n reports)."""
    alpha = _v.positive("alpha", alpha)
    n = _count("n", n)
    beta = _beta(beta)
    k = _v.integer("k", k, minimum=2, maximum=2**62)
    c = _rr_t(n, beta, k) / alpha
    if not c < 1.0:
        raise PrivacyParameterError(
            f"alpha={alpha!r} is unreachable with n={n} reports at beta={beta!r}: even with "
            f"no privacy the sampling error bound is {_rr_t(n, beta, k)!r}"
        )
    return math.log1p(c * k / (1.0 - c))


_RENAMED = {"gaussian_sigma": "gaussian_max_sigma"}


def __getattr__(name: str) -> object:
    """Old names of this module, kept for one release behind a DeprecationWarning."""
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    warnings.warn(
        f"dpfast.accuracy.{name} is renamed dpfast.accuracy.{new} (the old "
        "name also meant dpfast.mechanisms.gaussian_sigma); the old name goes in "
        "the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
