"""Basic and advanced composition of (epsilon, delta)-DP mechanisms and the product mechanism
(Dwork & Roth Thm 3.16, 3.20, Cor. 3.21; the product mechanism's Thm 4 of the lecture notes on
private multiplicative weights, as corrected).

Decimal parameters (docs/accounting.md, "Decimal privacy parameters"): every epsilon and
delta given here means its exact value (a float the decimal it prints as, ``Fraction(repr(x))``;
ints, Fractions and Decimals exactly).  Results are floats that mean their decimal too:

* a sum (:func:`basic_composition`, every ``delta`` total) is computed exactly and
  returned as the smallest float whose decimal is >= it, so it is *exact* whenever the
  exact value prints as a float (ten 0.1 give 1.0; a delta' passed in comes back as
  given); ``basic_composition(..., exact=True)`` returns the Fractions themselves;
* a bound computed in floating point (square roots, exponentials) is evaluated at the
  inputs rounded to the safe side and rounded up so that both its binary value and its
  decimal are >= the exact bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Literal, NamedTuple, overload

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._errors import PrivacyParameterError
from ._numeric import (
    _INF,
    _down,
    _finite,
    _real_sequence,
    _sum_up,
    _up,
)
from .rules import exact_amount


class EpsilonDelta(NamedTuple):
    """An (epsilon, delta)-DP guarantee, as returned by the composition helpers.

    A named tuple: ``eps, delta = basic_composition(...)`` keeps working, and
    ``result.epsilon`` / ``result.delta`` name the fields."""

    epsilon: float
    delta: float


class ExactEpsilonDelta(NamedTuple):
    """An (epsilon, delta)-DP guarantee in exact rationals (``basic_composition(..., exact=True)``)."""

    epsilon: Fraction
    delta: Fraction


#: Past this many distinct values in an array, basic_composition bounds the exact sum with
#: the next float above each value (>= its decimal) instead of summing Fractions.
_EXACT_DISTINCT_MAX = 1 << 16


def _amount_sequence(name: str, values: object) -> list[Fraction] | npt.NDArray[np.float64]:
    """The exact values of a sequence of privacy amounts >= 0: a list of Fractions, or
    for a numpy array its float64 values (each meaning its decimal)."""
    if isinstance(values, np.ndarray):
        return _real_sequence(name, values)
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(
            f"{name} must be a sequence of real numbers; got {type(values).__name__}"
        )
    out = []
    for i, v in enumerate(values):
        x = _v.exact(f"{name}[{i}]", v)
        if x is None or not x >= 0:
            raise PrivacyParameterError(f"{name}[{i}] must be finite and >= 0; got {v!r}")
        out.append(x)
    return out


def _exact_sum(
    values: list[Fraction] | npt.NDArray[np.float64], *, exact: bool
) -> Fraction:
    """The exact sum of an amount sequence (an array summed by its distinct values); for a
    large array of many distinct values and ``exact`` false, an upper bound instead."""
    if isinstance(values, list):
        return sum(values, Fraction(0))
    uniq, counts = np.unique(values, return_counts=True)
    if exact or uniq.shape[0] <= _EXACT_DISTINCT_MAX:
        return sum(
            (_v.decimal_of(float(u)) * int(c) for u, c in zip(uniq, counts, strict=True)),
            Fraction(0),
        )
    # each float's decimal lies in its rounding interval, below the next float up
    return Fraction(_sum_up(np.where(values > 0.0, np.nextafter(values, _INF), 0.0)))


def _bound(x: float) -> float:
    """A float bound >= x (a binary float) in both readings: its binary value and its decimal."""
    return x if not x < _INF or _v.decimal_of(x) >= x else math.nextafter(x, _INF)


def _exact_param(name: str, value: object, rule: str) -> Fraction:
    """One exact parameter with the rule of :func:`dpfast.accounting.rules.exact_amount`."""
    return exact_amount(name, value, rule)[1]


@overload
def basic_composition(
    epsilons: object, deltas: object = ..., *, exact: Literal[False] = ...
) -> EpsilonDelta: ...
@overload
def basic_composition(
    epsilons: object, deltas: object = ..., *, exact: Literal[True]
) -> ExactEpsilonDelta: ...


def basic_composition(
    epsilons: object, deltas: object = None, *, exact: bool = False
) -> EpsilonDelta | ExactEpsilonDelta:
    """Basic composition: the epsilons add up and so do the deltas.

    Parameters
    ----------
    epsilons : sequence of float, int, Fraction or Decimal
        The epsilon_i >= 0 of the k mechanisms (any iterable or a 1-D array); each means
        its exact value (a float the decimal it prints as).
    deltas : sequence of float, optional
        Their delta_i in [0, 1); ``None`` means all zero.
    exact : bool, default False
        Return the exact sums as Fractions (:class:`ExactEpsilonDelta`).

    Returns
    -------
    EpsilonDelta or ExactEpsilonDelta
        ``(epsilon, delta) = (sum(epsilons), sum(deltas))``, summed exactly; as floats,
        each is the smallest float whose decimal is >= the exact sum, so it is exact
        when the sum prints as a float (``basic_composition([0.1] * 10)`` is
        ``(1.0, 0.0)``).  A delta >= 1 is vacuous.

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
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be a bool; got {type(exact).__name__} {exact!r}")
    eps = _amount_sequence("epsilons", epsilons)
    n = len(eps)
    if deltas is None:
        dels: list[Fraction] | npt.NDArray[np.float64] = []
    else:
        dels = _amount_sequence("deltas", deltas)
        if len(dels) != n:
            raise PrivacyParameterError(
                f"deltas must have the same length as epsilons ({n}); got {len(dels)}"
            )
        if any(d >= 1 for d in dels):
            bad = next(d for d in dels if d >= 1)
            raise PrivacyParameterError(
                f"deltas must be in [0, 1) everywhere; got {float(bad)!r}"
            )
    eps_x, dlt_x = _exact_sum(eps, exact=exact), _exact_sum(dels, exact=exact)
    if exact:
        return ExactEpsilonDelta(eps_x, dlt_x)
    return EpsilonDelta(
        _finite("sum(epsilons)", _v.decimal_up(eps_x)), _v.decimal_up(dlt_x)
    )


def _advanced_epsilon(eps: float, k: int, log_inv_delta_prime: float) -> float:
    # Dwork & Roth Thm 3.20 / DRV Thm 3.3: sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1).
    # expm1 keeps e^eps - 1 accurate for the tiny per-step epsilons this is used with.
    # Past the float range the bound is vacuous: +inf, which callers refuse or compare.
    if eps > 709.0:
        return _INF
    return math.sqrt(2.0 * k * log_inv_delta_prime) * eps + k * eps * math.expm1(eps)


def advanced_composition(
    epsilon: object, delta: object, k: int, delta_prime: object
) -> EpsilonDelta:
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
        ``(epsilon', delta_total)``: epsilon' = sqrt(2 k ln(1/delta')) epsilon + k epsilon (e^epsilon - 1),
        evaluated at epsilon rounded up and delta' rounded down and rounded up;
        delta_total = k delta + delta' summed exactly (so ``delta=0`` returns delta'
        as given), both as floats whose decimal is >= the exact value.

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
    eps_x = _exact_param("epsilon", epsilon, "nonnegative")
    dlt_x = _exact_param("delta", delta, "delta")
    k = _v.integer("k", k, minimum=1)
    dp_x = _exact_param("delta_prime", delta_prime, "delta_open")
    # epsilon' grows with epsilon and with ln(1/delta'): evaluate at the floats on that side
    dp = _v.float_down(dp_x)
    if not dp > 0.0:
        raise PrivacyParameterError(f"delta_prime must be in (0, 1); got {delta_prime!r}")
    eps_total = _finite("epsilon'", _advanced_epsilon(_v.float_up(eps_x), k, -math.log(dp)))
    return EpsilonDelta(_bound(_up(eps_total)), _v.decimal_up(k * dlt_x + dp_x))


def heterogeneous_advanced_composition(
    epsilons: object, deltas: object, delta_prime: object
) -> EpsilonDelta:
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
        at each epsilon_i rounded up and delta' rounded down, rounded up;
        delta_total = sum delta_i + delta' summed exactly (see :func:`advanced_composition`).

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
    exact_eps = _amount_sequence("epsilons", epsilons)
    if len(exact_eps) == 0:
        raise PrivacyParameterError(
            "epsilons must hold at least one value; got an empty sequence"
        )
    if isinstance(exact_eps, list):
        eps = np.array([_v.float_up(x) for x in exact_eps], dtype=np.float64)
    else:  # a float's decimal is below the next float up
        eps = np.where(exact_eps > 0.0, np.nextafter(exact_eps, _INF), 0.0)
    dels = [] if deltas is None else _amount_sequence("deltas", deltas)
    if deltas is not None and len(dels) != len(exact_eps):
        raise PrivacyParameterError(
            f"deltas must have the same length as epsilons ({len(exact_eps)}); got {len(dels)}"
        )
    if any(d >= 1 for d in dels):
        raise PrivacyParameterError(
            "deltas must be in [0, 1) everywhere; got "
            f"{float(next(d for d in dels if d >= 1))!r}"
        )
    dp_x = _exact_param("delta_prime", delta_prime, "delta_open")
    dp = _v.float_down(dp_x)
    if not dp > 0.0:
        raise PrivacyParameterError(f"delta_prime must be in (0, 1); got {delta_prime!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        sq = _sum_up(eps * eps)
        drift = _sum_up(eps * np.expm1(eps))
    eps_total = _finite("epsilon'", math.sqrt(2.0 * -math.log(dp) * sq) + drift)
    return EpsilonDelta(
        _bound(_up(eps_total)), _v.decimal_up(_exact_sum(dels, exact=False) + dp_x)
    )


def advanced_composition_per_step(
    epsilon_total: object, delta_prime: object, k: int, *, method: str = "exact"
) -> float:
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
        The per-step epsilon, read as the decimal it prints as (the way a mechanism or a
        budget reads it): that decimal, rounded up, composes to <= ``epsilon_total``.

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
    # Amounts: floats at or below the exact values (a lower target, a larger ln(1/delta'))
    epsilon_total = _v.epsilon(epsilon_total, "epsilon_total")
    delta_prime = _v.delta(delta_prime, "delta_prime", allow_zero=False)
    k = _v.integer("k", k, minimum=1)
    method = _v.choice("method", method, ("exact", "closed_form"))
    log_inv = -math.log(delta_prime)

    def composed(e: float) -> float:
        # the returned float is read as its decimal: compose that, rounded up to a float
        return _up(_advanced_epsilon(_v.float_up(_v.decimal_of(e)), k, log_inv))

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
def _product_threshold() -> float:
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


def product_mechanism_privacy(
    epsilon: object, k: int, *, simplified: bool = False
) -> EpsilonDelta:
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
    # every term grows with epsilon except delta' = e^(-k eps^2/2): evaluating all of them
    # at epsilon rounded up is the (valid) statement for an epsilon_up-DP mechanism
    eps_x = _exact_param("epsilon", epsilon, "positive")
    epsilon = _v.float_up(eps_x)
    k = _v.integer("k", k, minimum=1)
    if not isinstance(simplified, bool):
        raise TypeError(
            f"simplified must be a bool; got {type(simplified).__name__} {simplified!r}"
        )
    _finite(
        "k * epsilon * e^epsilon",
        k * epsilon * (math.exp(epsilon) if epsilon < 709.0 else _INF),
    )
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
    return EpsilonDelta(_bound(_up(eps_total)), _bound(_up(delta_prime)))
