"""dpfast measurements for OpenDP (``pip install dpfast[opendp]``, OpenDP 0.16).

OpenDP's samplers and RNG are compiled into its Rust core and have no plug-in point; an
external sampler enters as a whole *user measurement* whose privacy map OpenDP trusts.
The constructors here build such measurements with OpenDP's partial-able signature
``(input_domain, input_metric, scale, ...)``, so they chain (``>>``), compose and, after
:func:`register`, work in the Context API (including its parameter search)::

    import opendp.prelude as dp
    from dpfast import opendp as dpo
    dp.enable_features("contrib", "honest-but-curious")      # your decision, see below
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    meas = dpo.make_laplace(*space, scale=2.0)
    meas(10.0), meas.map(1.0)                                 # 10.0 + noise, 0.5

OpenDP requires the ``contrib`` and ``honest-but-curious`` features for any user
measurement: by enabling them you accept that OpenDP trusts dpfast's privacy maps.  dpfast
never enables them for you; without them the constructors raise
:class:`~dpfast.DPFastError` naming the missing flags.

Laws and privacy maps
---------------------
* Integers (``T=i32``, ``i64``, ...): exact discrete Laplace / discrete Gaussian noise of
  exactly ``scale`` (Canonne, Kamath, Steinke 2020), the laws of OpenDP's own
  ``make_laplace`` / ``make_gaussian`` on integers; the maps are OpenDP's:
  ``d_in / scale`` (max-divergence) and ``d_in^2 / (2 scale^2)`` (zCDP), rounded up.
* Floats: floating-point safe release on a power-of-two grid g (Mironov 2012): the input
  is rounded to g (2^-44 of the scale for Laplace, 2^-30 of sigma for Gaussian), integer
  noise of ``scale / g`` steps is added exactly and the sum is rounded to a double once.
  Rounding can move each of the n coordinates by g/2, so the map charges it:
  ``(d_in + n g) / scale`` and ``(d_in + ceil(sqrt n) g)^2 / (2 scale^2)`` for d_in > 0
  (0 at d_in = 0).  OpenDP's built-ins avoid the term with big-integer arithmetic on the
  2^-1074 grid (17 us per element); here it is a relative excess of ``n g / d_in``
  (below 1e-12 for atoms at ``scale / d_in <= 17``).  Float vectors therefore need a
  known length: ``vector_domain(atom_domain(T=float, nan=False), size=n)``.
* :func:`make_noisy_max`: OpenDP's report-noisy-max.  ``max_divergence``: exponential
  noise, i.e. permute-and-flip (Ding et al. 2021), map ``2 d_in / scale`` (``d_in /
  scale`` for a monotonic metric); ``zero_concentrated_divergence``: Gumbel noise, i.e. the
  exponential mechanism, map ``(2 d_in / scale)^2 / 8`` (bounded range, Cesar & Rogers
  2021).  dpfast's exact samplers (csrc/selection.c) run at a rate at most the nominal
  one, so the maps hold.
* :func:`make_randomized_response_bool`: dpfast's certified randomized response; map
  ``ln(p / (1 - p))`` for d_in > 0.

Every draw uses dpfast's per-thread OS-keyed ChaCha20.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from . import _validation as _v
from . import mechanisms as _mech
from . import random as _random
from . import selection as _sel
from ._active import NO_BUDGET
from ._errors import DPFastError
from ._plans import GRID_BITS, grid_exponent
from ._privacy import (
    float_up_finite as _up,  # a bound promised to OpenDP: the smallest double >= q
)
from ._typing import Real
from .compat import require
from .randomized_response import randomized_response as _rr

_dp_mod = require("opendp.mod", "opendp")
import opendp.prelude as dp  # noqa: E402

if TYPE_CHECKING:
    from opendp.mod import Domain, Measure, Measurement, Metric

__all__ = [
    "make_laplace",
    "make_discrete_laplace",
    "make_gaussian",
    "make_discrete_gaussian",
    "make_noisy_max",
    "make_randomized_response_bool",
    "register",
    "CONSTRUCTORS",
]

_INT_RANGES = {
    "i8": 8,
    "i16": 16,
    "i32": 32,
    "i64": 64,
    "u8": 8,
    "u16": 16,
    "u32": 32,
    "u64": 64,
    "isize": 64,
    "usize": 64,
}
_FEATURES = ("contrib", "honest-but-curious")


def _require_features() -> None:
    missing = [f for f in _FEATURES if f not in _dp_mod.GLOBAL_FEATURES]
    if missing:
        raise DPFastError(
            "dpfast.opendp builds OpenDP user measurements, which OpenDP allows only with the "
            f"feature flags {', '.join(repr(f) for f in _FEATURES)}; not enabled: "
            f"{', '.join(repr(f) for f in missing)}.  Enabling 'honest-but-curious' means "
            "OpenDP trusts dpfast's privacy maps: if you accept that, call "
            "opendp.prelude.enable_features('contrib', 'honest-but-curious') yourself "
            "(dpfast never does)"
        )


def _space(input_domain: Any) -> tuple[str, bool, int | None]:
    """(element type name, is_vector, size or None) of an atom or vector domain."""
    if hasattr(input_domain, "element_domain"):
        return str(input_domain.element_domain.carrier_type), True, input_domain.size
    return str(input_domain.carrier_type), False, None


def _output_type(elem: str, vector: bool) -> str:
    return f"Vec<{elem}>" if vector else elem


def _int_caster(elem: str, vector: bool) -> Callable[[Any], Any]:
    """Post-processing back into the carrier type: saturate at its range."""
    bits = _INT_RANGES[elem]
    lo, hi = (
        (0, 2**bits - 1)
        if elem.startswith("u")
        else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    )
    lo, hi = max(lo, -(2**63)), min(hi, 2**63 - 1)
    if vector:
        return lambda z: np.clip(z, lo, hi).tolist()
    return lambda z: min(max(int(z), lo), hi)


def _scale(name: str, scale: Real) -> float:
    return _v.positive(name, scale)


def _user(
    input_domain: Any,
    input_metric: Any,
    output_measure: Any,
    function: Callable[[Any], Any],
    privacy_map: Callable[[Any], float],
    elem: str,
    vector: bool,
) -> Measurement:
    _require_features()
    return dp.m.make_user_measurement(
        input_domain,
        input_metric,
        output_measure,
        function,
        privacy_map,
        TO=_output_type(elem, vector),
    )


def _float_n(elem: str, vector: bool, size: int | None, what: str) -> int:
    if not vector:
        return 1
    if size is None:
        raise _v.PrivacyParameterError(
            f"{what} on float vectors charges the rounding of each coordinate to the grid, so "
            "it needs the vector's length: use vector_domain(atom_domain(T=float, nan=False), "
            "size=n)"
        )
    return int(size)


def _grid_function(
    sampler: _core.DiscreteLaplaceExact | _core.DiscreteGaussianExact, k: int, vector: bool
) -> Callable[[Any], Any]:
    """The release function of a float measurement: grid release with a prepared sampler."""

    def function(x: Any) -> Any:
        return _core.grid_release(
            sampler, np.asarray(x, np.float64) if vector else x, k, None
        )

    return function


def _int_function(
    sampler: _core.DiscreteLaplaceExact | _core.DiscreteGaussianExact,
    elem: str,
    vector: bool,
) -> Callable[[Any], Any]:
    """The release function of an integer measurement: exact noise, saturated to the type."""
    cast = _int_caster(elem, vector)

    def function(x: Any) -> Any:
        return cast(
            _core.int_release(sampler, np.asarray(x, np.int64) if vector else x, None)
        )

    return function


def _prologue(
    builtin: Callable[..., Any], input_domain: Any, input_metric: Any, scale: Real, k: None
) -> tuple[float, str, bool, int | None]:
    """Checks common to the noise constructors; returns (scale, element type, is_vector,
    size).  OpenDP's own constructor validates the domain/metric pair as it would."""
    _require_features()
    scale = _scale("scale", scale)
    if k is not None:
        raise TypeError("k is chosen by dpfast (module docstring); pass k=None")
    builtin(input_domain, input_metric, scale)
    return (scale,) + _space(input_domain)


def _integers_only(
    ctor: Callable[..., Measurement], input_domain: Any, input_metric: Any, scale: Real
) -> Measurement:
    elem, _, _ = _space(input_domain)
    if elem not in _INT_RANGES:
        raise TypeError(
            f"{ctor.__name__.replace('make_', 'make_discrete_')} needs an "
            f"integer domain; got {elem}"
        )
    return ctor(input_domain, input_metric, scale)


# ------------------------------------------------------------------ Laplace


def make_laplace(
    input_domain: Domain,
    input_metric: Metric,
    scale: Real,
    k: None = None,
) -> Measurement:
    """Laplace noise (discrete Laplace on integers) of ``scale``: a max-divergence
    measurement, as ``opendp.measurements.make_laplace``.

    Parameters
    ----------
    input_domain : atom_domain(T) or vector_domain(atom_domain(T)) with T float
        (``nan=False``; vectors need ``size=``) or an integer type
    input_metric : absolute_distance (atoms) or l1_distance (vectors)
    scale : float > 0
    k : None
        Accepted for signature compatibility only (the grid is chosen by dpfast; see the
        module docstring); anything else is refused.

    Returns
    -------
    opendp.mod.Measurement

    Privacy
    -------
    Integers: ``map(d_in) = d_in / scale`` (pure DP; Ghosh, Roughgarden, Sundararajan
    2009).  Floats: ``(d_in + n g) / scale``, the rounding charged (module docstring).

    Accuracy
    --------
    Each coordinate's noise has ``P[|Y| >= t scale] <= e^-t``.

    References
    ----------
    Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS
    2020 (exact samplers).  Mironov, "On Significance of the Least Significant Bits for
    Differential Privacy", CCS 2012.
    """
    scale, elem, vector, size = _prologue(
        dp.m.make_laplace, input_domain, input_metric, scale, k
    )
    measure = dp.max_divergence()
    if elem in _INT_RANGES:
        num, den = _random._scale_rational(scale)
        function = _int_function(_random._dlap_exact(num, den), elem, vector)
        inv = 1 / Fraction(scale)

        def privacy_map(d_in: Any) -> float:
            return _up(Fraction(d_in) * inv)
    else:
        n = _float_n(elem, vector, size, "make_laplace")
        kk = grid_exponent(scale, GRID_BITS.opendp_laplace, None)
        sampler = _mech._dlap(*_mech._ceil_rational(Fraction(scale) / Fraction(2) ** kk))
        slack = n * Fraction(2) ** kk
        inv = 1 / Fraction(scale)
        function = _grid_function(sampler, kk, vector)

        def privacy_map(d_in: Any) -> float:
            d = Fraction(d_in)
            return _up((d + slack) * inv) if d > 0 else 0.0

    return _user(input_domain, input_metric, measure, function, privacy_map, elem, vector)


def make_discrete_laplace(
    input_domain: Domain, input_metric: Metric, scale: Real
) -> Measurement:
    """:func:`make_laplace` restricted to integer domains (the geometric mechanism)."""
    return _integers_only(make_laplace, input_domain, input_metric, scale)


# ------------------------------------------------------------------ Gaussian


def make_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    scale: Real,
    k: None = None,
) -> Measurement:
    """Gaussian noise (discrete Gaussian on integers) of standard deviation ``scale``: a
    zero-concentrated-divergence measurement, as ``opendp.measurements.make_gaussian``.

    Parameters
    ----------
    input_domain : as :func:`make_laplace`
    input_metric : absolute_distance (atoms) or l2_distance (vectors)
    scale : float > 0
    k : None

    Privacy
    -------
    Integers: ``rho = d_in^2 / (2 scale^2)`` (Canonne, Kamath, Steinke 2020, Theorem 14).
    Floats: ``(d_in + ceil(sqrt n) g)^2 / (2 scale^2)`` on the grid g = 2^-30 scale.

    Accuracy
    --------
    ``P[|Y| >= t scale] <= 2 exp(-t^2 / 2)`` per coordinate.

    References
    ----------
    Canonne, Kamath, Steinke, NeurIPS 2020.  Bun & Steinke, "Concentrated Differential
    Privacy", TCC 2016.
    """
    scale, elem, vector, size = _prologue(
        dp.m.make_gaussian, input_domain, input_metric, scale, k
    )
    measure = dp.zero_concentrated_divergence()
    half_inv_var = 1 / (2 * Fraction(scale) ** 2)
    if elem in _INT_RANGES:
        function = _int_function(
            _random._dgauss_exact(*_random._sigma_rational(scale)), elem, vector
        )

        def privacy_map(d_in: Any) -> float:
            return _up(Fraction(d_in) ** 2 * half_inv_var)
    else:
        n = _float_n(elem, vector, size, "make_gaussian")
        kk = grid_exponent(scale, GRID_BITS.opendp_gauss, None)
        steps = Fraction(scale) / Fraction(2) ** kk
        sampler = _random._dgauss_exact(*_random._fit_up("sigma**2", steps * steps))
        slack = _mech._sqrt_ceil(n) * Fraction(2) ** kk
        function = _grid_function(sampler, kk, vector)

        def privacy_map(d_in: Any) -> float:
            d = Fraction(d_in)
            return _up((d + slack) ** 2 * half_inv_var) if d > 0 else 0.0

    return _user(input_domain, input_metric, measure, function, privacy_map, elem, vector)


def make_discrete_gaussian(
    input_domain: Domain, input_metric: Metric, scale: Real
) -> Measurement:
    """:func:`make_gaussian` restricted to integer domains."""
    return _integers_only(make_gaussian, input_domain, input_metric, scale)


# ------------------------------------------------------------------ selection


def make_noisy_max(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure,
    scale: Real,
    negate: bool = False,
) -> Measurement:
    """Index of the largest noisy score, as ``opendp.measurements.make_noisy_max``.

    Parameters
    ----------
    input_domain : vector_domain(atom_domain(T)), T float (nan=False) or integer
    input_metric : linf_distance(T, monotonic=...)
    output_measure : max_divergence() (exponential noise: permute-and-flip) or
        zero_concentrated_divergence() (Gumbel noise: the exponential mechanism)
    scale : float > 0
        The noise scale; the mechanisms run with epsilon = 2/scale at sensitivity 1
        (1/scale when the metric is monotonic).
    negate : bool
        Select the smallest score instead.

    Privacy
    -------
    ``max_divergence``: ``map(d_in) = 2 d_in / scale`` (``d_in / scale`` monotonic;
    McKenna & Sheldon 2020, Ding et al. 2021).  ``zero_concentrated_divergence``:
    ``(2 d_in / scale)^2 / 8`` (the exponential mechanism is bounded range; Cesar &
    Rogers 2021).  dpfast's secure selection samplers are exactly epsilon-DP at sensitivity
    1 and scale with d_in >= 1; for 0 < d_in < 1 their grid rounding is within the margin
    they reserve (csrc/selection.c).

    References
    ----------
    McKenna & Sheldon, "Permute-and-Flip", NeurIPS 2020.  Ding, Kifer, Wang, Zhang,
    "The Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential
    Noise", 2021.  Cesar & Rogers, "Bounding, Concentrating, and Truncating", ALT 2021.
    """
    _require_features()
    scale = _scale("scale", scale)
    negate = _sel._flag("negate", negate)
    dp.m.make_noisy_max(input_domain, input_metric, output_measure, scale, negate)
    elem, _, _ = _space(input_domain)
    monotonic = "monotonic" in str(input_metric)
    eps = (1.0 if monotonic else 2.0) / scale
    pure = str(output_measure).startswith("MaxDivergence")
    select = _sel.permute_and_flip if pure else _sel.exponential_mechanism
    sign = -1 if negate else 1
    factor = Fraction(1 if monotonic else 2) / Fraction(scale)

    def function(x: Any) -> int:
        scores = np.asarray(x, np.int64 if elem in _INT_RANGES else np.float64)
        # OpenDP's privacy map accounts for the measurement: never dpfast's active budget
        return select(
            sign * scores,
            epsilon=eps,
            sensitivity=1.0,
            monotonic=monotonic,
            budget=NO_BUDGET,
        )

    if pure:

        def privacy_map(d_in: Any) -> float:
            return _up(Fraction(d_in) * factor)
    else:

        def privacy_map(d_in: Any) -> float:
            # the exponential mechanism's zCDP, from the one rule (selection_rho)
            return _up(_sel.selection_rho("exponential", Fraction(d_in) * factor))

    _require_features()
    return dp.m.make_user_measurement(
        input_domain, input_metric, output_measure, function, privacy_map, TO="usize"
    )


def make_randomized_response_bool(
    input_domain: Domain,
    input_metric: Metric,
    prob: Real,
) -> Measurement:
    """Report a boolean truthfully with probability ``prob``, as
    ``opendp.measurements.make_randomized_response_bool`` (partial-able form).

    Parameters
    ----------
    input_domain : atom_domain(T=bool)
    input_metric : discrete_distance()
    prob : float in [0.5, 1)

    Privacy
    -------
    ``map(d_in) = ln(prob / (1 - prob))`` for d_in > 0 (rounded up).  dpfast draws the
    flip with a certified probability >= 1 / (1 + e^eps) for that eps, so the mechanism
    that runs is at least that private (:mod:`dpfast.randomized_response`).
    """
    _require_features()
    prob = _v._number("prob", prob)
    if not 0.5 <= prob < 1.0:
        raise _v.PrivacyParameterError(f"prob must be in [0.5, 1); got {prob!r}")
    if (
        str(input_domain) != "AtomDomain(T=bool)"
        or str(input_metric) != "DiscreteDistance()"
    ):
        raise TypeError(
            "make_randomized_response_bool needs atom_domain(T=bool) and "
            f"discrete_distance(); got {input_domain}, {input_metric}"
        )
    # ln(p/(1-p)) = log1p((2p - 1)/(1 - p)): 2p - 1 and 1 - p are exact for p >= 1/2
    # (Sterbenz), the quotient and log1p are within an ulp each; four ulps up covers both
    eps = math.log1p((2.0 * prob - 1.0) / (1.0 - prob))
    for _ in range(4):
        eps = math.nextafter(eps, math.inf) if eps > 0.0 else eps

    if eps == 0.0:

        def function(x: Any) -> bool:
            return bool(_random.bernoulli(Fraction(1, 2)))
    else:

        def function(x: Any) -> bool:
            return bool(_rr(bool(x), epsilon=eps, budget=NO_BUDGET))

    def privacy_map(d_in: Any) -> float:
        return eps if d_in > 0 else 0.0

    _require_features()
    return dp.m.make_user_measurement(
        input_domain, input_metric, dp.max_divergence(), function, privacy_map, TO="bool"
    )


CONSTRUCTORS = (
    make_laplace,
    make_discrete_laplace,
    make_gaussian,
    make_discrete_gaussian,
    make_noisy_max,
    make_randomized_response_bool,
)


def register(prefix: str = "dpfast_") -> list[str]:
    """Register the constructors in OpenDP's Context API as ``<prefix><name>``, e.g.
    ``ctx.query().clamp(...).sum().dpfast_laplace(scale)`` (``scale`` may be omitted: the
    Context searches for it).  Returns the registered names."""
    from opendp.context import register as _register

    names = []
    for ctor in CONSTRUCTORS:
        name = prefix + ctor.__name__[len("make_") :]
        _register(ctor, name=name)
        names.append(name)
    return names
