"""Validated differential-privacy mechanisms, secure by default.

Neighbouring datasets differ in one row (add/remove), as in Dwork & Roth.  Every
mechanism here:

* validates all its arguments before drawing anything (and before charging ``budget``);
* charges ``budget`` (any object with ``spend(epsilon, delta, *, label=None)``, such as
  :class:`dpfast.accounting.PrivacyBudget`) with its whole cost before drawing;
* by default (``mode="secure"``) adds *integer* noise from exact samplers driven by the
  ChaCha20 CSPRNG: integers get exact discrete Laplace / discrete Gaussian noise; floats
  are released on a power-of-two grid chosen from public parameters only (Mironov 2012),
  so their low-order bits carry no information about the input;
* with ``mode="fast"`` adds continuous floating-point noise instead: the simulation path,
  not safe against floating-point attacks, never the default;
* warns (:class:`dpfast.InsecureRandomnessWarning`, once per calling line) when it runs
  with predictable randomness: ``mode="fast"``, a seeded or keyed ChaCha20, or any numpy
  BitGenerator/Generator other than a ``Generator(ChaCha20())`` keyed by the OS.

Budgets: ``budget=`` is charged when given; without it, the active budget of an enclosing
``with budget.active():`` block is charged (:mod:`dpfast._active`; thread- and task-local);
``budget=dpfast.NO_BUDGET`` charges nothing.  With neither, nothing is charged: calling a
mechanism without a budget is allowed, and then **you account for it** (compose the
releases yourself, e.g. with :mod:`dpfast.accounting`).  ``label=`` (a str, default the
mechanism's name) is recorded with the charge in the budget's ledger.

The grid release of a float x is ``fl(g * (round(x / g) + Z))`` with ``g = 2^k``.
Rounding moves each coordinate by at most g/2, so two neighbours' rounded values differ by
at most ``sensitivity / g + d`` grid steps in l1 (``l2_sensitivity / g + sqrt(d)`` in l2)
for ``d`` released coordinates: that is the sensitivity the integer noise is calibrated
to, and why the secure noise is a hair (relative ``d g / sensitivity``, about
``d * 2^-40 / epsilon`` for Laplace) wider than the textbook scale.  Rounding the final
sum to a double is post-processing of the integer ``round(x/g) + Z``.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any, cast

import numpy.typing as npt

from . import _core, _draw, _insecure, _parallel
from . import _validation as _v
from . import random as _random
from ._active import current_or_none as _active_budget
from ._active import label as _label
from ._calibration import (
    classic_gaussian_sigma,
    discrete_gaussian_sigma,
    gaussian_sigma,
)
from ._errors import PrivacyParameterError
from ._plans import GRID_BITS, grid_exponent
from ._privacy import Cost, bound_up, charge, is_zcdp
from ._privacy import Rng as _Rng
from ._typing import PrivacyParam
from .accounting.zcdp import zcdp_to_dp

__all__ = [
    "laplace_mechanism",
    "geometric_mechanism",
    "gaussian_mechanism",
    "discrete_gaussian_mechanism",
    "gaussian_sigma",
]

_MODES = ("secure", "fast")
# The grids: GRID_BITS.laplace and GRID_BITS.gauss (dpfast._plans, with their reasons).
_GAUSS_MAX_STEPS = 2**26
_INF = math.inf
# (epsilon, sensitivity) -> prepared plan of a scalar release; bounded like an lru_cache.
_SCALAR_LAPLACE_PLANS: dict[tuple[float, float], Any] = {}

#: What a mechanism releases: an int or float for a scalar, an int64 or float64 array of
#: the input's shape otherwise (dpfast._draw.Released, its one definition).
Released = _draw.Released
#: ``rng=``: None (the thread's OS-keyed ChaCha20), a BitGenerator or a Generator
#: (dpfast._privacy.Rng, its one definition).
Rng = _Rng


# ------------------------------------------------------------------ helpers

# The Laplace plans, the data conversion and the chunked release live in dpfast._draw
# (the Laplace draw every composite calls); these names are what the Gaussian paths here
# and dpfast's other faces (objects, grouped, compat, opendp) call them.
_as_data = _draw.as_data
_as_float = _draw.as_float
_positive = _draw.positive
_ceil_rational = _draw.ceil_rational
_dlap = _draw.dlap
_release = _draw.release
_shape_like = _draw.shape_like
_laplace_grid_plan = _draw.laplace_grid_plan
_laplace_int_plan = _draw.laplace_int_plan


def _granularity(value: object) -> float | None:
    """Validated before any cached plan sees it (lru_cache would take True for 1)."""
    return None if value is None else _v.positive("granularity", value)


def _mode(mode: object) -> str:
    """mode= of a mechanism that runs now: ``"fast"`` warns (InsecureRandomnessWarning)."""
    return _insecure.mode(mode, _MODES)


@functools.lru_cache(maxsize=64)
def _dgauss(num: int, den: int) -> Any:
    """The prepared exact discrete Gaussian sampler of sigma^2 = num/den (public)."""
    return _core.DiscreteGaussianExact(num, den)


def _sqrt_ceil(d: int) -> int:
    r = math.isqrt(d)
    return r if r * r == d else r + 1


#: Gaussian sigma is calibrated at min(epsilon, 2^40): (2^40, delta)-DP implies
#: (epsilon, delta)-DP for every larger epsilon, and the calibration's arithmetic
#: overflows near epsilon = 1e308.  The noise is then about 1e-12 of l2 or less.
_GAUSS_EPS_CAP = 2.0**40


@functools.lru_cache(maxsize=512)
def _gauss_sigma(
    epsilon: float, delta: float, l2: float, d: int, calibration: str
) -> float:
    """sigma for N_Z noise on integers with l2 sensitivity l2 (proved in _calibration)."""
    epsilon = min(epsilon, _GAUSS_EPS_CAP)
    s: float = discrete_gaussian_sigma(epsilon, delta, l2, d)
    if calibration == "classic":
        s = max(s, classic_gaussian_sigma(epsilon, delta, l2))
    return s


@functools.lru_cache(maxsize=512)
def _gauss_grid_plan(
    epsilon: float,
    delta: float,
    l2: float,
    d: int,
    calibration: str,
    granularity: float | None,
) -> tuple[int, Any]:
    k = grid_exponent(
        gaussian_sigma(min(epsilon, _GAUSS_EPS_CAP), delta, l2, calibration),
        GRID_BITS.gauss,
        granularity,
    )
    # d coordinates' rounding adds sqrt(d) steps to the l2 sensitivity, so sigma grows by
    # sqrt(d) g / l2: a grid finer by up to 2^6 (sigma^2 < 2^62 steps) keeps that below
    # 2^-12 where it can; a finer grid than needed costs speed (larger multi-word coins)
    extra = 0
    if granularity is None and d > 1:
        k_sens = math.frexp(l2 / math.sqrt(d))[1] - 1 - GRID_BITS.gauss_vector
        extra = min(6, max(0, k - k_sens))
        k -= extra
    # l2 sensitivity in grid steps after rounding: l2 / g + sqrt(d), rounded up
    shift = math.nextafter(math.ldexp(l2, -k) + _sqrt_ceil(d), math.inf)
    try:
        sigma = (
            _gauss_sigma(epsilon, delta, shift, d, calibration) if shift < _INF else _INF
        )
    except (OverflowError, ZeroDivisionError):  # a grid so fine that sigma overflows
        sigma = _INF
    if not sigma <= _GAUSS_MAX_STEPS << extra:
        raise PrivacyParameterError(
            f"granularity must be at least 2^-26 of sigma; got {granularity!r}"
        )
    sigma = math.ceil(sigma)
    return k, _dgauss(sigma * sigma, 1)


def _plan_rho(l2: float, k: int | None, d: int, sampler: Any) -> Fraction:
    """Exact rho of a discrete Gaussian plan: (l2 sensitivity in sampler units)^2 / (2 s^2)
    with s^2 read from the prepared sampler (Canonne, Kamath & Steinke 2020, Thm 14).
    On integers (``k`` None) the sensitivity is l2; on the grid 2^k it is
    ``l2 / 2^k + ceil(sqrt(d))`` (rounding d coordinates to the grid adds sqrt(d) steps)."""
    steps = Fraction(l2) if k is None else Fraction(l2) / Fraction(2) ** k + _sqrt_ceil(d)
    num, den = sampler.sigma2
    return Fraction(steps * steps * den, 2 * num)


@functools.lru_cache(maxsize=256)
def _rho_int_sampler(l2: float, rho: Fraction) -> Any:
    """N_Z(0, s^2) with s^2 >= l2^2 / (2 rho) (rounded up): rho-zCDP on integers of l2
    sensitivity l2 (Canonne, Kamath & Steinke 2020, Thm 14)."""
    return _dgauss(*_ceil_rational(Fraction(l2) ** 2 / (2 * rho)))


@functools.lru_cache(maxsize=256)
def _rho_grid_plan(
    l2: float, rho: Fraction, d: int, granularity: float | None = None
) -> tuple[int, Any]:
    """(k, sampler): the grid 2^k and N_Z noise in grid steps, rho-zCDP for d float
    coordinates of l2 sensitivity l2.  Rounding to the grid adds at most sqrt(d) steps
    of l2 sensitivity (mechanisms' docstring), so the steps' sensitivity is
    ``l2 / 2^k + ceil(sqrt(d))`` and s^2 is that squared over 2 rho, rounded up
    (Thm 14 of CKS 2020 again)."""
    k = grid_exponent(float(l2 / math.sqrt(2 * rho)), GRID_BITS.gauss, granularity)
    steps = Fraction(l2) / Fraction(2) ** k + _sqrt_ceil(d)
    s2 = steps * steps / (2 * rho)
    if s2 > _GAUSS_MAX_STEPS**2:
        if granularity is not None:
            raise PrivacyParameterError(
                f"granularity must be at least 2^-26 of sigma; got {granularity!r}"
            )
        raise PrivacyParameterError(
            f"{d} coordinates need a grid finer than 2^-26 of sigma; release fewer "
            "coordinates at once"
        )
    return k, _dgauss(*_ceil_rational(s2))


# ------------------------------------------------------------------ Laplace


def laplace_mechanism(
    value: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: float = 1.0,
    rng: Rng = None,
    mode: str = "secure",
    granularity: float | None = None,
    budget: Any = None,
    workers: int | None = None,
    label: str | None = None,
) -> Released:
    """Release ``value`` with Laplace-type noise: epsilon-DP.

    Parameters
    ----------
    value : int, float or array-like of them
        The exact query answer f(x); a vector is released as a whole.  Private: it is
        converted exactly or refused by type only (np.longdouble, object, Decimal:
        ``TypeError``); integers beyond int64 are clamped to it, ints mixed with floats in
        a list to ±2**53; NaN or ±inf raise ``PrivacyParameterError`` without showing the
        value (docs/security-model.md).
    epsilon : float > 0
    sensitivity : float > 0
        The l1 sensitivity of f over add/remove neighbours (for the whole vector).
    rng : None, ChaCha20, numpy BitGenerator or Generator
        ``None``: the calling thread's OS-keyed ChaCha20.  Anything predictable (a seeded
        ChaCha20, a numpy generator) works and warns (``InsecureRandomnessWarning``).
    mode : {"secure", "fast"}
        ``"secure"`` (default): integers get exact discrete Laplace noise of scale
        ``sensitivity / epsilon`` (the geometric mechanism); floats are released on a
        power-of-two grid of about ``2^-40 * sensitivity / epsilon`` with exact discrete
        Laplace noise in grid steps (module docstring).  ``"fast"``: continuous Laplace
        noise in floating point; not floating-point safe (Mironov 2012), for simulation.
    granularity : float > 0, optional
        Secure float path only: the grid is the largest power of two <= granularity
        (a public choice; at least 2^-44 of the noise scale).
    budget : object with ``spend(epsilon, delta, *, label)``, or ``NO_BUDGET``, optional
        Charged ``(epsilon, 0)`` before any noise is drawn.  None: the active budget
        (``with b.active():``) if there is one, else nothing (you account for it).
    workers : None or int >= 1
        Threads for a vector of at least 2**18 values (None: all cores, or the environment
        variable ``DPFAST_WORKERS``; 1: the calling thread only); the release is the same
        for every thread count (``dpfast._parallel``).  Ctrl-C stops a long release
        between two slices (or chunks) and raises ``KeyboardInterrupt``: nothing is
        returned, and ``budget`` stays charged (as for any call that raises after
        charging).
    label : str, optional
        Recorded with the charge (default ``"laplace_mechanism"``).

    Returns
    -------
    int, float or ndarray
        Same shape as ``value``: int64 for integer input on the secure path (saturated
        at the int64 range: post-processing), float64 otherwise.  The caller's array is
        never modified.

    Privacy
    -------
    epsilon-DP for add/remove neighbours when ``sensitivity`` bounds the l1 change of
    ``value`` (Dwork & Roth Theorem 3.6); the secure float path calibrates the integer
    noise to the rounded values' sensitivity, so the guarantee is exact, and the output
    is a function of an integer release only.

    Accuracy
    --------
    Each coordinate's noise Y has ``P[|Y| >= t * b] <= e^(-t)`` with b the noise scale
    (Fact 3.7; for the discrete versions the bound holds on the integer grid); over k
    coordinates ``P[max |Y_i| >= ln(k/beta) b] <= beta`` (Theorem 3.8).  See
    :mod:`dpfast.accuracy`.

    References
    ----------
    Dwork & Roth, Def. 3.3, Theorems 3.6 and 3.8.  Ghosh, Roughgarden & Sundararajan,
    "Universally utility-maximizing privacy mechanisms", STOC 2009 (geometric mechanism).
    Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS
    2020 (exact sampler).  Mironov, "On Significance of the Least Significant Bits for
    Differential Privacy", CCS 2012.
    """
    if (
        type(value) is float
        and type(epsilon) is float
        and type(sensitivity) is float
        and -_INF < value < _INF
        and 0.0 < epsilon < _INF
        and 0.0 < sensitivity < _INF
        and mode == "secure"
        and granularity is None
        and workers is None
    ):
        # The common scalar call, validated inline (it is made millions of times); the
        # same checks and plan as the general path below.
        plan = _SCALAR_LAPLACE_PLANS.get((epsilon, sensitivity))
        if plan is None:
            if len(_SCALAR_LAPLACE_PLANS) >= 1024:
                _SCALAR_LAPLACE_PLANS.clear()
            # calibrated at the float <= the decimal epsilon means (_validation.epsilon);
            # the budget below charges that decimal
            k, sampler = _laplace_grid_plan(_v.epsilon(epsilon), sensitivity, 1, None)
            plan = _SCALAR_LAPLACE_PLANS[epsilon, sensitivity] = _core.ScalarPlan(
                sampler, k
            )
        lab = "laplace_mechanism" if label is None else _label(label, "laplace_mechanism")
        gen = None if rng is None else _core.secure_rng(rng)
        charged = _active_budget() if budget is None else _v.budget(budget)
        if charged is not None:
            charge(charged, Cost(epsilon, 0.0), lab)
        if gen is None:
            # the thread's private OS-keyed scalar stream (_core.ScalarPlan): the same C
            # calls on the same plan as grid_release, without the generator's lock
            return cast(float, plan.grid(value))
        return cast(float, _core.grid_release(plan.sampler, value, plan.k, gen))
    epsilon = _v.epsilon(epsilon)
    sensitivity = _positive("sensitivity", sensitivity)
    mode = _mode(mode)
    nworkers = _parallel.workers(workers)
    granularity = _granularity(granularity)
    budget = _v.budget(budget)
    label = _label(label, "laplace_mechanism")
    integer, data, scalar = _as_data(value)
    gen = _core.secure_rng(rng)
    plan = _draw.laplace_plan(
        epsilon, sensitivity, integer, 1 if scalar else data.size, mode, granularity
    )
    if budget is not None:
        charge(budget, Cost(epsilon, 0.0), label)
    return _draw.draw(plan, integer, data, scalar, gen, nworkers)


def geometric_mechanism(
    value: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: float = 1,
    rng: Rng = None,
    budget: Any = None,
    label: str | None = None,
) -> Released:
    """Integer release with exact two-sided geometric (discrete Laplace) noise.

    ``P[Z = z] ∝ exp(-|z| epsilon / sensitivity)``: epsilon-DP for integer-valued f
    whose l1 sensitivity is at most ``sensitivity`` (Ghosh, Roughgarden & Sundararajan
    2009; sampler of Canonne, Kamath & Steinke 2020, Algorithm 2).  ``value`` must be an
    int or an integer array; the result is int (or int64 array) of the same shape.
    Integers beyond int64 are clamped to it and the noisy result saturates at the int64
    range (docs/security-model.md): no value ever raises.  Charges ``budget`` (epsilon, 0)
    before drawing (the active budget when ``budget`` is None; ``label`` default
    ``"laplace_mechanism"``).  Same as ``laplace_mechanism`` on integer input.
    """
    epsilon = _v.epsilon(epsilon)
    sensitivity = _v.positive("sensitivity", sensitivity)
    integer, data, scalar = _as_data(value)
    if not integer:
        raise TypeError(
            "geometric_mechanism takes integers; use laplace_mechanism for floats"
        )
    return laplace_mechanism(
        data, epsilon=epsilon, sensitivity=sensitivity, rng=rng, budget=budget, label=label
    )


# ------------------------------------------------------------------ Gaussian


def gaussian_mechanism(
    value: npt.ArrayLike,
    *,
    epsilon: PrivacyParam | None = None,
    delta: PrivacyParam | None = None,
    l2_sensitivity: float = 1.0,
    calibration: str = "analytic",
    rng: Rng = None,
    mode: str = "secure",
    granularity: float | None = None,
    budget: Any = None,
    workers: int | None = None,
    label: str | None = None,
    rho: PrivacyParam | None = None,
) -> Released:
    """Release ``value`` with Gaussian-type noise: (epsilon, delta)-DP, or rho-zCDP.

    Parameters
    ----------
    value : int, float or array-like of them
    epsilon : float > 0 (< 1 for ``calibration="classic"``)
        With ``delta``: the (epsilon, delta) form.
    delta : float in (0, 1)
        Required with ``epsilon``; optional with ``rho`` (then an (epsilon, delta) budget
        is charged ``(zcdp_to_dp(rho, delta), delta)``).
    rho : float > 0, optional
        The zCDP-native form, instead of ``epsilon``: noise of variance
        ``l2_sensitivity^2 / (2 rho)`` (rounded up), as :class:`dpfast.objects.Gaussian`
        with ``rho=``.
    l2_sensitivity : float > 0
        The l2 sensitivity of f over add/remove neighbours.
    calibration : {"analytic", "classic"}
        How sigma is chosen in the (epsilon, delta) form: see :func:`gaussian_sigma`.
    rng, budget, workers
        As in :func:`laplace_mechanism`.  ``budget`` is charged (epsilon, delta); a zCDP
        budget (``composition="zcdp"``) is charged the exact rho of the noise drawn
        (``spend_rho``), in either form.  The ``rho`` form without ``delta`` can charge
        only a zCDP budget (``PrivacyParameterError`` otherwise, before anything is drawn).
    label : str, optional
        Recorded with the charge (default ``"gaussian_mechanism"``).
    mode : {"secure", "fast"}
        ``"secure"``: exact discrete Gaussian noise (on integers directly, on floats in
        steps of a power-of-two grid of about ``2^-24 sigma``, finer by up to 2^-6 for
        long vectors), with sigma proved for the discrete distribution in any dimension
        (a smoothing/convolution argument, see ``dpfast._calibration``; Canonne, Kamath &
        Steinke 2020, Theorem 15 and its discussion): on the grid it is the continuous
        analytic sigma to about 1e-14 relative, plus the grid rounding's ``sqrt(d)``
        steps of sensitivity.  With ``"classic"`` sigma is also at least the
        Theorem 3.22 value.  ``"fast"``: continuous Gaussian noise with
        ``gaussian_sigma(...)``; not floating-point safe.
    granularity : float > 0, optional
        Secure float path only: the grid is the largest power of two <= granularity.

    Returns
    -------
    int, float or ndarray of the shape of ``value`` (int64 for integer input on the
    secure path).

    Privacy
    -------
    (epsilon, delta)-DP for add/remove neighbours when ``l2_sensitivity`` bounds the l2
    change of ``value`` (Dwork & Roth Theorem 3.22; Balle & Wang 2018; CKS 2020).  Every
    path is also rho-zCDP with rho = (sensitivity in noise units)^2 / (2 s^2) for its
    noise's s^2 (Bun & Steinke 2016 Prop. 1.6; CKS 2020 Thm 14 for the discrete
    Gaussian), the rho a zCDP budget is charged.

    Accuracy
    --------
    Each coordinate's noise is (discrete) Gaussian with standard deviation about sigma:
    ``P[|Y| >= t sigma] <= 2 exp(-t^2 / 2)``.

    References
    ----------
    Dwork & Roth, Theorem 3.22.  Balle & Wang, ICML 2018.  Canonne, Kamath & Steinke,
    NeurIPS 2020.  Mironov, CCS 2012.
    """
    if rho is not None:
        if epsilon is not None:
            raise TypeError(
                "gaussian_mechanism takes epsilon= (with delta=) or rho=, not both"
            )
        return _gaussian_rho(
            value,
            rho,
            delta,
            l2_sensitivity,
            calibration,
            rng,
            mode,
            granularity,
            budget,
            workers,
            label,
        )
    if epsilon is None or delta is None:
        raise TypeError("gaussian_mechanism needs epsilon= and delta=, or rho=")
    epsilon = _v.epsilon(epsilon)
    delta = _v.delta(delta, allow_zero=False)
    l2 = _v.positive("l2_sensitivity", l2_sensitivity)
    calibration = _v.choice("calibration", calibration, ("analytic", "classic"))
    mode = _mode(mode)
    nworkers = _parallel.workers(workers)
    granularity = _granularity(granularity)
    budget = _v.budget(budget)
    label = _label(label, "gaussian_mechanism")
    integer, data, scalar = _as_data(value)
    gen = _core.secure_rng(rng)
    d = 1 if scalar else max(data.size, 1)
    plan = _gauss_plan(epsilon, delta, l2, integer, d, calibration, mode, granularity)
    if budget is not None:
        # a zCDP budget is charged the exact rho of the noise drawn
        charge(
            budget,
            Cost(epsilon, delta, _gauss_plan_rho(plan, l2, d) if is_zcdp(budget) else None),
            label,
        )
    return _draw.draw(plan, integer, data, scalar, gen, nworkers)


def _gauss_plan(
    epsilon: float,
    delta: float,
    l2: float,
    integer: bool,
    d: int,
    calibration: str,
    mode: str,
    granularity: float | None,
) -> _draw.NoisePlan:
    """The (epsilon, delta) Gaussian's plan, from public parameters only (validated):
    continuous noise of ``gaussian_sigma`` (fast), the discrete Gaussian on integers, or
    the discrete Gaussian in steps of the grid 2^k."""
    if mode == "fast":
        sigma = gaussian_sigma(min(epsilon, _GAUSS_EPS_CAP), delta, l2, calibration)
        return _draw.NoisePlan("fast_normal", sigma, None, 0)
    if integer:
        sampler = _dgauss(
            *_ceil_rational(Fraction(_gauss_sigma(epsilon, delta, l2, d, calibration)) ** 2)
        )
        return _draw.NoisePlan("int", 0.0, sampler, 0)
    k, sampler = _gauss_grid_plan(epsilon, delta, l2, d, calibration, granularity)
    return _draw.NoisePlan("grid", 0.0, sampler, k)


def _gauss_plan_rho(plan: _draw.NoisePlan, l2: float, d: int) -> Fraction:
    """The exact rho of a planned Gaussian release (what a zCDP budget is charged)."""
    if plan.kind == "fast_normal":
        return Fraction(l2) ** 2 / (2 * Fraction(plan.scale) ** 2)
    return _plan_rho(l2, None if plan.kind == "int" else plan.k, d, plan.sampler)


def gaussian_release(
    value: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    l2_sensitivity: float,
    rng: Any,
    calibration: str = "analytic",
    mode: str = "secure",
    workers: int | None = None,
) -> Released:
    """:func:`gaussian_mechanism` (the (epsilon, delta) form) for a composite that has
    charged its whole cost and resolved ``rng`` (a bit generator) and ``mode`` (which
    warned once): the same checks in the same order, the same plan and draw; nothing
    charged and no warning.  Not exported."""
    eps = _v.epsilon(epsilon)
    dl = _v.delta(delta, allow_zero=False)
    l2 = _v.positive("l2_sensitivity", l2_sensitivity)
    calibration = _v.choice("calibration", calibration, ("analytic", "classic"))
    nworkers = _parallel.workers(workers)
    integer, data, scalar = _as_data(value)
    d = 1 if scalar else max(data.size, 1)
    plan = _gauss_plan(eps, dl, l2, integer, d, calibration, mode, None)
    return _draw.draw(plan, integer, data, scalar, rng, nworkers)


def _gaussian_rho(
    value: npt.ArrayLike,
    rho: PrivacyParam,
    delta: PrivacyParam | None,
    l2_sensitivity: float,
    calibration: str,
    rng: Rng,
    mode: str,
    granularity: float | None,
    budget: Any,
    workers: int | None,
    label: str | None,
) -> Released:
    """:func:`gaussian_mechanism` with ``rho=``: the zCDP-native Gaussian, the plans of
    :class:`dpfast.objects.Gaussian` with ``rho=`` (same validation order as the
    (epsilon, delta) form: public parameters, data, rng; then plan, charge, draw)."""
    rho_x = _v.epsilon(rho, "rho").exact  # exact: the plans are exact in it
    dl = None if delta is None else _v.delta(delta, allow_zero=False)
    eps = None if dl is None else zcdp_to_dp(_v.float_up(rho_x), dl)
    l2 = _v.positive("l2_sensitivity", l2_sensitivity)
    _v.choice("calibration", calibration, ("analytic", "classic"))
    mode = _mode(mode)
    nworkers = _parallel.workers(workers)
    granularity = _granularity(granularity)
    budget = _v.budget(budget)
    label = _label(label, "gaussian_mechanism")
    integer, data, scalar = _as_data(value)
    gen = _core.secure_rng(rng)
    d = 1 if scalar else max(data.size, 1)
    cost = Cost(eps, dl, rho_x)
    if mode == "fast":
        # continuous noise of sigma >= l2 / sqrt(2 rho): rho-zCDP (Bun & Steinke 2016,
        # Prop. 1.6); the float evaluation is a few ulps off, bound_up covers it
        sigma = bound_up(l2 / math.sqrt(2.0 * float(rho_x)))
        if not sigma < _INF:
            raise PrivacyParameterError(
                f"l2_sensitivity / sqrt(2 rho) = {l2_sensitivity!r} / sqrt(2 * {rho!r}) is "
                "outside the range of doubles"
            )
        data = _as_float(integer, data, scalar)
        if budget is not None:
            charge(budget, cost, label)
        return cast(
            Released,
            data
            + _random.normal(
                scale=sigma, size=None if scalar else data.shape, rng=gen, workers=nworkers
            ),
        )
    if integer:
        sampler = _rho_int_sampler(l2, rho_x)
        if budget is not None:
            charge(budget, cost, label)
        return _shape_like(
            _release(
                lambda x, g: _core.int_release(sampler, x, g), data, gen, scalar, nworkers
            ),
            data,
            scalar,
        )
    k, sampler = _rho_grid_plan(l2, rho_x, d, granularity)
    if budget is not None:
        charge(budget, cost, label)
    return _shape_like(
        _release(
            lambda x, g: _core.grid_release(sampler, x, k, g), data, gen, scalar, nworkers
        ),
        data,
        scalar,
    )


def discrete_gaussian_mechanism(
    value: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    l2_sensitivity: float = 1,
    rng: Rng = None,
    budget: Any = None,
    label: str | None = None,
) -> Released:
    """Integer release with exact discrete Gaussian noise: (epsilon, delta)-DP.

    sigma is the smallest value proved for the discrete Gaussian (see
    :func:`gaussian_mechanism`, secure path); the sampler is exact (Canonne, Kamath &
    Steinke 2020, Algorithm 3).  ``value`` must be an int or integer array.  ``budget``
    and ``label`` as in :func:`gaussian_mechanism`.
    """
    integer, data, _ = _as_data(value)
    if not integer:
        raise TypeError(
            "discrete_gaussian_mechanism takes integers; use gaussian_mechanism for floats"
        )
    return gaussian_mechanism(
        data,
        epsilon=epsilon,
        delta=delta,
        l2_sensitivity=l2_sensitivity,
        rng=rng,
        budget=budget,
        label=label,
    )


# dpfast.mechanisms is the one place to find every mechanism: the selection mechanisms
# and randomized response live in their own modules, re-exported here.
from .randomized_response import (  # noqa: E402
    coin_response,
    kary_response,
    randomized_response,
)
from .selection import (  # noqa: E402
    exponential_mechanism,
    permute_and_flip,
    report_noisy_max,
    top_k,
)

__all__ += [
    "coin_response",
    "randomized_response",
    "kary_response",
    "exponential_mechanism",
    "report_noisy_max",
    "permute_and_flip",
    "top_k",
]
