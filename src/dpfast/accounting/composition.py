"""Basic and advanced composition of (epsilon, delta)-DP mechanisms and the product mechanism
(Dwork & Roth Thm 3.16, 3.20, Cor. 3.21; the product mechanism's Thm 4 of the lecture notes on
private multiplicative weights, as corrected).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import _validation as _v
from .._errors import PrivacyParameterError
from ._numeric import (
    _INF,
    _delta_sequence,
    _finite,
    _down,
    _open_delta,
    _real_sequence,
    _sum_up,
    _up,
)


class EpsilonDelta(NamedTuple):
    """An (epsilon, delta)-DP guarantee, as returned by the composition helpers.

    A named tuple: ``eps, delta = basic_composition(...)`` keeps working, and
    ``result.epsilon`` / ``result.delta`` name the fields."""

    epsilon: float
    delta: float


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
    EpsilonDelta
        ``(epsilon, delta) = (sum(epsilons), sum(deltas))``, both rounded up.  A delta >= 1 is vacuous.

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
    return EpsilonDelta(_finite("sum(epsilons)", _sum_up(eps)), _sum_up(dels))


def _advanced_epsilon(eps, k, log_inv_delta_prime):
    # Dwork & Roth Thm 3.20 / DRV Thm 3.3: sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1).
    # expm1 keeps e^eps - 1 accurate for the tiny per-step epsilons this is used with.
    # Past the float range the bound is vacuous: +inf, which callers refuse or compare.
    if eps > 709.0:
        return _INF
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
    EpsilonDelta
        ``(epsilon', delta_total)``: epsilon' = sqrt(2 k ln(1/delta')) epsilon + k epsilon (e^epsilon - 1) and
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
    eps_total = _finite("epsilon'", _advanced_epsilon(epsilon, k, -math.log(delta_prime)))
    return EpsilonDelta(_up(eps_total), _up(k * delta + delta_prime))


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
    EpsilonDelta
        ``(epsilon', delta_total)``: epsilon' = sqrt(2 ln(1/delta') sum epsilon_i^2) + sum epsilon_i (e^epsilon_i - 1),
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
    with np.errstate(over="ignore", invalid="ignore"):
        sq = _sum_up(eps * eps)
        drift = _sum_up(eps * np.expm1(eps))
    eps_total = _finite("epsilon'", math.sqrt(2.0 * -math.log(delta_prime) * sq) + drift)
    return EpsilonDelta(_up(eps_total), _up(_sum_up(dels) + delta_prime))


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
    """Privacy of the k-fold product of an epsilon-DP mechanism (product mechanism, corrected).

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
    EpsilonDelta
        ``(epsilon', delta')``: delta' = e^(-k epsilon^2 / 2) and
        epsilon' = k epsilon^2 + k epsilon (e^epsilon - 1)  (<= 3 k epsilon^2 when allowed).

    Privacy
    -------
    This is advanced composition (Dwork & Roth Thm 3.20) with delta' = e^(-k eps^2/2),
    for which sqrt(2 k ln(1/delta')) eps = k eps^2.

    **Erratum.** The lecture notes' Thm 4 prints "if epsilon <= 1.79 then M^k is
    (3 k eps^2, e^(-k eps/2))-DP".  Both numbers are typos: the proof's Chernoff/Azuma
    step gives delta = e^(-k eps^2/2) (not e^(-k eps/2), which is larger than the true
    failure probability whenever eps < 1 and so claims too little privacy loss for the
    epsilon, and is simply wrong for eps > 1), and k eps (e^eps - 1) + k eps^2 <= 3 k eps^2
    needs e^eps - 1 <= 2 eps, i.e. eps <= 1.2564, not 1.79 (at eps = 1.5 the true
    epsilon' is ~7.47 k > 6.75 k = 3 k eps^2).  The printed version is never returned.

    References
    ----------
    Lecture notes on the interactive (private multiplicative weights) mechanism of
    M. Hardt, G. Rothblum, FOCS 2010: Thm 4 ("almost always" DP of the product
    mechanism) and its proof.  C. Dwork, G. Rothblum, S. Vadhan, FOCS 2010, Thm III.3.
    C. Dwork, A. Roth, 2014, Thm 3.20.
    """
    epsilon = _v.positive("epsilon", epsilon)
    k = _v.integer("k", k, minimum=1)
    if not isinstance(simplified, bool):
        raise TypeError(f"simplified must be a bool; got {type(simplified).__name__} {simplified!r}")
    _finite("k * epsilon * e^epsilon", k * epsilon * (math.exp(epsilon) if epsilon < 709.0 else _INF))
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
    return EpsilonDelta(_up(eps_total), _up(delta_prime))
