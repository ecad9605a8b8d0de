"""The Laplace mechanism's plan and draw: what every Laplace release in dpfast runs after
its public parameters are validated and its budget is charged.

A public call validates, plans, charges once, draws.  :func:`laplace_plan` is the plan (the
sampler and grid chosen from public parameters only; it raises, before any charge, for
parameters it cannot serve) and :func:`draw` the draw.
:func:`dpfast.mechanisms.laplace_mechanism` is their public face; a composite (selection,
releases, grouped, ...) charges its whole cost once and then calls :func:`laplace_release`
(or plan and draw), never a public face with ``budget=NO_BUDGET``.

The grid release of a float x is ``fl(g * (round(x / g) + Z))`` with ``g = 2^k``
(Mironov 2012; ``dpfast.mechanisms``' docstring has the sensitivity argument): ``Z`` is
exact discrete Laplace noise in grid steps (Canonne, Kamath & Steinke 2020, Algorithm 2).
Integers get exact discrete Laplace noise directly (the geometric mechanism, Ghosh,
Roughgarden & Sundararajan 2009).  ``mode="fast"`` adds continuous Laplace noise.

This module imports only dpfast's low layers (_core, _parallel, random, _plans,
_validation, _privacy, _errors), so every mechanism module may import it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple, Union, cast

import numpy as np
import numpy.typing as npt

from . import _core, _parallel
from . import _validation as _v
from . import random as _random
from ._errors import PrivacyParameterError
from ._plans import GRID_BITS, grid_exponent

__all__ = [
    "Released",
    "NoisePlan",
    "laplace_plan",
    "draw",
    "laplace_release",
    "laplace_grid_plan",
    "laplace_int_plan",
    "as_data",
    "as_float",
    "ceil_rational",
    "dlap",
    "release",
    "shape_like",
    "positive",
    "geometric_release",
]

_INF = math.inf
# The grid: GRID_BITS.laplace (dpfast._plans, with its reason).
LAPLACE_MAX_STEPS = 2**44
RATIONAL_BITS = 56

#: What a mechanism releases: an int or float for a scalar, an int64 or float64 array of
#: the input's shape otherwise.
Released = Union[int, float, npt.NDArray[np.int64], npt.NDArray[np.float64]]


# ------------------------------------------------------------------ data and samplers


def as_data(value: object) -> tuple[bool, Any, bool]:
    """(is_integer, data, is_scalar): an int or float scalar, or an int64/float64 array.

    Conversion is exact or refused by type (``_validation.real_data``): integers beyond
    int64 are clamped to it, np.longdouble / object / Decimal data raise ``TypeError``.
    A NaN or infinite float raises ``PrivacyParameterError`` without echoing it: no query
    of finite sensitivity returns one on a data set and a finite value on a neighbour.
    Never a view of the caller's array that we could write through: the C layer makes
    new output arrays."""
    if type(value) is float and -_INF < value < _INF:  # the common scalar cases
        return False, value, True
    if type(value) is int:
        return True, _v._clamp_int(value), True
    kind, arr = _v.real_data("value", value)
    scalar = arr.ndim == 0 and not isinstance(value, (np.ndarray, list, tuple))
    if kind == "i":
        return True, (int(arr) if scalar else arr), scalar
    if not np.isfinite(arr).all():
        raise PrivacyParameterError(
            "value must be finite everywhere (NaN and +-inf are outside every sensitivity "
            "bound; the offending value is not shown: it is private)"
        )
    return False, (float(arr) if scalar else arr), scalar


def as_float(integer: bool, data: Any, scalar: bool) -> Any:
    """The fast path works in doubles: integers clamped to +-2**53 first (exact)."""
    if not integer:
        return data
    if scalar:
        return float(min(max(data, -_v.EXACT_INT), _v.EXACT_INT))
    return np.clip(data, -_v.EXACT_INT, _v.EXACT_INT).astype(np.float64)


def positive(name: str, value: object) -> float:
    """_validation.positive, with the common case (a finite positive float) inlined: a
    scalar release is called millions of times."""
    if type(value) is float and 0.0 < value < _INF:
        return value
    checked: float = _v.positive(name, value)
    return checked


def ceil_rational(q: Fraction) -> tuple[int, int]:
    """(num, den) with num/den >= q exactly, den a power of two, num < 2^56: a noise
    scale rounded up (more noise is always safe)."""
    top = math.ceil(q)
    if top >= 2**RATIONAL_BITS:
        raise PrivacyParameterError(
            f"the noise parameter {_v.show(q)} is too large to sample exactly (at most 2^56 "
            "steps): use a larger epsilon or a smaller sensitivity"
        )
    den = 1 << max(0, RATIONAL_BITS - 1 - top.bit_length())
    num = -((-q.numerator * den) // q.denominator)  # ceil(q * den)
    return num, den


@functools.lru_cache(maxsize=256)
def dlap(num: int, den: int) -> Any:
    """The prepared exact discrete Laplace sampler of scale num/den (public)."""
    return _core.DiscreteLaplaceExact(num, den)


def release(
    apply: Callable[[Any, Any], Any], data: Any, gen: Any, scalar: bool, nworkers: int
) -> Any:
    """apply(data, rng) -> noisy data; a vector of 2**18 values or more is released in
    chunks on nworkers threads, with the same values for any thread count (_parallel)."""
    if not scalar:
        out = _parallel.release(data, gen, nworkers, apply)
        if out is not None:
            return out
    return apply(data, gen)


def shape_like(result: Any, data: Any, scalar: bool) -> Released:
    if scalar:
        return cast(Released, result)
    return cast(Released, result.reshape(np.shape(data)))


# ------------------------------------------------------------------ Laplace plans


@functools.lru_cache(maxsize=512)
def laplace_grid_plan(
    epsilon: float, sensitivity: float, d: int, granularity: float | None
) -> tuple[int, Any]:
    """(k, sampler): the grid 2^k (about 2^-40 of the noise scale) and the discrete
    Laplace noise in grid steps for d float coordinates of l1 sensitivity
    ``sensitivity``."""
    b = sensitivity / epsilon
    k = grid_exponent(b, GRID_BITS.laplace, granularity)
    # l1 sensitivity in grid steps after rounding: sensitivity / g + d (module docstring)
    steps = (Fraction(sensitivity) / Fraction(2) ** k + d) / Fraction(epsilon)
    if steps > LAPLACE_MAX_STEPS:
        if granularity is None:  # the rounding term d / epsilon alone is too large
            raise PrivacyParameterError(
                f"epsilon must be at least d * 2^-44 for the secure float path ({d} "
                f"coordinate(s)); got {epsilon!r}"
            )
        raise PrivacyParameterError(
            f"granularity must be at least 2^-44 of the noise scale; got {granularity!r} "
            f"for scale {b!r}"
        )
    return k, dlap(*ceil_rational(steps))


@functools.lru_cache(maxsize=512)
def laplace_int_plan(epsilon: float, sensitivity: float) -> Any:
    """The exact discrete Laplace sampler of scale sensitivity / epsilon (rounded up)."""
    return dlap(*ceil_rational(Fraction(sensitivity) / Fraction(epsilon)))


class NoisePlan(NamedTuple):
    """A planned additive-noise release: ``kind`` is ``"fast"`` (continuous Laplace noise
    of scale ``scale``), ``"fast_normal"`` (continuous Gaussian noise, sigma ``scale``),
    ``"int"`` (the exact discrete Laplace or Gaussian ``sampler`` on integers) or
    ``"grid"`` (``sampler`` in steps of the grid ``2^k``)."""

    kind: str
    scale: float
    sampler: Any
    k: int


def laplace_plan(
    epsilon: float,
    sensitivity: float,
    integer: bool,
    d: int,
    mode: str = "secure",
    granularity: float | None = None,
) -> NoisePlan:
    """The plan of an epsilon-DP Laplace release of ``d`` coordinates (integers or
    floats) of l1 sensitivity ``sensitivity``: from public parameters only, and raising
    ``PrivacyParameterError`` for those it cannot serve, so call it before charging.
    ``epsilon`` and ``sensitivity`` are validated (epsilon as ``_validation.epsilon``: the
    float the parameter means); ``mode`` and ``granularity`` must be already."""
    epsilon = _v.epsilon(epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    if mode == "fast":
        scale = sensitivity / epsilon
        if not 0.0 < scale < _INF:
            raise PrivacyParameterError(
                f"sensitivity / epsilon = {sensitivity!r} / {epsilon!r} is outside the "
                "range of doubles"
            )
        return NoisePlan("fast", scale, None, 0)
    if integer:
        return NoisePlan("int", 0.0, laplace_int_plan(epsilon, sensitivity), 0)
    k, sampler = laplace_grid_plan(epsilon, sensitivity, d, granularity)
    return NoisePlan("grid", 0.0, sampler, k)


def draw(
    plan: NoisePlan, integer: bool, data: Any, scalar: bool, gen: Any, nworkers: int
) -> Released:
    """Draw the planned release of ``data`` (from :func:`as_data`) with the resolved
    generator ``gen``; nothing is validated or charged here."""
    if plan.kind == "fast":
        data = as_float(integer, data, scalar)
        return cast(
            Released,
            data
            + _random.laplace(
                scale=plan.scale,
                size=None if scalar else data.shape,
                rng=gen,
                workers=nworkers,
            ),
        )
    if plan.kind == "fast_normal":
        data = as_float(integer, data, scalar)
        return cast(
            Released,
            data
            + _random.normal(
                scale=plan.scale,
                size=None if scalar else data.shape,
                rng=gen,
                workers=nworkers,
            ),
        )
    sampler = plan.sampler
    if plan.kind == "int":
        return shape_like(
            release(
                lambda x, g: _core.int_release(sampler, x, g), data, gen, scalar, nworkers
            ),
            data,
            scalar,
        )
    k = plan.k
    return shape_like(
        release(
            lambda x, g: _core.grid_release(sampler, x, k, g), data, gen, scalar, nworkers
        ),
        data,
        scalar,
    )


def laplace_release(
    value: object,
    epsilon: float,
    sensitivity: float,
    gen: Any,
    mode: str = "secure",
    granularity: float | None = None,
    workers: int | None = None,
) -> Released:
    """A composite's Laplace release of ``value``, epsilon-DP (Dwork & Roth Thm 3.6;
    the secure paths as :func:`dpfast.mechanisms.laplace_mechanism`): the data checked
    (:func:`as_data`), planned and drawn with the resolved generator ``gen``.  Nothing is
    charged (the composite charged its whole cost) and nothing warns (the composite
    resolved ``gen`` and ``mode``, which warned once)."""
    # the order of laplace_mechanism's checks: parameters, workers, data; then the plan
    epsilon = _v.epsilon(epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    nworkers = _parallel.workers(workers)
    integer, data, scalar = as_data(value)
    plan = laplace_plan(
        epsilon, sensitivity, integer, 1 if scalar else data.size, mode, granularity
    )
    return draw(
        plan,
        integer,
        data,
        scalar,
        _core.secure_rng(None) if gen is None else gen,
        nworkers,
    )


def geometric_release(
    value: object, epsilon: float, sensitivity: float, gen: Any
) -> Released:
    """:func:`laplace_release` of integers only, with the checks of
    :func:`dpfast.mechanisms.geometric_mechanism` in its order (``TypeError`` for floats):
    exact two-sided geometric noise (Ghosh, Roughgarden & Sundararajan 2009)."""
    epsilon = _v.epsilon(epsilon)
    sensitivity = _v.positive("sensitivity", sensitivity)
    integer, data, _ = as_data(value)
    if not integer:
        raise TypeError(
            "geometric_mechanism takes integers; use laplace_mechanism for floats"
        )
    return laplace_release(data, epsilon, sensitivity, gen)
