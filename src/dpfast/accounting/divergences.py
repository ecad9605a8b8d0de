"""Divergences of finite distributions (Dwork & Roth Def. 3.5-3.6, Lemma 3.18)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._errors import PrivacyParameterError
from .._typing import PrivacyParam
from ._numeric import _INF

_DIST_TOL = 1e-9


def _distribution(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = _v.float_array(name, values)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise PrivacyParameterError(
            f"{name} must be a non-empty 1-D array of probabilities; got shape {arr.shape}"
        )
    if (arr < 0.0).any():
        raise PrivacyParameterError(
            f"{name} must be >= 0 everywhere; got {arr[arr < 0.0][0]!r}"
        )
    total = math.fsum(arr.tolist())
    if abs(total - 1.0) > _DIST_TOL:
        raise PrivacyParameterError(
            f"{name} must sum to 1 (within {_DIST_TOL}); got sum {total!r}"
        )
    return arr


def _pair(
    p: npt.ArrayLike,
    q: npt.ArrayLike,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    p = _distribution("p", p)
    q = _distribution("q", q)
    if p.shape != q.shape:
        raise PrivacyParameterError(
            f"p and q must have the same support size; got {p.shape[0]} and {q.shape[0]}"
        )
    return p, q


def kl_divergence(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
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


def max_divergence(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
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


def approximate_max_divergence(
    p: npt.ArrayLike, q: npt.ArrayLike, delta: PrivacyParam
) -> float:
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


def hockey_stick_divergence(
    p: npt.ArrayLike, q: npt.ArrayLike, epsilon: PrivacyParam
) -> float:
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
    # e^epsilon Q(y) in log space: past e^709 it exceeds 1 >= P(y) wherever Q(y) > 0,
    # and math.exp would overflow (so the capped exponent changes no term).
    with np.errstate(divide="ignore"):
        scaled = np.exp(np.minimum(epsilon + np.log(q), 709.0))
    return max(0.0, math.fsum(np.maximum(p - scaled, 0.0).tolist()))


def statistical_distance(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """Statistical (total variation) distance ``max_S |P(S) - Q(S)| = (1/2) sum |P - Q|``.

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


def check_kl_bound(
    p: npt.ArrayLike,
    q: npt.ArrayLike,
    epsilon: PrivacyParam | None = None,
) -> KLBoundCheck:
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
            raise PrivacyParameterError(
                "p and q must have the same support for Lemma 3.18; a max divergence is infinite"
            )
    else:
        epsilon = _v.nonnegative("epsilon", epsilon)
        if both > epsilon * (1.0 + 1e-12):
            raise PrivacyParameterError(
                f"epsilon must bound both max divergences (here {both!r}) for Lemma 3.18; got {epsilon!r}"
            )
    kl = kl_divergence(p, q)
    bound = epsilon * math.expm1(epsilon)
    return KLBoundCheck(
        kl, bound, float(epsilon), bool(kl <= bound * (1.0 + 1e-12) + 1e-300)
    )
