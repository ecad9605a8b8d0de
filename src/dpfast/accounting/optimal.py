"""Optimal composition of k (epsilon, delta)-DP mechanisms (Kairouz, Oh & Viswanath 2015,
Theorem 3.3), evaluated in log space.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._typing import PrivacyParam
from ._numeric import _INF, _KOV_K_MAX, _SUM_SLACK, _finite, _log1mexp, _logsumexp, _up
from .composition import EpsilonDelta

# Stirling-series remainder delta(n) = ln n! - [(n + 1/2) ln n - n + ln(2 pi)/2] for
# n = 0..15 from math.lgamma (delta(0) is unused: x = 0 and x = n are handled apart).
_LN_2PI = math.log(2.0 * math.pi)
_STIRLERR_TABLE = np.array(
    [0.0]
    + [
        math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - 0.5 * _LN_2PI
        for n in range(1, 16)
    ]
)


def _stirlerr(n: npt.ArrayLike) -> npt.NDArray[np.float64]:
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
        out[big] = (
            1.0 / 12 - r * (1.0 / 360 - r * (1.0 / 1260 - r * (1.0 / 1680 - r / 1188)))
        ) / nb
    return out


def _bd0(x: npt.ArrayLike, m: npt.ArrayLike) -> npt.NDArray[np.float64]:
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


def _binomial_logpmf(
    n: int,
    x: npt.ArrayLike,
    log_p: float,
    log_q: float,
) -> npt.NDArray[np.float64]:
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


def _binomial_kl(x: float, log_s: float, log_1ms: float) -> float:
    """KL(x || s) of two Bernoulli laws, x in [0, 1], given ln s and ln(1 - s).

    Logarithms, not s itself: for epsilon > ~745, s = 1/(1 + e^eps) underflows to 0."""
    out = 0.0
    if x > 0.0:
        out += x * (math.log(x) - log_s)
    if x < 1.0:
        out += (1.0 - x) * (math.log1p(-x) - log_1ms)
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

    def __init__(self, epsilon: float, k: int, log_threshold: float) -> None:
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
            if k * _binomial_kl(0.0, log_s, log_1ms) > T:
                a, b = 0, mode  # KL(a) > T >= ... find the first ell with KL <= T
                if k * _binomial_kl(b / k, log_s, log_1ms) > T:
                    a = b
                while b - a > 1:
                    c = (a + b) // 2
                    if k * _binomial_kl(c / k, log_s, log_1ms) > T:
                        a = c
                    else:
                        b = c
                lo = b
            # Rightmost kept ell on [mode, top], where the bound increases.
            if top > mode and k * _binomial_kl(top / k, log_s, log_1ms) > T:
                a, b = mode, top  # KL(a) <= T < KL(b)
                while b - a > 1:
                    c = (a + b) // 2
                    if k * _binomial_kl(c / k, log_s, log_1ms) > T:
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
        # Rounded up: a loss rounded to nearest can land just below an eps_g that the
        # exact loss exceeds, dropping a positive term (delta too small below a breakpoint).
        self.loss = np.nextafter((k - 2.0 * self.ell) * epsilon, _INF)  # decreasing, > 0

    def log_delta(self, eps_g: float) -> float:
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

    def solve(self, log_target: float) -> float:
        """Smallest eps_g >= 0 with the bound of :meth:`log_delta` <= e^log_target."""
        k, eps = self.k, self.epsilon
        if log_target == -_INF:
            return (
                k * eps
            )  # delta_hom(eps_g) > 0 for every eps_g < k eps (the ell = 0 term)
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


def _kov_args(
    epsilon: PrivacyParam, delta: PrivacyParam, k: int
) -> tuple[float, float, int]:
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta)
    k = _v.integer("k", k, minimum=1, maximum=_KOV_K_MAX)
    # The largest privacy loss is k epsilon: it must be a float for the answer to be one.
    _finite("k * epsilon", 2.0 * k * epsilon)
    return epsilon, delta, k


def optimal_composition(
    epsilon: PrivacyParam, delta: PrivacyParam, k: int, delta_prime: PrivacyParam
) -> EpsilonDelta:
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
    EpsilonDelta
        ``(epsilon_g, delta_g)``: the smallest epsilon_g >= 0 with delta_hom(epsilon_g) <= delta_prime, where
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
    log_target = (
        math.log(delta_prime) + math.log1p(-_SUM_SLACK) if delta_prime > 0.0 else -_INF
    )
    # Discard only terms below delta' e^-60 / (k+1) in total (their bound is added).
    terms = _KOVTerms(epsilon, k, log_target - 60.0 - math.log(k + 1.0))
    eps_g = terms.solve(log_target)
    delta_g = -math.expm1(k * math.log1p(-delta) + math.log1p(-delta_prime))
    return EpsilonDelta(_up(eps_g), _up(delta_g))


def optimal_composition_delta(
    epsilon: PrivacyParam, delta: PrivacyParam, k: int, epsilon_total: PrivacyParam
) -> float:
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
    d_hom = _up(math.exp(log_d), 2.0**-40)
    if d_hom >= 1.0:  # the sum can round to >= 1 when delta_hom is within an ulp of 1
        return 1.0
    return min(1.0, _up(-math.expm1(k * math.log1p(-delta) + math.log1p(-d_hom)), 2.0**-40))
