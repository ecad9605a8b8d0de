"""Mechanism objects: validate and plan once, release many times.

Each class wraps one validated function of :mod:`dpfast.mechanisms`,
:mod:`dpfast.selection` or :mod:`dpfast.randomized_response` (the functions stay, and
stay the reference): the constructor validates every public parameter and prepares the
same plan the function would (the power-of-two grid and the exact sampler, both cached
per public scale), and :meth:`release` draws with exactly the function's law and the
function's validation of the data.  Nothing that depends on the data is cached: only
public parameters and, for vectors, the public number of coordinates.

A scalar release with ``rng=None``, no budget (none given, none active), no ``label``
and no ``workers`` (a finite ``float``; an ``int`` for :class:`DiscreteLaplace`) goes
through ``dpfast._core.ScalarPlan``: the prepared sampler and grid as C values and one C
call, drawing from a per-thread OS-keyed ChaCha20 that only this path uses (so it takes
no lock).  Same law as the function; any other value, ``rng``, budget, ``label`` or
``workers`` takes the general path.

>>> import dpfast
>>> from dpfast.objects import Laplace
>>> lap = Laplace(epsilon=0.5, sensitivity=1.0)
>>> lap.scale, lap.privacy_cost.epsilon
(2.0, 0.5)
>>> y = lap.release(41.3)                      # secure (grid + exact discrete Laplace)
>>> round(lap.accuracy(0.05), 3)               # |noise| < this with probability 0.95
5.991

Privacy
-------
Each release is charged to ``budget`` with the object's cost (:attr:`privacy_cost`)
before any noise is drawn; a refused charge draws nothing.  Without ``budget=`` the active
budget (``with b.active():``) is charged, if any; ``label=`` names the charge (default:
the function's name, e.g. ``"laplace_mechanism"``).  A zCDP
:class:`~dpfast.accounting.PrivacyBudget` is charged the Gaussian objects' rho (with
``spend_rho``), the exponential mechanism's ``epsilon^2/8`` (bounded range) and
``epsilon^2/2`` for the other pure-DP objects.  :meth:`describe` gives a
:class:`dpfast.accounting.pld.Mechanism` to compose in an
:class:`~dpfast.accounting.Accountant` (``acc.compose(obj.describe(), count=k)``) whose
privacy curve is proved to dominate the mechanism that actually runs: the exact law for
integer discrete Laplace and randomized response, pure epsilon-DP (which dominates every
epsilon-DP mechanism) for the exponential mechanism and for the secure float Laplace (its
grid-rounded discrete noise is exactly epsilon-DP, but no tighter curve is proved for it).
Gaussian objects have no description yet: the secure path's discrete Gaussian on a fine
grid has no accountant law proved to dominate it; account for them with
:attr:`privacy_cost` (their rho under zCDP is exact).

References
----------
Dwork & Roth 2014 (Laplace, Gaussian, exponential mechanism, randomized response);
Canonne, Kamath & Steinke, NeurIPS 2020 (exact discrete samplers, zCDP of the discrete
Gaussian, Thm 14); Bun & Steinke, TCC 2016 (zCDP); Mironov, CCS 2012 (grid release).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, ClassVar, cast

import numpy.typing as npt

from . import _core, _parallel, _plans
from . import _validation as _v
from . import accuracy as _acc
from . import mechanisms as _m
from . import randomized_response as _rr
from . import selection as _sel
from ._active import current_or_none as _active_budget
from ._active import label as _label
from ._errors import PrivacyParameterError
from ._privacy import Budget, Cost, Rng, charge
from ._privacy import decimal_up as _decimal_up  # a reported bound, docs/accounting.md
from .accounting import pld as _pld
from .accounting.zcdp import zcdp_to_dp

__all__ = [
    "PrivacyCost",
    "Laplace",
    "DiscreteLaplace",
    "Gaussian",
    "ExponentialMechanism",
    "RandomizedResponse",
]

_INF = math.inf

#: ``rng=`` and ``budget=`` (the one definitions are in dpfast._privacy)
_Rng = Rng
_Budget = Budget

#: The privacy cost of one release: ``epsilon`` and ``delta`` for (epsilon, delta)-DP
#: (``None`` when only rho was given), ``rho`` for rho-zCDP; floats rounded up.  The one
#: privacy-cost class (:class:`dpfast.accounting.Cost`).
PrivacyCost = Cost


def _pure_cost(epsilon: float) -> PrivacyCost:
    """epsilon-DP is epsilon^2/2-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    return PrivacyCost(epsilon, 0.0, _decimal_up(_v.charged(epsilon) ** 2 / 2))


def _interval(half_width: float, value: float) -> tuple[float, float]:
    return (value - half_width, value + half_width)


class _Mechanism:
    __slots__ = ()
    _repr: ClassVar[tuple[str, ...]]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._repr)
        return f"{type(self).__name__}({args})"


class _NoiseBound(_Mechanism):
    """A mechanism whose error bound needs only beta (and k coordinates)."""

    __slots__ = ()

    def accuracy(self, beta: float = 0.05, *, k: int = 1) -> float:
        raise NotImplementedError

    def confidence_interval(
        self, alpha: float = 0.05, value: float = 0.0
    ) -> tuple[float, float]:
        """``(value - a, value + a)`` with ``a = accuracy(alpha)``: for a released
        ``value`` it holds the true answer with probability at least ``1 - alpha``
        (``value=0``: the interval of the noise)."""
        return _interval(self.accuracy(alpha), value)


# ------------------------------------------------------------------ Laplace


class _LaplaceFamily(_NoiseBound):
    """Pure epsilon-DP with Laplace-type noise of scale sensitivity / epsilon."""

    __slots__ = ()
    epsilon: float
    sensitivity: float

    @property
    def privacy_cost(self) -> PrivacyCost:
        return _pure_cost(self.epsilon)

    def accuracy(self, beta: float = 0.05, *, k: int = 1) -> float:
        """:func:`dpfast.accuracy.laplace_error` at this epsilon and sensitivity."""
        return _acc.laplace_error(
            self.epsilon, beta=beta, sensitivity=self.sensitivity, k=k
        )


class Laplace(_LaplaceFamily):
    """The Laplace mechanism as an object: :func:`dpfast.mechanisms.laplace_mechanism`
    with its parameters fixed.

    Parameters
    ----------
    epsilon : float > 0
    sensitivity : float > 0
        The l1 sensitivity of the query over add/remove neighbours.
    mode : {"secure", "fast"}
        As in :func:`~dpfast.mechanisms.laplace_mechanism` (``"fast"``: simulation only).
    granularity : float > 0, optional
        As in :func:`~dpfast.mechanisms.laplace_mechanism`.

    Attributes
    ----------
    scale : float
        ``sensitivity / epsilon``.
    variance : float
        ``2 scale^2`` (the secure noise is discrete on a grid of about ``2^-40 scale``;
        its variance is within a relative ``2^-39`` of this).
    privacy_cost : dpfast.objects.PrivacyCost
        ``(epsilon, 0, epsilon^2/2)``.

    Privacy
    -------
    epsilon-DP per release (Dwork & Roth Thm 3.6), exactly as the function.

    Accuracy
    --------
    ``accuracy(beta)`` = :func:`dpfast.accuracy.laplace_error` (Thm 3.8): a scalar
    release is within it of the true answer with probability ``1 - beta``; ``k=`` for
    the maximum over k coordinates.

    References
    ----------
    Dwork & Roth 2014, Def. 3.3, Thm 3.6, 3.8; Mironov, CCS 2012.
    """

    __slots__ = ("epsilon", "sensitivity", "mode", "granularity", "scale", "_plan", "_fast")
    _repr = ("epsilon", "sensitivity", "mode")

    def __init__(
        self,
        epsilon: float,
        sensitivity: float = 1.0,
        *,
        mode: str = "secure",
        granularity: float | None = None,
    ) -> None:
        self.epsilon = _v.epsilon(epsilon)
        self.sensitivity = _m._positive("sensitivity", sensitivity)
        self.mode = _v.choice("mode", mode, _m._MODES)  # a fast release warns when it runs
        self.granularity = _m._granularity(granularity)
        self.scale = self.sensitivity / self.epsilon
        if not 0.0 < self.scale < _INF:
            raise PrivacyParameterError(
                f"sensitivity / epsilon = {self.sensitivity!r} / {self.epsilon!r} is "
                "outside the range of doubles"
            )
        # the scalar float plan (grid exponent, prepared exact sampler), shared with
        # laplace_mechanism through its cache; computed once, from public values only
        self._plan = (
            _m._laplace_grid_plan(self.epsilon, self.sensitivity, 1, self.granularity)
            if self.mode == "secure"
            else None
        )
        self._fast = (
            None if self._plan is None else _core.ScalarPlan(self._plan[1], self._plan[0])
        )

    @property
    def variance(self) -> float:
        return 2.0 * self.scale * self.scale

    def describe(self) -> _pld.Mechanism:
        """A law that dominates this mechanism for the Accountant: the continuous Laplace
        law (scale, sensitivity) in ``mode="fast"`` (that is what runs, up to floating
        point), and pure epsilon-DP in the secure mode (the grid-rounded discrete noise is
        exactly epsilon-DP; the continuous Laplace curve is not proved to dominate it)."""
        if self.mode == "fast":
            return _pld.laplace(self.scale, self.sensitivity)
        return _pld.pure_dp(self.epsilon)

    def release(
        self,
        value: npt.ArrayLike,
        *,
        rng: _Rng = None,
        budget: _Budget | None = None,
        workers: int | None = None,
        label: str | None = None,
    ) -> _m.Released:
        """:func:`~dpfast.mechanisms.laplace_mechanism` of ``value`` with this object's
        parameters: same law, same validation of ``value``, ``budget`` (or the active
        budget) charged ``(epsilon, 0)`` with ``label`` before drawing."""
        if (
            rng is None
            and budget is None
            and workers is None
            and label is None
            and self._fast is not None
            and _active_budget() is None
        ):
            # the prepared plan on the thread's private stream (_core.ScalarPlan); None
            # when value is not a finite float, which the general path below handles
            y = self._fast.grid(value)
            if y is not None:
                return y
        if type(value) is float and value - value == 0.0 and self._plan is not None:
            # the function's scalar path with its plan prepared: the parameters were
            # validated in __init__, the value is checked above (x - x is 0.0 exactly for
            # finite x, NaN for NaN and +-inf); workers= is checked though a scalar
            # ignores it
            _parallel.workers(workers)
            k, sampler = self._plan
            if (
                rng is None
                and budget is None
                and label is None
                and _active_budget() is None
            ):
                return _core.grid_release(sampler, value, k, None)
            lab = _label(label, "laplace_mechanism")
            gen = _core.secure_rng(rng)  # a bad rng never spends privacy
            charged = _v.budget(budget)
            if charged is not None:
                charge(charged, Cost(self.epsilon, 0.0), lab)
            return _core.grid_release(sampler, value, k, gen)
        return _m.laplace_mechanism(
            value,
            epsilon=self.epsilon,
            sensitivity=self.sensitivity,
            rng=rng,
            mode=self.mode,
            granularity=self.granularity,
            budget=budget,
            workers=workers,
            label=label,
        )


class DiscreteLaplace(_LaplaceFamily):
    """The geometric (discrete Laplace) mechanism on integers as an object:
    :func:`dpfast.mechanisms.geometric_mechanism` with its parameters fixed.

    Parameters
    ----------
    epsilon : float > 0
    sensitivity : float > 0
        l1 sensitivity of the integer query.

    Attributes
    ----------
    scale : float
        ``sensitivity / epsilon``; the exact sampler's scale is this rounded up to a
        dyadic rational.
    variance : float
        ``2 e^(-1/scale) / (1 - e^(-1/scale))^2``, the discrete Laplace variance.
    privacy_cost : dpfast.objects.PrivacyCost
        ``(epsilon, 0, epsilon^2/2)``.

    Privacy
    -------
    epsilon-DP (Ghosh, Roughgarden & Sundararajan 2009); exact sampler (Canonne, Kamath
    & Steinke 2020, Algorithm 2).

    Accuracy
    --------
    :func:`dpfast.accuracy.laplace_error` (it holds on the integer grid).

    References
    ----------
    Ghosh, Roughgarden & Sundararajan, STOC 2009.  Canonne, Kamath & Steinke, NeurIPS 2020.
    """

    __slots__ = ("epsilon", "sensitivity", "scale", "_sampler", "_fast")
    _repr = ("epsilon", "sensitivity")

    def __init__(self, epsilon: float, sensitivity: float = 1) -> None:
        self.epsilon = _v.epsilon(epsilon)
        self.sensitivity = _v.positive("sensitivity", sensitivity)
        self.scale = self.sensitivity / self.epsilon
        self._sampler = _m._laplace_int_plan(self.epsilon, self.sensitivity)
        self._fast = _core.ScalarPlan(self._sampler)

    @property
    def variance(self) -> float:
        t = math.exp(-1.0 / self.scale)
        return 2.0 * t / (1.0 - t) ** 2

    def describe(self) -> _pld.Mechanism:
        """The accountant's discrete Laplace mechanism; its sensitivity is the largest
        integer change, ``floor(sensitivity)`` (at least 1)."""
        return _pld.discrete_laplace(self.scale, max(1, math.floor(self.sensitivity)))

    def release(
        self,
        value: npt.ArrayLike,
        *,
        rng: _Rng = None,
        budget: _Budget | None = None,
        label: str | None = None,
    ) -> _m.Released:
        """:func:`~dpfast.mechanisms.geometric_mechanism` of ``value`` (ints only)."""
        if rng is None and budget is None and label is None and _active_budget() is None:
            y = self._fast.integer(value)  # None unless value is an int within int64
            if y is not None:
                return y
        if type(value) is int:
            if (
                rng is None
                and budget is None
                and label is None
                and _active_budget() is None
            ):
                return _core.int_release(self._sampler, _v._clamp_int(value), None)
            lab = _label(label, "laplace_mechanism")
            gen = _core.secure_rng(rng)  # a bad rng never spends privacy
            charged = _v.budget(budget)
            if charged is not None:
                charge(charged, Cost(self.epsilon, 0.0), lab)
            return _core.int_release(self._sampler, _v._clamp_int(value), gen)
        return _m.geometric_mechanism(
            value,
            epsilon=self.epsilon,
            sensitivity=self.sensitivity,
            rng=rng,
            budget=budget,
            label=label,
        )


# ------------------------------------------------------------------ Gaussian


class Gaussian(_NoiseBound):
    """The Gaussian mechanism as an object, specified one of three ways.

    ``Gaussian(epsilon=, delta=, sensitivity=)``
        :func:`dpfast.mechanisms.gaussian_mechanism` with these parameters (secure path,
        sigma proved for the discrete Gaussian); ``calibration=`` as there.
    ``Gaussian(rho=, sensitivity=)``
        rho-zCDP: exact discrete Gaussian noise with ``sigma^2 >= sensitivity^2/(2 rho)``
        (in grid steps for floats, the grid's rounding included in the sensitivity).
    ``Gaussian(sigma=, sensitivity=1.0)``
        Noise of standard deviation ``sigma`` (at least): the rho form with
        ``rho = sensitivity^2 / (2 sigma^2)``.

    With ``rho`` or ``sigma``, ``delta=`` may be given too: then ``privacy_cost.epsilon``
    is :func:`dpfast.accounting.zcdp_to_dp` of rho at that delta and an (epsilon, delta)
    budget can be charged; without it only a zCDP budget can.

    Attributes
    ----------
    sigma : float
        The noise's standard deviation (continuous analytic sigma for the epsilon/delta
        form, ``sensitivity / sqrt(2 rho)`` otherwise; the exact sampler's is this rounded
        up to a hair).
    variance : float
        ``sigma^2``.
    privacy_cost : dpfast.objects.PrivacyCost
        ``(epsilon, delta, rho)``; for the epsilon/delta form, rho is the zCDP of the
        scalar release's prepared plans (the largest of the integer and float plans).

    Privacy
    -------
    (epsilon, delta)-DP (Balle & Wang 2018; CKS 2020) and rho-zCDP (CKS 2020 Thm 14; Bun
    & Steinke 2016 Prop. 1.6).  A zCDP budget is charged rho via ``spend_rho``.

    Accuracy
    --------
    :func:`dpfast.accuracy.gaussian_error` of sigma.

    References
    ----------
    Dwork & Roth Thm 3.22; Balle & Wang, ICML 2018; Canonne, Kamath & Steinke, NeurIPS
    2020; Bun & Steinke, TCC 2016.
    """

    __slots__ = (
        "epsilon",
        "delta",
        "rho",
        "sensitivity",
        "sigma",
        "calibration",
        "_form",
        "_rho_x",
        "_scalar",
        "_fast",
    )
    epsilon: float | None
    delta: float | None
    _repr = ("epsilon", "delta", "rho", "sensitivity")

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        sensitivity: float = 1.0,
        *,
        rho: float | None = None,
        sigma: float | None = None,
        calibration: str = "analytic",
    ) -> None:
        given = [
            name
            for name, v in (("epsilon", epsilon), ("rho", rho), ("sigma", sigma))
            if v is not None
        ]
        if len(given) != 1:
            raise TypeError(
                "Gaussian takes exactly one of epsilon= (with delta=), rho= or "
                f"sigma=; got {given or 'none'}"
            )
        self.sensitivity = _v.positive("sensitivity", sensitivity)
        self.calibration = _v.choice("calibration", calibration, ("analytic", "classic"))
        self._form = "eps" if epsilon is not None else "rho"
        if epsilon is not None:
            self.epsilon = _v.epsilon(epsilon)
            if delta is None:
                raise TypeError("Gaussian(epsilon=...) needs delta=")
            self.delta = _v.delta(delta, allow_zero=False)
            self.sigma = _m.gaussian_sigma(
                min(self.epsilon, _m._GAUSS_EPS_CAP),
                self.delta,
                self.sensitivity,
                self.calibration,
            )
            # the function's scalar plans (integer sampler, float grid plan) are prepared
            # here, in its caches, and their rho read back
            self._scalar = _m._gauss_grid_plan(
                self.epsilon, self.delta, self.sensitivity, 1, self.calibration, None
            )
            self._rho_x = max(self._eps_plan_rho(True, 1), self._eps_plan_rho(False, 1))
        else:
            if rho is not None:
                # the exact rho (a decimal parameter): the plans are exact in it
                self._rho_x = _v.epsilon(rho, "rho").exact
            else:
                s = _v.positive("sigma", sigma)
                self._rho_x = Fraction(self.sensitivity) ** 2 / (2 * Fraction(s) ** 2)
            self.sigma = self.sensitivity / math.sqrt(2 * self._rho_x)
            dl = None if delta is None else _v.delta(delta, allow_zero=False)
            self.delta = dl
            self.epsilon = None if dl is None else zcdp_to_dp(_v.float_up(self._rho_x), dl)
            _m._rho_int_sampler(self.sensitivity, self._rho_x)
            self._scalar = _m._rho_grid_plan(self.sensitivity, self._rho_x, 1)
        self.rho = _decimal_up(self._rho_x)
        self._fast = _core.ScalarPlan(self._scalar[1], self._scalar[0])

    def _eps_plan_rho(self, integer: bool, d: int) -> Fraction:
        """Exact rho of the function path's plan for d coordinates
        (:func:`dpfast.mechanisms._plan_rho`)."""
        if integer:
            sampler = _m._dgauss(
                *_m._ceil_rational(
                    Fraction(
                        _m._gauss_sigma(
                            self.epsilon, self.delta, self.sensitivity, d, self.calibration
                        )
                    )
                    ** 2
                )
            )
            return _m._plan_rho(self.sensitivity, None, d, sampler)
        k, sampler = _m._gauss_grid_plan(
            self.epsilon, self.delta, self.sensitivity, d, self.calibration, None
        )
        return _m._plan_rho(self.sensitivity, k, d, sampler)

    @property
    def variance(self) -> float:
        return self.sigma * self.sigma

    @property
    def privacy_cost(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon, self.delta, self.rho)

    def accuracy(self, beta: float = 0.05, *, k: int = 1) -> float:
        """:func:`dpfast.accuracy.gaussian_error` of sigma."""
        return _acc.gaussian_error(self.sigma, beta=beta, k=k)

    def release(
        self,
        value: npt.ArrayLike,
        *,
        rng: _Rng = None,
        budget: _Budget | None = None,
        workers: int | None = None,
        label: str | None = None,
    ) -> _m.Released:
        """Release ``value`` with this object's noise; for the epsilon/delta form exactly
        :func:`~dpfast.mechanisms.gaussian_mechanism` (same law and validation).
        ``budget`` (or the active budget) is charged with ``label`` (default
        ``"gaussian_mechanism"``) before drawing."""
        if (
            rng is None
            and budget is None
            and workers is None
            and label is None
            and _active_budget() is None
        ):
            # a finite scalar float, as _as_data would pass it: the prepared d = 1 grid
            # plan, the same C calls the function makes (None for any other value)
            y = self._fast.grid(value)
            if y is not None:
                return y
        if (
            type(value) is float
            and value - value == 0.0
            and rng is None
            and budget is None
            and workers is None
            and label is None
            and _active_budget() is None
        ):
            # a finite scalar float, as _as_data would pass it: the prepared d = 1 grid
            # plan, the same call the function makes
            k, sampler = self._scalar
            return _core.grid_release(sampler, value, k, None)
        nworkers = _parallel.workers(workers)
        budget = _v.budget(budget)
        label = _label(label, "gaussian_mechanism")
        integer, data, scalar = _m._as_data(value)  # validates the data first
        gen = _core.secure_rng(rng)  # a bad rng never spends privacy
        d = 1 if scalar else max(data.size, 1)
        if self._form == "rho":
            # charge(): the exact rho on a zCDP budget, else (epsilon, delta) -- refused
            # (PrivacyParameterError) when no delta= was given
            if integer:
                sampler = _m._rho_int_sampler(self.sensitivity, self._rho_x)
                if budget is not None:
                    charge(budget, Cost(self.epsilon, self.delta, self._rho_x), label)
                return _m._shape_like(
                    _m._release(
                        lambda x, g: _core.int_release(sampler, x, g),
                        data,
                        gen,
                        scalar,
                        nworkers,
                    ),
                    data,
                    scalar,
                )
            k, sampler = (
                self._scalar
                if d == 1
                else _m._rho_grid_plan(self.sensitivity, self._rho_x, d)
            )
            if budget is not None:
                charge(budget, Cost(self.epsilon, self.delta, self._rho_x), label)
            return _m._shape_like(
                _m._release(
                    lambda x, g: _core.grid_release(sampler, x, k, g),
                    data,
                    gen,
                    scalar,
                    nworkers,
                ),
                data,
                scalar,
            )
        # the (epsilon, delta) form: charge (rho of this release's plan on a zCDP budget)
        rho_x = self._rho_x if d == 1 else max(self._rho_x, self._eps_plan_rho(integer, d))
        if budget is not None:
            charge(budget, Cost(self.epsilon, self.delta, rho_x), label)
        # the epsilon/delta form (both were given): the function's plan and draw
        return _m.gaussian_release(
            data,
            epsilon=cast(float, self.epsilon),
            delta=cast(float, self.delta),
            l2_sensitivity=self.sensitivity,
            calibration=self.calibration,
            rng=gen,
            workers=workers,
        )


# ------------------------------------------------------------------ selection


class ExponentialMechanism(_Mechanism):
    """The exponential mechanism as an object:
    :func:`dpfast.selection.exponential_mechanism` with its parameters fixed.

    Parameters
    ----------
    epsilon : float > 0
    sensitivity : float > 0
        The largest change of any score when one record is added or removed.
    monotonic : bool
        True only for scores monotone in the data (counts).
    mode : {"secure", "fast"}
        As in the function (``"fast"``: simulation only).

    Attributes
    ----------
    privacy_cost : dpfast.objects.PrivacyCost
        ``(epsilon, 0, epsilon^2/8)``: epsilon-DP and epsilon-bounded range, hence
        ``epsilon^2/8``-zCDP (Cesar & Rogers 2021), what a zCDP budget is charged.

    Privacy
    -------
    epsilon-DP (McSherry & Talwar 2007; Dwork & Roth Thm 3.10), exactly as the function.

    Accuracy
    --------
    ``accuracy(beta, n_candidates=m)`` = :func:`dpfast.accuracy.exponential_mechanism_error`
    (Thm 3.11): the chosen score is below OPT by more than it with probability <= beta.

    References
    ----------
    McSherry & Talwar, FOCS 2007.  Dwork & Roth 2014, Sec. 3.4.  Cesar & Rogers 2021.
    """

    __slots__ = ("epsilon", "sensitivity", "monotonic", "mode")
    _repr = ("epsilon", "sensitivity", "monotonic", "mode")

    def __init__(
        self,
        epsilon: float,
        sensitivity: float = 1.0,
        *,
        monotonic: bool = False,
        mode: str = "secure",
    ) -> None:
        self.epsilon = _v.epsilon(epsilon)
        self.sensitivity = _v.positive("sensitivity", sensitivity)
        self.monotonic = _sel._flag("monotonic", monotonic)
        self.mode = _v.choice("mode", mode, ("secure", "fast"))
        if self.mode == "secure":  # prepare both public grids (the float one may refuse)
            _plans.selection_grid(self.epsilon, self.sensitivity, self.monotonic, True)
            _plans.selection_grid(self.epsilon, self.sensitivity, self.monotonic, False)

    @property
    def privacy_cost(self) -> PrivacyCost:
        return PrivacyCost(
            self.epsilon, 0.0, _decimal_up(_sel.selection_rho("exponential", self.epsilon))
        )

    def accuracy(
        self, beta: float = 0.05, *, n_candidates: int, n_optimal: int = 1
    ) -> float:
        """:func:`dpfast.accuracy.exponential_mechanism_error`."""
        return _acc.exponential_mechanism_error(
            self.epsilon,
            n_candidates=n_candidates,
            beta=beta,
            sensitivity=self.sensitivity,
            n_optimal=n_optimal,
            monotonic=self.monotonic,
        )

    def confidence_interval(
        self, alpha: float = 0.05, value: float = 0.0, *, n_candidates: int
    ) -> tuple[float, float]:
        """``(value - a, value + a)`` with ``a = accuracy(alpha, n_candidates=...)``."""
        return _interval(self.accuracy(alpha, n_candidates=n_candidates), value)

    def describe(self) -> _pld.Mechanism:
        """The accountant's pure-DP mechanism at epsilon (dominates every epsilon-DP one)."""
        return _pld.pure_dp(self.epsilon)

    def release(
        self,
        scores: npt.ArrayLike,
        *,
        rng: _Rng = None,
        budget: _Budget | None = None,
        label: str | None = None,
    ) -> int:
        """The chosen index: :func:`~dpfast.selection.exponential_mechanism` of ``scores``."""
        return _sel.exponential_mechanism(
            scores,
            epsilon=self.epsilon,
            sensitivity=self.sensitivity,
            monotonic=self.monotonic,
            rng=rng,
            mode=self.mode,
            budget=budget,
            label=label,
        )


# ------------------------------------------------------------------ randomized response


class RandomizedResponse(_Mechanism):
    """Randomized response as an object: :func:`dpfast.randomized_response.randomized_response`
    (``k = 2``, booleans) or :func:`~dpfast.randomized_response.kary_response` (codes in
    ``[0, k)``) with its parameters fixed.

    Parameters
    ----------
    epsilon : float > 0
    k : int >= 2

    Attributes
    ----------
    probabilities : (float, float)
        ``(P[report = truth], P[report = c])`` for each other code c, as used
        (:func:`~dpfast.randomized_response.response_probabilities`).
    privacy_cost : dpfast.objects.PrivacyCost
        ``(epsilon, 0, epsilon^2/2)``.

    Privacy
    -------
    epsilon-DP for each respondent (Warner 1965; Dwork & Roth Sec. 3.2), with the certified
    flip probability of the functions.

    Accuracy
    --------
    ``accuracy(beta, n=...)`` = :func:`dpfast.accuracy.randomized_response_error`: the
    unbiased frequency estimates from n reports are within it with probability 1 - beta.

    References
    ----------
    Warner, JASA 1965.  Kairouz, Oh & Viswanath, NeurIPS 2014.
    """

    __slots__ = ("epsilon", "k", "probabilities")
    _repr = ("epsilon", "k")

    def __init__(self, epsilon: float, k: int = 2) -> None:
        self.epsilon = _v.epsilon(epsilon)
        self.k = _v.integer("k", k, minimum=2, maximum=2**62)
        self.probabilities = _rr.response_probabilities(self.epsilon, self.k)

    @property
    def privacy_cost(self) -> PrivacyCost:
        return _pure_cost(self.epsilon)

    def accuracy(self, beta: float = 0.05, *, n: int) -> float:
        """:func:`dpfast.accuracy.randomized_response_error` for n reports."""
        return _acc.randomized_response_error(self.epsilon, n=n, beta=beta, k=self.k)

    def confidence_interval(
        self, alpha: float = 0.05, value: float = 0.0, *, n: int
    ) -> tuple[float, float]:
        """``(value - a, value + a)`` with ``a = accuracy(alpha, n=n)``: for an estimated
        frequency ``value``."""
        return _interval(self.accuracy(alpha, n=n), value)

    def describe(self) -> _pld.Mechanism:
        """The accountant's k-ary randomized response at epsilon."""
        return _pld.randomized_response(self.epsilon, self.k)

    def release(
        self,
        truth: Any,
        *,
        rng: _Rng = None,
        budget: _Budget | None = None,
        label: str | None = None,
    ) -> Any:
        """The reports: booleans for k = 2, codes for k > 2 (the functions' law)."""
        if self.k == 2:
            return _rr.randomized_response(
                truth, epsilon=self.epsilon, rng=rng, budget=budget, label=label
            )
        return _rr.kary_response(
            truth, self.k, epsilon=self.epsilon, rng=rng, budget=budget, label=label
        )
