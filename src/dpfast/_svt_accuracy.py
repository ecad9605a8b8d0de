"""Accuracy bounds of the sparse vector technique (Dwork & Roth 2014, Thm 3.24, 3.26, 3.28)
and their inverses.  Re-exported from :mod:`dpfast.accuracy`.

A stream answering k queries is (α, β)-accurate (Def. 3.9, 3.10) if, except with
probability β, it does not halt before the k-th query, every ⊤ has ``f_i >= T - α``,
every ⊥ has ``f_i <= T + α`` and (NumericSparse) every released value is within α of
``f_i``.  The theorems assume at most c queries (AboveThreshold: only the last) are above
``T - α``.  Every bound is linear in ``sensitivity / epsilon``, so each inverse is exact:
``*_epsilon(k, beta, alpha=a)`` is the smallest ε whose ``*_alpha`` is ``a``.

On dpfast's secure path the query noise is certified for ``K + 1`` grid steps instead of
``sensitivity / g = K`` and inputs are floored to the grid, so its α is larger by the
factor ``(K + 1) g / sensitivity`` plus one grid step ``g`` (with the default grid, a
relative 2**-20 and a 2**-20 sensitivity), its query noise's scale by a further factor
``1 / (1 - 2**(A-63) sigma)`` (below ``1 + 2**-9`` when A > 20), and each query is a spurious ⊤
with probability ``2**-A`` (the inversion's atom at +inf): over k queries β grows by
``k * 2**-A``.  ``A`` (``stream._noise["query_atom_bits"]``, between 20 and 48, 48 at
ordinary ε) is public; see :mod:`dpfast.sparse`.
"""

from __future__ import annotations

import math

from . import _validation as _v
from ._typing import PrivacyParam, Real

__all__ = [
    "above_threshold_alpha",
    "above_threshold_epsilon",
    "sparse_alpha",
    "sparse_epsilon",
    "numeric_sparse_alpha",
    "numeric_sparse_epsilon",
]

_SQRT512 = math.sqrt(512.0)
# ln(2/delta) is computed as ln 2 - ln delta: 2/delta overflows for subnormal delta
_LN2 = math.log(2.0)


def _k_beta(k: int, beta: Real) -> tuple[int, float]:
    k = _v.integer("k", k, minimum=1)
    return k, _beta(beta)


def _beta(beta: Real) -> float:
    return _v.open_probability("beta", beta)


def _alpha(alpha: Real) -> float:
    return _v.positive("alpha", alpha)


def _at_constant(k: int, beta: float) -> float:
    # Thm 3.24: alpha = 8 (ln k + ln(2/beta)) / eps
    return 8.0 * (math.log(k) + math.log(2.0 / beta))


def _sparse_constant(k: int, beta: float, c: int, delta: float) -> float:
    # Thm 3.26: 8c (ln k + ln(2c/beta)) / eps (delta = 0);
    #           (ln k + ln(2c/beta)) sqrt(512 c ln(1/delta)) / eps (delta > 0)
    lead = math.log(k) + math.log(2.0 * c / beta)
    if delta == 0.0:
        return 8.0 * c * lead
    return lead * math.sqrt(512.0 * c * -math.log(delta))


def _numeric_constant(k: int, beta: float, c: int, delta: float) -> float:
    # Thm 3.28: 9c (ln k + ln(4c/beta)) / eps (delta = 0).
    # delta > 0 as printed: (ln k + ln(4c/beta)) sqrt(c ln(2/delta)) (sqrt(512) + 1) / eps.
    # Erratum: that is only the Sparse part's error (Thm 3.26 with eps1 and beta/2).  The c
    # released values carry Lap(b), b = sqrt(32 c ln(2/delta)) (sqrt(512)+1) / (2 eps), and
    # all c are within alpha with probability 1 - beta/2 only if alpha >= b ln(2c/beta)
    # = sqrt(8 c ln(2/delta)) (sqrt(512)+1) ln(2c/beta) / eps, which the printed bound is
    # not (e.g. k = 30, c = 2, beta = 0.05: printed 5.0 sqrt(c ln(2/delta)) (sqrt512+1)/eps,
    # needed 10.4 ...).  We return the larger of the two, which the proof does give.
    # (For delta = 0 the Laplace part, 9c ln(2c/beta)/eps, is always the smaller.)
    lead = math.log(k) + math.log(4.0 * c / beta)
    if delta == 0.0:
        return 9.0 * c * lead
    laplace = math.sqrt(8.0) * math.log(2.0 * c / beta)
    return max(lead, laplace) * math.sqrt(c * (_LN2 - math.log(delta))) * (_SQRT512 + 1.0)


def above_threshold_alpha(
    k: int,
    beta: Real,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = 1.0,
) -> float:
    """Error α at which AboveThreshold is (α, β)-accurate over k queries (Thm 3.24).

    Parameters
    ----------
    k : int
        Number of queries, >= 1.
    beta : float
        Failure probability in (0, 1).
    epsilon : float
        The stream's ε, > 0.
    sensitivity : float, default 1.0
        Δ of each query.

    Returns
    -------
    float
        ``α = 8 Δ (ln k + ln(2/β)) / ε``.

    Accuracy
    --------
    Holds when of the k queries only the last can be at or above ``T - α``.

    References
    ----------
    Dwork and Roth 2014, Theorem 3.24.
    """
    k, beta = _k_beta(k, beta)
    eps = _v.epsilon(epsilon)
    sens = _v.positive("sensitivity", sensitivity)
    return _at_constant(k, beta) * sens / eps


def above_threshold_epsilon(
    k: int, beta: Real, *, alpha: Real, sensitivity: Real = 1.0
) -> float:
    """The ε at which AboveThreshold's Thm 3.24 error over k queries is ``alpha``.

    Parameters
    ----------
    k : int
        Number of queries, >= 1.
    beta : float
        Failure probability in (0, 1).
    alpha : float
        Target error, > 0.
    sensitivity : float, default 1.0

    Returns
    -------
    float
        ``ε = 8 Δ (ln k + ln(2/β)) / α``; any larger ε is at least as accurate.

    References
    ----------
    Dwork and Roth 2014, Theorem 3.24.
    """
    k, beta = _k_beta(k, beta)
    a = _alpha(alpha)
    sens = _v.positive("sensitivity", sensitivity)
    return _at_constant(k, beta) * sens / a


def _c_delta(cutoff: int, delta: PrivacyParam) -> tuple[int, float]:
    c = _v.integer("cutoff", cutoff, minimum=1)
    d = _v.delta(delta)
    return c, d


def sparse_alpha(
    k: int,
    beta: Real,
    *,
    cutoff: int,
    epsilon: PrivacyParam,
    delta: PrivacyParam = 0.0,
    sensitivity: Real = 1.0,
) -> float:
    """Error α at which Sparse is (α, β)-accurate over k queries (Thm 3.26).

    Returns ``8 c Δ (ln k + ln(2c/β)) / ε`` for δ = 0, else
    ``Δ (ln k + ln(2c/β)) sqrt(512 c ln(1/δ)) / ε``; holds when at most c of the k
    queries are at or above ``T - α``.

    References
    ----------
    Dwork and Roth 2014, Theorem 3.26.
    """
    k, beta = _k_beta(k, beta)
    c, d = _c_delta(cutoff, delta)
    eps = _v.epsilon(epsilon)
    sens = _v.positive("sensitivity", sensitivity)
    return _sparse_constant(k, beta, c, d) * sens / eps


def sparse_epsilon(
    k: int,
    beta: Real,
    *,
    cutoff: int,
    alpha: Real,
    delta: PrivacyParam = 0.0,
    sensitivity: Real = 1.0,
) -> float:
    """The ε at which Sparse's Thm 3.26 error over k queries is ``alpha``: the inverse of
    :func:`sparse_alpha` (the bound is proportional to 1/ε), same parameters with
    ``alpha`` > 0 in place of ``epsilon``.

    References
    ----------
    Dwork and Roth 2014, Theorem 3.26.
    """
    k, beta = _k_beta(k, beta)
    c, d = _c_delta(cutoff, delta)
    a = _alpha(alpha)
    sens = _v.positive("sensitivity", sensitivity)
    return _sparse_constant(k, beta, c, d) * sens / a


def numeric_sparse_alpha(
    k: int,
    beta: Real,
    *,
    cutoff: int,
    epsilon: PrivacyParam,
    delta: PrivacyParam = 0.0,
    sensitivity: Real = 1.0,
) -> float:
    """Error α at which NumericSparse is (α, β)-accurate over k queries (Thm 3.28).

    Returns ``9 c Δ (ln k + ln(4c/β)) / ε`` for δ = 0, else
    ``Δ max(ln k + ln(4c/β), sqrt(8) ln(2c/β)) sqrt(c ln(2/δ)) (sqrt(512) + 1) / ε``;
    holds when at most c of the k queries are at or above ``T - α``.

    Notes
    -----
    Erratum: for δ > 0 the book prints ``(ln k + ln(4c/β)) sqrt(c ln(2/δ)) (sqrt(512)+1)/ε``,
    the error of the Sparse part alone.  The released values' Laplace noise has scale
    ``sqrt(32 c ln(2/δ)) (sqrt(512)+1) Δ / (2ε)``, and the proof's second condition (all
    c values within α with probability 1 - β/2) needs ``α >= sqrt(8 c ln(2/δ))
    (sqrt(512)+1) ln(2c/β) Δ/ε``, which the printed bound can violate (for small k it is
    about half of that).  This function returns the larger of the two, as the proof gives.

    References
    ----------
    Dwork and Roth 2014, Theorem 3.28 (corrected for δ > 0, see Notes).
    """
    k, beta = _k_beta(k, beta)
    c, d = _c_delta(cutoff, delta)
    eps = _v.epsilon(epsilon)
    sens = _v.positive("sensitivity", sensitivity)
    return _numeric_constant(k, beta, c, d) * sens / eps


def numeric_sparse_epsilon(
    k: int,
    beta: Real,
    *,
    cutoff: int,
    alpha: Real,
    delta: PrivacyParam = 0.0,
    sensitivity: Real = 1.0,
) -> float:
    """The ε at which NumericSparse's Thm 3.28 error over k queries is ``alpha``: the
    inverse of :func:`numeric_sparse_alpha` (with its δ > 0 correction), same parameters
    with ``alpha`` > 0 in place of ``epsilon``.

    References
    ----------
    Dwork and Roth 2014, Theorem 3.28.
    """
    k, beta = _k_beta(k, beta)
    c, d = _c_delta(cutoff, delta)
    a = _alpha(alpha)
    sens = _v.positive("sensitivity", sensitivity)
    return _numeric_constant(k, beta, c, d) * sens / a
