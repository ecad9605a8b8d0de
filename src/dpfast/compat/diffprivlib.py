"""dpfast as the noise backend of IBM diffprivlib 0.6.x (``pip install dpfast[diffprivlib]``).

Two ways to use it::

    from dpfast.compat import diffprivlib as dpf_dpl
    mech = dpf_dpl.Laplace(epsilon=1.0, sensitivity=1.0)      # one mechanism
    with dpf_dpl.patched():                                     # or the whole library
        diffprivlib.tools.mean(x, bounds=(0, 1), epsilon=0.5)

What changes, exactly
---------------------
The 21 concrete mechanism classes below have diffprivlib's names, subclass diffprivlib's
classes (and each other, as diffprivlib's do) and keep their keyword-only constructors;
they override ``randomise`` only.  diffprivlib keeps its validation, its calibration
(scales, ``_find_scale``, bias, variance, ``effective_epsilon``) and its accounting; every
random draw of a mechanism comes from dpfast:

========================  ==================================================================
Laplace, LaplaceTruncated, grid release (Mironov 2012) of exact discrete Laplace noise,
LaplaceFolded             then diffprivlib's truncation / folding (post-processing)
LaplaceBoundedDomain,     :func:`dpfast.random.laplace_truncated` on the grid (exact
LaplaceBoundedNoise       discrete Laplace conditioned on the domain / noise bound)
Gaussian, GaussianAnalytic grid release of exact discrete Gaussian noise
GaussianDiscrete          exact discrete Gaussian (Canonne, Kamath, Steinke 2020)
Geometric (+Truncated,    exact discrete Laplace, then truncation / folding
Folded)
Binary                    exact Bernoulli flip with a certified probability >= diffprivlib's
Exponential               dpfast's exact exponential mechanism (measure: log-weights)
PermuteAndFlip            dpfast's exact permute-and-flip
ExponentialCategorical,   dpfast's exact exponential mechanism over the targets
ExponentialHierarchical
Snapping                  diffprivlib's snapping arithmetic, dpfast's full-precision uniform
                          and sign bit
Staircase                 exact discrete staircase noise on the grid (Geng, Kairouz, Oh,
                          Viswanath 2015), exactly epsilon-DP in steps
Uniform                   exact uniform integer noise on the grid, exactly (0, delta)-DP
Vector                    diffprivlib's float algorithm on dpfast's simulation samplers
                          (continuous by design), with an ``InsecureRandomnessWarning``
Bingham                   an exact-law Kent-Ganeiber-Mardia rejection sampler (diffprivlib's
                          acceptance ratio is inverted: its output is not Bingham), in
                          floating point, with an ``InsecureRandomnessWarning``
========================  ==================================================================

The grid release rounds the input to the grid g = 2^k (about 2^-40 of the Laplace scale,
2^-24 of the Gaussian sigma) and adds integer noise in steps, so the output's low bits
carry nothing about the input.  Rounding moves the input by at most g/2, so neighbours
differ by at most ``sensitivity + g``: the noise is diffprivlib's calibration evaluated at
that sensitivity (scale and sigma are linear in it: a relative increase of g/sensitivity,
about 2^-40/epsilon).  Where diffprivlib's calibration is for a continuous law (Laplace,
Gaussian, the bounded-domain search), the discrete law on a grid that fine is used with
that calibration; the discrete Laplace is exactly as private as the continuous one at
equal scale in steps, the discrete Gaussian's privacy curve at equal sigma is the one
proved by Canonne, Kamath and Steinke (2020, Theorem 7), which agrees with the continuous
curve to well below diffprivlib's own bisection tolerance on this grid.  Staircase and
Uniform use the grid 2^k <= 2^-40 sensitivity and integer noise in steps that is exactly
private for a shift of ``floor(sensitivity / g) + 1`` steps (rounding included); the
output is the exact grid point rounded once to a double (``dpfast.compat._plans``).

Vector and Bingham have no grid form (their outputs are continuous: a perturbed objective,
a direction) and warn with :class:`~dpfast.InsecureRandomnessWarning` on every draw, as
dpfast's own ``mode="fast"`` does, attributed to the caller's line.

Randomness
----------
``random_state`` keeps diffprivlib's meaning: ``None``, numpy's global RandomState or a
``secrets.SystemRandom`` select dpfast's per-thread OS-keyed ChaCha20; an int or a
``RandomState`` selects a reproducible ChaCha20 stream keyed by four 32-bit words drawn
from ``RandomState(seed)`` (or from the given RandomState) the first time the mechanism
draws.  So ``random_state=s`` reproduces like ``RandomState(s)``, mechanisms that share
one RandomState get independent streams, and ``copy()`` (a shallow copy) shares the
stream, as it shares diffprivlib's.  Seeded streams are for tests, not for production.

Not routed (drawn by diffprivlib outside the mechanism classes)
---------------------------------------------------------------
* ``diffprivlib.tools.quantile`` (and ``percentile``, ``median``) picks the final point
  inside the chosen interval with ``random_state.random()``: numpy's global MT19937 when
  ``random_state=None``.  This draw is part of the DP release and stays diffprivlib's.
* ``models.RandomForestClassifier``/``DecisionTreeClassifier`` random splits and empty-leaf
  labels and ``models.KMeans`` initial centres: data-independent, diffprivlib's RNG.
* scikit-learn's own randomness in the models.

Patching
--------
:func:`patch` rebinds, by identity, every attribute of every loaded ``diffprivlib*``
module that *is* one of the 21 original classes or ``bernoulli_neg_exp`` (67 bindings in
0.6.6, 16 of them in models and tools, which import the classes by name).  It imports
``diffprivlib`` first (which imports all of its models and tools).  :func:`unpatch`
restores exactly what was rebound.  Both are idempotent and serialised by a lock;
:func:`patched` is a context manager that restores the previous state on exit.  Patching
is process-wide: objects created while patched keep their dpfast class after unpatching.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import sys
import threading
from collections.abc import Iterator
from fractions import Fraction
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core, _insecure
from .. import random as _random
from .. import randomized_response as _rr
from .. import selection as _sel
from .._active import NO_BUDGET
from .._errors import PrivacyParameterError
from ..random import ChaCha20
from . import _plans, require

require("diffprivlib", "diffprivlib")

import diffprivlib.mechanisms as _dm  # noqa: E402
from diffprivlib.mechanisms import base as _dm_base  # noqa: E402

__all__ = [
    "Binary",
    "Bingham",
    "Exponential",
    "ExponentialCategorical",
    "ExponentialHierarchical",
    "PermuteAndFlip",
    "Gaussian",
    "GaussianAnalytic",
    "GaussianDiscrete",
    "Geometric",
    "GeometricFolded",
    "GeometricTruncated",
    "Laplace",
    "LaplaceBoundedDomain",
    "LaplaceBoundedNoise",
    "LaplaceFolded",
    "LaplaceTruncated",
    "Snapping",
    "Staircase",
    "Uniform",
    "Vector",
    "bernoulli_neg_exp",
    "MECHANISMS",
    "patch",
    "unpatch",
    "patched",
    "is_patched",
]

_INF = math.inf


# ------------------------------------------------------------------ random_state -> dpfast


def _keyed_stream(rs: np.random.RandomState | np.random.Generator) -> ChaCha20:
    """A reproducible ChaCha20 keyed by four 32-bit words drawn from the RandomState (or
    numpy Generator)."""
    draw = rs.integers if isinstance(rs, np.random.Generator) else rs.randint
    words = draw(0, 2**32, size=4, dtype=np.uint64).astype("<u4")
    return ChaCha20(b"dpfast.compat.diffprivlib" + words.tobytes())


def _stream_of(src: object) -> ChaCha20 | None:
    """The dpfast generator for a diffprivlib random source (None: the thread's CSPRNG)."""
    if (
        src is None
        or isinstance(src, secrets.SystemRandom)
        or src is np.random.mtrand._rand
    ):
        return None
    if isinstance(src, (int, np.integer)) and not isinstance(src, bool):
        return _keyed_stream(np.random.RandomState(src))
    if isinstance(src, (np.random.RandomState, np.random.Generator)):
        return _keyed_stream(src)
    raise ValueError(f"{src!r} cannot be used to seed a dpfast stream")


def _rng(mech: Any) -> ChaCha20 | None:
    """The mechanism's dpfast generator, derived once per random source (see module doc)."""
    src = mech._rng
    # random_state=None is the CSPRNG, also where diffprivlib swapped its SystemRandom
    # for an OS-seeded numpy Generator (Staircase)
    if type(src) is secrets.SystemRandom or mech.__dict__.get("random_state", 0) is None:
        return None
    cached = mech.__dict__.get("_dpfast_stream")
    if cached is not None and cached[0] is src:
        stream = cached[1]
    else:
        stream = _stream_of(src)
        mech.__dict__["_dpfast_stream"] = (src, stream)
    if stream is not None:  # seeded: predictable noise, as everywhere in dpfast
        _insecure.warn_rng(stream)
    return stream


# ------------------------------------------------------------------ releases


def _laplace_plan(scale: float, sensitivity: float | None) -> tuple[int, Any]:
    return _plans.laplace(scale, sensitivity)


def _laplace_release(
    mech: Any, value: float, scale: float, sensitivity: float | None
) -> float:
    x = _plans.private_double(value)
    if scale == 0.0:
        return x  # diffprivlib returns value (+/- 0 noise)
    k, sampler = _plans.laplace(scale, sensitivity)  # public: refused before x is read
    if not -_INF < x < _INF:
        return x  # inf stays inf, NaN stays NaN, as in diffprivlib
    return _core.grid_release(sampler, x, k, _rng(mech))


_exact_rational = _plans.rational


# ------------------------------------------------------------------ Laplace family


class Laplace(_dm.Laplace):
    __doc__ = _dm.Laplace.__doc__

    def randomise(self, value: float) -> float:
        self._check_all(value)
        denom = self.epsilon - (math.log1p(-self.delta) if self.delta < 1 else -_INF)
        return _laplace_release(self, value, self.sensitivity / denom, self.sensitivity)


class LaplaceTruncated(_dm.LaplaceTruncated, Laplace):
    __doc__ = _dm.LaplaceTruncated.__doc__

    def randomise(self, value: float) -> float:
        self._check_all(value)
        return self._truncate(Laplace.randomise(self, value))


def _reflect(value: Any, lower: float, upper: float) -> Any:
    """diffprivlib's fold (reflect at the nearer bound until inside [lower, upper]), with
    no recursion: its own recursion never ends for lower == upper or a value far
    outside (a private value must not raise).  The first 64 reflections are diffprivlib's
    float arithmetic (the same answer); beyond them, or for an int, the fold is exact:
    lower + the distance to lower modulo 2 (upper - lower), reflected once.
    Post-processing of the noisy value, so it costs no privacy.  (diffprivlib's own
    ``_fold`` stays as it is: the shim overrides ``randomise`` only.)"""
    if isinstance(value, float):
        if value != value:
            return value
        if value in (_INF, -_INF):
            return float(upper if value > 0 else lower)
        for _ in range(64):
            if value < lower:
                value = 2 * lower - value
            elif value > upper:
                value = 2 * upper - value
            else:
                return value
    if not (math.isfinite(lower) and math.isfinite(upper)):  # one reflection at most
        if math.isfinite(upper) and value > upper:
            return float(2 * Fraction(upper) - Fraction(value))
        if math.isfinite(lower) and value < lower:
            return float(2 * Fraction(lower) - Fraction(value))
        return _plans.private_double(value)
    lo, hi = Fraction(lower), Fraction(upper)
    width = hi - lo
    if width == 0:
        return float(lower)
    y = (Fraction(value) - lo) % (2 * width)
    return float(lo + (2 * width - y if y > width else y))


class LaplaceFolded(_dm.LaplaceFolded, Laplace):
    __doc__ = _dm.LaplaceFolded.__doc__

    def randomise(self, value: float) -> float:
        self._check_all(value)
        return _reflect(Laplace.randomise(self, value), self.lower, self.upper)


def _bounded_domain_scale(mech: Any) -> tuple[float, float | None]:
    """diffprivlib's bounded-domain scale search at sensitivity + g (module docstring)."""
    key = (mech.epsilon, mech.delta, mech.sensitivity, mech.lower, mech.upper)
    cached = mech.__dict__.get("_dpfast_bd")
    if cached is not None and cached[0] == key:
        return cached[1]
    if mech._scale is None:
        mech._scale = mech._find_scale()
    scale = mech._scale
    plan: tuple[float, float | None]
    if scale == 0.0:
        plan = (0.0, None)
    else:
        k = _random._bounded_grid(scale, mech.lower, mech.upper, None)[0]
        shadow = _dm.LaplaceBoundedDomain.copy(mech)
        shadow.sensitivity = mech.sensitivity + math.ldexp(1.0, k)
        scale = _dm.LaplaceBoundedDomain._find_scale(shadow)
        plan = (scale, math.ldexp(1.0, k))
    mech.__dict__["_dpfast_bd"] = (key, plan)
    return plan


class LaplaceBoundedDomain(_dm.LaplaceBoundedDomain, LaplaceTruncated):
    __doc__ = _dm.LaplaceBoundedDomain.__doc__

    def randomise(self, value: float) -> float:
        self._check_all(value)
        scale, g = _bounded_domain_scale(self)  # public, before the value
        x = _plans.private_double(max(min(value, self.upper), self.lower))
        if x != x or scale == 0.0:
            return x
        return _random.laplace_truncated(
            x, scale, self.lower, self.upper, rng=_rng(self), granularity=g
        )


class LaplaceBoundedNoise(_dm.LaplaceBoundedNoise, Laplace):
    __doc__ = _dm.LaplaceBoundedNoise.__doc__

    def randomise(self, value: float) -> float:
        self._check_all(value)
        this: Any = self  # _scale, _noise_bound: diffprivlib's, None until set
        if this._scale is None or this._noise_bound is None:
            this._scale = self.sensitivity / self.epsilon
            with np.errstate(over="ignore", invalid="ignore"):  # _noise_plan refuses
                this._noise_bound = (
                    0
                    if this._scale == 0
                    else this._scale
                    * np.log(1 + (np.exp(self.epsilon) - 1) / 2 / self.delta)
                )
        x = _plans.private_double(value)
        if this._scale == 0:
            return x
        key = ("bn", self.epsilon, self.delta, self.sensitivity)
        k, scale, bound = _exact_rational(key, self._noise_plan)  # public, before x
        if not -_INF < x < _INF:
            return x
        # the noise is a grid multiple; adding it to the grid-rounded value is one rounding
        z = _random.laplace_truncated(
            0.0, scale, -bound, bound, rng=_rng(self), granularity=math.ldexp(1.0, k)
        )
        return _plans.grid_shift(x, int(math.ldexp(z, -k)), k)  # z / 2^k: exact

    def _noise_plan(self) -> tuple[int, float, float]:
        """diffprivlib's scale and noise bound at sensitivity + g, on the grid g."""
        this: Any = self
        eps, delta = float(self.epsilon), float(self.delta)
        # log(1 + (e^eps - 1)/(2 delta)) <= eps - log(2 delta) when e^eps overflows
        # (delta <= 1/2): a larger bound truncates less, never a smaller one
        tail = (
            math.log1p(math.expm1(eps) / 2 / delta)
            if eps < 700.0
            else eps - math.log(2 * delta)
        )
        if not (0.0 < this._scale < _INF and 0.0 < this._scale * tail < _INF):
            raise PrivacyParameterError(
                "LaplaceBoundedNoise: sensitivity / epsilon and its noise bound must be "
                f"finite positive doubles; got epsilon={eps!r}, delta={delta!r}, "
                f"sensitivity={self.sensitivity!r}"
            )
        reach = this._noise_bound if 0.0 < this._noise_bound < _INF else this._scale * tail
        k = _random._bounded_grid(this._scale, -reach, reach, None)[0]
        scale = (self.sensitivity + math.ldexp(1.0, k)) / eps
        bound = scale * tail
        if not (0.0 < scale < _INF and 0.0 < bound < _INF):
            raise PrivacyParameterError(
                "LaplaceBoundedNoise: the noise bound on the grid exceeds the doubles; "
                f"got epsilon={eps!r}, sensitivity={self.sensitivity!r}"
            )
        return k, scale, bound


# ------------------------------------------------------------------ Gaussian family


class Gaussian(_dm.Gaussian):
    __doc__ = _dm.Gaussian.__doc__

    def randomise(self, value: float) -> float:
        self._check_all(value)
        x = _plans.private_double(value)
        sigma = self._scale
        if sigma == 0.0:
            return x
        k, sampler = _plans.gauss(sigma, self.sensitivity)  # public, before x is read
        if not -_INF < x < _INF:
            return x
        return _core.grid_release(sampler, x, k, _rng(self))


class GaussianAnalytic(_dm.GaussianAnalytic, Gaussian):
    __doc__ = _dm.GaussianAnalytic.__doc__

    def randomise(self, value: float) -> float:
        return Gaussian.randomise(self, value)


class GaussianDiscrete(_dm.GaussianDiscrete):
    __doc__ = _dm.GaussianDiscrete.__doc__

    def randomise(self, value: int) -> int:
        self._check_all(value)
        sigma = self._scale
        if sigma == 0:
            return value
        num, den = _exact_rational(("dg", sigma), _random._sigma_rational, sigma)
        z = _core.discrete(_core.DISCRETE_GAUSSIAN, num, den, None, _rng(self))
        return int(value) + z  # a Python int: a private uint64/int64 never wraps


# ------------------------------------------------------------------ geometric family


def _scale_of(numerator: float, denominator: float) -> tuple[int, int]:
    """The exact rational numerator/denominator as the samplers' (num, den), rounded up."""
    return _random._scale_rational(Fraction(numerator) / Fraction(denominator))


def _dlap_draw(mech: Any) -> int:
    """Exact discrete Laplace of scale sensitivity/epsilon (q = exp(-epsilon/sensitivity))."""
    key = ("dl", mech.epsilon, mech.sensitivity)
    num, den = _exact_rational(key, _scale_of, mech.sensitivity, mech.epsilon)
    return _core.discrete(_core.DISCRETE_LAPLACE, num, den, None, _rng(mech))


class Geometric(_dm.Geometric):
    __doc__ = _dm.Geometric.__doc__

    def randomise(self, value: int) -> int:
        self._check_all(value)
        if self.sensitivity == 0 or self.epsilon == _INF:
            return int(value)
        return int(value) + _dlap_draw(self)


class GeometricTruncated(_dm.GeometricTruncated, Geometric):
    __doc__ = _dm.GeometricTruncated.__doc__

    def randomise(self, value: int) -> int:
        self._check_all(value)
        return int(np.round(self._truncate(Geometric.randomise(self, value))))


class GeometricFolded(_dm.GeometricFolded, Geometric):
    __doc__ = _dm.GeometricFolded.__doc__

    def randomise(self, value: int) -> int:
        self._check_all(value)
        return int(
            np.round(_reflect(Geometric.randomise(self, value), self.lower, self.upper))
        )


# ------------------------------------------------------------------ Binary


def _binary_flip(epsilon: float, delta: float) -> tuple[int, int]:
    """(t, 2^63): a flip probability t/2^63 >= diffprivlib's (1 - delta)/(e^eps + 1),
    from randomized response's certified threshold (cached per epsilon), rounded up."""
    if epsilon == _INF:
        return 0, 1
    t = _rr._flip_threshold(epsilon, 2) if epsilon > 0 else 2**63
    t = 2**63 if t is None else t
    if delta:
        keep = 1 - Fraction(delta)  # exact: 1 - delta in float could round down
        t = -((-t * keep.numerator) // keep.denominator)
    return -(-t // 2), 2**63  # the sampler takes 64-bit denominators


class Binary(_dm.Binary):
    __doc__ = _dm.Binary.__doc__

    def randomise(self, value: str) -> str:
        self._check_all(value)
        num, den = _exact_rational(
            ("bin", self.epsilon, self.delta), _binary_flip, self.epsilon, self.delta
        )
        flip = num and _core.discrete(_core.BERNOULLI, num, den, None, _rng(self))
        if flip:
            return self.value1 if value == self.value0 else self.value0
        return value


# ------------------------------------------------------------------ selection


def _uniform_index(n: int, rng: ChaCha20 | None) -> int:
    return int(_core.uniform_below(n, None, rng))


def _utility_array(mech: Any) -> npt.NDArray[np.float64]:
    """The utilities as a float64 array, converted once per content (public values)."""
    key = tuple(mech.utility)
    cached = mech.__dict__.get("_dpfast_utility")
    if cached is None or cached[0] != key:
        cached = mech.__dict__["_dpfast_utility"] = (key, np.asarray(key, dtype=np.float64))
    return cached[1]


def _select(
    scores: npt.NDArray[Any],
    epsilon: float,
    sensitivity: float,
    monotonic: bool,
    rng: ChaCha20 | None,
    flip: bool,
) -> int:
    """Index drawn by dpfast's exact exponential mechanism (or permute-and-flip)."""
    fn = _sel.permute_and_flip if flip else _sel.exponential_mechanism
    # diffprivlib's own accountant charges its mechanisms: never dpfast's active budget
    return fn(
        scores,
        epsilon=epsilon,
        sensitivity=sensitivity,
        monotonic=monotonic,
        rng=rng,
        budget=NO_BUDGET,
    )


def _best_only(utility: npt.NDArray[Any], rng: ChaCha20 | None) -> int:
    """epsilon = inf or sensitivity = 0: uniform over the maximisers (diffprivlib's law)."""
    u = np.asarray(utility, dtype=float)
    best = np.flatnonzero(np.isclose(u - u.max(), 0))
    return int(best[_uniform_index(best.size, rng)])


class Exponential(_dm.Exponential):
    __doc__ = _dm.Exponential.__doc__

    def randomise(self, value: None = None) -> Any:
        self._check_all(value)
        rng = _rng(self)
        if not self.sensitivity / self.epsilon > 0:
            idx = _best_only(self.utility, rng) if not self.measure else self._measured(rng)
        elif self.measure:
            idx = self._measured(rng)
        else:
            idx = _select(
                self.utility, self.epsilon, self.sensitivity, self.monotonic, rng, False
            )
        return self.candidates[idx] if self.candidates else idx

    def _measured(self, rng: ChaCha20 | None) -> int:
        """A base measure m multiplies each weight: exp(eps u/(c D)) m = exp(eps u'/(c D))
        with u' = u + c D ln(m)/eps (public), candidates of measure 0 excluded."""
        m = np.asarray(self.measure, dtype=float)
        keep = np.flatnonzero(m > 0)
        u = np.asarray(self.utility, dtype=float)[keep]
        if not self.sensitivity / self.epsilon > 0:
            best = keep[np.isclose(u - u.max(), 0)]
            w = m[best]
            # exact weights only for equal measures; diffprivlib's own law otherwise
            if np.all(w == w[0]):
                return int(best[_uniform_index(best.size, rng)])
            return int(
                best[
                    _sel.exponential_release(  # diffprivlib's accountant charges
                        np.log(w), epsilon=2.0, sensitivity=1.0, rng=_core.secure_rng(rng)
                    )
                ]
            )
        c = 2 - self.monotonic
        shifted = u + c * self.sensitivity * np.log(m[keep]) / self.epsilon
        return int(
            keep[
                _select(shifted, self.epsilon, self.sensitivity, self.monotonic, rng, False)
            ]
        )


class PermuteAndFlip(_dm.PermuteAndFlip, Exponential):
    __doc__ = _dm.PermuteAndFlip.__doc__

    def randomise(self, value: None = None) -> Any:
        self._check_all(value)
        rng = _rng(self)
        if not self.sensitivity / self.epsilon > 0:
            idx = _best_only(self.utility, rng)
        else:
            idx = _select(
                _utility_array(self),
                self.epsilon,
                self.sensitivity,
                self.monotonic,
                rng,
                True,
            )
        return self.candidates[idx] if self.candidates else idx


class ExponentialCategorical(_dm.ExponentialCategorical):
    __doc__ = _dm.ExponentialCategorical.__doc__

    def randomise(self, value: Any) -> Any:
        self._check_all(value)
        targets = list(self._normalising_constant.keys())
        rng = _rng(self)
        dist = np.array([self._get_utility(value, t) for t in targets], dtype=float)
        if self.epsilon == 0:
            return targets[_uniform_index(len(targets), rng)]
        if self.epsilon == _INF or self._sensitivity == 0:
            return value
        # P(t) ∝ exp(-eps d / (f D)), f = 1 (balanced tree) or 2: dpfast's exponent is
        # eps u / (2 D'), so D' = f D / 2 with u = -d
        f = 1 if self._balanced_tree else 2
        return targets[
            _sel.exponential_release(  # diffprivlib's accountant charges
                -dist,
                epsilon=self.epsilon,
                sensitivity=f * self._sensitivity / 2,
                rng=_core.secure_rng(rng),
            )
        ]


class ExponentialHierarchical(_dm.ExponentialHierarchical, ExponentialCategorical):
    __doc__ = _dm.ExponentialHierarchical.__doc__

    def randomise(self, value: Any) -> Any:
        return ExponentialCategorical.randomise(self, value)


# ------------------------------------------------------------------ Snapping, Staircase, ...


def _uniform_open(rng: ChaCha20 | None) -> float:
    """Full-precision uniform on (0, 1) (0 has probability below 2^-1000: redraw)."""
    while True:
        u = _random.uniform_full_precision(rng=rng)
        if u > 0.0:
            return u


class Snapping(_dm.Snapping, LaplaceTruncated):
    __doc__ = _dm.Snapping.__doc__

    def randomise(self, value: float) -> float:
        # diffprivlib's snapping arithmetic (Mironov 2012, section 5.2) with dpfast's
        # full-precision uniform and sign bit
        self._check_all(value)
        if self.sensitivity == 0:
            return self._truncate(value)
        rng = _rng(self)
        value = _plans.private_double(value)  # an int beyond the doubles saturates
        value_clamped = self._truncate(self._scale_and_offset_value(value))
        scale = 1.0 / self.effective_epsilon()
        lambda_ = self._get_nearest_power_of_2(scale)
        sign = _core.discrete(_core.BERNOULLI, 1, 2, None, rng)
        laplace = scale * self._laplace_sampler(sign, _uniform_open(rng))
        value_rounded = self._round_to_nearest_power_of_2(value_clamped + laplace, lambda_)
        return self._reverse_scale_and_offset_value(self._truncate(value_rounded))


class Staircase(_dm.Staircase, Laplace):
    __doc__ = _dm.Staircase.__doc__

    def randomise(self, value: float) -> float:
        # Geng, Kairouz, Oh, Viswanath (2015) on the grid 2^k (about 2^-40 of the
        # sensitivity): exact discrete staircase noise in steps, exactly epsilon-DP for a
        # shift of the stair width, which covers the sensitivity plus the rounding
        # (_plans.staircase)
        self._check_all(value)
        x = _plans.private_double(value)
        if self.sensitivity == 0.0 or self.epsilon == _INF:
            return x + 0.0  # diffprivlib: value + 0 noise (epsilon = inf: no noise)
        plan = _plans.staircase(self.epsilon, self.sensitivity, self.gamma)  # public
        if not -_INF < x < _INF:
            return x
        return _plans.staircase_release(plan, x, _rng(self))


class Uniform(_dm.Uniform):
    __doc__ = _dm.Uniform.__doc__

    def randomise(self, value: float) -> float:
        # uniform integer noise on the grid 2^k (about 2^-40 of the sensitivity): exactly
        # (0, delta)-DP for a shift of the sensitivity plus the rounding (_plans.uniform)
        self._check_all(value)
        x = _plans.private_double(value)
        if self.sensitivity == 0.0:
            return x + 0.0
        plan = _plans.uniform(self.delta, self.sensitivity)  # public, before x
        if not -_INF < x < _INF:
            return x
        return _plans.uniform_release(plan, x, _rng(self))


_FLOAT_SAMPLER = (
    "diffprivlib's {} mechanism draws continuous floating-point noise with dpfast's "
    "simulation samplers ({}): not grid-hardened, not safe against floating-point attacks "
    "(Mironov 2012); for simulation only, never for a real release (docs/backends.md)"
)
_VECTOR_WARNING = _FLOAT_SAMPLER.format("Vector", "a Gamma norm times a Gaussian direction")
_BINGHAM_WARNING = _FLOAT_SAMPLER.format(
    "Bingham", "Gaussian proposals and a floating-point acceptance test"
)


class Vector(_dm.Vector):
    __doc__ = _dm.Vector.__doc__

    def randomise(self, value: Any) -> Any:
        # Chaudhuri, Monteleoni, Sarwate (2011), objective perturbation, as diffprivlib
        # calibrates it: a uniform direction times a Gamma(d, 2 D/eps') norm.  Continuous
        # by design (the released model is the optimum of a float objective): the
        # simulation path, with an InsecureRandomnessWarning as dpfast's mode="fast"
        self._check_all(value)
        _insecure._warn(_VECTOR_WARNING)
        epsilon_p = self.epsilon - 2 * np.log(
            1 + self.function_sensitivity * self.data_sensitivity / self.alpha
        )
        delta = 0
        if epsilon_p <= 0:
            delta = (
                self.function_sensitivity
                * self.data_sensitivity
                / np.expm1(self.epsilon / 4)
                - self.alpha
            ) / self.n
            epsilon_p = self.epsilon / 2
        scale = self.data_sensitivity * 2 / epsilon_p
        rng = _rng(self)
        direction = _random.normal(scale=1.0, size=self.dimension, rng=rng)
        noisy_norm = _random.gamma(self.dimension, scale, rng=rng) if scale > 0 else 0.0
        noise = direction / np.linalg.norm(direction, 2) * noisy_norm
        n = self.n

        def output_func(*args: Any) -> Any:
            input_vec = args[0]
            func = value(*args)
            if isinstance(func, tuple):
                func, grad = func
            else:
                grad = None
            func += np.dot(noise, input_vec) / n
            func += 0.5 * delta * np.dot(input_vec, input_vec)
            if grad is not None:
                grad += noise / n + delta * input_vec
                return func, grad
            return func

        return output_func


class Bingham(_dm.Bingham):
    __doc__ = _dm.Bingham.__doc__

    def randomise(self, value: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        """An exact draw from the Bingham law diffprivlib targets.

        Target on the unit sphere: density ∝ exp(-u'Au) with
        A = eps (lambda_max I - M) / (4 D) (Kapralov & Talwar 2013, as diffprivlib sets
        it).  Kent, Ganeiber, Mardia (2018): propose u = y/|y| with y ~ N(0, Omega^-1),
        Omega = I + 2A/b, whose density on the sphere is ∝ (u'Omega u)^(-d/2); since
        u'Omega u = 1 + 2 u'Au/b, exp(-s)(1 + 2s/b)^(d/2) <= M = e^(-(d-b)/2) (d/b)^(d/2)
        for every s >= 0 and 0 < b <= d, so accepting with probability
        exp(-u'Au) (u'Omega u)^(d/2) / M is exact.  (diffprivlib divides by
        (u'Omega u)^(d/2) instead of multiplying.)  b solves sum 1/(b + 2 lambda_i) = 1,
        which only makes acceptance efficient.  Floating-point sampler: the simulation
        path, with an InsecureRandomnessWarning as dpfast's mode="fast".
        """
        self._check_all(value)
        _insecure._warn(_BINGHAM_WARNING)
        eigvals, eigvecs = np.linalg.eigh(value)
        dims = value.shape[0]
        if dims == 1:
            return np.ones((1, 1))
        if self.sensitivity / self.epsilon == 0:
            return eigvecs[:, eigvals.argmax()]
        a = self.epsilon * (eigvals.max() * np.eye(dims) - value) / 4 / self.sensitivity
        lam = np.linalg.eigvalsh(a).tolist()
        lo, hi = 0.0, float(dims)
        for _ in range(64):  # to double precision; any b in (0, d] is exact
            b = 0.5 * (lo + hi)
            if math.fsum(1.0 / (b + 2.0 * v) for v in lam) > 1.0:
                lo = b
            else:
                hi = b
        b = hi
        omega = np.eye(dims) + 2.0 * a / b
        chol = np.linalg.cholesky(np.linalg.inv(omega))
        log_m = -(dims - b) / 2 + dims / 2 * math.log(dims / b)
        rng = _rng(self)
        while True:
            y = chol @ _random.normal(scale=1.0, size=dims, rng=rng)
            u = y / np.linalg.norm(y)
            log_ratio = -u @ a @ u + dims / 2 * math.log(u @ omega @ u) - log_m
            if math.log(_uniform_open(rng)) <= min(log_ratio, 0.0):
                return u


# ------------------------------------------------------------------ bernoulli_neg_exp


def bernoulli_neg_exp(gamma: float, random_state: Any = None) -> int:
    """One exact Bernoulli(exp(-gamma)) draw (0 or 1), as diffprivlib's, from dpfast.

    ``gamma`` is used at its exact binary value (dpfast.random.bernoulli_exp, Canonne,
    Kamath, Steinke 2020, Algorithm 1).  ``ValueError`` if gamma < 0; ``random_state`` as
    in the mechanisms (module docstring)."""
    if gamma < 0:
        raise ValueError(f"Gamma must be non-negative, got {gamma}.")
    src = _dm_base.check_random_state(random_state, True)
    if gamma == _INF:
        return 0  # exp(-inf) = 0
    return int(_random.bernoulli_exp(gamma, rng=_stream_of(src)))


MECHANISMS = {
    cls.__name__: cls
    for cls in (
        Binary,
        Bingham,
        Exponential,
        ExponentialCategorical,
        ExponentialHierarchical,
        PermuteAndFlip,
        Gaussian,
        GaussianAnalytic,
        GaussianDiscrete,
        Geometric,
        GeometricFolded,
        GeometricTruncated,
        Laplace,
        LaplaceBoundedDomain,
        LaplaceBoundedNoise,
        LaplaceFolded,
        LaplaceTruncated,
        Snapping,
        Staircase,
        Uniform,
        Vector,
    )
}

for _cls in MECHANISMS.values():
    _cls.__module__ = __name__
del _cls


# ------------------------------------------------------------------ patch / unpatch

_ORIGINALS: dict[int, tuple[Any, Any]] = {
    id(getattr(_dm, name)): (getattr(_dm, name), shim) for name, shim in MECHANISMS.items()
}
_ORIGINALS[id(_dm_base.bernoulli_neg_exp)] = (_dm_base.bernoulli_neg_exp, bernoulli_neg_exp)
_LOCK = threading.RLock()
# (module, attribute name, original) of every binding we replaced
_REBOUND: list[tuple[ModuleType, str, Any]] = []
_STATE = {"explicit": False, "depth": 0}


def _diffprivlib_modules() -> list[ModuleType]:
    return [
        m
        for name, m in list(sys.modules.items())
        if m is not None and (name == "diffprivlib" or name.startswith("diffprivlib."))
    ]


def _apply() -> int:
    import diffprivlib.models  # noqa: F401  (diffprivlib imports them; be explicit)
    import diffprivlib.tools  # noqa: F401

    count = 0
    for module in _diffprivlib_modules():
        for attr, obj in list(vars(module).items()):
            entry = _ORIGINALS.get(id(obj))
            if entry is not None and entry[0] is obj:
                setattr(module, attr, entry[1])
                _REBOUND.append((module, attr, obj))
                count += 1
    return count


def _restore() -> None:
    while _REBOUND:
        module, attr, original = _REBOUND.pop()
        if vars(module).get(attr) is _ORIGINALS[id(original)][1]:
            setattr(module, attr, original)


def patch() -> int:
    """Make every loaded diffprivlib module use the dpfast classes (idempotent).

    Returns the number of bindings rebound by this call (0 when already patched; a
    second call also catches diffprivlib modules imported since the first)."""
    with _LOCK:
        _STATE["explicit"] = True
        return _apply()


def unpatch() -> None:
    """Restore every binding that :func:`patch` or :func:`patched` replaced (idempotent)."""
    with _LOCK:
        _STATE["explicit"] = False
        _restore()


def is_patched() -> bool:
    """True while diffprivlib's bindings point at the dpfast classes."""
    with _LOCK:
        return bool(_REBOUND)


@contextlib.contextmanager
def patched() -> Iterator[ModuleType]:
    """Context manager: diffprivlib uses dpfast inside the block.

    Nests and overlaps across threads: the bindings are restored when the last open
    block exits, unless :func:`patch` was called explicitly."""
    with _LOCK:
        _STATE["depth"] += 1
        _apply()
    try:
        yield sys.modules[__name__]
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and not _STATE["explicit"]:
                _restore()
