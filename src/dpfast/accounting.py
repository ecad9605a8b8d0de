"""Composition theorems, privacy-loss conversions and a thread-safe privacy budget.

Everything here is pure bookkeeping: no function in this module touches data or draws
noise.  Mechanisms call :meth:`PrivacyBudget.spend` *before* they draw noise, so an
overspending request is refused while nothing has been released yet.

Contents
--------
Composition of (epsilon, delta)-DP mechanisms
    :func:`basic_composition`, :func:`advanced_composition`,
    :func:`heterogeneous_advanced_composition`, :func:`advanced_composition_per_step`,
    :func:`product_mechanism_privacy`, :func:`optimal_composition`,
    :func:`optimal_composition_delta`.
Zero-concentrated DP (Bun & Steinke 2016)
    :func:`gaussian_zcdp`, :func:`pure_dp_to_zcdp`, :func:`zcdp_compose`,
    :func:`zcdp_to_dp`, :func:`zcdp_delta`, :func:`zcdp_budget`.
Renyi DP (Mironov 2017)
    :data:`DEFAULT_RDP_ORDERS`, :func:`rdp_gaussian`, :func:`rdp_laplace`,
    :func:`rdp_compose`, :func:`rdp_to_dp`.
Divergences of finite distributions (Dwork & Roth Def. 3.5-3.6, Lemma 3.18)
    :func:`kl_divergence`, :func:`max_divergence`, :func:`approximate_max_divergence`,
    :func:`hockey_stick_divergence`, :func:`statistical_distance`, :func:`check_kl_bound`.
Budget
    :class:`PrivacyBudget`, :class:`Reservation`, :class:`LedgerEntry`,
    :class:`PrivacyAmount`.

Rounding
--------
Every epsilon or delta returned here is an upper bound: closed forms evaluated in
floating point are rounded up by a few units in the last place (``_up``), root finders
return the end of their bracket that is on the safe side, and the budget does its
arithmetic exactly on :class:`fractions.Fraction` (of the floats it was given) or, where
a square root or logarithm is unavoidable, rounds every step against the caller.

Errata honoured here (see ``SPEC.md`` section 4)
------------------------------------------------
* Dwork & Roth Example 3.7 rounds the per-step budget to 1/801; that value composes to
  epsilon' ~ 1.0143 > 1.  The exact largest per-step epsilon is ~ 0.00123104 ~ 1/812.32.
* Seed 004 (product mechanism, Thm 4) prints "epsilon <= 1.79 => (3 k eps^2, e^(-k eps/2))".
  Its proof gives delta = e^(-k eps^2/2), and 3 k eps^2 needs e^eps - 1 <= 2 eps, i.e.
  eps <= 1.25643.  :func:`product_mechanism_privacy` ships the corrected statement only.
* Dwork & Roth Cor. 3.21: its proof replaces eps(e^eps - 1) by eps^2, which is smaller.
  The closed form is nevertheless right whenever eps' < 1 and delta' is not close to 1;
  :func:`advanced_composition_per_step` checks every closed-form answer against
  Theorem 3.20 and refuses the ones that fail (e.g. k = 1, delta' = 0.99, eps' = 0.9).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import threading
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from . import _validation as _v
from ._errors import BudgetExceededError, PrivacyParameterError

__all__ = [
    "basic_composition",
    "advanced_composition",
    "heterogeneous_advanced_composition",
    "advanced_composition_per_step",
    "product_mechanism_privacy",
    "PRODUCT_MECHANISM_EPSILON_MAX",
    "optimal_composition",
    "optimal_composition_delta",
    "gaussian_zcdp",
    "pure_dp_to_zcdp",
    "zcdp_compose",
    "zcdp_to_dp",
    "zcdp_delta",
    "zcdp_budget",
    "DEFAULT_RDP_ORDERS",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_compose",
    "rdp_to_dp",
    "kl_divergence",
    "max_divergence",
    "approximate_max_divergence",
    "hockey_stick_divergence",
    "statistical_distance",
    "check_kl_bound",
    "KLBoundCheck",
    "PrivacyBudget",
    "PrivacyAmount",
    "Reservation",
    "LedgerEntry",
]

_INF = math.inf
_ULP = 2.0**-52
# Relative slack that covers the floating-point error of a short closed form (a handful
# of correctly rounded operations and libm calls, each within 1 ulp).
_CLOSED_FORM_SLACK = 16 * _ULP
# Relative slack on delta targets of the numerical inverses (sums of up to 1e7 terms).
_SUM_SLACK = 2.0**-40
# Largest k accepted by the optimal-composition routines: they hold O(k) float arrays.
_KOV_K_MAX = 10**7


# --------------------------------------------------------------------------------------
# small numerical helpers (numpy + stdlib only: scipy is a test dependency)
# --------------------------------------------------------------------------------------


def _up(x, slack=_CLOSED_FORM_SLACK):
    """Round a nonnegative float result up by a relative ``slack`` (never down)."""
    if x == 0.0 or x == _INF or x != x:
        return x  # zero is exact; inf and NaN have no neighbour to move to
    return math.nextafter(x + abs(x) * slack, _INF)


def _down(x, slack=_CLOSED_FORM_SLACK):
    """Round a nonnegative float down by a relative ``slack``, never below 0."""
    if x <= 0.0:
        return 0.0
    return max(0.0, math.nextafter(x - x * slack, 0.0))


def _fraction_to_float_up(f):
    """The smallest float >= the rational ``f`` (float() rounds to nearest)."""
    x = float(f)
    if Fraction(x) < f:
        x = math.nextafter(x, _INF)
    return x


def _fraction_to_float_down(f):
    """The largest float <= the rational ``f``."""
    x = float(f)
    if Fraction(x) > f:
        x = math.nextafter(x, -_INF)
    return x


def _fsum_up(values):
    """An upward-rounded sum of floats: math.fsum is correctly rounded to nearest;
    the sign of the (again exactly summed) residual tells which side it fell on."""
    s = math.fsum(values)
    if s == _INF:
        return s
    residual = math.fsum(list(values) + [-s])
    return math.nextafter(s, _INF) if residual > 0.0 else s


def _sum_up(arr):
    """An upward-rounded sum of a float64 array of nonnegative values.

    Up to 2**14 terms: :func:`_fsum_up` (the exact sum, rounded up).  Beyond that,
    numpy's pairwise sum plus a rigorous bound on its rounding error: numpy adds blocks
    of at most 128 terms in 8 interleaved running sums and combines blocks pairwise, so
    every term passes through fewer than m = 128 + log2(n) additions, and the error is
    at most m u / (1 - m u) times the sum of |terms| (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2nd ed., §4.2)."""
    n = arr.shape[0]
    if n <= 1 << 14:
        return _fsum_up(arr.tolist())
    s = float(np.sum(arr))
    m = 128 + math.ceil(math.log2(n))
    gamma = m * 2.0**-53 / (1.0 - m * 2.0**-53)
    return math.nextafter(s + 2.0 * gamma * s, _INF)  # terms are >= 0: sum |x| = s (x2 for its own rounding)


def _logsumexp(a):
    """log(sum(exp(a))) of a 1-D float array, without overflow; -inf for no mass."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return -_INF
    m = float(np.max(a))
    if m == -_INF:
        return -_INF
    return m + math.log(float(np.sum(np.exp(a - m))))


def _log1mexp(x):
    """log(1 - e^x) for x <= 0, accurate near 0 and far below it (Maechler 2012)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > -math.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def _real_sequence(name, values, *, minimum_exclusive=None):
    """Validate a sequence of nonnegative finite reals; return a float64 array.

    A numpy array is checked vectorised; any other iterable element by element with
    the shared helpers (so a bool or a string inside a list is a TypeError naming
    ``name[i]``)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of real numbers; got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        arr = _v.float_array(name, values)
        if arr.ndim != 1:
            raise PrivacyParameterError(f"{name} must be one-dimensional; got shape {arr.shape}")
        bad = arr < 0.0 if minimum_exclusive is None else arr <= minimum_exclusive
        if bad.any():
            rule = ">= 0" if minimum_exclusive is None else f"> {minimum_exclusive}"
            raise PrivacyParameterError(f"{name} must be {rule} everywhere; got {arr[bad][0]!r}")
        return arr
    out = []
    for i, v in enumerate(values):
        label = f"{name}[{i}]"
        if minimum_exclusive is None:
            out.append(_v.nonnegative(label, v))
        else:
            f = _v.finite(label, v)
            if not f > minimum_exclusive:
                raise PrivacyParameterError(f"{label} must be > {minimum_exclusive}; got {v!r}")
            out.append(f)
    return np.asarray(out, dtype=np.float64)


def _delta_sequence(name, values, n):
    if values is None:
        return np.zeros(n)
    arr = _real_sequence(name, values)
    if (arr >= 1.0).any():
        raise PrivacyParameterError(f"{name} must be in [0, 1) everywhere; got {arr[arr >= 1.0][0]!r}")
    if arr.shape[0] != n:
        raise PrivacyParameterError(f"{name} must have the same length as epsilons ({n}); got {arr.shape[0]}")
    return arr


def _open_delta(name, value):
    """A probability in (0, 1): advanced composition needs ln(1/delta') finite."""
    return _v.delta(value, name, allow_zero=False)


# --------------------------------------------------------------------------------------
# basic and advanced composition
# --------------------------------------------------------------------------------------


def basic_composition(epsilons, deltas=None):
    """Basic composition: the epsilons add up and so do the deltas.

    Parameters
    ----------
    epsilons : sequence of float
        The epsilon_i >= 0 of the k mechanisms (any iterable or a 1-D array).
    deltas : sequence of float, optional
        Their delta_i in [0, 1); ``None`` means all zero.

    Returns
    -------
    (epsilon, delta) : tuple of float
        ``(sum(epsilons), sum(deltas))``, both rounded up.  A delta >= 1 is vacuous.

    Privacy
    -------
    The k-fold composition of (epsilon_i, delta_i)-DP mechanisms is
    (sum epsilon_i, sum delta_i)-DP, also when each mechanism is chosen adaptively
    after seeing the previous outputs (Dwork & Roth Thm 3.14, Cor. 3.15, Thm 3.16; the
    adaptive statement is Dwork, Rothblum & Vadhan 2010 Thm 3.1).  The bound is also a
    valid *filter* when the epsilon_i themselves are chosen adaptively (Rogers, Roth,
    Ullman & Vadhan 2016), which :class:`PrivacyBudget` relies on.

    References
    ----------
    C. Dwork, A. Roth, *The Algorithmic Foundations of Differential Privacy*, 2014, §3.5.
    """
    eps = _real_sequence("epsilons", epsilons)
    dels = _delta_sequence("deltas", deltas, eps.shape[0])
    return _sum_up(eps), _sum_up(dels)


def _advanced_epsilon(eps, k, log_inv_delta_prime):
    # Dwork & Roth Thm 3.20 / DRV Thm 3.3: sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1).
    # expm1 keeps e^eps - 1 accurate for the tiny per-step epsilons this is used with.
    return math.sqrt(2.0 * k * log_inv_delta_prime) * eps + k * eps * math.expm1(eps)


def advanced_composition(epsilon, delta, k, delta_prime):
    """Advanced composition of k (epsilon, delta)-DP mechanisms.

    Parameters
    ----------
    epsilon : float
        Per-step epsilon >= 0.
    delta : float
        Per-step delta in [0, 1).
    k : int
        Number of mechanisms, >= 1.
    delta_prime : float
        The extra failure probability delta' in (0, 1).

    Returns
    -------
    (epsilon', delta_total) : tuple of float
        epsilon' = sqrt(2 k ln(1/delta')) epsilon + k epsilon (e^epsilon - 1) and
        delta_total = k delta + delta', both rounded up.

    Privacy
    -------
    The class of (epsilon, delta)-DP mechanisms satisfies (epsilon', k delta + delta')-DP
    under k-fold adaptive composition (Dwork & Roth Thm 3.20; Dwork, Rothblum & Vadhan
    2010 Thm 3.3).  The proof: the privacy loss is a sum of k terms bounded by epsilon
    whose conditional means are at most epsilon (e^epsilon - 1) (Lemma 3.18), and Azuma's
    inequality (Lemma 3.19) bounds its upper tail by delta'.  The per-step parameters are
    fixed in advance; for adaptively chosen parameters use :class:`PrivacyBudget`.

    References
    ----------
    C. Dwork, G. Rothblum, S. Vadhan, "Boosting and Differential Privacy", FOCS 2010.
    C. Dwork, A. Roth, *The Algorithmic Foundations of Differential Privacy*, 2014, §3.5.2.
    """
    epsilon = _v.nonnegative("epsilon", epsilon)
    delta = _v.delta(delta)
    k = _v.integer("k", k, minimum=1)
    delta_prime = _open_delta("delta_prime", delta_prime)
    eps_total = _advanced_epsilon(epsilon, k, -math.log(delta_prime))
    return _up(eps_total), _up(k * delta + delta_prime)


def heterogeneous_advanced_composition(epsilons, deltas, delta_prime):
    """Advanced composition of mechanisms with different (epsilon_i, delta_i).

    Parameters
    ----------
    epsilons : sequence of float
        epsilon_i >= 0, fixed before the composition starts.
    deltas : sequence of float or None
        delta_i in [0, 1) (``None``: all zero).
    delta_prime : float
        delta' in (0, 1).

    Returns
    -------
    (epsilon', delta_total) : tuple of float
        epsilon' = sqrt(2 ln(1/delta') sum epsilon_i^2) + sum epsilon_i (e^epsilon_i - 1),
        delta_total = sum delta_i + delta'; rounded up.

    Privacy
    -------
    The proof of Dwork & Roth Thm 3.20 goes through with a step-dependent bound: the
    i-th privacy-loss term lies in [-epsilon_i, epsilon_i] with conditional mean at most
    epsilon_i (e^epsilon_i - 1) (Lemma 3.18), so the Azuma-Hoeffding inequality for
    martingale differences of range 2 epsilon_i gives
    Pr[loss > sum eps_i(e^eps_i - 1) + t] <= exp(-t^2 / (2 sum eps_i^2)) = delta' for
    t = sqrt(2 ln(1/delta') sum eps_i^2); the deltas add as in Thm 3.20.  With all
    epsilon_i equal this is exactly :func:`advanced_composition`.  Valid when the
    sequence of epsilon_i is fixed in advance (the mechanisms may still be adaptive);
    see Rogers, Roth, Ullman & Vadhan 2016 for adaptively chosen parameters.

    References
    ----------
    C. Dwork, A. Roth, 2014, Thm 3.20 and its proof.
    P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential
    Privacy", ICML 2015 (heterogeneous bounds, Thm 3.5).
    """
    eps = _real_sequence("epsilons", epsilons)
    if eps.shape[0] == 0:
        raise PrivacyParameterError("epsilons must hold at least one value; got an empty sequence")
    dels = _delta_sequence("deltas", deltas, eps.shape[0])
    delta_prime = _open_delta("delta_prime", delta_prime)
    sq = _sum_up(eps * eps)
    drift = _sum_up(eps * np.expm1(eps))
    eps_total = math.sqrt(2.0 * -math.log(delta_prime) * sq) + drift
    return _up(eps_total), _up(_sum_up(dels) + delta_prime)


def advanced_composition_per_step(epsilon_total, delta_prime, k, *, method="exact"):
    """The per-step epsilon that k-fold advanced composition turns into epsilon_total.

    Parameters
    ----------
    epsilon_total : float
        Target epsilon' > 0 of the composition.
    delta_prime : float
        delta' in (0, 1) of Thm 3.20 (the per-step deltas add k delta on top).
    k : int
        Number of steps, >= 1.
    method : {"exact", "closed_form"}
        ``"exact"``: the largest float epsilon whose Thm 3.20 epsilon' (evaluated and
        rounded up) is <= ``epsilon_total``; the map epsilon -> epsilon' is strictly
        increasing, so this is a bisection to adjacent floats.
        ``"closed_form"``: Dwork & Roth Cor. 3.21, epsilon = epsilon'/(2 sqrt(2 k ln(1/delta'))),
        stated for epsilon' < 1.  Its proof bounds k eps (e^eps - 1) by k eps^2, which is
        too small, so the answer is checked against Thm 3.20 and refused
        (:class:`PrivacyParameterError`) if it does not compose to <= epsilon'
        (that happens only when delta' is close to 1).

    Returns
    -------
    float
        The per-step epsilon.

    Privacy
    -------
    k adaptively composed (epsilon, delta)-DP mechanisms with the returned epsilon are
    (epsilon_total, k delta + delta')-DP (Dwork & Roth Thm 3.20).

    Notes
    -----
    Known answer (Dwork & Roth Example 3.7, corrected): k = 10,000, delta' = e^-32,
    epsilon' = 1 gives epsilon ~ 0.00123104 ~ 1/812.32.  The book's 1/801 composes to
    epsilon' ~ 1.0143, i.e. it overshoots the target; the closed form gives 1/1600.

    References
    ----------
    C. Dwork, A. Roth, 2014, Thm 3.20, Cor. 3.21, Example 3.7.
    """
    epsilon_total = _v.positive("epsilon_total", epsilon_total)
    delta_prime = _open_delta("delta_prime", delta_prime)
    k = _v.integer("k", k, minimum=1)
    method = _v.choice("method", method, ("exact", "closed_form"))
    log_inv = -math.log(delta_prime)

    def composed(e):
        return _up(_advanced_epsilon(e, k, log_inv))

    if method == "closed_form":
        if not epsilon_total < 1.0:
            raise PrivacyParameterError(
                f"epsilon_total must be < 1 for the closed form of Cor. 3.21; got {epsilon_total!r}"
            )
        eps = epsilon_total / (2.0 * math.sqrt(2.0 * k * log_inv))
        eps = _down(eps)
        if composed(eps) > epsilon_total:
            raise PrivacyParameterError(
                "the closed form of Cor. 3.21 does not hold for these parameters "
                f"(k={k}, delta_prime={delta_prime!r}): it composes to {composed(eps)!r} > "
                f"epsilon_total={epsilon_total!r}; use method='exact'"
            )
        return eps
    # Bracket: the first term alone reaches epsilon' at epsilon'/sqrt(2 k ln(1/delta')),
    # and k eps^2 <= k eps (e^eps - 1) reaches it at sqrt(epsilon'/k).
    hi = min(epsilon_total / math.sqrt(2.0 * k * log_inv), math.sqrt(epsilon_total / k))
    hi = math.nextafter(hi * (1.0 + 1e-9), _INF)
    lo = 0.0
    while composed(hi) <= epsilon_total:  # defensive: widen until the target is passed
        lo, hi = hi, hi * 2.0
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if composed(mid) <= epsilon_total:
            lo = mid
        else:
            hi = mid
    return lo


# Largest epsilon with e^eps - 1 <= 2 eps (the positive root of e^x = 1 + 2x), computed
# by Newton's method at import and rounded down.
def _product_threshold():
    x = 1.25
    for _ in range(60):
        x_new = x - (math.expm1(x) - 2.0 * x) / (math.exp(x) - 2.0)
        if x_new == x:
            break
        x = x_new
    # expm1 is within 1 ulp, so near the root its sign is unreliable: step down until
    # the inequality holds with a margin of a few ulps.
    while math.expm1(x) > 2.0 * x - 8.0 * math.ulp(2.0 * x):
        x = math.nextafter(x, 0.0)
    return x


PRODUCT_MECHANISM_EPSILON_MAX = _product_threshold()  # ~1.2564312


def product_mechanism_privacy(epsilon, k, *, simplified=False):
    """Privacy of the k-fold product of an epsilon-DP mechanism (seed 004 Thm 4, corrected).

    Parameters
    ----------
    epsilon : float
        The epsilon > 0 of each of the k copies (pure DP).
    k : int
        Number of copies, >= 1.
    simplified : bool, default False
        Return the looser 3 k epsilon^2 instead of the advanced-composition epsilon.
        Only allowed when e^epsilon - 1 <= 2 epsilon, i.e. epsilon <= 1.25643
        (:data:`PRODUCT_MECHANISM_EPSILON_MAX`); otherwise PrivacyParameterError.

    Returns
    -------
    (epsilon', delta') : tuple of float
        delta' = e^(-k epsilon^2 / 2) and
        epsilon' = k epsilon^2 + k epsilon (e^epsilon - 1)  (<= 3 k epsilon^2 when allowed).

    Privacy
    -------
    This is advanced composition (Dwork & Roth Thm 3.20) with delta' = e^(-k eps^2/2),
    for which sqrt(2 k ln(1/delta')) eps = k eps^2.

    **Erratum.** Seed 004 prints "if epsilon <= 1.79 then M^k is
    (3 k eps^2, e^(-k eps/2))-DP".  Both numbers are typos: the proof's Chernoff/Azuma
    step gives delta = e^(-k eps^2/2) (not e^(-k eps/2), which is larger than the true
    failure probability whenever eps < 1 and so claims too little privacy loss for the
    epsilon, and is simply wrong for eps > 1), and k eps (e^eps - 1) + k eps^2 <= 3 k eps^2
    needs e^eps - 1 <= 2 eps, i.e. eps <= 1.2564, not 1.79 (at eps = 1.5 the true
    epsilon' is ~7.47 k > 6.75 k = 3 k eps^2).  The printed version is never returned.

    References
    ----------
    Seed 004 (lecture notes on the product mechanism), Thm 4 and its proof.
    C. Dwork, A. Roth, 2014, Thm 3.20.  SPEC.md §4.
    """
    epsilon = _v.positive("epsilon", epsilon)
    k = _v.integer("k", k, minimum=1)
    if not isinstance(simplified, bool):
        raise TypeError(f"simplified must be a bool; got {type(simplified).__name__} {simplified!r}")
    delta_prime = math.exp(-k * epsilon * epsilon / 2.0)
    if delta_prime == 0.0:
        # e^(-k eps^2/2) underflows: report the smallest positive float, which is larger.
        delta_prime = math.ulp(0.0)
    eps_total = k * epsilon * epsilon + k * epsilon * math.expm1(epsilon)
    if simplified:
        if not epsilon <= PRODUCT_MECHANISM_EPSILON_MAX:
            raise PrivacyParameterError(
                "epsilon must be <= 1.25643 (e^epsilon - 1 <= 2 epsilon) for the 3 k epsilon^2 "
                f"simplification; got {epsilon!r}"
            )
        eps_total = 3.0 * k * epsilon * epsilon
    return _up(eps_total), _up(delta_prime)


# --------------------------------------------------------------------------------------
# optimal (Kairouz-Oh-Viswanath) composition
# --------------------------------------------------------------------------------------

# Stirling-series remainder delta(n) = ln n! - [(n + 1/2) ln n - n + ln(2 pi)/2] for
# n = 0..15 from math.lgamma (delta(0) is unused: x = 0 and x = n are handled apart).
_LN_2PI = math.log(2.0 * math.pi)
_STIRLERR_TABLE = np.array(
    [0.0] + [math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - 0.5 * _LN_2PI for n in range(1, 16)]
)


def _stirlerr(n):
    """delta(n) for a float array of integers n >= 1 (Loader 2000, eq. 2)."""
    n = np.asarray(n, dtype=np.float64)
    out = np.empty_like(n)
    small = n <= 15.0
    out[small] = _STIRLERR_TABLE[n[small].astype(np.int64)]
    big = ~small
    if big.any():
        nb = n[big]
        r = 1.0 / (nb * nb)
        # The asymptotic series 1/(12n) - 1/(360n^3) + 1/(1260n^5) - 1/(1680n^7) + 1/(1188n^9);
        # the next term is < 2e-16 in absolute value for n > 15.
        out[big] = (1.0 / 12 - r * (1.0 / 360 - r * (1.0 / 1260 - r * (1.0 / 1680 - r / 1188)))) / nb
    return out


def _bd0(x, m):
    """x ln(x/m) + m - x, computed without cancellation near x = m (Loader 2000)."""
    x = np.asarray(x, dtype=np.float64)
    m = np.broadcast_to(np.asarray(m, dtype=np.float64), x.shape)
    out = np.empty_like(x)
    d = x - m
    s = x + m
    near = np.abs(d) < 0.1 * s
    far = ~near
    with np.errstate(divide="ignore", invalid="ignore"):
        out[far] = x[far] * np.log(x[far] / m[far]) + m[far] - x[far]
    if near.any():
        # With v = (x-m)/(x+m): x ln(x/m) = 2x atanh(v) = 2x (v + v^3/3 + v^5/5 + ...),
        # so bd0 = (x-m) v + 2x (v^3/3 + v^5/5 + ...) with every term of one sign.
        xn = x[near]
        v = d[near] / s[near]
        total = d[near] * v
        v2 = v * v
        ej = 2.0 * xn * v
        for j in range(1, 40):
            ej = ej * v2
            term = ej / (2 * j + 1)
            new = total + term
            if np.array_equal(new, total):
                break
            total = new
        out[near] = total
    return out


def _binomial_logpmf(n, x, log_p, log_q):
    """ln Pr[Bin(n, p) = x] for an integer array x in [0, n], with p = e^log_p.

    Loader's saddle-point form: ln C(n,x) p^x q^(n-x) =
    delta(n) - delta(x) - delta(n-x) - bd0(x, np) - bd0(n-x, nq) + ln sqrt(n / (2 pi x (n-x))).
    Unlike lgamma(n+1) - lgamma(x+1) - lgamma(n-x+1), nothing of size n ln n cancels,
    so the absolute error stays near 1e-13 for n up to 1e7 where the pmf matters.
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    at0 = x == 0.0
    atn = x == float(n)
    out[at0] = n * log_q
    out[atn] = n * log_p
    mid = ~(at0 | atn)
    if mid.any():
        xm = x[mid]
        nf = float(n)
        np_, nq_ = nf * math.exp(log_p), nf * math.exp(log_q)
        with np.errstate(divide="ignore", invalid="ignore"):
            lc = (
                _stirlerr(np.array([nf]))[0]
                - _stirlerr(xm)
                - _stirlerr(nf - xm)
                - _bd0(xm, np_)
                - _bd0(nf - xm, nq_)
                + 0.5 * (np.log(nf / (xm * (nf - xm))) - _LN_2PI)
            )
        out[mid] = lc
    return out


def _binomial_kl(x, s):
    """KL(x || s) of two Bernoulli laws, x in [0, 1], s in (0, 1)."""
    out = 0.0
    if x > 0.0:
        out += x * math.log(x / s)
    if x < 1.0:
        out += (1.0 - x) * math.log((1.0 - x) / (1.0 - s))
    return max(out, 0.0)


class _KOVTerms:
    """The k-fold randomized-response pair that dominates every (epsilon, 0)-DP mechanism.

    Under one database the number of flipped answers is Bin(k, s) with
    s = 1/(1 + e^eps); under the other it is Bin(k, 1 - s).  The privacy loss of ell flips
    is (k - 2 ell) eps, positive only for ell < k/2, so
    delta_hom(e) = sum_{ell < k/2} a_ell (1 - e^(e - loss_ell))_+ with a_ell = Pr[Bin(k, s) = ell].

    Terms are kept only where the Chernoff bound Pr[Bin(k,s) = ell] <= exp(-k KL(ell/k || s))
    allows them to exceed e^-T; the discarded ones add at most (k+1) e^-T to any delta,
    and callers choose T so that this is below their accuracy (it is added, see
    ``pruned``).  For k = 1e6 this keeps ~1e4 of the 5e5 terms.
    """

    def __init__(self, epsilon, k, log_threshold):
        self.epsilon = epsilon
        self.k = k
        log_1ms = -math.log1p(math.exp(-epsilon))  # ln(1 - s) = -ln(1 + e^-eps)
        log_s = -epsilon + log_1ms  # ln s = -eps - ln(1 + e^-eps): no overflow
        s = math.exp(log_s)
        top = (k + 1) // 2 - 1  # largest ell with positive loss
        T = -log_threshold
        lo, hi = 0, top
        if T < _INF:
            mode = min(max(int(k * s), 0), top)
            # Leftmost kept ell: k KL(ell/k || s) decreases on [0, mode] (bisection).
            if k * _binomial_kl(0.0, s) > T:
                a, b = 0, mode  # KL(a) > T >= ... find the first ell with KL <= T
                if k * _binomial_kl(b / k, s) > T:
                    a = b
                while b - a > 1:
                    c = (a + b) // 2
                    if k * _binomial_kl(c / k, s) > T:
                        a = c
                    else:
                        b = c
                lo = b
            # Rightmost kept ell on [mode, top], where the bound increases.
            if top > mode and k * _binomial_kl(top / k, s) > T:
                a, b = mode, top  # KL(a) <= T < KL(b)
                while b - a > 1:
                    c = (a + b) // 2
                    if k * _binomial_kl(c / k, s) > T:
                        b = c
                    else:
                        a = c
                hi = a
        if hi < lo:
            hi = lo
        pruned = lo + (top - hi)
        # Rigorous mass bound of the discarded terms (each <= e^-T).
        self.log_pruned = math.log(pruned) - T if pruned and T < _INF else -_INF
        self.ell = np.arange(lo, hi + 1, dtype=np.float64)
        self.log_a = _binomial_logpmf(k, self.ell, log_p=log_s, log_q=log_1ms)
        self.loss = (k - 2.0 * self.ell) * epsilon  # decreasing, > 0

    def log_delta(self, eps_g):
        """ln of an upper bound on delta_hom(eps_g): the kept terms plus the pruned bound.

        Every kept term is positive, so the sum has no cancellation; -expm1 keeps the
        factor accurate when eps_g is just below a breakpoint."""
        keep = self.loss > eps_g
        total = -_INF
        if keep.any():
            with np.errstate(divide="ignore"):
                terms = self.log_a[keep] + np.log(-np.expm1(eps_g - self.loss[keep]))
            total = _logsumexp(terms)
        return float(np.logaddexp(total, self.log_pruned))

    def solve(self, log_target):
        """Smallest eps_g >= 0 with the bound of :meth:`log_delta` <= e^log_target."""
        k, eps = self.k, self.epsilon
        if log_target == -_INF:
            return k * eps  # delta_hom(eps_g) > 0 for every eps_g < k eps (the ell = 0 term)
        if self.log_delta(0.0) <= log_target:
            return 0.0
        if self.log_pruned >= log_target:  # cannot happen with the callers' thresholds
            return k * eps
        log_target_kept = log_target + float(_log1mexp(self.log_pruned - log_target))
        # With the kept terms sorted by decreasing loss, segment j (j = 1..J) is
        # eps_g in [loss_j, loss_{j-1}) (loss_J := 0): exactly the first j terms are
        # positive and delta = A_j - e^eps_g B_j with A_j = sum_{i<j} a_i and
        # B_j = sum_{i<j} a_i e^-loss_i.
        log_b = self.log_a - self.loss
        log_A = np.logaddexp.accumulate(self.log_a)
        log_B = np.logaddexp.accumulate(log_b)
        lower = np.append(self.loss[1:], 0.0)
        lower = np.maximum(lower, 0.0)
        upper = self.loss
        # delta at each segment's lower end; increasing in j.
        log_d_lower = log_A + _log1mexp(np.minimum(lower + log_B - log_A, 0.0))
        above = log_d_lower > log_target_kept
        # First segment whose low end is above target (the last one, whose low end is
        # eps_g = 0, is above it: checked just before, up to rounding).
        idx = int(np.argmax(above)) if above.any() else len(self.loss) - 1
        seg_lo, seg_hi = float(lower[idx]), float(upper[idx])
        lA, lB = float(log_A[idx]), float(log_B[idx])
        # delta linear in y = e^eps_g on the segment: y = (A - target)/B.
        gap = lA + float(_log1mexp(min(log_target_kept - lA, 0.0)))
        eps_g = min(max(gap - lB, seg_lo), seg_hi)
        # Newton in y with the cancellation-free sum polishes the value (one step is
        # exact for a linear function); repeat while it still moves.
        for _ in range(4):
            ld = self.log_delta(eps_g)
            if ld == -_INF:
                break
            # y_new = y + (delta(y) - target)/B  =>  eps_new = eps_g + ln(1 + (delta - target)/(y B))
            ratio = math.exp(ld - (eps_g + lB)) - math.exp(log_target - (eps_g + lB))
            if ratio <= -1.0:
                break
            new = min(max(eps_g + math.log1p(ratio), seg_lo), seg_hi)
            if new == eps_g:
                break
            eps_g = new
        # Safe side: move up until the (accurately evaluated) bound is below target.
        bump = math.ulp(max(eps_g, eps))
        for _ in range(300):
            if self.log_delta(eps_g) <= log_target:
                break
            eps_g = eps_g + bump
            bump *= 2.0
        return eps_g


def _kov_args(epsilon, delta, k):
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta)
    k = _v.integer("k", k, minimum=1, maximum=_KOV_K_MAX)
    return epsilon, delta, k


def optimal_composition(epsilon, delta, k, delta_prime):
    """Exact optimal homogeneous composition (Kairouz, Oh & Viswanath 2015).

    Parameters
    ----------
    epsilon : float
        Per-step epsilon > 0.
    delta : float
        Per-step delta in [0, 1).
    k : int
        Number of mechanisms, 1 <= k <= 10**7.
    delta_prime : float
        Target for the pure-DP part of the composed delta, in [0, 1).

    Returns
    -------
    (epsilon_g, delta_g) : tuple of float
        The smallest epsilon_g >= 0 with delta_hom(epsilon_g) <= delta_prime, where
        ``delta_hom(e) = sum_{ell=0}^{k} C(k, ell) max(0, e^{(k-ell) eps} - e^{e + ell eps}) / (1 + e^eps)^k``
        (the delta of k composed eps-randomized responses at e), and
        delta_g = 1 - (1 - delta)^k (1 - delta_prime) <= k delta + delta_prime.

    Privacy
    -------
    Every k-fold adaptive composition of (epsilon, delta)-DP mechanisms is
    (epsilon_g, 1 - (1-delta)^k (1 - delta_hom(epsilon_g)))-DP, and no smaller pair can be
    claimed for the class (Kairouz, Oh & Viswanath 2015, Thm 3.3, stated there at the
    points epsilon_g = (k - 2i) epsilon; the formula above is the exact privacy region of
    the dominating k-fold composed mechanism at every epsilon_g).  Hence this is never
    worse than :func:`advanced_composition` with the same delta_prime (whose delta
    k delta + delta' is even larger) nor than :func:`basic_composition`.

    Notes
    -----
    The sum is evaluated in log space with Loader's saddle-point binomial log-pmf, so
    k up to 1e7 is stable (an e^{k eps} form overflows near k eps ~ 709).  The smallest
    epsilon_g is found exactly: delta_hom is a decreasing function which, between the
    breakpoints (k - 2m) eps, equals A_m - e^{epsilon_g} B_m; the right segment is located
    from all segment ends at once (vectorised) and solved in closed form, then polished
    with the cancellation-free sum and moved up until it meets the target at
    floating-point accuracy.  Terms are discarded only where the Chernoff bound proves
    them below delta' e^-60/(k+1) each, and that bound is added to delta.  Time and
    memory grow like sqrt(k ln(1/delta')) after an O(log k) search.

    References
    ----------
    P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
    ICML 2015 / IEEE Trans. Inf. Theory 63(6), 2017, Thm 3.3.
    C. Loader, "Fast and Accurate Computation of Binomial Probabilities", 2000.
    """
    epsilon, delta, k = _kov_args(epsilon, delta, k)
    delta_prime = _v.delta(delta_prime, "delta_prime")
    # Aim slightly below delta' to absorb the rounding of the log-space sums.
    log_target = math.log(delta_prime) + math.log1p(-_SUM_SLACK) if delta_prime > 0.0 else -_INF
    # Discard only terms below delta' e^-60 / (k+1) in total (their bound is added).
    terms = _KOVTerms(epsilon, k, log_target - 60.0 - math.log(k + 1.0))
    eps_g = terms.solve(log_target)
    delta_g = -math.expm1(k * math.log1p(-delta) + math.log1p(-delta_prime))
    return _up(eps_g), _up(delta_g)


def optimal_composition_delta(epsilon, delta, k, epsilon_total):
    """The exact composed delta at a given total epsilon (the forward map of KOV Thm 3.3).

    Parameters
    ----------
    epsilon, delta, k
        As in :func:`optimal_composition`.
    epsilon_total : float
        epsilon_g >= 0.

    Returns
    -------
    float
        delta_g = 1 - (1 - delta)^k (1 - delta_hom(epsilon_g)), rounded up.

    Privacy
    -------
    The k-fold adaptive composition is (epsilon_total, delta_g)-DP, and this delta is the
    smallest possible for the class (Kairouz, Oh & Viswanath 2015, Thm 3.3).

    References
    ----------
    P. Kairouz, S. Oh, P. Viswanath, ICML 2015, Thm 3.3.
    """
    epsilon, delta, k = _kov_args(epsilon, delta, k)
    epsilon_total = _v.nonnegative("epsilon_total", epsilon_total)
    # Discarded terms add at most e^-800 < 1e-347 in total: below the float range, so
    # the result is exact up to rounding wherever it is a normal float.
    log_d = _KOVTerms(epsilon, k, -800.0).log_delta(epsilon_total)
    d_hom = math.exp(log_d)
    return min(1.0, _up(-math.expm1(k * math.log1p(-delta) + math.log1p(-d_hom)), 2.0**-40))


# --------------------------------------------------------------------------------------
# zero-concentrated DP
# --------------------------------------------------------------------------------------


def gaussian_zcdp(sigma, sensitivity=1.0):
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
    return _up(sensitivity * sensitivity / (2.0 * sigma * sigma))


def pure_dp_to_zcdp(epsilon):
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
    return _up(epsilon * epsilon / 2.0)


def zcdp_compose(rhos):
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
    return _sum_up(arr)


def _zcdp_tight_epsilon(rho, log_inv_delta):
    """min over alpha > 1 of alpha rho + (L - ln alpha)/(alpha - 1) + ln(1 - 1/alpha).

    d/dalpha of that expression is rho - (L - ln alpha)/(alpha-1)^2, which is negative
    then positive: its unique zero solves rho (alpha-1)^2 = L - ln alpha (left side
    increasing, right side decreasing), found by bisection on alpha - 1.
    """
    L = log_inv_delta
    lo, hi = 0.0, math.sqrt(L / rho)  # in terms of t = alpha - 1; g(hi) = ln(1 + hi) > 0
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
        alpha = 1.0 + t
        val = alpha * rho + (L - math.log1p(t)) / t + math.log(t / alpha)
        best = min(best, val)
    return best


def zcdp_to_dp(rho, delta, *, method="tight"):
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
        return _up(rho + 2.0 * math.sqrt(rho * L))
    return _up(max(0.0, _zcdp_tight_epsilon(rho, L)), 2.0**-44)


def _zcdp_tight_log_delta(rho, epsilon):
    """ln of inf_{alpha>1} exp((alpha-1)(alpha rho - eps)) (1 - 1/alpha)^(alpha-1) / alpha.

    The exponent is convex in alpha; its derivative (2 alpha - 1) rho - eps + ln(1 - 1/alpha)
    increases from -inf, so its zero is found by bisection."""
    lo, hi = 1.0, 2.0 + (epsilon + 1.0) / rho
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
        val = t * (alpha * rho - epsilon) + t * math.log(t / alpha) - math.log(alpha)
        best = min(best, val)
    return best


def zcdp_delta(rho, epsilon, *, method="tight"):
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
        return min(1.0, _up(math.exp(-((epsilon - rho) ** 2) / (4.0 * rho))))
    return min(1.0, _up(math.exp(_zcdp_tight_log_delta(rho, epsilon)), 2.0**-40))


def zcdp_budget(epsilon, delta, *, method="tight"):
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


# --------------------------------------------------------------------------------------
# Renyi DP
# --------------------------------------------------------------------------------------

DEFAULT_RDP_ORDERS = np.array(
    [1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0,
     14.0, 16.0, 20.0, 24.0, 28.0, 32.0, 48.0, 64.0, 96.0, 128.0, 256.0, 512.0, 1024.0]
)
DEFAULT_RDP_ORDERS.setflags(write=False)


def _as_sequence(values):
    """A lone number becomes a one-element list; anything else is left to validation."""
    return [values] if isinstance(values, numbers.Number) else values


def _orders(orders):
    if orders is None:
        return DEFAULT_RDP_ORDERS
    arr = _real_sequence("orders", _as_sequence(orders), minimum_exclusive=1.0)
    if arr.shape[0] == 0:
        raise PrivacyParameterError("orders must hold at least one order; got an empty sequence")
    return arr


def rdp_gaussian(sigma, orders=None, sensitivity=1.0):
    """RDP curve of the Gaussian mechanism: epsilon(alpha) = alpha Delta^2 / (2 sigma^2).

    Parameters
    ----------
    sigma : float
        Noise standard deviation > 0.
    orders : sequence of float, optional
        Renyi orders alpha > 1 (default :data:`DEFAULT_RDP_ORDERS`).
    sensitivity : float, default 1.0
        l2 sensitivity > 0.

    Returns
    -------
    numpy.ndarray
        epsilon(alpha) for each order.

    Privacy
    -------
    The Gaussian mechanism is (alpha, alpha Delta^2/(2 sigma^2))-RDP for every alpha > 1
    (Mironov 2017, Table II; it is the Renyi divergence of two Gaussians with means
    Delta apart, computed in closed form).

    References
    ----------
    I. Mironov, "Renyi Differential Privacy", CSF 2017.
    """
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.positive("sensitivity", sensitivity)
    a = _orders(orders)
    return a * (sensitivity * sensitivity / (2.0 * sigma * sigma))


def rdp_laplace(scale, orders=None, sensitivity=1.0):
    """RDP curve of the Laplace mechanism.

    Parameters
    ----------
    scale : float
        Laplace scale > 0.
    orders : sequence of float, optional
        Renyi orders alpha > 1 (default :data:`DEFAULT_RDP_ORDERS`).
    sensitivity : float, default 1.0
        l1 sensitivity Delta > 0.

    Returns
    -------
    numpy.ndarray
        epsilon(alpha) = 1/(alpha-1) ln( alpha/(2alpha-1) e^((alpha-1)/b)
        + (alpha-1)/(2alpha-1) e^(-alpha/b) ) with b = scale / Delta.

    Privacy
    -------
    Mironov 2017, Prop. 6 / Table II (re-derived here: the integral of
    p^alpha q^(1-alpha) for Lap(0,b) against Lap(1,b) splits at 0 and 1 into exactly
    those two exponentials).  Evaluated as ln(alpha/(2alpha-1)) + (alpha-1)/b
    + ln1p((alpha-1)/alpha e^(-(2alpha-1)/b)), which cannot overflow.  Never exceeds
    1/b, the pure-DP epsilon of the mechanism.

    References
    ----------
    I. Mironov, "Renyi Differential Privacy", CSF 2017.
    """
    scale = _v.positive("scale", scale)
    sensitivity = _v.positive("sensitivity", sensitivity)
    a = _orders(orders)
    b = scale / sensitivity
    log_mgf = np.log(a / (2.0 * a - 1.0)) + (a - 1.0) / b + np.log1p((a - 1.0) / a * np.exp(-(2.0 * a - 1.0) / b))
    return np.minimum(log_mgf / (a - 1.0), 1.0 / b)


def rdp_compose(*curves):
    """Compose RDP mechanisms evaluated on the same orders: the curves add up.

    Parameters
    ----------
    *curves : sequence of float
        epsilon_i(alpha) arrays, one per mechanism, all on the same grid of orders.

    Returns
    -------
    numpy.ndarray
        sum_i epsilon_i(alpha).

    Privacy
    -------
    Adaptive composition of (alpha, eps_i)-RDP mechanisms is (alpha, sum eps_i)-RDP
    (Mironov 2017, Prop. 1).

    References
    ----------
    I. Mironov, CSF 2017.
    """
    if not curves:
        raise PrivacyParameterError("rdp_compose needs at least one curve; got none")
    arrays = [_real_sequence(f"curves[{i}]", _as_sequence(c)) for i, c in enumerate(curves)]
    n = arrays[0].shape[0]
    for i, arr in enumerate(arrays):
        if arr.shape[0] != n:
            raise PrivacyParameterError(f"curves[{i}] must have {n} orders like curves[0]; got {arr.shape[0]}")
    return np.sum(np.vstack(arrays), axis=0)


def rdp_to_dp(orders, rdp, delta, *, method="tight"):
    """Convert an RDP curve to (epsilon, delta)-DP, optimising over the orders.

    Parameters
    ----------
    orders : sequence of float
        Orders alpha > 1.
    rdp : sequence of float
        epsilon(alpha) >= 0 on those orders.
    delta : float
        delta in (0, 1).
    method : {"tight", "classic"}
        ``"classic"``: epsilon = min_alpha eps(alpha) + ln(1/delta)/(alpha-1)
        (Mironov 2017, Prop. 3).  ``"tight"`` (default):
        epsilon = min_alpha eps(alpha) + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha-1)
        (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021), never larger.

    Returns
    -------
    (epsilon, order) : tuple of float
        The best epsilon (>= 0, rounded up) and the order that achieves it.

    Privacy
    -------
    An (alpha, eps(alpha))-RDP mechanism is (epsilon, delta)-DP with the returned epsilon.

    References
    ----------
    I. Mironov, CSF 2017, Prop. 3.  C. Canonne, G. Kamath, T. Steinke, NeurIPS 2020,
    Prop. 12.
    """
    a = _orders(orders)
    r = _real_sequence("rdp", _as_sequence(rdp))
    if r.shape != a.shape:
        raise PrivacyParameterError(f"rdp must have one value per order ({a.shape[0]}); got {r.shape[0]}")
    delta = _v.delta(delta, allow_zero=False)
    method = _v.choice("method", method, ("tight", "classic"))
    log_delta = math.log(delta)
    if method == "classic":
        eps = r - log_delta / (a - 1.0)
    else:
        eps = r + np.log1p(-1.0 / a) - (log_delta + np.log(a)) / (a - 1.0)
    i = int(np.argmin(eps))
    return _up(max(0.0, float(eps[i])), 2.0**-44), float(a[i])


# --------------------------------------------------------------------------------------
# divergences of finite distributions
# --------------------------------------------------------------------------------------

_DIST_TOL = 1e-9


def _distribution(name, values):
    arr = _v.float_array(name, values)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise PrivacyParameterError(f"{name} must be a non-empty 1-D array of probabilities; got shape {arr.shape}")
    if (arr < 0.0).any():
        raise PrivacyParameterError(f"{name} must be >= 0 everywhere; got {arr[arr < 0.0][0]!r}")
    total = math.fsum(arr.tolist())
    if abs(total - 1.0) > _DIST_TOL:
        raise PrivacyParameterError(f"{name} must sum to 1 (within {_DIST_TOL}); got sum {total!r}")
    return arr


def _pair(p, q):
    p = _distribution("p", p)
    q = _distribution("q", q)
    if p.shape != q.shape:
        raise PrivacyParameterError(f"p and q must have the same support size; got {p.shape[0]} and {q.shape[0]}")
    return p, q


def kl_divergence(p, q):
    """KL divergence D(P || Q) = sum_y P(y) ln(P(y)/Q(y)) of two finite distributions.

    Parameters
    ----------
    p, q : array_like
        Probabilities on the same finite support (nonnegative, summing to 1).

    Returns
    -------
    float
        D(P||Q) in nats; ``inf`` when P has mass where Q has none.

    Privacy
    -------
    Dwork & Roth Def. 3.5; the expected privacy loss of an output drawn from P.

    References
    ----------
    C. Dwork, A. Roth, 2014, Def. 3.5.
    """
    p, q = _pair(p, q)
    s = p > 0.0
    if (q[s] == 0.0).any():
        return _INF
    return max(0.0, math.fsum((p[s] * (np.log(p[s]) - np.log(q[s]))).tolist()))


def max_divergence(p, q):
    """Max divergence D_inf(P || Q) = max_{S in Supp P} ln(P(S)/Q(S)).

    Parameters
    ----------
    p, q : array_like
        Probabilities on the same finite support.

    Returns
    -------
    float
        max over atoms y with P(y) > 0 of ln(P(y)/Q(y)) (a ratio of sums is at most the
        largest ratio of its terms, so single atoms attain the maximum); ``inf`` if Q
        misses an atom of P.

    Privacy
    -------
    A mechanism is epsilon-DP iff D_inf <= epsilon in both directions for every pair of
    neighbours (Dwork & Roth Def. 3.6, Remark 3.1).

    References
    ----------
    C. Dwork, A. Roth, 2014, Def. 3.6.
    """
    p, q = _pair(p, q)
    s = p > 0.0
    if (q[s] == 0.0).any():
        return _INF
    return float(np.max(np.log(p[s]) - np.log(q[s])))


def approximate_max_divergence(p, q, delta):
    """delta-approximate max divergence, computed exactly on a finite support.

    D_inf^delta(P || Q) = max over S in Supp(P) with P(S) > delta of
    ln((P(S) - delta) / Q(S))  (Dwork & Roth Def. 3.6).

    Parameters
    ----------
    p, q : array_like
        Probabilities on the same finite support.
    delta : float
        delta in [0, 1).

    Returns
    -------
    float
        The maximum; ``inf`` if the atoms that Q misses carry more than delta of P.

    Notes
    -----
    An optimal S is a prefix of the atoms sorted by P(y)/Q(y), largest first: if
    (P(S) - delta)/Q(S) = r, adding an atom with ratio > r raises the ratio and removing
    one with ratio < r does too.  So the maximum over the 2^n sets is the maximum over n
    prefixes (atoms Q misses come first with infinite ratio).

    Privacy
    -------
    A mechanism is (epsilon, delta)-DP iff D_inf^delta <= epsilon in both directions for
    every pair of neighbours (Dwork & Roth Remark 3.1).

    References
    ----------
    C. Dwork, A. Roth, 2014, Def. 3.6, Remark 3.1.
    """
    p, q = _pair(p, q)
    delta = _v.delta(delta)
    s = p > 0.0
    ps, qs = p[s], q[s]
    missing = qs == 0.0
    p_missing = math.fsum(ps[missing].tolist())
    if p_missing > delta:
        return _INF
    with np.errstate(divide="ignore"):
        ratio = np.where(missing, _INF, np.log(ps) - np.log(np.where(missing, 1.0, qs)))
    order = np.argsort(-ratio, kind="stable")
    cp = np.cumsum(ps[order])
    cq = np.cumsum(qs[order])
    ok = (cq > 0.0) & (cp > delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = np.log(cp[ok] - delta) - np.log(cq[ok])
    return float(np.max(vals)) if vals.size else -_INF


def hockey_stick_divergence(p, q, epsilon):
    """max_S P(S) - e^epsilon Q(S) = sum_y (P(y) - e^epsilon Q(y))_+.

    Parameters
    ----------
    p, q : array_like
        Probabilities on the same finite support.
    epsilon : float
        epsilon >= 0.

    Returns
    -------
    float
        The smallest delta for which P(S) <= e^epsilon Q(S) + delta for every S.

    Privacy
    -------
    A mechanism is (epsilon, delta)-DP iff this is <= delta in both directions for every
    pair of neighbours (the set form of Dwork & Roth Def. 2.4).

    References
    ----------
    C. Dwork, A. Roth, 2014, Def. 2.4; P. Kairouz, S. Oh, P. Viswanath, ICML 2015.
    """
    p, q = _pair(p, q)
    epsilon = _v.nonnegative("epsilon", epsilon)
    return max(0.0, math.fsum(np.maximum(p - math.exp(epsilon) * q, 0.0).tolist()))


def statistical_distance(p, q):
    """Statistical (total variation) distance max_S |P(S) - Q(S)| = (1/2) sum |P - Q|.

    Parameters
    ----------
    p, q : array_like
        Probabilities on the same finite support.

    Returns
    -------
    float
        The distance in [0, 1].

    Privacy
    -------
    Dwork & Roth §3.5.1 (Y and Z are delta-close if this is <= delta; Lemma 3.17).

    References
    ----------
    C. Dwork, A. Roth, 2014, §3.5.1.
    """
    p, q = _pair(p, q)
    return min(1.0, 0.5 * math.fsum(np.abs(p - q).tolist()))


class KLBoundCheck(NamedTuple):
    """Result of :func:`check_kl_bound`."""

    kl: float
    bound: float
    epsilon: float
    holds: bool


def check_kl_bound(p, q, epsilon=None):
    """Check Dwork & Roth Lemma 3.18 on a pair of finite distributions.

    If D_inf(P||Q) <= epsilon and D_inf(Q||P) <= epsilon then D(P||Q) <= epsilon (e^epsilon - 1).

    Parameters
    ----------
    p, q : array_like
        Probabilities on the same finite support.
    epsilon : float, optional
        The epsilon to test with.  Default: the smallest one the lemma applies to,
        max(D_inf(P||Q), D_inf(Q||P)).  If given, it must bound both max divergences.

    Returns
    -------
    KLBoundCheck
        ``(kl, bound, epsilon, holds)`` with ``bound = epsilon (e^epsilon - 1)`` and
        ``holds = kl <= bound`` (up to 1e-12 relative rounding).

    Privacy
    -------
    Lemma 3.18 is the step of advanced composition that turns a worst-case bound
    epsilon on the privacy loss into an O(epsilon^2) bound on its mean.

    References
    ----------
    C. Dwork, A. Roth, 2014, Lemma 3.18; Dwork, Rothblum, Vadhan 2010, Lemma 3.2.
    """
    p, q = _pair(p, q)
    both = max(max_divergence(p, q), max_divergence(q, p))
    if epsilon is None:
        epsilon = both
        if epsilon == _INF:
            raise PrivacyParameterError("p and q must have the same support for Lemma 3.18; a max divergence is infinite")
    else:
        epsilon = _v.nonnegative("epsilon", epsilon)
        if both > epsilon * (1.0 + 1e-12):
            raise PrivacyParameterError(
                f"epsilon must bound both max divergences (here {both!r}) for Lemma 3.18; got {epsilon!r}"
            )
    kl = kl_divergence(p, q)
    bound = epsilon * math.expm1(epsilon)
    return KLBoundCheck(kl, bound, float(epsilon), bool(kl <= bound * (1.0 + 1e-12) + 1e-300))


# --------------------------------------------------------------------------------------
# the privacy budget
# --------------------------------------------------------------------------------------


class PrivacyAmount(NamedTuple):
    """An amount of privacy budget: (epsilon, delta) in "basic"/"advanced" mode, rho in
    "zcdp" mode (the fields that do not apply are ``None``)."""

    epsilon: float | None
    delta: float | None
    rho: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One immutable line of a :class:`PrivacyBudget` ledger.

    ``status`` is "spent" (a direct charge), "reserved", "committed" or "rolled_back";
    a settled reservation replaces its "reserved" line by a new entry with the same
    ``index``.  ``rho`` is set in "zcdp" mode only; a :meth:`PrivacyBudget.spend_rho`
    line has ``epsilon == delta == 0.0`` and its cost in ``rho``.
    """

    index: int
    label: str | None
    epsilon: float
    delta: float
    rho: float | None
    status: str


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Reservation:
    """A charge held by :meth:`PrivacyBudget.reserve` until it is committed or rolled back."""

    index: int
    label: str | None
    epsilon: float
    delta: float
    rho: float | None
    _owner: object = dataclasses.field(repr=False, compare=False)


def _exact(name, value, check):
    """Validate with the shared helper, then keep the value exactly (a Fraction or int
    stays exact; a float becomes the Fraction of its binary value)."""
    f = check(name, value)
    if isinstance(value, (Fraction, int)) and not isinstance(value, bool):
        return f, Fraction(value)
    return f, Fraction(f)


def _label(label):
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a str or None; got {type(label).__name__} {label!r}")
    return label


class PrivacyBudget:
    """A thread-safe privacy budget (a privacy *filter*) with an immutable ledger.

    Mechanisms call :meth:`spend` (or :meth:`reserve` then :meth:`commit`) *before*
    drawing noise; a charge that would take the total over the budget raises
    :class:`~dpfast.BudgetExceededError` and records nothing.

    Parameters
    ----------
    epsilon : float or Fraction, optional
        Total epsilon > 0 ("basic", "advanced"; "zcdp" when ``rho`` is not given).
    delta : float or Fraction, default 0.0
        Total delta in [0, 1) ("basic"), in (0, 1) ("advanced", or "zcdp" given epsilon).
    composition : {"basic", "advanced", "zcdp"}, default "basic"
        How charges are added up; see Privacy.
    delta_prime : float, optional
        "advanced" mode only (required there): the delta' of advanced composition,
        in (0, delta].  It is set aside from ``delta`` at construction.
    rho : float or Fraction, optional
        "zcdp" mode: the budget in rho > 0, instead of (epsilon, delta).

    Attributes
    ----------
    composition : str
    epsilon, delta, delta_prime, rho : float or None
        The budget as given (rho also when derived from epsilon and delta).

    Privacy
    -------
    The whole interaction is (epsilon, delta)-DP ("basic", "advanced") or rho-zCDP
    ("zcdp"), even though each charge may be chosen after seeing earlier outputs: a
    budget is a *filter* in the sense of Rogers, Roth, Ullman & Vadhan (2016).

    * **basic**: admits a charge iff sum eps_i <= epsilon and sum delta_i <= delta
      after it (Dwork & Roth Thm 3.16; basic composition is a valid filter).  Exact.
    * **advanced**: admits a charge iff sum delta_i <= delta - delta_prime and
      min(sum eps_i, sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^eps_i - 1)) <= epsilon.
      The second expression is heterogeneous advanced composition (Dwork & Roth
      Thm 3.20), proved for parameters fixed in advance.  It stays valid as a filter:
      it is >= sum eps_i^2/2 + sqrt(2 ln(1/delta') sum eps_i^2), which is
      rho + 2 sqrt(rho ln(1/delta')) for rho = sum eps_i^2 / 2, so admitted paths in the
      advanced branch have zCDP sum <= rho* with rho* + 2 sqrt(rho* ln(1/delta')) = epsilon;
      eps-DP is eps^2/2-zCDP (Bun & Steinke Prop. 1.4), the exponential supermartingale
      of the Renyi filter (Feldman & Zrnic 2021) bounds Pr[loss > epsilon] on those paths
      by delta', and on basic-branch paths the loss is <= sum eps_i <= epsilon surely.
      For charges with delta_i > 0 the argument goes through approximate zCDP; that step
      relies on the approximate-zCDP filter of Whitehouse, Ramdas, Rogers & Wu (2023).
      The square root and e^eps - 1 are evaluated in floating point and rounded up.
    * **zcdp**: the budget is rho; :meth:`spend_rho` charges rho_i and :meth:`spend`
      charges a pure epsilon-DP mechanism as rho_i = epsilon^2/2 (Bun & Steinke Prop. 1.4;
      ``delta`` must be 0 there).  Admits iff sum rho_i <= rho, exactly; valid for
      adaptively chosen rho_i by the Renyi filter of Feldman & Zrnic (2021) applied at
      every order.  Given ``epsilon`` and ``delta`` instead of ``rho``, the budget is
      ``rho = zcdp_budget(epsilon, delta)`` (tight conversion of Canonne, Kamath &
      Steinke 2020), so the interaction is also (epsilon, delta)-DP.

    Arithmetic is exact: every amount is kept as the :class:`~fractions.Fraction` of the
    float (or Fraction) passed in.  A float such as 1e-4 is slightly larger than 1/10^4,
    so 10,000 charges of ``1e-4`` exceed a budget of ``1.0`` and the 10,000th is refused;
    pass ``Fraction(1, 10_000)`` to charge exactly a ten-thousandth.  Reserved amounts
    count as spent until rolled back.  Every method takes one lock, so concurrent
    charges can never overspend.

    The figures returned by :attr:`spent` in "advanced" mode are what the filter
    compares to the budget; they are not an odometer: the guarantee of an interaction
    whose parameters were chosen adaptively is the budget, not the running total
    (Rogers et al. 2016 separate the two).

    References
    ----------
    C. Dwork, A. Roth, 2014, Thm 3.16, 3.20.
    R. Rogers, A. Roth, J. Ullman, S. Vadhan, "Privacy Odometers and Filters:
    Pay-as-you-Go Composition", NeurIPS 2016.
    M. Bun, T. Steinke, TCC 2016.  V. Feldman, T. Zrnic, "Individual Privacy Accounting
    via a Renyi Filter", NeurIPS 2021.  J. Whitehouse, A. Ramdas, R. Rogers, Z. S. Wu,
    "Fully-Adaptive Composition in Differential Privacy", ICML 2023.
    C. Canonne, G. Kamath, T. Steinke, NeurIPS 2020.

    Examples
    --------
    >>> budget = PrivacyBudget(1.0)
    >>> budget.spend(0.25, label="count")          # doctest: +ELLIPSIS
    LedgerEntry(index=0, label='count', epsilon=0.25, ...)
    >>> r = budget.reserve(0.5)
    >>> budget.commit(r)                             # doctest: +ELLIPSIS
    LedgerEntry(index=1, ...)
    >>> budget.remaining
    PrivacyAmount(epsilon=0.25, delta=0.0, rho=None)
    """

    def __init__(self, epsilon=None, delta=0.0, composition="basic", *, delta_prime=None, rho=None):
        self.composition = _v.choice("composition", composition, ("basic", "advanced", "zcdp"))
        self._lock = threading.Lock()
        self._ledger: list[LedgerEntry] = []
        self._active: dict[int, Reservation] = {}
        self._eps = Fraction(0)  # sum eps_i
        self._delta = Fraction(0)  # sum delta_i
        self._sq = Fraction(0)  # sum eps_i^2 (advanced)
        self._drift = Fraction(0)  # sum of upward-rounded eps_i (e^eps_i - 1) (advanced)
        self._rho = Fraction(0)  # sum rho_i (zcdp)
        self.epsilon = self.delta = self.delta_prime = self.rho = None
        if self.composition == "zcdp":
            if delta_prime is not None:
                raise PrivacyParameterError("delta_prime applies to composition='advanced' only; got "
                                            f"{delta_prime!r}")
            if rho is not None:
                if epsilon is not None:
                    raise PrivacyParameterError("give either rho or epsilon (with delta) for a zcdp budget, not both")
                if delta != 0.0:
                    raise PrivacyParameterError(f"delta must be 0 when the zcdp budget is given as rho; got {delta!r}")
                self.rho, self._rho_budget = _exact("rho", rho, _v.positive)
            else:
                if epsilon is None:
                    raise PrivacyParameterError("a zcdp budget needs rho, or epsilon and delta; got neither")
                self.epsilon = _v.positive("epsilon", epsilon)
                self.delta = _v.delta(delta, allow_zero=False)
                self.rho = zcdp_budget(self.epsilon, self.delta)
                self._rho_budget = Fraction(self.rho)
            return
        if rho is not None:
            raise PrivacyParameterError(f"rho applies to composition='zcdp' only; got {rho!r}")
        if epsilon is None:
            raise PrivacyParameterError(f"epsilon is required for composition={self.composition!r}; got None")
        self.epsilon, self._eps_budget = _exact("epsilon", epsilon, _v.positive)
        if self.composition == "basic":
            if delta_prime is not None:
                raise PrivacyParameterError("delta_prime applies to composition='advanced' only; got "
                                            f"{delta_prime!r}")
            self.delta, self._delta_budget = _exact("delta", delta, lambda n, x: _v.delta(x, n))
            return
        # advanced
        self.delta, delta_budget = _exact("delta", delta, lambda n, x: _v.delta(x, n, allow_zero=False))
        if delta_prime is None:
            raise PrivacyParameterError("delta_prime is required for composition='advanced'; got None")
        self.delta_prime, dp_exact = _exact("delta_prime", delta_prime, lambda n, x: _v.delta(x, n, allow_zero=False))
        if dp_exact > delta_budget:
            raise PrivacyParameterError(f"delta_prime must be <= delta ({self.delta!r}); got {delta_prime!r}")
        self._delta_budget = delta_budget - dp_exact
        # 2 ln(1/delta'), rounded up (log is within 1 ulp; the doubling is exact).
        self._two_log_inv = _up(2.0 * -math.log(self.delta_prime))

    # ---- internal accounting (call with the lock held) --------------------------------

    def _advanced_bound(self, sq, drift):
        """Upper bound on sqrt(2 ln(1/delta') sq) + drift, as a Fraction."""
        inner = _up(self._two_log_inv * _fraction_to_float_up(sq))
        return Fraction(_up(math.sqrt(inner))) + drift

    def _charge(self, eps, dlt, rho_f, sign=1):
        """The totals after adding (sign=+1) or removing (-1) a charge."""
        if self.composition == "zcdp":
            return (self._rho + sign * rho_f,)
        new = [self._eps + sign * eps, self._delta + sign * dlt]
        if self.composition == "advanced":
            new.append(self._sq + sign * eps * eps)
            new.append(self._drift + sign * self._drift_term(eps))
        return tuple(new)

    @staticmethod
    def _drift_term(eps):
        # eps (e^eps - 1) rounded up: expm1 and the product are each within 1 ulp.
        e = float(eps)
        return Fraction(_up(e * math.expm1(e)))

    def _within(self, totals):
        if self.composition == "zcdp":
            return totals[0] <= self._rho_budget
        if totals[1] > self._delta_budget:
            return False
        if totals[0] <= self._eps_budget:
            return True
        if self.composition == "advanced":
            return self._advanced_bound(totals[2], totals[3]) <= self._eps_budget
        return False

    def _store(self, totals):
        if self.composition == "zcdp":
            (self._rho,) = totals
            return
        self._eps, self._delta = totals[0], totals[1]
        if self.composition == "advanced":
            self._sq, self._drift = totals[2], totals[3]

    def _convert(self, epsilon, delta, rho):
        """Validate one charge; return floats and exact values (eps, delta, rho)."""
        if rho is not None:
            if self.composition != "zcdp":
                raise ValueError("spend_rho/reserve_rho need composition='zcdp'; this budget is "
                                 f"{self.composition!r}")
            rho_f, rho_x = _exact("rho", rho, _v.nonnegative)
            return 0.0, 0.0, rho_f, Fraction(0), Fraction(0), rho_x
        eps_f, eps_x = _exact("epsilon", epsilon, _v.nonnegative)
        dlt_f, dlt_x = _exact("delta", delta, lambda n, x: _v.delta(x, n))
        if self.composition == "zcdp":
            if dlt_x != 0:
                raise PrivacyParameterError(
                    "delta must be 0 for a charge against a zcdp budget (a pure epsilon-DP "
                    f"mechanism is epsilon^2/2-zCDP); got {delta!r}; use spend_rho for other mechanisms"
                )
            rho_x = eps_x * eps_x / 2
            return eps_f, 0.0, _fraction_to_float_up(rho_x), eps_x, dlt_x, rho_x
        return eps_f, dlt_f, None, eps_x, dlt_x, None

    def _admit(self, epsilon, delta, rho, label, status):
        eps_f, dlt_f, rho_f, eps_x, dlt_x, rho_x = self._convert(epsilon, delta, rho)
        label = _label(label)
        with self._lock:
            totals = self._charge(eps_x, dlt_x, rho_x)
            if not self._within(totals):
                what = f"rho={rho_f!r}" if rho is not None else f"epsilon={eps_f!r}, delta={dlt_f!r}"
                raise BudgetExceededError(
                    f"charge ({what}, label={label!r}) refused: it would exceed the budget; "
                    f"remaining {self._remaining_locked()}"
                )
            self._store(totals)
            entry = LedgerEntry(len(self._ledger), label, eps_f, dlt_f, rho_f, status)
            self._ledger.append(entry)
            if status == "reserved":
                res = Reservation(entry.index, label, eps_f, dlt_f, rho_f, (self, (eps_x, dlt_x, rho_x)))
                self._active[entry.index] = res
                return res
            return entry

    # ---- public API --------------------------------------------------------------------

    def spend(self, epsilon, delta=0.0, *, label=None):
        """Charge an (epsilon, delta)-DP mechanism before it runs.

        Parameters
        ----------
        epsilon : float or Fraction
            epsilon >= 0 of the mechanism about to run.
        delta : float or Fraction, default 0.0
            Its delta in [0, 1) (must be 0 in "zcdp" mode).
        label : str, optional
            Free text kept in the ledger.

        Returns
        -------
        LedgerEntry
            The new ledger line (status "spent").

        Raises
        ------
        BudgetExceededError
            The charge would overspend; nothing was recorded.
        PrivacyParameterError, TypeError
            Invalid arguments; nothing was recorded.

        Privacy
        -------
        See the class docstring: the charge is admitted only if the composed total stays
        within the budget.
        """
        return self._admit(epsilon, delta, None, label, "spent")

    def spend_rho(self, rho, *, label=None):
        """Charge a rho-zCDP mechanism ("zcdp" mode only).

        Parameters
        ----------
        rho : float or Fraction
            rho >= 0, e.g. :func:`gaussian_zcdp` of the mechanism about to run.
        label : str, optional
            Free text kept in the ledger.

        Returns
        -------
        LedgerEntry

        Raises
        ------
        BudgetExceededError
            sum rho_i would exceed the budget; nothing was recorded.
        ValueError
            The budget is not in "zcdp" mode.

        Privacy
        -------
        Bun & Steinke 2016 Lemma 1.7 (the rhos add up), as a Renyi filter.
        """
        return self._admit(None, 0.0, rho, label, "spent")

    def reserve(self, epsilon, delta=0.0, *, label=None):
        """Hold a charge now; settle it later with :meth:`commit` or :meth:`rollback`.

        Parameters
        ----------
        epsilon, delta, label
            As in :meth:`spend`.

        Returns
        -------
        Reservation

        Raises
        ------
        BudgetExceededError
            The charge would overspend; nothing was recorded.

        Privacy
        -------
        A reservation counts as spent until it is rolled back.  Roll back only a charge
        whose mechanism released nothing (e.g. it failed before drawing noise).
        """
        return self._admit(epsilon, delta, None, label, "reserved")

    def reserve_rho(self, rho, *, label=None):
        """Like :meth:`reserve` for a rho-zCDP charge ("zcdp" mode only)."""
        return self._admit(None, 0.0, rho, label, "reserved")

    def _settle(self, reservation, status):
        if not isinstance(reservation, Reservation):
            raise TypeError(f"reservation must be a Reservation; got {type(reservation).__name__}")
        owner = reservation._owner
        if not isinstance(owner, tuple) or owner[0] is not self:
            raise ValueError("reservation belongs to another PrivacyBudget")
        eps_x, dlt_x, rho_x = owner[1]
        with self._lock:
            if self._active.pop(reservation.index, None) is None:
                raise RuntimeError(
                    f"reservation {reservation.index} was already settled "
                    f"({self._ledger[reservation.index].status})"
                )
            if status == "rolled_back":
                self._store(self._charge(eps_x, dlt_x, rho_x, sign=-1))
            old = self._ledger[reservation.index]
            entry = dataclasses.replace(old, status=status)
            self._ledger[reservation.index] = entry
            return entry

    def commit(self, reservation):
        """Turn a reservation into a permanent charge.

        Parameters
        ----------
        reservation : Reservation
            From :meth:`reserve` of this budget, not yet settled.

        Returns
        -------
        LedgerEntry
            The updated ledger line (status "committed").

        Raises
        ------
        ValueError
            The reservation belongs to another budget.
        RuntimeError
            It was already committed or rolled back.
        """
        return self._settle(reservation, "committed")

    def rollback(self, reservation):
        """Release a reservation whose mechanism released nothing.

        Parameters
        ----------
        reservation : Reservation
            From :meth:`reserve` of this budget, not yet settled.

        Returns
        -------
        LedgerEntry
            The updated ledger line (status "rolled_back"); its amount is available again.

        Raises
        ------
        ValueError, RuntimeError
            As in :meth:`commit`.

        Privacy
        -------
        Only sound if nothing computed from the data under this reservation was, or
        will be, released.
        """
        return self._settle(reservation, "rolled_back")

    def can_spend(self, epsilon, delta=0.0):
        """Whether :meth:`spend` with these arguments would succeed right now.

        Parameters
        ----------
        epsilon, delta
            As in :meth:`spend`.

        Returns
        -------
        bool
            A snapshot: another thread may spend in between, so mechanisms must still
            call :meth:`spend`, which checks again atomically.
        """
        eps_f, dlt_f, rho_f, eps_x, dlt_x, rho_x = self._convert(epsilon, delta, None)
        with self._lock:
            return self._within(self._charge(eps_x, dlt_x, rho_x))

    def can_spend_rho(self, rho):
        """Whether :meth:`spend_rho` would succeed right now ("zcdp" mode)."""
        *_, rho_x = self._convert(None, 0.0, rho)
        with self._lock:
            return self._within(self._charge(0, 0, rho_x))

    def _spent_locked(self):
        if self.composition == "zcdp":
            return PrivacyAmount(None, None, _fraction_to_float_up(self._rho))
        eps = self._eps
        dlt = self._delta
        if self.composition == "advanced" and self._sq > 0:
            adv = self._advanced_bound(self._sq, self._drift)
            if adv < eps:  # the advanced bound is the better one: it costs delta'
                eps, dlt = adv, dlt + Fraction(self.delta_prime)
        return PrivacyAmount(_fraction_to_float_up(eps), _fraction_to_float_up(dlt), None)

    def _remaining_locked(self):
        if self.composition == "zcdp":
            return PrivacyAmount(None, None, _fraction_to_float_down(max(Fraction(0), self._rho_budget - self._rho)))
        spent = self._spent_locked()
        eps = max(Fraction(0), self._eps_budget - Fraction(spent.epsilon))
        dlt = self._delta_budget - self._delta  # in "advanced" mode delta' is already set aside
        return PrivacyAmount(_fraction_to_float_down(eps), _fraction_to_float_down(max(Fraction(0), dlt)), None)

    @property
    def spent(self):
        """The composed total of all non-rolled-back charges, rounded up.

        "basic": (sum eps_i, sum delta_i).  "advanced": (min(sum eps_i, advanced bound),
        sum delta_i + delta_prime).  "zcdp": rho = sum rho_i."""
        with self._lock:
            return self._spent_locked()

    @property
    def remaining(self):
        """Budget minus :attr:`spent`, rounded down.  In "advanced" mode epsilon is not
        additive: use :meth:`can_spend` to test a charge.  ``delta`` excludes delta_prime."""
        with self._lock:
            return self._remaining_locked()

    @property
    def ledger(self):
        """A copy of the ledger: a list of immutable :class:`LedgerEntry`, oldest first."""
        with self._lock:
            return list(self._ledger)

    def __repr__(self):
        if self.composition == "zcdp":
            budget = f"rho={self.rho!r}"
        else:
            budget = f"epsilon={self.epsilon!r}, delta={self.delta!r}"
            if self.delta_prime is not None:
                budget += f", delta_prime={self.delta_prime!r}"
        return f"PrivacyBudget({budget}, composition={self.composition!r}, spent={self.spent})"
