"""One accountant object for the mechanisms a user ran (or will run), and noise calibration
for k releases on the tightest method.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._errors import PrivacyParameterError
from .._typing import PrivacyParam, Real
from . import pld as _pld
from ._numeric import _finite, _up, bisect_least
from .composition import basic_composition
from .gdp import _gdp_delta_up, gdp_compose, gdp_sigma, gdp_to_dp
from .optimal import optimal_composition, optimal_composition_delta
from .rdp import DEFAULT_RDP_ORDERS, rdp_gaussian, rdp_laplace, rdp_to_dp
from .zcdp import zcdp_delta, zcdp_to_dp

METHODS = ("pld", "gdp", "rdp", "zcdp", "optimal", "basic")


def _pure_epsilon(m: _pld.Mechanism) -> float | None:
    """The pure-DP epsilon of a mechanism, or None (Gaussian noise is not pure DP)."""
    k, p = m.kind, m.params
    if k == "laplace" and p[2] == 1.0:
        return _up(p[1] / p[0])
    if k == "discrete_laplace":
        return _up(p[1] / p[0])
    if k == "randomized_response":
        eps: float = p[0]
        return eps
    return None


def _rho(m: _pld.Mechanism) -> float | None:
    """zCDP rho of a mechanism without subsampling (Bun & Steinke 2016 Prop. 1.4, 1.6;
    Canonne, Kamath & Steinke 2020 Thm 14 for the discrete Gaussian)."""
    k, p = m.kind, m.params
    if k in ("gaussian", "discrete_gaussian") and (k == "discrete_gaussian" or p[2] == 1.0):
        ratio = p[1] / p[0]
        return _up(0.5 * ratio * ratio)
    eps = _pure_epsilon(m)
    if eps is None:
        return None
    return _up(0.5 * eps * eps)


def _known(eps: float | None) -> float:
    # each method admits only mechanisms it can account for (Accountant._check): pure-DP
    # ones for "optimal", those with a zCDP rho for "zcdp"
    assert eps is not None
    return eps


class Accountant:
    """Account for a sequence of mechanisms with one composition method.

    Parameters
    ----------
    method : {"pld", "gdp", "rdp", "zcdp", "optimal", "basic"}, default "pld"
        ``"pld"``: privacy loss distributions (:mod:`.pld`), every mechanism here,
        pessimistic by construction and within ~0.1% of the exact curve.
        ``"gdp"``: exact Gaussian composition (Gaussian mechanisms without subsampling
        only).  ``"rdp"`` / ``"zcdp"``: Renyi / zero-concentrated DP (no subsampling).
        ``"optimal"``: Kairouz-Oh-Viswanath optimal composition of identical pure-DP
        mechanisms.  ``"basic"``: the epsilons add up (pure-DP mechanisms).
        A mechanism a method cannot account for is refused when it is composed
        (:class:`PrivacyParameterError`), before anything is recorded.
    grid_step : float, optional
        PLD only: the loss discretisation step (see :func:`dpfast.accounting.pld_compose`).

    Examples
    --------
    >>> from dpfast.accounting import Accountant
    >>> acc = Accountant("pld")
    >>> acc.compose_gaussian(sigma=5.0, sensitivity=1.0, count=100)  # doctest: +ELLIPSIS
    Accountant(method='pld', mechanisms=[(Mechanism(kind='gaussian', ...), 100)])
    >>> eps = acc.epsilon(1e-5)

    Notes
    -----
    Every epsilon and delta returned is an upper bound of the exact value for the
    (adaptive) composition of the recorded mechanisms.  Composition is commutative: the
    order of the compose calls does not change any answer.
    """

    def __init__(self, method: str = "pld", *, grid_step: Real | None = None) -> None:
        self.method = _v.choice("method", method, METHODS)
        if grid_step is not None:
            grid_step = _v.positive("grid_step", grid_step)
        self.grid_step = grid_step
        self._items: list[tuple[_pld.Mechanism, int]] = []
        self._cache: _pld.ComposedPLD | None = None
        # compose's check-then-append, and _pld's compute-then-cache, must not interleave
        # with another thread's compose: a PLD of fewer mechanisms cached after a compose
        # invalidated it would under-report epsilon (docs/threads.md).
        self._lock = threading.Lock()

    # -------------------------------------------------------------- recording
    def compose(self, mechanism: _pld.Mechanism, count: int = 1) -> Accountant:
        """Record ``count`` runs of a :class:`dpfast.accounting.pld.Mechanism`."""
        if not isinstance(mechanism, _pld.Mechanism):
            raise TypeError(
                f"mechanism must be a dpfast.accounting Mechanism; got {type(mechanism).__name__}"
            )
        count = _v.integer("count", count, minimum=1)
        with self._lock:
            self._check(mechanism)
            self._items.append((mechanism, count))
            self._cache = None
        return self

    def compose_gaussian(
        self,
        sigma: Real,
        sensitivity: Real = 1.0,
        count: int = 1,
        sampling_rate: Real = 1.0,
    ) -> Accountant:
        """Record ``count`` Gaussian mechanisms N(0, sigma^2) of l2 sensitivity ``sensitivity``,
        each on a Poisson subsample with rate ``sampling_rate`` (1: no subsampling)."""
        return self.compose(_pld.gaussian(sigma, sensitivity, sampling_rate), count)

    def compose_laplace(
        self,
        scale: Real,
        sensitivity: Real = 1.0,
        count: int = 1,
        sampling_rate: Real = 1.0,
    ) -> Accountant:
        """Record ``count`` Laplace mechanisms with this scale and l1 sensitivity."""
        return self.compose(_pld.laplace(scale, sensitivity, sampling_rate), count)

    def compose_discrete_laplace(
        self,
        scale: Real,
        sensitivity: int = 1,
        count: int = 1,
    ) -> Accountant:
        """Record ``count`` discrete Laplace mechanisms ``P(x) ∝ exp(-|x|/scale)``."""
        return self.compose(_pld.discrete_laplace(scale, sensitivity), count)

    def compose_discrete_gaussian(
        self,
        sigma: Real,
        sensitivity: int = 1,
        count: int = 1,
    ) -> Accountant:
        """Record ``count`` discrete Gaussian mechanisms N_Z(0, sigma^2) (their own curve)."""
        return self.compose(_pld.discrete_gaussian(sigma, sensitivity), count)

    def compose_randomized_response(
        self, epsilon: PrivacyParam, categories: int = 2, count: int = 1
    ) -> Accountant:
        """Record ``count`` k-ary randomized responses with parameter epsilon."""
        return self.compose(_pld.randomized_response(epsilon, categories), count)

    def compose_pure_dp(self, epsilon: PrivacyParam, count: int = 1) -> Accountant:
        """Record ``count`` epsilon-DP mechanisms of any kind (the exponential mechanism,
        permute-and-flip, report-noisy-max...), accounted by the binary randomized response
        that dominates every epsilon-DP mechanism."""
        return self.compose(_pld.pure_dp(epsilon), count)

    compose_exponential_mechanism = compose_pure_dp
    compose_permute_and_flip = compose_pure_dp

    def _check(self, m: _pld.Mechanism) -> None:
        method = self.method
        if method == "pld":
            return
        if method == "gdp":
            if m.kind != "gaussian" or m.params[2] != 1.0:
                raise PrivacyParameterError(
                    "method 'gdp' accounts only Gaussian mechanisms without subsampling; "
                    f"got {m.kind} (use method='pld')"
                )
            return
        if method in ("rdp", "zcdp"):
            if _rho(m) is None:
                raise PrivacyParameterError(
                    f"method {method!r} does not account for subsampled mechanisms; use method='pld'"
                )
            return
        if _pure_epsilon(m) is None:
            raise PrivacyParameterError(
                f"method {method!r} accounts only pure-DP mechanisms; got {m.kind} (use method='pld')"
            )
        if method == "optimal":
            eps = {_pure_epsilon(x) for x, _ in self._items} | {_pure_epsilon(m)}
            if len(eps) > 1:
                raise PrivacyParameterError(
                    "method 'optimal' needs identical per-step epsilons (Kairouz, Oh & Viswanath "
                    "homogeneous composition); use method='pld'"
                )

    # -------------------------------------------------------------- queries
    def _pld(self) -> _pld.ComposedPLD:
        with self._lock:
            if self._cache is None:
                self._cache = _pld.compose(list(self._items), grid_step=self.grid_step)
            return self._cache

    def _count(self) -> int:
        return sum(c for _, c in self._items)

    def epsilon(self, delta: PrivacyParam) -> float:
        """An upper bound on the epsilon of the composition at ``delta`` in (0, 1)."""
        delta = _v.delta(delta, allow_zero=False)
        if not self._items:
            return 0.0
        method = self.method
        if method == "pld":
            return self._pld().epsilon(delta)
        if method == "gdp":
            return gdp_to_dp(self._mu(), delta)
        if method == "zcdp":
            return zcdp_to_dp(self._total_rho(), delta)
        if method == "rdp":
            return rdp_to_dp(DEFAULT_RDP_ORDERS, self._rdp(), delta)[0]
        eps = [(_pure_epsilon(m), c) for m, c in self._items]
        if method == "optimal":
            return optimal_composition(_known(eps[0][0]), 0.0, self._count(), delta)[0]
        total: float = basic_composition([e for e, c in eps for _ in range(c)])[0]
        return total

    def delta(self, epsilon: PrivacyParam) -> float:
        """An upper bound on the delta of the composition at ``epsilon`` >= 0."""
        epsilon = _v.nonnegative("epsilon", epsilon)
        if not self._items:
            return 0.0
        method = self.method
        if method == "pld":
            return self._pld().delta(epsilon)
        if method == "gdp":
            mu = self._mu()
            return 0.0 if mu == 0.0 else _gdp_delta_up(mu, epsilon)
        if method == "zcdp":
            return zcdp_delta(self._total_rho(), epsilon)
        if method == "rdp":
            return self._rdp_delta(epsilon)
        eps = [(_pure_epsilon(m), c) for m, c in self._items]
        if method == "optimal":
            return optimal_composition_delta(_known(eps[0][0]), 0.0, self._count(), epsilon)
        total = basic_composition([e for e, c in eps for _ in range(c)])[0]
        return 0.0 if epsilon >= total else 1.0

    def _mu(self) -> float:
        mus = []
        for m, c in self._items:
            sigma, sens, _ = m.params
            mus.append(_finite("mu", _up(sens / sigma) * math.sqrt(c) * (1.0 + 2.0**-50)))
        return gdp_compose(mus)

    def _total_rho(self) -> float:
        return _finite(
            "rho", _up(math.fsum(c * _known(_rho(m)) for m, c in self._items), 2.0**-50)
        )

    def _rdp(self) -> npt.NDArray[np.float64]:
        total = np.zeros_like(DEFAULT_RDP_ORDERS)
        for m, c in self._items:
            eps = _pure_epsilon(m)
            if m.kind == "laplace":
                curve = rdp_laplace(m.params[0], None, m.params[1])
            elif eps is not None:
                # eps-DP is (eps^2/2)-zCDP and also (alpha, eps)-RDP
                curve = DEFAULT_RDP_ORDERS * _rho(m)
                curve = curve.clip(max=eps)
            else:
                curve = (
                    rdp_gaussian(m.params[0], None, m.params[1])
                    if m.kind == "gaussian"
                    else DEFAULT_RDP_ORDERS * _rho(m)
                )
            total = total + c * curve
        return total * (1.0 + 2.0**-48)

    def _rdp_delta(self, epsilon: float) -> float:
        # delta = min_alpha exp((alpha-1)(rdp - eps)) (1-1/alpha)^alpha / (alpha-1)
        # (Canonne, Kamath & Steinke 2020, Prop. 12), rounded up.
        import numpy as np

        a = DEFAULT_RDP_ORDERS
        r = self._rdp()
        log_d = (a - 1.0) * (r - epsilon) + a * np.log1p(-1.0 / a) - np.log(a - 1.0)
        best = float(np.min(log_d))
        return min(
            1.0,
            max(math.ulp(0.0), _up(math.exp(min(best, 0.0)), 2.0**-40 + 1e-14 * abs(best))),
        )

    def __repr__(self) -> str:
        return f"Accountant(method={self.method!r}, mechanisms={self._items!r})"


def _calibrate(
    make: Callable[[float], _pld.Mechanism],
    epsilon: float,
    delta: float,
    count: int,
    lo: float,
    hi: float,
) -> float:
    """Smallest noise parameter x (to 1e-7 relative: finer than the PLD's own accuracy;
    the safe end of the bracket) with the PLD epsilon of ``count`` runs of make(x) at
    ``delta`` <= ``epsilon``; epsilon decreases in x."""

    def ok(x: float) -> bool:
        try:
            return _pld.compose([(make(x), count)]).epsilon(delta) <= epsilon
        except PrivacyParameterError:
            return False

    while not ok(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e300:
            raise PrivacyParameterError("no finite noise scale meets these parameters")
    while ok(lo) and lo > 1e-300:
        lo, hi = lo / 2.0, lo
    return bisect_least(ok, lo, hi, rel=1e-7, steps=100)


def calibrate_gaussian(
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    count: int = 1,
    sensitivity: Real = 1.0,
    sampling_rate: Real = 1.0,
) -> float:
    """The smallest safe sigma for ``count`` Gaussian releases to be (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        Target epsilon > 0.
    delta : float
        Target delta in (0, 1).
    count : int, default 1
        Number of releases.
    sensitivity : float, default 1.0
        l2 sensitivity of each release.
    sampling_rate : float, default 1.0
        Poisson subsampling rate of each release (DP-SGD), in (0, 1].

    Returns
    -------
    float
        sigma, rounded up.  Without subsampling this is the exact answer by Gaussian DP
        (:func:`gdp_sigma`, equal to the analytic calibration at sensitivity
        sqrt(count) Delta); with subsampling, the PLD accountant's (bisection to 1e-7
        relative, safe end).

    Privacy
    -------
    Dong, Roth & Su 2022 Cor. 3.3 (composition of Gaussians is exact in GDP); the PLD
    bound otherwise (:mod:`.pld`).
    """
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta, allow_zero=False)
    count = _v.integer("count", count, minimum=1)
    sensitivity = _v.positive("sensitivity", sensitivity)
    q = _pld._rate(sampling_rate)
    if q == 1.0:
        return gdp_sigma(epsilon, delta, count, sensitivity)
    guess = gdp_sigma(epsilon, delta, count, sensitivity) * q
    return _calibrate(
        lambda s: _pld.gaussian(s, sensitivity, q),
        epsilon,
        delta,
        count,
        max(guess / 4.0, sensitivity / 40.0),
        max(guess, sensitivity / 20.0),
    )


def calibrate_laplace(
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    count: int = 1,
    sensitivity: Real = 1.0,
    sampling_rate: Real = 1.0,
) -> float:
    """The smallest safe Laplace scale for ``count`` releases to be (epsilon, delta)-DP,
    by the PLD accountant (delta = 0: the basic bound count * sensitivity / epsilon, which
    is exact for pure DP).

    Parameters
    ----------
    epsilon, delta, count, sensitivity, sampling_rate
        As in :func:`calibrate_gaussian` (l1 sensitivity), delta in [0, 1).

    Returns
    -------
    float
        The scale, rounded up.
    """
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta)
    count = _v.integer("count", count, minimum=1)
    sensitivity = _v.positive("sensitivity", sensitivity)
    q = _pld._rate(sampling_rate)
    basic = _finite("scale", _up(count * sensitivity / epsilon))
    if delta == 0.0:
        if q < 1.0:
            # Poisson subsampling turns eps0 into ln(1 + q(e^eps0 - 1)) (Balle, Barthe &
            # Gaboardi 2018): per-step eps0 = ln(1 + (e^(eps/count) - 1)/q).
            eps0 = math.log1p(math.expm1(epsilon / count) / q) * (1.0 - 2.0**-50)
            return _finite("scale", _up(sensitivity / eps0))
        return basic
    return _calibrate(
        lambda b: _pld.laplace(b, sensitivity, q),
        epsilon,
        delta,
        count,
        basic / 8.0 * q,
        basic,
    )
