"""Privacy cost of Boosting for People, from public parameters only.

Every formula here is dpfast's corrected analysis of Dwork, Rothblum & Vadhan 2010,
Sec. 6 (summarised in docs/learn.md): Lemma 6.5' (the amplified base-learner cost
A(sigma), Delta(sigma)), the smoothness statistical distance sigma_l (erratum E7), the
a-priori grid size N_t^max and Theorem G (the ``grid`` variant).  These derivations are
dpfast's own, checked numerically and by the exact audits in tests/test_learn_audit.py;
they are not peer reviewed.

Returned epsilons and deltas are bounds, rounded up: each is the float evaluation times
(1 + 2**-40), then the next double up (dpfast._privacy.bound_up), far more than the few
ulps of error of the evaluation.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from .. import _validation as _v
from .._errors import PrivacyParameterError
from .._plans import selection_grid as _selection_grid
from .._privacy import Cost
from .._privacy import bound_up as _up
from .._typing import PrivacyParam, Real

__all__ = [
    "PrivacyCost",
    "amplified_epsilon",
    "amplified_delta",
    "smoothness_distance",
    "grid_size_bound",
    "boosting_privacy_cost",
    "plan_grid",
]

# Names the formulas of this module; the value only labels records (a PrivacyCost of an
# older release keeps whatever string it was built with).
FORMULA_VERSION = (
    "dpfast.learn 1: Theorem G and Lemma 6.5' (docs/learn.md, the corrected "
    "Dwork, Rothblum & Vadhan 2010 Sec. 6)"
)

# Weights live in [lambda_t, 1] as doubles (csrc/boost.c); the public bound on
# -ln(lambda_t) must leave them normal: e^-700 ~ 1e-304.
_MAX_NEG_LOG_LAMBDA = 700.0
_MAX_GRID = 1 << 22


#: A fit's privacy cost: the one privacy-cost class (:class:`dpfast.accounting.Cost`).
#: ``epsilon``, ``delta``: what the fit is charged; ``breakdown`` (its ``parts`` as a
#: dict) maps each mechanism family to its (epsilon, delta) share.  ``certified`` is
#: False for ``variant="paper"`` (no complete proof: erratum E4, docs/learn.md) and when
#: non-private diagnostics were recorded.  ``adjacency`` is "replace-one": the data sets
#: have the same public size ``n_samples`` and differ in one row.  ``rho`` is None.
PrivacyCost = Cost


_EXP_MAX = 700.0  # e^x is a double for x <= 709; beyond, the formulas go through logs


def _amplification_args(
    sigma: object, k: object, eps_b: object
) -> tuple[float, int, float]:
    sig = _v.finite("sigma", sigma)
    if not 0.0 <= sig < 1.0:
        _v._fail("sigma", "in [0, 1)", sigma)
    return sig, _v.integer("k", k, minimum=1, maximum=2**62), _v.positive("eps_b", eps_b)


def _log1p_sigma_expm1(sigma: float, eps: float) -> float:
    """ln(1 + sigma (e^eps - 1)) for eps > 0, without overflow: for eps beyond 700 it is
    eps + ln(sigma + (1 - sigma) e^-eps)."""
    if eps <= _EXP_MAX or sigma == 0.0:
        return math.log1p(sigma * math.expm1(eps))
    return eps + math.log(sigma + (1.0 - sigma) * math.exp(-eps))


def _log_expm1(x: float) -> float:
    """ln(e^x - 1) for x > 0, without overflow."""
    return math.log(math.expm1(x)) if x <= _EXP_MAX else x + math.log1p(-math.exp(-x))


def amplified_epsilon(sigma: float, k: int, eps_b: float) -> float:
    """A(sigma) = k ln(1 + sigma (e^eps_b - 1)) - k ln(1 - sigma (1 - e^-eps_b)):
    the epsilon of a base learner that is eps_b-DP per position of its k-tuple, run on k
    i.i.d. draws from two row distributions at statistical distance <= sigma < 1
    (Lemma 6.5', dpfast's correction of the paper's Lemma 6.5, erratum E9; docs/learn.md).
    ``sigma`` in [0, 1), ``k`` >= 1, ``eps_b`` > 0 (refused otherwise); inf when the
    bound leaves the doubles."""
    sigma, k, eps_b = _amplification_args(sigma, k, eps_b)
    return k * (_log1p_sigma_expm1(sigma, eps_b) - math.log1p(sigma * math.expm1(-eps_b)))


def amplified_delta(sigma: float, k: int, eps_b: float, delta_b: float) -> float:
    """Delta(sigma) = delta_b (e^A(sigma) - 1) / (e^eps_b - 1) (Lemma 6.5', docs/learn.md);
    inf when the bound leaves the doubles."""
    sigma, k, eps_b = _amplification_args(sigma, k, eps_b)
    delta_b = _v.delta(delta_b, "delta_b")
    a = amplified_epsilon(sigma, k, eps_b)
    if delta_b == 0.0 or a == 0.0:
        return 0.0
    if a <= _EXP_MAX and eps_b <= _EXP_MAX:
        return delta_b * math.expm1(a) / math.expm1(eps_b)
    log_ratio = _log_expm1(a) - _log_expm1(eps_b) if a < math.inf else math.inf
    return delta_b * math.exp(log_ratio) if log_ratio < _EXP_MAX else math.inf


def smoothness_distance(ell: float) -> float:
    """sigma_l = (1/l)(1 + 1/(8(l - 1))): statistical distance over rows between the next
    sampling laws of neighbouring data sets when the capped mass is >= l (the paper's
    Lemma 6.6 item 3 as corrected, erratum E7).  ``ell`` > 1 (refused otherwise)."""
    ell = _v.finite("ell", ell)
    if not ell > 1.0:
        _v._fail("ell", "> 1 (the smoothness)", ell)
    return (1.0 + 1.0 / (8.0 * (ell - 1.0))) / ell


def grid_size_bound(t: int, m: int, tau: float, alpha: float, c_grid: float) -> int:
    """N_t^max, the size of round t's grid for any data:
    ceil((2 alpha + 2 ln m - ln tau + (t - 1)(2 alpha + ln(m/tau))) / ln(1 + c/tau)) + 1,
    from ln U <= ln m, -ln lambda_0 = ln m and ln w_s <= alpha + ln(m/tau).  One more
    point than the formula guards against the rounding of the float evaluation.
    ``PrivacyParameterError`` when that count is beyond 2**62 (or the arguments invalid)."""
    t = _v.integer("t", t, minimum=1, maximum=2**62)
    m = _v.integer("m", m, minimum=2, maximum=2**62)
    tau = _v.positive("tau", tau)
    alpha = _v.nonnegative("alpha", alpha)
    c_grid = _v.positive("c_grid", c_grid)
    span = (
        2 * alpha
        + 2 * math.log(m)
        - math.log(tau)
        + (t - 1) * (2 * alpha + math.log(m / tau))
    )
    step = math.log1p(c_grid / tau)
    points = max(span / step, 0.0) if step > 0.0 else math.inf
    if not points < 2.0**62:
        raise PrivacyParameterError(
            f"the threshold grid would need more than 2**62 points (grid_resolution "
            f"{c_grid!r} against tau {tau!r}); use a larger grid_resolution"
        )
    return math.ceil(points) + 2


def em_tail_exponent(eps_w: float, ell: float, c_grid: float) -> float:
    """The exponent E with Pr[S(w_t) < l] <= N_t e^-E for dpfast's exact exponential
    mechanism (dpfast.selection, secure mode) over the scores -|S(g) - tau|, Delta = 1.

    That sampler draws index j with probability proportional to exp(-gamma d_j), where
    d_j is the gap u* - u_j in grid units G rounded to an integer (G and the dyadic
    gamma <= eps_w/(2/G + 5) per unit come from public eps_w only; _plans.selection_grid).  The
    best point has u* >= -c_grid (the grid brackets tau) and a bad point has
    u_j < -l (S < l = tau - l), so d_j >= (l - c_grid)/G - 2 (rounding, float error of S)
    and Pr[bad] <= N_t exp(-gamma ((l - c_grid)/G - 2)).  The ideal
    N_t exp(-eps_w (l - c_grid)/2) is the limit G -> 0; this one is slightly larger, as
    it must be for the sampler actually used."""
    inv_grid, g, s = _selection_grid(eps_w, 1.0, False, False)
    gamma = float(Fraction(g, 2**s))
    return gamma * max((ell - c_grid) * inv_grid - 2.0, 0.0)


def _check_common(
    m: int,
    n_rounds: int,
    sample_size: int,
    smoothness: int,
    eta: Real,
    epsilon_test: PrivacyParam,
    epsilon_threshold: PrivacyParam,
    base_epsilon: PrivacyParam,
    base_delta: PrivacyParam,
    grid_resolution: Real,
) -> tuple[int, int, int, int, float, float, float, float, float, float]:
    m = _v.integer("n_samples", m, minimum=2, maximum=2**53)
    T = _v.integer("n_rounds", n_rounds, minimum=1, maximum=10**6)
    k = _v.integer("sample_size", sample_size, minimum=1, maximum=2**31)
    ell = _v.integer("smoothness", smoothness, minimum=2, maximum=2**53)
    eta = _v.finite("eta", eta)
    if not 0.0 < eta < 0.5:
        raise PrivacyParameterError(f"eta must be in (0, 1/2); got {eta!r}")
    if not 3 * ell < m:
        raise PrivacyParameterError(
            f"the number of rows m must exceed 3 * smoothness (Claim 6.4 / the utility "
            f"theorem need m > 3l); got m={m}, smoothness={ell}"
        )
    eps_test = _v.epsilon(epsilon_test, "epsilon_test")
    eps_w = _v.epsilon(epsilon_threshold, "epsilon_threshold")
    eps_b = _v.epsilon(base_epsilon, "base learner epsilon")
    delta_b = _v.delta(base_delta, "base learner delta")
    c_grid = _v.positive("grid_resolution", grid_resolution)
    if not c_grid < ell:
        raise PrivacyParameterError(
            f"grid_resolution must be < smoothness; got {c_grid!r} >= {ell}"
        )
    return m, T, k, ell, eta, eps_test, eps_w, eps_b, delta_b, c_grid


def public_constants(
    m: int, T: int, ell: int, eta: float, c_grid: float
) -> tuple[float, float]:
    """alpha, tau and the public bound on -ln(lambda_{T-1}); refuses parameters whose
    weights could underflow (a rule on public numbers only)."""
    alpha = math.atanh(
        2.0 * eta
    )  # erratum E2 (docs/learn.md): (1/2) ln((1+2 eta)/(1-2 eta))
    tau = 2.0 * ell
    neg_log_lambda = math.log(m) + max(T - 2, 0) * (2 * alpha + math.log(m / tau))
    if neg_log_lambda > _MAX_NEG_LOG_LAMBDA:
        raise PrivacyParameterError(
            "n_rounds is too large for these public parameters: the weights' public lower "
            f"bound exp(-{neg_log_lambda:.0f}) would leave the doubles; use fewer rounds, a "
            "smaller eta or a larger smoothness"
        )
    n_max = grid_size_bound(max(T - 1, 1), m, tau, alpha, c_grid)
    if n_max > _MAX_GRID:
        raise PrivacyParameterError(
            f"the threshold grid could reach {n_max} points (> 2**22); use a larger "
            "grid_resolution, fewer rounds or a larger smoothness"
        )
    return alpha, tau


def boosting_privacy_cost(
    n_samples: int,
    *,
    variant: str = "grid",
    n_rounds: int,
    sample_size: int,
    smoothness: int,
    eta: Real,
    epsilon_test: PrivacyParam,
    epsilon_threshold: PrivacyParam,
    base_epsilon: PrivacyParam,
    base_delta: PrivacyParam = 0.0,
    grid_resolution: Real = 1.0,
    ideal_em: bool = False,
) -> PrivacyCost:
    """(epsilon, delta) of one fit, from public parameters only.

    Parameters
    ----------
    n_samples : int
        m, the public number of rows.
    variant : {"grid", "paper"}
    n_rounds, sample_size, smoothness, eta : T, k, l, eta of the paper's Figure 2.
    epsilon_test, epsilon_threshold : float
        Per-round epsilon of the stopping test and of the threshold (eps_w for "grid",
        eps_cap for "paper").
    base_epsilon, base_delta : float
        The base learner's (eps_b, delta_b) per position of its k-tuple.
    grid_resolution : float
        c_grid (grid ratio r = 1 + c_grid / tau).
    ideal_em : bool
        Use the ideal smoothness term N exp(-eps_w (l - c)/2) instead of the bound
        for dpfast's exact sampler (only to compare with worked numbers for the ideal sampler; the
        classifier never charges it).

    Returns
    -------
    PrivacyCost

    Privacy
    -------
    ``grid`` (Theorem G, docs/learn.md, replace-one adjacency, m public)::

        eps = A(1/m) + (T-1)(eps_test + eps_w + A(sigma_l))
        delta = Delta(1/m) + (T-1) Delta(sigma_l) + sum_{t<T} N_t^max e^-E

    with E from :func:`em_tail_exponent`.  Round T runs no test and no threshold
    (erratum E18), hence the T - 1.  ``paper``: the same with eps_cap in place of eps_w and
    delta's last term (T-1) e^{-eps_cap (l-1)} (E5); it is what the paper's proof would
    give if Lemma 6.6 item 2 held, which it does not (E4): ``certified=False``.
    """
    variant = _v.choice("variant", variant, ("grid", "paper"))
    (m, T, k, ell, eta, eps_test, eps_w, eps_b, delta_b, c_grid) = _check_common(
        n_samples,
        n_rounds,
        sample_size,
        smoothness,
        eta,
        epsilon_test,
        epsilon_threshold,
        base_epsilon,
        base_delta,
        grid_resolution,
    )
    alpha, tau = public_constants(m, T, ell, eta, c_grid)
    sig = smoothness_distance(ell)
    first = (
        amplified_epsilon(1.0 / m, k, eps_b),
        amplified_delta(1.0 / m, k, eps_b, delta_b),
    )
    later = (amplified_epsilon(sig, k, eps_b), amplified_delta(sig, k, eps_b, delta_b))
    rounds = T - 1
    if variant == "grid":
        expo = (
            eps_w * (ell - c_grid) / 2.0
            if ideal_em
            else em_tail_exponent(eps_w, ell, c_grid)
        )
        smooth = math.fsum(
            grid_size_bound(t, m, tau, alpha, c_grid) * math.exp(-expo) for t in range(1, T)
        )
    else:
        smooth = rounds * math.exp(-eps_w * (ell - 1))
    breakdown = {
        "hypotheses": (first[0] + rounds * later[0], first[1] + rounds * later[1]),
        "test": (rounds * eps_test, 0.0),
        "threshold": (rounds * eps_w, 0.0),
        "smoothness": (0.0, smooth),
    }
    eps = math.fsum(e for e, _ in breakdown.values())
    delta = math.fsum(d for _, d in breakdown.values())
    if not _up(eps) < math.inf:
        raise PrivacyParameterError(
            "these public parameters give no finite epsilon; lower base_epsilon, "
            "epsilon_test, epsilon_threshold or n_rounds"
        )
    if not _up(delta) < 1.0:
        raise PrivacyParameterError(
            "these public parameters give no privacy guarantee (delta >= 1); raise "
            "epsilon_threshold or smoothness, or lower n_rounds"
        )
    breakdown = {key: (_up(e), _up(d)) for key, (e, d) in breakdown.items()}
    return PrivacyCost(
        _up(eps),
        _up(delta),
        None,
        breakdown.items(),
        variant=variant,
        certified=variant == "grid",
        n_samples=m,
        adjacency="replace-one",
        formula_version=FORMULA_VERSION,
    )


def plan_grid(
    n_samples: int,
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    *,
    n_rounds: int = 15,
    sample_size: int = 1000,
    smoothness: int | None = None,
    eta: Real = 0.1,
    noise_share: Real = 0.2,
    grid_resolution: Real = 1.0,
) -> dict[str, Any]:
    """Parameters of the ``grid`` variant that spend at most (epsilon, delta), from public
    numbers only (a planner for the ``grid`` variant).

    ``noise_share`` of epsilon goes to the (T-1) tests and thresholds (epsilon_test =
    epsilon_threshold), the rest to the base learner, whose eps_b is the largest (by
    bisection) with A(1/m) + (T-1) A(sigma_l) within it.  If the smoothness delta cannot
    meet ``delta``, T is lowered through 15, 11, 7, 5, 3 (odd: no tied votes).

    Returns
    -------
    dict
        n_rounds, sample_size, smoothness, eta, epsilon_test, epsilon_threshold,
        base_epsilon, grid_resolution, and ``cost`` (the :class:`PrivacyCost`).
    """
    m = _v.integer("n_samples", n_samples, minimum=8, maximum=2**53)
    epsilon = _v.epsilon(epsilon)
    delta = _v.delta(delta, allow_zero=False)
    share = _v.open_probability("noise_share", noise_share)
    ell = (
        m // 4
        if smoothness is None
        else _v.integer("smoothness", smoothness, minimum=2, maximum=2**53)
    )
    k = _v.integer("sample_size", sample_size, minimum=1, maximum=2**31)
    T0 = _v.integer("n_rounds", n_rounds, minimum=2, maximum=10**6)
    sig = smoothness_distance(ell)
    for T in [T0] + [t for t in (11, 7, 5, 3) if t < T0]:
        per = share * epsilon / (2 * (T - 1)) * (1 - 1e-9)
        room = (1 - share) * epsilon * (1 - 1e-9)

        def spent(eb: float, rounds: int = T) -> float:
            return amplified_epsilon(1.0 / m, k, eb) + (rounds - 1) * amplified_epsilon(
                sig, k, eb
            )

        lo, hi = 0.0, 64.0
        if spent(hi) <= room:
            lo = hi
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if spent(mid) <= room:
                lo = mid
            else:
                hi = mid
        if lo <= 0.0:
            continue
        params: dict[str, Any] = dict(
            n_rounds=T,
            sample_size=k,
            smoothness=ell,
            eta=eta,
            epsilon_test=per,
            epsilon_threshold=per,
            base_epsilon=lo,
            grid_resolution=grid_resolution,
        )
        try:
            cost = boosting_privacy_cost(m, **params)
        except PrivacyParameterError:
            continue
        if cost.delta <= delta and cost.epsilon <= epsilon:
            params["cost"] = cost
            return params
    raise PrivacyParameterError(
        f"no grid-variant plan meets epsilon={epsilon!r}, delta={delta!r} for m={m}: raise "
        "epsilon or delta, or lower smoothness's demand (sample_size, n_rounds)"
    )
