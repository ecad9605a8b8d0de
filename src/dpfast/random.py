"""Generators and raw samplers.

``ChaCha20`` is dpfast's CSPRNG; ``default_rng()`` is the calling thread's OS-keyed one.
Every sampler takes ``rng=``: ``None`` (that default), a ``ChaCha20``, any numpy
``BitGenerator`` or a numpy ``Generator``.

The continuous samplers here (``uniform``, ``laplace``, ``normal``, ``exponential``,
``gumbel``) are the fast *simulation* path: ordinary floating-point noise, which leaks
through the low bits of its results (Mironov 2012).  They are never a mechanism's
default; the mechanisms in :mod:`dpfast.mechanisms` use the exact, grid-based path
unless asked for ``mode="fast"``.

numpy's conventions
-------------------
The continuous samplers take numpy's arguments in numpy's order
(``numpy.random.Generator``): ``uniform(low, high, size)``, ``laplace(loc, scale, size)``,
``normal(loc, scale, size)``, ``exponential(scale, size)``, ``gumbel(loc, scale, size)``;
array-valued parameters broadcast against each other and against ``size`` as in numpy.
Differences from numpy, all on the side of refusing:

* parameters must be finite (numpy lets ``loc=inf`` or ``nan`` through and returns
  NaN/inf), and types that cannot be converted to float64 exactly (``np.longdouble``,
  complex, object arrays, bool) raise ``TypeError``;
* a scale of 0 is allowed, as in numpy, and returns ``loc`` exactly (no noise): these
  are plain samplers.  A *mechanism* with no noise is not private, so every mechanism
  of dpfast refuses a zero scale;
* ``gaussian(sigma, size)``, the former name of ``normal`` with the scale first, is
  deprecated: it keeps its old meaning (``gaussian(2.0, 5)`` is five draws of N(0, 4))
  and warns, so no old call changes meaning silently.

The other samplers have no numpy twin of the same parameters, so dpfast's own
parameterisation (a DP noise *scale*) is used and documented on each: ``geometric(scale)``
counts failures k >= 0 with ``P(k) = (1 - q) q**k``, ``q = exp(-1/scale)`` (numpy's
``geometric(p)`` counts trials >= 1: it is ``1 + geometric(scale)`` with ``p = 1 - q``);
``discrete_laplace(scale)`` is scipy's ``dlaplace(a)`` with ``a = 1/scale``;
``discrete_gaussian`` and ``bernoulli_exp`` have no numpy or scipy sampler;
``bernoulli(p)`` is numpy's ``binomial(1, p)``; ``gamma(shape, scale, size)`` and
``laplace_truncated(loc, scale, ...)`` follow numpy's order.  These samplers take scalar
parameters only, and the exact ones refuse a scale of 0.

The discrete samplers (``bernoulli``, ``bernoulli_exp``, ``geometric``,
``discrete_laplace``, ``discrete_gaussian``) take exact rational parameters and are exact
(Canonne, Kamath, Steinke 2020) or, with ``constant_time=True``, certified: their distance
to the exact law is bounded by :func:`constant_time_slack`.

Constant time, precisely: with ``constant_time=True`` the C kernels of ``geometric``,
``discrete_laplace`` and ``discrete_gaussian`` draw a number of 64-bit words, make a
number of compares and read table entries in an order that depend only on the public
parameters and on ``size``, never on the values drawn, and no branch depends on a random
word (checked in the generated x86-64 code).  Not covered: the Python layer (argument
checks; building a table the first time a parameter is seen, which depends on that public
parameter only; converting a scalar result to a Python int, which is slower outside
[-5, 256]) and a foreign numpy BitGenerator, whose own timing is its own.  The exact
samplers (the default) are not constant time.
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, SupportsIndex, TypeVar, Union, overload

import numpy as np
import numpy.typing as npt

from . import _core, _parallel
from . import _validation as _v
from ._core import ChaCha20, default_rng, os_entropy
from ._errors import PrivacyParameterError
from ._plans import GRID_BITS
from ._privacy import Rng as _Rng

__all__ = [
    "ChaCha20",
    "default_rng",
    "os_entropy",
    "uniform",
    "laplace",
    "normal",
    "gaussian",
    "exponential",
    "gumbel",
    "bernoulli",
    "bernoulli_exp",
    "geometric",
    "discrete_laplace",
    "discrete_gaussian",
    "constant_time_slack",
]

#: What every sampler accepts as ``rng=`` (dpfast._privacy.Rng, its one definition;
#: ChaCha20 is a BitGenerator).
Rng = _Rng
#: An output shape: an int or a sequence of ints.
Shape = Union[SupportsIndex, Sequence[SupportsIndex]]
#: numpy's ``size``: None (one value) or a shape.
Size = Union[None, Shape]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: An exact parameter of the discrete samplers: int, Fraction, (numerator, denominator)
#: or a float (used at its exact binary value).
Rational = Union[int, float, Fraction, "tuple[int, int]", numbers.Rational]
_T = TypeVar("_T")


def _shape(size: Size, out: FloatArray | None) -> tuple[int, ...] | None:
    shape: tuple[int, ...] | None = _v.size(size)
    if out is not None:
        _v.out_array(out, shape)
    return shape


def _continuous(
    kind: int,
    a: float,
    b: float,
    size: tuple[int, ...] | None,
    rng: Rng,
    out: FloatArray | None,
    workers: int | None,
) -> Any:
    """A continuous fill; n >= 2**18 values without ``out`` go to _parallel (``workers``
    threads, the same values for any thread count)."""
    nworkers = _parallel.workers(workers)
    if out is None and size is not None:
        par = _parallel.fill(
            size,
            np.float64,
            rng,
            nworkers,
            lambda m, sub: _core.continuous(kind, a, b, m, sub, None),
        )
        if par is not None:
            return par
    return _core.continuous(kind, a, b, size, rng, out)


# ---------------------------------------------------------------- public parameters


def _real(name: str, value: object) -> float:
    """A scalar parameter (a Python or numpy real, or a 0-d array) as a float, converted
    exactly: a wider float (np.longdouble), complex or bool is refused by type."""
    if isinstance(value, float):  # float and np.float64: exact
        return float(value)
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:  # beyond the doubles: +-inf, refused later
            return _v._INF if value > 0 else -_v._INF
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind not in "iuf" or value.dtype.itemsize > 8:
            raise TypeError(
                f"{name} must be a real number that converts to float64 exactly; "
                f"got dtype {value.dtype}"
            )
        # float16/32/64 convert to a double exactly; an integer keeps its exact value
        value = float(value) if value.dtype.kind == "f" else int(value)
    v: float = _v._number(name, value)
    return v


def _finite(name: str, value: object) -> float:
    v = _real(name, value)
    if -_v._INF < v < _v._INF:
        return v
    _v.finite(name, v)  # raises, naming the parameter
    raise AssertionError("unreachable")


def _nonnegative(name: str, value: object) -> float:
    v = _real(name, value)
    if 0.0 <= v < _v._INF:
        return v
    _v.nonnegative(name, v)  # raises, naming the parameter
    raise AssertionError("unreachable")


def _param_array(name: str, value: object, *, nonnegative: bool = False) -> FloatArray:
    """An array-valued parameter as float64 (finite; >= 0 if asked), converted exactly or
    refused by type (dpfast._validation.float_array)."""
    arr: FloatArray = _v.float_array(name, value)
    if nonnegative and not (arr >= 0.0).all():
        raise PrivacyParameterError(
            f"{name} must be >= 0 everywhere; got {float(arr[~(arr >= 0.0)].flat[0])!r}"
        )
    return arr


def _broadcast(size: Size, out: FloatArray | None, *params: FloatArray) -> tuple[int, ...]:
    """numpy's output shape for array parameters: ``size`` if given (the parameters must
    broadcast to it), else ``out``'s shape, else the parameters' broadcast shape."""
    shape: tuple[int, ...] | None = _v.size(size)
    if shape is None:
        shape = (
            tuple(out.shape)
            if out is not None
            else np.broadcast_shapes(*(p.shape for p in params))
        )
    try:
        ok = np.broadcast_shapes(shape, *(p.shape for p in params)) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"parameters of shapes {', '.join(str(p.shape) for p in params)} "
            f"cannot be broadcast to the output shape {shape}"
        )
    if out is not None:
        _v.out_array(out, shape)
    return shape


_SCALAR = (float, int, np.generic)


def _scalars(*values: object) -> bool:
    # numbers first: np.ndim would build an array for each
    return all(isinstance(v, _SCALAR) or np.ndim(v) == 0 for v in values)  # type: ignore[arg-type]


def _affine(
    kind: int,
    loc: npt.ArrayLike,
    scale: npt.ArrayLike,
    size: Size,
    rng: Rng,
    out: FloatArray | None,
    workers: int | None,
    scale_name: str = "scale",
) -> Any:
    """``loc + scale * X`` for X the standard law of ``kind``, with numpy's broadcasting
    of array-valued ``loc`` and ``scale``."""
    if (
        size is None
        and out is None
        and type(loc) is float
        and type(scale) is float
        and -_v._INF < loc < _v._INF
        and 0.0 <= scale < _v._INF
    ):
        return loc + _core.continuous(kind, scale, 0.0, None, rng, None)
    if _scalars(loc, scale):
        m, s = _finite("loc", loc), _nonnegative(scale_name, scale)
        shape = _shape(size, out)
        if shape is None and out is None:
            return m + float(_core.continuous(kind, s, 0.0, None, rng, None))
        r = _continuous(kind, s, 0.0, shape, rng, out, workers)
        if m != 0.0:
            np.add(r, m, out=r)
        return r
    m_a = _param_array("loc", loc)
    s_a = _param_array(scale_name, scale, nonnegative=True)
    shape = _broadcast(size, out, m_a, s_a)
    r = _continuous(kind, 1.0, 0.0, shape, rng, out, workers)
    np.multiply(r, s_a, out=r)
    np.add(r, m_a, out=r)
    return r


# ---------------------------------------------------------------- continuous samplers


@overload
def uniform(
    low: float = ...,
    high: float = ...,
    size: None = ...,
    *,
    rng: Rng = ...,
    out: None = ...,
    workers: int | None = ...,
) -> float: ...
@overload
def uniform(
    low: npt.ArrayLike = ...,
    high: npt.ArrayLike = ...,
    size: Size = ...,
    *,
    rng: Rng = ...,
    out: FloatArray | None = ...,
    workers: int | None = ...,
) -> FloatArray: ...
def uniform(
    low: npt.ArrayLike = 0.0,
    high: npt.ArrayLike = 1.0,
    size: Size = None,
    *,
    rng: Rng = None,
    out: FloatArray | None = None,
    workers: int | None = None,
) -> Any:
    """Uniform floats on [low, high) with 53 random bits each (simulation path).

    numpy's ``Generator.uniform(low, high, size)``: ``low`` and ``high`` may be arrays,
    broadcast as in numpy; ``low == high`` returns ``low``.  Both must be finite with
    ``low <= high`` (numpy accepts ``low > high``; here it is refused).  ``out=``,
    ``workers=`` and an interrupted fill (``KeyboardInterrupt``, ``out`` partly written)
    are as in :func:`laplace`.
    """
    if not _scalars(low, high):
        return _uniform_arrays(low, high, size, rng, out, workers)
    lo = _finite("low", low)
    hi = _finite("high", high)
    if not lo <= hi:
        raise PrivacyParameterError(f"high must be >= low; got low={low!r}, high={high!r}")
    if hi - lo < _v._INF:
        return _continuous(_core.UNIFORM, lo, hi - lo, _shape(size, out), rng, out, workers)
    # high - low overflows: draw on [low/2, high/2) (exact halves: |low| or |high| is huge,
    # so neither is subnormal) and double, capped below high to keep the interval open
    top = math.nextafter(hi, -_v._INF)
    r = _continuous(
        _core.UNIFORM, lo / 2.0, hi / 2.0 - lo / 2.0, _shape(size, out), rng, out, workers
    )
    if isinstance(r, float):
        return min(2.0 * r, top)
    np.multiply(r, 2.0, out=r)
    return np.minimum(r, top, out=r)


def _uniform_arrays(
    low: npt.ArrayLike,
    high: npt.ArrayLike,
    size: Size,
    rng: Rng,
    out: FloatArray | None,
    workers: int | None,
) -> FloatArray:
    lo, hi = _param_array("low", low), _param_array("high", high)
    with np.errstate(invalid="ignore"):
        if not np.all(lo <= hi):
            raise PrivacyParameterError("high must be >= low everywhere")
    shape = _broadcast(size, out, lo, hi)
    u: FloatArray = _continuous(_core.UNIFORM, 0.0, 1.0, shape, rng, out, workers)
    with np.errstate(over="ignore", invalid="ignore"):
        width = hi - lo
        wide = ~np.isfinite(width)
        if not wide.any():
            r = lo + width * u
        else:  # as the scalar path: halves, doubled and kept below high
            top = np.nextafter(hi, -np.inf)
            halved = np.minimum(2.0 * (lo / 2.0 + (hi / 2.0 - lo / 2.0) * u), top)
            r = np.where(wide, halved, lo + np.where(wide, 0.0, width) * u)
    u[...] = r
    return u


@overload
def laplace(
    loc: float = ...,
    scale: float = ...,
    size: None = ...,
    *,
    rng: Rng = ...,
    out: None = ...,
    workers: int | None = ...,
) -> float: ...
@overload
def laplace(
    loc: npt.ArrayLike = ...,
    scale: npt.ArrayLike = ...,
    size: Size = ...,
    *,
    rng: Rng = ...,
    out: FloatArray | None = ...,
    workers: int | None = ...,
) -> FloatArray: ...
def laplace(
    loc: npt.ArrayLike = 0.0,
    scale: npt.ArrayLike = 1.0,
    size: Size = None,
    *,
    rng: Rng = None,
    out: FloatArray | None = None,
    workers: int | None = None,
) -> Any:
    """Laplace(loc, scale) draws, density ``exp(-|x - loc|/scale) / (2 scale)`` (simulation
    path).

    numpy's ``Generator.laplace(loc=0.0, scale=1.0, size=None)``: the centre comes first,
    so ``laplace(0, 1)`` is one draw of the standard law and ``laplace(0, 1, 5)`` five.
    (Before numpy's order was adopted the signature was ``laplace(scale, size)``: such a
    call now means ``loc=scale, scale=size``; pass keywords, ``laplace(scale=b, size=n)``,
    in code that must run on both.)

    Parameters
    ----------
    loc : float or array_like of floats, finite
    scale : float or array_like of floats, finite and >= 0
        0 returns ``loc`` exactly (numpy's convention for a plain sampler; a *mechanism*
        with scale 0 would not be private, and dpfast's mechanisms refuse it).
    size : int or tuple of ints, optional
        Output shape; ``None`` (and no ``out``) returns one float for scalar parameters,
        and the broadcast shape of array parameters.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    out : float64 ndarray, optional
        Written in place and returned.  A fill stops on Ctrl-C between two slices of
        2**20 values and raises ``KeyboardInterrupt``: ``out`` is then partly written
        (its first whole slices) and ``rng`` stands after the values drawn, ready for
        the next draw.  A fill without ``out`` returns nothing when interrupted.
    workers : None or int >= 1
        Threads for a fill of at least 2**18 values (None: all cores, or the environment
        variable ``DPFAST_WORKERS``; 1: the calling thread only).  Such a fill is drawn
        from sub-streams of ``rng`` and is the same for every thread count (see
        ``dpfast._parallel``); the other samplers here take the same argument.

    Returns
    -------
    float or ndarray of float64
    """
    if (
        size is None
        and out is None
        and type(loc) is float
        and type(scale) is float
        and -_v._INF < loc < _v._INF
        and 0.0 <= scale < _v._INF
    ):
        # the scalar call of simulations and benchmarks, without the general checks
        return loc + _core.continuous(_core.LAPLACE, scale, 0.0, None, rng, None)
    return _affine(_core.LAPLACE, loc, scale, size, rng, out, workers)


@overload
def normal(
    loc: float = ...,
    scale: float = ...,
    size: None = ...,
    *,
    rng: Rng = ...,
    out: None = ...,
    workers: int | None = ...,
) -> float: ...
@overload
def normal(
    loc: npt.ArrayLike = ...,
    scale: npt.ArrayLike = ...,
    size: Size = ...,
    *,
    rng: Rng = ...,
    out: FloatArray | None = ...,
    workers: int | None = ...,
) -> FloatArray: ...
def normal(
    loc: npt.ArrayLike = 0.0,
    scale: npt.ArrayLike = 1.0,
    size: Size = None,
    *,
    rng: Rng = None,
    out: FloatArray | None = None,
    workers: int | None = None,
) -> Any:
    """Normal(loc, scale**2) draws (ziggurat; simulation path).

    numpy's ``Generator.normal(loc=0.0, scale=1.0, size=None)``: ``scale`` is the standard
    deviation, ``loc`` the mean; array parameters broadcast; scale 0 returns ``loc``.
    ``out=``, ``workers=`` and an interrupted fill (``KeyboardInterrupt``, ``out`` partly
    written) are as in :func:`laplace`.
    """
    return _affine(_core.NORMAL, loc, scale, size, rng, out, workers)


def gaussian(
    sigma: npt.ArrayLike = 1.0,
    size: Size = None,
    *,
    rng: Rng = None,
    out: FloatArray | None = None,
    workers: int | None = None,
) -> Any:
    """Deprecated: ``normal(0.0, sigma, size)``.  Normal(0, sigma**2) draws.

    Kept with its old meaning (standard deviation first, then size) so that no existing
    call changes meaning; it emits a ``DeprecationWarning``.  It is not an alias of
    :func:`normal`, whose first positional argument is the mean.
    """
    warnings.warn(
        "dpfast.random.gaussian(sigma, size) is deprecated; use "
        "dpfast.random.normal(0.0, sigma, size) (numpy's order: loc, scale, size)",
        DeprecationWarning,
        stacklevel=2,
    )
    return _affine(_core.NORMAL, 0.0, sigma, size, rng, out, workers, scale_name="sigma")


@overload
def exponential(
    scale: float = ...,
    size: None = ...,
    *,
    rng: Rng = ...,
    out: None = ...,
    workers: int | None = ...,
) -> float: ...
@overload
def exponential(
    scale: npt.ArrayLike = ...,
    size: Size = ...,
    *,
    rng: Rng = ...,
    out: FloatArray | None = ...,
    workers: int | None = ...,
) -> FloatArray: ...
def exponential(
    scale: npt.ArrayLike = 1.0,
    size: Size = None,
    *,
    rng: Rng = None,
    out: FloatArray | None = None,
    workers: int | None = None,
) -> Any:
    """Exponential draws with mean ``scale`` (ziggurat; simulation path).

    numpy's ``Generator.exponential(scale=1.0, size=None)``; ``scale`` may be an array;
    scale 0 returns 0.  ``out=``, ``workers=`` and an interrupted fill
    (``KeyboardInterrupt``, ``out`` partly written) are as in :func:`laplace`.
    """
    return _affine(_core.EXPONENTIAL, 0.0, scale, size, rng, out, workers)


@overload
def gumbel(
    loc: float = ...,
    scale: float = ...,
    size: None = ...,
    *,
    rng: Rng = ...,
    out: None = ...,
    workers: int | None = ...,
) -> float: ...
@overload
def gumbel(
    loc: npt.ArrayLike = ...,
    scale: npt.ArrayLike = ...,
    size: Size = ...,
    *,
    rng: Rng = ...,
    out: FloatArray | None = ...,
    workers: int | None = ...,
) -> FloatArray: ...
def gumbel(
    loc: npt.ArrayLike = 0.0,
    scale: npt.ArrayLike = 1.0,
    size: Size = None,
    *,
    rng: Rng = None,
    out: FloatArray | None = None,
    workers: int | None = None,
) -> Any:
    """Gumbel(loc, scale) draws, CDF ``exp(-exp(-(x - loc)/scale))`` (simulation path).

    numpy's ``Generator.gumbel(loc=0.0, scale=1.0, size=None)``; array parameters
    broadcast; scale 0 returns ``loc``.  ``out=``, ``workers=`` and an interrupted fill
    (``KeyboardInterrupt``, ``out`` partly written) are as in :func:`laplace`.
    """
    return _affine(_core.GUMBEL, loc, scale, size, rng, out, workers)


# ---------------------------------------------------------------- discrete samplers

_U64 = (1 << 64) - 1


def _exact(name: str, value: object, *, allow_zero: bool = False) -> Fraction:
    """``value`` as an exact ``Fraction`` >= 0 (> 0 unless ``allow_zero``).

    Accepts an int, a ``Fraction`` (any ``numbers.Rational``), a ``(numerator, denominator)``
    pair of ints, or a real number such as a float, which is converted exactly (a finite
    double is m * 2**e).  NaN, infinities, bools and non-numbers are rejected.
    """
    if isinstance(value, tuple):
        if len(value) != 2:
            raise TypeError(
                f"{name} as a tuple must be (numerator, denominator); got {value!r}"
            )
        num = _v.integer(f"{name} numerator", value[0], minimum=0)
        den = _v.integer(f"{name} denominator", value[1], minimum=1)
        frac = Fraction(num, den)
    elif isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number; got bool {value!r}")
    elif isinstance(value, numbers.Integral):
        frac = Fraction(int(value))
    elif isinstance(value, numbers.Rational):
        frac = Fraction(int(value.numerator), int(value.denominator))
    else:
        # floats and other reals: one helper checks type, NaN, infinity and sign
        v = (_v.nonnegative if allow_zero else _v.positive)(name, value)
        return Fraction(v)
    if frac < 0 or (frac == 0 and not allow_zero):
        raise PrivacyParameterError(
            f"{name} must be {'>= 0' if allow_zero else '> 0'}; got {value!r}"
        )
    return frac


def _farey_neighbours(x: Fraction, max_den: int) -> tuple[Fraction, Fraction]:
    """The fractions just below and just above x (x >= 0 not representable with
    denominator <= max_den) among those with denominator <= max_den: the last
    continued-fraction convergent of x within the bound, and the best semiconvergent on
    the other side (Farey neighbours of order max_den)."""
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = x.numerator, x.denominator
    while d:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_den:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_den - q0) // q1
    f1, f2 = Fraction(p0 + k * p1, q0 + k * q1), Fraction(p1, q1)
    return (f1, f2) if f1 <= f2 else (f2, f1)


def _fit_up(name: str, frac: Fraction) -> tuple[int, int]:
    """(num, den), both in [1, 2**64 - 1], with num/den >= frac: exact when frac fits,
    else the smallest such fraction (for a noise scale or variance: more noise, never less
    privacy).  The relative increase is below max(frac, 1/frac) / (2**64 - 1)."""
    n, d = frac.numerator, frac.denominator
    if n <= _U64 and d <= _U64:
        return n, d
    if frac > _U64:
        raise PrivacyParameterError(f"{name} must be <= 2**64 - 1; got {_v.show(frac)}")
    if frac < 1:  # the denominator bound binds
        up = _farey_neighbours(frac, _U64)[1]
    else:  # the numerator bound binds: round 1/frac down
        low = _farey_neighbours(1 / frac, _U64)[0]
        up = 1 / low
    assert up >= frac and up.numerator <= _U64 and up.denominator <= _U64
    return up.numerator, up.denominator


def _cached(convert: Callable[[Any], _T]) -> Callable[[Any], _T]:
    """Memoise a validated conversion of one public parameter.  typed=True keeps 1, 1.0,
    True and np.float64(1) apart (so a bool is never accepted from the cache); a value
    that cannot be hashed, or fails validation, goes through the uncached conversion,
    which raises the proper error."""
    memo = functools.lru_cache(maxsize=256, typed=True)(convert)

    def wrapper(value: Any) -> _T:
        try:
            return memo(value)
        except TypeError:
            return convert(value)

    return wrapper


#: Largest scale of geometric / discrete Laplace noise: P[|X| >= 2**63] is then below
#: exp(-2**63 / 2**56) = e**-128, so a draw is an int64 except in an event of negligible
#: probability.  At 2**62 it would leave int64 with probability 0.13 per draw and the
#: returned values would follow the law conditioned on fitting, not the one asked for.
_MAX_SCALE = 2**56


@_cached
def _scale_rational(scale: Any) -> tuple[int, int]:
    return _fit_up("scale", _exact("scale", scale))


def _exact_scale_rational(scale: Any) -> tuple[int, int]:
    """The scale of the exact geometric / discrete Laplace samplers, at most 2**56."""
    num, den = _scale_rational(scale)
    if num > den * _MAX_SCALE:
        raise PrivacyParameterError(
            f"scale must be at most 2**56 (beyond it a draw leaves int64 with non-negligible "
            f"probability); got {_v.show(Fraction(num, den))}"
        )
    return num, den


@_cached
def _sigma_rational(sigma: Any) -> tuple[int, int]:
    s = _exact("sigma", sigma)
    return _fit_up("sigma**2", s * s)


@_cached
def _sigma2_only_rational(sigma2: Any) -> tuple[int, int]:
    return _fit_up("sigma2", _exact("sigma2", sigma2))


def _sigma2_rational(sigma: Any, sigma2: Any) -> tuple[int, int]:
    if (sigma is None) == (sigma2 is None):
        raise TypeError("give exactly one of sigma and sigma2")
    if sigma2 is not None:
        return _sigma2_only_rational(sigma2)
    return _sigma_rational(sigma)


@_cached
def _p_rational(p: Any) -> Fraction:
    frac = _exact("p", p, allow_zero=True)
    if frac > 1:
        raise PrivacyParameterError(f"p must be in [0, 1]; got {p!r}")
    return frac


@_cached
def _gamma_rational(gamma: Any) -> Fraction:
    return _exact("gamma", gamma, allow_zero=True)


@functools.lru_cache(maxsize=64)
def _dlap_ct(num: int, den: int) -> Any:
    try:
        return _core.DiscreteLaplaceCT(num, den)
    except (OverflowError, PrivacyParameterError):
        raise PrivacyParameterError(
            f"scale must be <= 2**62/45 (about 1.02e17) for constant_time=True; got {num}/{den}"
        ) from None


@functools.lru_cache(maxsize=64)
def _dlap_exact(num: int, den: int) -> Any:
    return _core.DiscreteLaplaceExact(num, den)


@functools.lru_cache(maxsize=64)
def _dgauss_exact(num: int, den: int) -> Any:
    return _core.DiscreteGaussianExact(num, den)


@functools.lru_cache(maxsize=64)
def _dgauss_ct(num: int, den: int) -> Any:
    try:
        return _core.DiscreteGaussianCT(num, den)
    except (OverflowError, PrivacyParameterError):
        raise PrivacyParameterError(
            f"sigma**2 = {num}/{den} needs a table of more than {_core.DGAUSS_CT_MAX} entries; "
            "constant_time=True supports sigma up to about 410"
        ) from None


def _big_ok(name: str, frac: Fraction) -> None:
    if max(frac.numerator.bit_length(), frac.denominator.bit_length()) > _core.BIG_MAX_BITS:
        raise PrivacyParameterError(
            f"{name} must have a numerator and denominator of at most {_core.BIG_MAX_BITS} bits; "
            f"got {frac}"
        )


@overload
def bernoulli(p: Rational, size: None = ..., *, rng: Rng = ...) -> int: ...
@overload
def bernoulli(p: Rational, size: Shape, *, rng: Rng = ...) -> IntArray: ...
def bernoulli(p: Rational, size: Size = None, *, rng: Rng = None) -> Any:
    """Exact Bernoulli(p) draws: 1 with probability p, else 0.

    Parameters
    ----------
    p : Fraction, int, (int, int) or float
        A probability in [0, 1].  A float is used at its exact binary value (0.1 is
        3602879701896397/2**55), never rounded.  Numerator and denominator may have up to
        1280 bits.
    size : int or tuple of ints, optional
        ``None`` returns one Python int; otherwise an int64 array of that shape.
    rng : None, ChaCha20, numpy BitGenerator or Generator
        ``None`` is the calling thread's OS-keyed ChaCha20.

    Notes
    -----
    **Exact.**  Compares a uniform real U in [0, 1) with p lazily: the first 64 random bits
    decide except with probability < 2**-64, and then the next 64 bits continue the
    comparison exactly.  One 64-bit word per draw in expectation; no division, no floating
    point.  Not constant time (the rare continuation takes longer).

    References
    ----------
    C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
    NeurIPS 2020, arXiv:2004.00010, section 5 (sampling Bernoulli(n/d) exactly).
    """
    frac = _p_rational(p)
    size = _v.size(size)
    if frac.denominator <= _U64:
        return _core.discrete(_core.BERNOULLI, frac.numerator, frac.denominator, size, rng)
    _big_ok("p", frac)
    return _core.discrete_big(_core.BERNOULLI, frac.numerator, frac.denominator, size, rng)


@overload
def bernoulli_exp(gamma: Rational, size: None = ..., *, rng: Rng = ...) -> int: ...
@overload
def bernoulli_exp(gamma: Rational, size: Shape, *, rng: Rng = ...) -> IntArray: ...
def bernoulli_exp(gamma: Rational, size: Size = None, *, rng: Rng = None) -> Any:
    """Exact Bernoulli(exp(-gamma)) draws for a rational gamma >= 0.

    Parameters
    ----------
    gamma : Fraction, int, (int, int) or float
        Finite and >= 0; a float is used at its exact binary value.  Numerator and
        denominator may have up to 1280 bits.
    size : int or tuple of ints, optional
        ``None`` returns one Python int; otherwise an int64 array of that shape.
    rng : None, ChaCha20, numpy BitGenerator or Generator

    Notes
    -----
    **Exact** (Canonne, Kamath, Steinke 2020, Algorithm 1 and Proposition 5): for
    gamma <= 1, von Neumann's method with Bernoulli(gamma/k) coins; for gamma > 1, one
    exp(-1) coin per unit of floor(gamma) (found by binary long division when gamma is a
    multi-word rational) times an exp(-frac(gamma)) coin, stopping at the first 0.  No
    exp or log is evaluated.  Not constant time.

    References
    ----------
    C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
    NeurIPS 2020, arXiv:2004.00010.
    """
    frac = _gamma_rational(gamma)
    size = _v.size(size)
    if frac.numerator <= _U64 and frac.denominator <= _U64:
        return _core.discrete(
            _core.BERNOULLI_EXP, frac.numerator, frac.denominator, size, rng
        )
    _big_ok("gamma", frac)
    return _core.discrete_big(
        _core.BERNOULLI_EXP, frac.numerator, frac.denominator, size, rng
    )


@overload
def geometric(
    scale: Rational, size: None = ..., *, rng: Rng = ..., constant_time: bool = ...
) -> int: ...
@overload
def geometric(
    scale: Rational, size: Shape, *, rng: Rng = ..., constant_time: bool = ...
) -> IntArray: ...
def geometric(
    scale: Rational, size: Size = None, *, rng: Rng = None, constant_time: bool = False
) -> Any:
    """Geometric integers k >= 0 with P(k) = (1 - q) q**k, q = exp(-1/scale).

    This is the one-sided discrete Laplace (the magnitude of the two-sided one).

    Parameters
    ----------
    scale : Fraction, int, (int, int) or float
        Finite and > 0.  Converted to an exact rational s_num/s_den; when that does not fit
        in 64-bit integers it is rounded **up** to the next such fraction (more noise,
        never less privacy), a relative change below max(scale, 1/scale) * 2**-64.
    size : int or tuple of ints, optional
        ``None`` returns one Python int; otherwise an int64 array of that shape.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    constant_time : bool
        ``False`` (default): **exact**, running time depends on the value drawn.
        ``True``: **certified, constant time**: the bitwise geometric on D binary digits,
        D = the least j with 2**j/scale >= 45 (e.g. 6 for scale 1, 22 for scale 1e5),
        two digits per 64-bit word, three compares per word and no branch on random
        data; the work depends only on ``scale``.  Its total variation distance to the
        exact law is at most ``constant_time_slack("geometric", scale)`` (about
        1.5 D * 2**-65).  Needs scale <= about 1.02e17.

    Raises
    ------
    PrivacyParameterError
        If ``scale`` exceeds 2**56, or (negligible probability) a draw exceeds the int64
        range: the exact sampler never returns a wrong value.

    Notes
    -----
    Exact, one value (``size=None``): Canonne, Kamath, Steinke (2020) Algorithm 2 (its
    geometric part), with the block length floor(scale) in place of the scale's numerator
    so that no division is done per draw.  Exact, arrays: Y = 2**s G + L with G =
    floor(Y / 2**s) and L = Y mod 2**s independent (s the largest with 2**s <= scale/32;
    s = 0 below scale 256): G by inversion of one 64-bit word against a table of certified
    cumulative thresholds, L uniform on [0, 2**s) accepted with probability exp(-L/scale)
    through a certified polynomial enclosure of that exponential.  A word that falls inside
    a certified interval (probability about 2**-64 per threshold, 2**-24 for the
    polynomial) continues the comparison exactly against a 704-bit certified interval.
    About one 64-bit word per value below scale 256, two above.  A set-up of about 0.1 ms
    per scale is cached.  Constant-time path: the digits of the
    whole geometric, drawn in pairs by inverting each pair's joint law with three
    thresholds rounded to 64 bits (certified error, summed into the slack).

    References
    ----------
    C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
    NeurIPS 2020, arXiv:2004.00010, Algorithms 1 and 2.
    """
    num, den = (_scale_rational if constant_time else _exact_scale_rational)(scale)
    size = _v.size(size)
    if constant_time:
        return _dlap_ct(num, den).draw(True, size, rng)
    if size is None:
        return _core.discrete(_core.GEOMETRIC, num, den, size, rng)
    return _dlap_exact(num, den).draw(True, size, rng)


@overload
def discrete_laplace(
    scale: Rational,
    size: None = ...,
    *,
    rng: Rng = ...,
    constant_time: bool = ...,
    workers: int | None = ...,
) -> int: ...
@overload
def discrete_laplace(
    scale: Rational,
    size: Shape,
    *,
    rng: Rng = ...,
    constant_time: bool = ...,
    workers: int | None = ...,
) -> IntArray: ...
def discrete_laplace(
    scale: Rational,
    size: Size = None,
    *,
    rng: Rng = None,
    constant_time: bool = False,
    workers: int | None = None,
) -> Any:
    """Discrete Laplace noise: integers x with ``P(x) ∝ exp(-|x|/scale)``.

    ``P(x) = (1 - q)/(1 + q) q**|x|`` with q = exp(-1/scale).  Adding it to an integer query
    of l1-sensitivity Δ is (Δ/scale)-DP.

    Parameters
    ----------
    scale : Fraction, int, (int, int) or float
        Finite and > 0.  Converted to an exact rational s_num/s_den; when that does not fit
        in 64-bit integers it is rounded **up** to the next such fraction (more noise,
        never less privacy), a relative change below max(scale, 1/scale) * 2**-64.
    size : int or tuple of ints, optional
        ``None`` returns one Python int; otherwise an int64 array of that shape.
    rng : None, ChaCha20, numpy BitGenerator or Generator
        ``None`` is the calling thread's OS-keyed ChaCha20.
    constant_time : bool
        ``False`` (default): **exact**, not constant time.
        ``True``: **certified, constant time**: 1 + ceil(D/2) words per draw (see
        :func:`geometric`), at most three compares each and no branch on random data, so
        the running time of the C kernel does not depend on the value drawn.  Total variation distance to the exact law at
        most ``constant_time_slack("discrete_laplace", scale)``; a mechanism that is
        (ε, δ)-DP with exact noise is (ε, δ + k (1 + e**ε) slack)-DP with k such draws.
        (Converting a scalar result to a Python int takes slightly longer for values
        outside [-5, 256]; use ``size=`` to stay in C.)

    Raises
    ------
    PrivacyParameterError
        If ``scale`` exceeds 2**56 (beyond it a draw leaves int64 with non-negligible
        probability, e.g. 0.13 per draw at 2**62, and the values returned would follow
        the law conditioned on fitting in int64, not the one asked for); at most 2**56 a
        draw leaves int64 with probability below e**-128.

    Privacy
    -------
    Exact path: the output law is exactly the discrete Laplace law above, so the
    ε = Δ/scale guarantee holds with no slack, assuming a uniform bit source.  (In an
    event of probability below 2**-600 per draw, the array sampler raises PrivacyParameterError
    instead of returning a value; it never returns an inexact one.)

    Notes
    -----
    Exact, one value: Canonne, Kamath, Steinke (2020) Algorithm 2.  Exact, arrays: the
    prepared sampler described in :func:`geometric` (6-15 ns per value on x86-64): below
    scale 256 ``|X|`` by inversion against its own certified cumulative table and a fair sign
    bit; above, +-Y with a fair sign and (-, 0) redrawn.  The two give the same law; which
    one runs depends only on ``size``.

    References
    ----------
    C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
    NeurIPS 2020, arXiv:2004.00010, Algorithm 2.
    """
    num, den = (_scale_rational if constant_time else _exact_scale_rational)(scale)
    size = _v.size(size)
    nworkers = _parallel.workers(workers)
    sampler = _dlap_ct(num, den) if constant_time else _dlap_exact(num, den)
    par = _parallel.fill(
        size, np.int64, rng, nworkers, lambda m, sub: sampler.draw(False, m, sub)
    )
    if par is not None:
        return par
    if constant_time:
        return sampler.draw(False, size, rng)
    if size is None:
        return _core.discrete(_core.DISCRETE_LAPLACE, num, den, size, rng)
    return sampler.draw(False, size, rng)


@overload
def discrete_gaussian(
    sigma: Rational | None = ...,
    size: None = ...,
    *,
    rng: Rng = ...,
    constant_time: bool = ...,
    sigma2: Rational | None = ...,
    workers: int | None = ...,
) -> int: ...
@overload
def discrete_gaussian(
    sigma: Rational | None = ...,
    *,
    size: Shape,
    rng: Rng = ...,
    constant_time: bool = ...,
    sigma2: Rational | None = ...,
    workers: int | None = ...,
) -> IntArray: ...
def discrete_gaussian(
    sigma: Rational | None = None,
    size: Size = None,
    *,
    rng: Rng = None,
    constant_time: bool = False,
    sigma2: Rational | None = None,
    workers: int | None = None,
) -> Any:
    """Discrete Gaussian noise: integers x with P(x) ∝ exp(-x**2 / (2 sigma**2)).

    Adding it to an integer query of l2-sensitivity Δ is (Δ**2 / (2 sigma**2))-zCDP
    (Canonne, Kamath, Steinke 2020, Theorem 14).

    Parameters
    ----------
    sigma : Fraction, int, (int, int) or float
        Finite and > 0.  sigma**2 is formed exactly; when it does not fit in 64-bit
        integers it is rounded **up** to the next such fraction (more noise, never less
        privacy), a relative change below max(sigma**2, sigma**-2) * 2**-64.
    size : int or tuple of ints, optional
        ``None`` returns one Python int; otherwise an int64 array of that shape.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    constant_time : bool
        ``False`` (default): **exact**, not constant time.
        ``True``: **certified, constant time**: one full scan of a cumulative table of
        about 9.1 sigma + 1 entries per draw (2 words; eight draws per pass, with AVX2 or
        AVX-512 compares when the CPU has them), the same work and memory accesses for
        every value drawn; supports sigma up to about 410.  Total variation distance
        to the exact law at most ``constant_time_slack("discrete_gaussian", sigma)``.
    sigma2 : Fraction, int, (int, int) or float, optional
        Give the variance instead of sigma (e.g. ``Fraction(5, 2)``, whose square root is
        not rational).  Exactly one of ``sigma`` and ``sigma2``.

    Raises
    ------
    PrivacyParameterError
        If a draw exceeds the int64 range (negligible probability at sigma**2 < 2**64).

    Privacy
    -------
    Exact path: the output law is exactly the discrete Gaussian above (no slack),
    assuming a uniform bit source.

    Notes
    -----
    Exact: scalars use Algorithm 3 of the reference, t = floor(sigma) + 1, proposing
    Y ~ DLap(t) and accepting with probability ``exp(-(|Y| - sigma**2/t)**2 / (2 sigma**2))``,
    evaluated as an exact multi-word rational by Bernoulli(exp(-x)) coins (no exp is
    computed).  Arrays use rejection from a step-function envelope (csrc/dgauss.c):
    ``|Y|`` in blocks of width m = 2**k <= t/16 (m = 1 below sigma 31), the block chosen by
    one word against certified cumulative thresholds, the offset and sign from the same
    word, and an acceptance coin ``exp(-u (2 j m + u) / (2 sigma**2))`` (acceptance above 0.97) compared
    with a certified 64-bit enclosure; beyond about 8.4 sigma an exact geometric tail.  A
    word that falls inside a certified interval continues the comparison exactly; the law
    is the same.  Set-up, cached per sigma: about 0.3 ms and 25 KB.

    References
    ----------
    C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
    NeurIPS 2020, arXiv:2004.00010, Algorithm 3.
    """
    num, den = _sigma2_rational(sigma, sigma2)
    size = _v.size(size)
    nworkers = _parallel.workers(workers)
    sampler = _dgauss_ct(num, den) if constant_time else _dgauss_exact(num, den)
    par = _parallel.fill(size, np.int64, rng, nworkers, lambda m, sub: sampler.draw(m, sub))
    if par is not None:
        return par
    if constant_time:
        return sampler.draw(size, rng)
    if size is None:
        return _core.discrete(_core.DISCRETE_GAUSSIAN, num, den, size, rng)
    return sampler.draw(size, rng)


def constant_time_slack(
    sampler: str, param: Rational | None = None, *, sigma2: Rational | None = None
) -> float:
    """Certified slack of a constant-time sampler: an upper bound on the total variation
    distance between one draw and the exact law.

    Parameters
    ----------
    sampler : {"geometric", "discrete_laplace", "discrete_gaussian"}
    param : scale (geometric, discrete_laplace) or sigma (discrete_gaussian)
        Converted exactly as by the sampler itself.
    sigma2 : optional, instead of sigma for "discrete_gaussian"

    Returns
    -------
    float
        η >= TV(draw, exact law), rounded up.  If a mechanism is (ε, δ)-DP with exact
        noise, it is (ε, δ + k (1 + e**ε) η)-DP when its k noise draws come from the
        constant-time sampler instead (a union bound over the k draws).

    Notes
    -----
    Laplace/geometric: ``η = Σ_{j<D} |T_j/2**64 - p_j| + q**(2**D)`` (+ the sign coin's
    ``|T_s/2**64 - q/(1+q)|`` for the two-sided law), where each ``|T/2**64 - p|`` is bounded from a
    192-bit certified interval of p; q**(2**D) < 2**-64.9.  Gaussian:
    ``η = Σ_{k<M} |T_k/2**64 - P(|X| <= k)| + P(|X| > M)``, with ``P(|X| > M) <= 2**-65``.
    """
    sampler = _v.choice(
        "sampler", sampler, ("geometric", "discrete_laplace", "discrete_gaussian")
    )
    if sampler == "discrete_gaussian":
        return float(_dgauss_ct(*_sigma2_rational(param, sigma2)).slack)
    if sigma2 is not None:
        raise TypeError(f"sigma2 applies only to discrete_gaussian, not {sampler}")
    t = _dlap_ct(*_scale_rational(param))
    return float(t.slack if sampler == "discrete_laplace" else t.slack_geometric)


# ---------------------------------------------------------------- samplers for the drop-in
# backends (dpfast.compat): bounded-domain Laplace, gamma, full-precision uniform

__all__ += ["laplace_truncated", "gamma", "uniform_full_precision"]


def _bound(name: str, value: object) -> float:
    v: float = _v._number(name, value)
    if v != v:
        raise PrivacyParameterError(f"{name} must not be NaN; got {value!r}")
    return v


@functools.lru_cache(maxsize=256)
def _bounded_grid(
    scale: float, lower: float, upper: float, granularity: float | None
) -> tuple[int, Any]:
    """(k, prepared sampler or None) of the secure bounded-domain Laplace: public only."""
    width = upper - lower
    top = max((abs(b) for b in (lower, upper) if abs(b) < _v._INF), default=0.0)
    # smallest k with |bound| <= 2^61 * 2^k for the finite bounds
    k_range = (math.frexp(top)[1] - 61) if top > 0.0 else -1074
    if granularity is not None:
        k = math.frexp(granularity)[1] - 1  # 2^k <= granularity
    else:
        k = math.frexp(scale)[1] - 1 - GRID_BITS.bounded_laplace
    if width < _v._INF:
        k = min(k, math.frexp(width)[1] - 1)  # at least one grid point inside
    k = max(k, k_range)
    if not -1000 <= k <= 1000 or (width < _v._INF and math.ldexp(1.0, k) > width):
        raise PrivacyParameterError(
            f"the bounds [{lower!r}, {upper!r}] and scale {scale!r} admit no power-of-two "
            "grid in [2^-1000, 2^1000] with a point inside the domain"
        )
    steps = Fraction(scale) / Fraction(2) ** k
    if steps > 2**56:
        raise PrivacyParameterError(
            f"scale {scale!r} is more than 2^56 grid steps of 2^{k}; the domain "
            f"[{lower!r}, {upper!r}] forces a finer grid than this scale can be sampled on"
        )
    return k, _dlap_exact(*_fit_up("scale", steps))


def laplace_truncated(
    loc: npt.ArrayLike,
    scale: float,
    lower: float = -math.inf,
    upper: float = math.inf,
    size: Size = None,
    *,
    rng: Rng = None,
    mode: str = "secure",
    granularity: float | None = None,
) -> Any:
    """Bounded-domain Laplace: Laplace(loc, scale) conditioned on [lower, upper].

    The density on the domain is proportional to ``exp(-|y - loc| / scale)`` (the law of
    diffprivlib's ``LaplaceBoundedDomain`` and, with loc = 0, of the noise of
    ``LaplaceBoundedNoise``); either bound may be infinite.

    Parameters
    ----------
    loc : float or array_like of float
        Finite centre(s).  A centre outside [lower, upper] is first clamped to it (a
        private value is never refused for where it lies).
    scale : float, finite and >= 0
        0 returns the clamped centre.
    lower, upper : float
        Public bounds, lower <= upper, ``-inf``/``inf`` allowed.  lower == upper returns
        that point.
    size : int or tuple of ints, optional
        With a scalar ``loc``, the shape of the output; ``None`` returns a float.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    mode : {"secure", "fast"}
        ``"secure"`` (default): floating-point safe.  Outputs lie on the power-of-two grid
        g = 2^k with 2^k the largest power of two <= 2^-40 scale (or <= ``granularity``),
        made coarser when needed so that finite bounds lie within 2^61 steps and finer so
        that a grid point lies inside the domain.  The law is the exact discrete Laplace
        of scale ``scale / g`` steps centred at round(loc / g), conditioned on the grid
        points of the domain by rejection; with an infinite bound the domain ends at
        2^61 steps.  ``"fast"``: continuous float noise conditioned by rejection
        (simulation path; not floating-point safe).
    granularity : float > 0, optional
        Secure path: the grid is the largest power of two <= granularity (still within
        the constraints above).

    Returns
    -------
    float or ndarray of float64

    Notes
    -----
    Rejection from the unconditioned law yields the conditioned law exactly.  A centre in
    the domain accepts with probability at least P[noise >= 0] >= 1/2 when a bound is
    infinite, and at least about min(1, width / (2 scale)) otherwise, so a very small
    domain relative to the scale costs proportionally more attempts.  Not constant time:
    the number of attempts depends on where loc lies.

    Privacy
    -------
    This is a sampler; a mechanism built on it (such as the bounded-domain Laplace of
    Holohan et al.) must calibrate ``scale`` itself, and on the secure path charge the
    rounding of loc to the grid (at most g/2) to its sensitivity.

    References
    ----------
    N. Holohan, S. Antonatos, S. Braghin, P. Mac Aonghusa, "The Bounded Laplace Mechanism
    in Differential Privacy", Journal of Privacy and Confidentiality 10(1), 2020.
    I. Mironov, "On Significance of the Least Significant Bits for Differential Privacy",
    CCS 2012.
    """
    scale = _v.nonnegative("scale", scale)
    lower = _bound("lower", lower)
    upper = _bound("upper", upper)
    if not lower <= upper or lower == _v._INF or upper == -_v._INF:
        raise PrivacyParameterError(
            f"need lower <= upper with lower < inf and upper > -inf; got lower={lower!r}, "
            f"upper={upper!r}"
        )
    mode = _v.choice("mode", mode, ("secure", "fast"))
    if granularity is not None:
        granularity = _v.positive("granularity", granularity)
    shape: tuple[int, ...] | None = _v.size(size)
    scalar = np.ndim(loc) == 0 and shape is None
    x: float | npt.NDArray[np.float64]
    if scalar:
        x = _v.finite("loc", loc)
    else:
        x = _v.float_array("loc", loc)
        if shape is not None:
            x = np.broadcast_to(x, shape)
    gen = _core.resolve_rng(rng)
    x = min(max(x, lower), upper) if scalar else np.clip(x, lower, upper)
    if scale == 0.0 or lower == upper:
        return float(x) if scalar else np.array(x, dtype=np.float64)
    if mode == "fast":
        return _core.laplace_bounded(None, x, 0, lower, upper, scale, gen)
    k, sampler = _bounded_grid(scale, lower, upper, granularity)
    return _core.laplace_bounded(sampler, x, k, lower, upper, scale, gen)


@overload
def gamma(
    shape: float, scale: float = ..., size: None = ..., *, rng: Rng = ...
) -> float: ...
@overload
def gamma(
    shape: float, scale: float = ..., *, size: Shape, rng: Rng = ...
) -> FloatArray: ...
def gamma(shape: float, scale: float = 1.0, size: Size = None, *, rng: Rng = None) -> Any:
    """Gamma(shape, scale) draws, density x**(shape-1) exp(-x/scale) / (Γ(shape) scale**shape).

    Simulation path (floating point; Marsaglia & Tsang 2000, with the U**(1/shape) boost
    for shape < 1).  Used for the norm of the Vector mechanism's noise, which perturbs an
    objective function rather than being released.

    Parameters
    ----------
    shape : float, finite and >= 0 (0 gives 0)
    scale : float, finite and >= 0
    size : int or tuple of ints, optional
    rng : None, ChaCha20, numpy BitGenerator or Generator

    References
    ----------
    G. Marsaglia, W. W. Tsang, "A Simple Method for Generating Gamma Variables", ACM TOMS
    26(3), 2000.
    """
    shape = _v.nonnegative("shape", shape)
    scale = _v.nonnegative("scale", scale)
    return _core.gamma(shape, scale, _v.size(size), rng)


@overload
def uniform_full_precision(size: None = ..., *, rng: Rng = ...) -> float: ...
@overload
def uniform_full_precision(size: Shape, *, rng: Rng = ...) -> FloatArray: ...
def uniform_full_precision(size: Size = None, *, rng: Rng = None) -> Any:
    """Uniform draws on [0, 1) in which every double is reachable.

    The uniform real U rounded down to the double below it: P[result = x] is the gap from
    x to the next double (down to 2^-1022).  ``uniform`` has only 53 random bits, so it
    never returns values below 2^-53 other than 0; the Snapping mechanism (Mironov 2012)
    needs ln(U) accurate in the tail, hence this sampler.  Two 64-bit words per draw
    (more with probability 2^-64).

    References
    ----------
    A. B. Downey, "Generating Pseudo-random Floating-Point Values", 2007.
    I. Mironov, "On Significance of the Least Significant Bits for Differential Privacy",
    CCS 2012, section 5.
    """
    return _core.uniform_full_precision(_v.size(size), rng)
