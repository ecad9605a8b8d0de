"""The sparse vector technique as streams: AboveThreshold, Sparse, NumericSparse.

Dwork & Roth, *The Algorithmic Foundations of Differential Privacy* (2014), section 3.6,
Algorithms 1-3.  Each class is a stream: ``feed(values)`` answers a batch of queries in
order in one C loop (the GIL released, the generator's lock held), ``step(value)``
answers one.  A stream halts after its ``cutoff``-th positive answer (AboveThreshold: the
first) and then raises :class:`~dpfast.MechanismHaltedError` on every call.

Answers: ``True`` (the book's ⊤, "above the threshold") or ``False`` (⊥) as a bool
ndarray; NumericSparse returns float64, the noisy value for ⊤ and ``NaN`` for ⊥.

Two paths, chosen by ``mode``:

``"secure"`` (default)
    Floating-point safe (Mironov 2012).  Values and thresholds are floored to a public
    power-of-two grid ``g``; every noise is an integer number of grid steps; comparisons
    are exact (each query value is compared with a bound computed from the integer noise
    and the public threshold, which is the integer comparison on the grid).  The threshold noise (and NumericSparse's released
    noise) is an exact discrete Laplace (Canonne, Kamath & Steinke 2020).  The per-query
    noise is drawn from one 64-bit word of the generator by a certified inversion: the
    same instructions for every query whatever its value, no table, no libm.  See
    *Privacy* in each class for what the grid and the inversion cost.
``"fast"``
    Continuous Laplace noise in double precision, with exact thinning over blocks of
    queries (far below the threshold a block costs a fraction of a nanosecond per
    query).  A simulation path: floating-point noise leaks through its low bits
    (Mironov 2012), so this mode is **not** floating-point safe and is never the default.

What is never released (Lyu, Su & Li 2017, "Understanding the Sparse Vector Technique for
Differential Privacy"): the noisy threshold, the per-query noise and the noisy query
value.  They live in a C struct that no attribute, ``repr`` or pickle reaches; the
streams refuse to be pickled or copied.  No answer is ever given after the cutoff.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import _core, _insecure
from . import _validation as _v
from ._active import label as _label
from ._errors import PrivacyParameterError
from ._plans import GRID_BITS

# every noise scale computed in floating point is raised by 2**-40 relative (inflate):
# double rounding (a few units of 2**-53) can then only add noise, never remove it
from ._privacy import Cost, charge, inflate
from ._typing import PrivacyParam, Real, RngLike, SupportsSpend

__all__ = ["AboveThreshold", "Sparse", "NumericSparse"]

#: The finest grid: the C path multiplies by 1/g, which must be a finite double.
_MIN_GRID = 2.0**-1022
_SQRT512 = math.sqrt(512.0)
# ln(2/delta) is computed as ln 2 - ln delta: 2/delta overflows for subnormal delta
_LN2 = math.log(2.0)


# ------------------------------------------------------------------ calibration


def _sparse_sigma(cutoff: int, epsilon: float, delta: float) -> Fraction:
    """Algorithm 2's sigma in units of the sensitivity: 2c/eps (delta = 0) or
    sqrt(32 c ln(1/delta))/eps.  Exact (a Fraction) when delta = 0, else a float rounded
    up by 2**-40 relative (inflate)."""
    if delta == 0.0:
        return Fraction(2 * cutoff) / Fraction(epsilon)
    sigma = inflate(math.sqrt(32.0 * cutoff * -math.log(delta)) / epsilon)
    return Fraction(_finite_scale(sigma))


def _composition_holds(
    k: int, eps_each: float, log_inv_delta: float, target: float
) -> bool:
    """Whether k eps_each-DP mechanisms compose to target-DP with failure delta' (given as
    ln(1/delta'), finite even for subnormal delta'), by basic composition (Thm 3.16) or
    advanced composition (Thm 3.20)."""
    basic = k * eps_each
    if eps_each > 700.0:  # expm1 would overflow; advanced composition is useless
        return basic <= target * (1 - 1e-12)
    advanced = math.sqrt(2.0 * k * log_inv_delta) * eps_each + k * eps_each * math.expm1(
        eps_each
    )
    return min(basic, advanced) <= target * (1 - 1e-12)


def _check_advanced(
    name: str, cutoff: int, eps_each: float, log_inv_delta: float, target: float
) -> None:
    # Thm 3.25's proof applies Thm 3.20 with eps' = eps / sqrt(8 c ln(1/delta)), whose
    # second-order term c eps'(e^eps' - 1) is not always below eps/2: for large eps and
    # cutoff the book's claim fails.  Refuse those parameters instead of over-claiming.
    if not _composition_holds(cutoff, eps_each, log_inv_delta, target):
        raise PrivacyParameterError(
            f"{name}: with these epsilon, delta and cutoff neither basic nor advanced "
            "composition (Thm 3.16, 3.20) certifies the book's calibration (the "
            "second-order term k eps'(e^eps' - 1) is too large); use delta=0, a smaller "
            "epsilon or a smaller cutoff"
        )


@functools.lru_cache(maxsize=256)
def _calibration(
    kind: str, epsilon: float, delta: float, cutoff: int
) -> tuple[Fraction, Fraction | None]:
    sigma, sigma_value = _calibration_exact(kind, epsilon, delta, cutoff)
    # the scales are used as doubles too (fast path, inversion parameter): a subnormal
    # epsilon must give a clear error, not an OverflowError
    for s in (sigma, sigma_value):
        if s is not None and not s < Fraction(2) ** 1000:
            _finite_scale(math.inf)
    return sigma, sigma_value


def _calibration_exact(
    kind: str, epsilon: float, delta: float, cutoff: int
) -> tuple[Fraction, Fraction | None]:
    """(sigma, sigma_value) in units of the sensitivity, exactly as Dwork & Roth's
    Algorithms 1-3 (cached: public parameters only).

    sigma is the threshold noise's scale (the query noise's is 2 sigma); sigma_value the
    scale of NumericSparse's released noise (None otherwise).  Exact Fractions when
    delta = 0, else floats rounded up by 2**-40 relative (inflate)."""
    if kind == "AboveThreshold":
        # Algorithm 1: threshold Lap(2/eps), queries Lap(4/eps), i.e. sigma = 2/eps
        return Fraction(2) / Fraction(epsilon), None
    if kind == "Sparse":
        # Algorithm 2, Thm 3.25: c AboveThreshold runs with eps' = eps/c or
        # eps/sqrt(8c ln(1/delta)), sigma = 2/eps'
        if delta > 0.0:
            _check_advanced(
                "Sparse",
                cutoff,
                epsilon / math.sqrt(8.0 * cutoff * -math.log(delta)),
                -math.log(delta),
                epsilon,
            )
        return _sparse_sigma(cutoff, epsilon, delta), None
    # Algorithm 3, Thm 3.27: Sparse(eps1, delta/2) + c Laplace releases (eps - eps1, delta/2)
    eps1: Fraction | float
    eps2: Fraction | float
    if delta == 0.0:
        eps1 = Fraction(epsilon) * 8 / 9
        eps2 = Fraction(epsilon) * 2 / 9
        return Fraction(2 * cutoff) / eps1, Fraction(2 * cutoff) / eps2
    eps1 = _SQRT512 / (_SQRT512 + 1.0) * epsilon
    eps2 = 2.0 / (_SQRT512 + 1.0) * epsilon
    ln_2_delta = _LN2 - math.log(delta)  # ln(2/delta) = ln(1/(delta/2))
    root = math.sqrt(32.0 * cutoff * ln_2_delta)
    _check_advanced(
        "NumericSparse",
        cutoff,
        eps1 / math.sqrt(8.0 * cutoff * ln_2_delta),
        ln_2_delta,
        eps1,
    )
    _check_advanced("NumericSparse", cutoff, eps2 / root, ln_2_delta, eps2 / 2)
    return (
        Fraction(_finite_scale(inflate(root / eps1))),
        Fraction(_finite_scale(inflate(root / eps2))),
    )


def _finite_scale(sigma: float) -> float:
    if not sigma < math.inf:
        raise PrivacyParameterError(
            "epsilon is too small: the noise scale overflows a double; use a larger epsilon"
        )
    return sigma


def _dyadic_up(x: Fraction) -> tuple[int, int]:
    """The least num/2**k >= x with num < 2**62 and k <= 63, as (num, den) in lowest
    terms (the exact samplers take a 64-bit rational scale)."""
    x = Fraction(x)
    if x <= 0:
        raise PrivacyParameterError(f"noise scale must be > 0; got {_v.show(x)}")
    k = 61 - (x.numerator.bit_length() - x.denominator.bit_length())
    k = min(k, 63)
    if k < 0:
        raise PrivacyParameterError(
            f"a noise scale of {_v.show(x)} grid steps is too large for the exact "
            "sampler; pass a larger granularity= or a larger epsilon"
        )
    num = -((-x.numerator << k) // x.denominator)
    f = Fraction(num, 1 << k)
    return f.numerator, f.denominator


def _atom_bits(sigma: Fraction) -> int:
    """A, the query noise's atom (one word W < 2**(64-A) gives N = +inf, see
    csrc/sparse.c): the largest A <= 48 whose slack 2**(A-63) is at most 2**-10 of
    eps'/2 = 1/sigma, i.e. 2**(A-53) sigma <= 1, but at least 20 (then, for eps' below
    about 2**-32, the slack is a larger part of eps'/2, still fully charged by _inv_l, and
    the atom's 2**-20 per query an accuracy cost).  Public: sigma only."""
    a = _core.SVT_ATOM_BITS_MAX
    while a > _core.SVT_ATOM_BITS_MIN and Fraction(2) ** (a - 53) * sigma > 1:
        a -= 1
    return a


def _inv_l(k_grid: int, sigma: Fraction, atom_bits: int) -> float:
    """Query-noise parameter of the secure inversion (see csrc/sparse.c): the query noise
    is certified for sensitivity K + 1 grid steps up to a factor 1 + 2^(A-64); we need
    (2K+2) ln2 / inv_l + 2^(A-63) <= eps'/2 = 1/sigma (twice the slack the proof needs),
    i.e. inv_l >= (2K+2) ln2 sigma / (1 - 2^(A-63) sigma); inf if impossible."""
    s = float(sigma)
    denom = 1.0 - s * 2.0 ** (atom_bits - 63)
    if not denom > 0.5:
        return math.inf
    return inflate((2 * k_grid + 2) * math.log(2.0) * s / denom)


def _grid(
    sensitivity: float, sigma: Fraction, granularity: float | None
) -> tuple[float, int, float, int]:
    """(g, K, inv_l, A): the grid, the sensitivity in grid steps, the query-noise
    parameter and its atom's bits."""
    delta_f = Fraction(sensitivity)
    atom = _atom_bits(sigma)
    if granularity is not None:
        g = granularity
        k_grid = -((-delta_f) // Fraction(g))
        inv_l = _inv_l(k_grid, sigma, atom)
        if not inv_l <= _core.SVT_MAX_INV_L:
            raise PrivacyParameterError(
                f"granularity={g!r} is too fine for this noise: the query noise would be "
                f"{inv_l / math.log(2.0):.3g} grid steps, above the secure inversion's "
                "limit of 2**40 / ln 2; pass a larger granularity"
            )
        return g, k_grid, inv_l, atom
    e = math.frexp(sensitivity)[1] - 1  # floor(log2(sensitivity))
    # default grid: g = 2**(floor(log2(sensitivity)) - GRID_BITS.sparse), coarsened
    # only if the query noise would exceed the inversion's limit (about 2**40 grid steps)
    for bits in range(GRID_BITS.sparse, -1100, -1):
        if e - bits > 1023:  # ldexp would overflow: no coarser grid
            break
        g = math.ldexp(1.0, e - bits)
        if g < _MIN_GRID:  # 1/g must be a finite double: coarser grid
            continue
        if g == math.inf:
            break
        k_grid = -((-delta_f) // Fraction(g))
        inv_l = _inv_l(k_grid, sigma, atom)
        if inv_l <= _core.SVT_MAX_INV_L:
            return g, k_grid, inv_l, atom
        if k_grid == 1:
            break
    raise PrivacyParameterError(
        "epsilon is too small for the secure path: the query noise would exceed 2**40 / ln 2 "
        "grid steps even on the coarsest useful grid; use a larger epsilon"
    )


@functools.lru_cache(maxsize=256)
def _secure_scales(
    sensitivity: float,
    sigma: Fraction,
    sigma_value: Fraction | None,
    granularity: float | None,
) -> tuple[float, int, float, int, tuple[int, int], tuple[int, int]]:
    """(g, K, inv_l, A, threshold scale, value scale) of the secure path, from public
    parameters only (cached: exact rational arithmetic is the slow part of a constructor,
    and streams are often re-created with the same parameters)."""
    g, k_grid, inv_l, atom = _grid(sensitivity, sigma, granularity)
    # threshold noise sigma K, released noise sigma(eps2) K (grid steps), rounded up
    thr = _dyadic_up(Fraction(sigma) * k_grid)
    val = _dyadic_up(Fraction(sigma_value) * k_grid) if sigma_value is not None else (1, 1)
    return g, k_grid, inv_l, atom, thr, val


def _granularity(value: Real | None, mode: str) -> float | None:
    if value is None:
        return None
    if mode != "secure":
        raise PrivacyParameterError(
            "granularity applies only to mode='secure'; got "
            f"granularity={value!r} with mode={mode!r}"
        )
    g = _v.positive("granularity", value)
    if math.frexp(g)[0] != 0.5:
        raise PrivacyParameterError(f"granularity must be a power of two; got {value!r}")
    if g < _MIN_GRID:
        raise PrivacyParameterError(f"granularity must be >= 2**-1022; got {value!r}")
    return g


def _value_range(value: Real | None) -> float | None:
    if value is None:
        return None
    return _v.positive("value_range", value)


def _budget(budget: SupportsSpend | None) -> SupportsSpend | None:
    """The budget the stream charges: resolved once (None: the active budget, if any)."""
    return _v.budget(budget)


# ------------------------------------------------------------------ the streams


class _SVTBase(_core._SVTStream):
    __slots__ = (
        "_threshold",
        "_epsilon",
        "_delta",
        "_sensitivity",
        "_cutoff",
        "_mode",
        "_grid",
        "_constant_time",
        "_cost",
        "_noise",
        "_value_range",
    )

    def _setup_with_cutoff(
        self,
        kind: str,
        threshold: Real,
        cutoff: int,
        epsilon: PrivacyParam,
        delta: PrivacyParam,
        sensitivity: Real,
        rng: RngLike,
        mode: str,
        budget: SupportsSpend | None,
        granularity: Real | None,
        constant_time: bool,
        value_range: Real | None = None,
        label: str | None = None,
    ) -> None:
        """Validate and calibrate Sparse or NumericSparse (Algorithms 2 and 3), then
        _setup."""
        threshold, epsilon, sensitivity, mode, granularity, budget = _common(
            threshold, epsilon, sensitivity, mode, constant_time, granularity, budget
        )
        cutoff = _v.integer("cutoff", cutoff, minimum=1, maximum=2**62)
        label = _label(label, f"{kind}(cutoff={cutoff})")
        delta = _v.delta(delta)
        sigma, sigma_value = _calibration(kind, epsilon, delta, cutoff)
        self._setup(
            threshold=threshold,
            epsilon=epsilon,
            delta=delta,
            cutoff=cutoff,
            sensitivity=sensitivity,
            rng=rng,
            mode=mode,
            budget=budget,
            granularity=granularity,
            constant_time=constant_time,
            sigma=sigma,
            sigma_value=sigma_value,
            label=label,
            value_range=value_range,
        )

    def _setup(
        self,
        *,
        threshold: float,
        epsilon: float,
        delta: float,
        cutoff: int,
        sensitivity: float,
        rng: RngLike,
        mode: str,
        budget: SupportsSpend | None,
        granularity: float | None,
        constant_time: bool,
        sigma: Fraction,
        sigma_value: Fraction | None,
        label: str,
        value_range: Real | None = None,
    ) -> None:
        """Configure the C stream, charge the budget, then draw the first threshold.

        ``sigma``: Algorithm 2's sigma for the threshold (query noise 2 sigma);
        ``sigma_value``: NumericSparse's sigma(eps2) for released values, or None.
        All in units of the sensitivity."""
        numeric = sigma_value is not None
        noise: dict[str, Any]
        vrange = _value_range(value_range)
        rng = _core.secure_rng(rng)  # warns for a predictable generator
        if mode == "secure":
            g, k_grid, inv_l, atom, thr, val = _secure_scales(
                sensitivity, sigma, sigma_value, granularity
            )
            if vrange is not None and not vrange < _core.SVT_VALUE_LIMIT * g:
                if granularity is not None:
                    raise PrivacyParameterError(
                        f"value_range={vrange!r} exceeds the range 2**61 * granularity = "
                        f"{_core.SVT_VALUE_LIMIT * g!r} of the secure grid; pass a larger "
                        "granularity= or omit it"
                    )
                # the finest power-of-two grid whose 2**61 steps cover the range (public)
                coarse = math.ldexp(1.0, math.frexp(vrange / _core.SVT_VALUE_LIMIT)[1])
                g, k_grid, inv_l, atom, thr, val = _secure_scales(
                    sensitivity, sigma, sigma_value, coarse
                )
            # without value_range the secure path clamps to its grid's range
            effective_range = (
                vrange
                if vrange is not None
                else math.nextafter(_core.SVT_VALUE_LIMIT * g, 0.0)
            )
            slack_thr, slack_val = self._configure_secure(
                rng,
                cutoff,
                numeric,
                g,
                threshold,
                inv_l,
                atom,
                thr[0],
                thr[1],
                val[0],
                val[1],
                constant_time,
            )
            noise = {
                "grid": g,
                "sensitivity_steps": k_grid,
                "threshold_scale": thr,
                "query_inv_l": inv_l,
                "query_atom_bits": atom,
                "value_scale": val if numeric else None,
            }
            # Constant-time sampler: each of at most `cutoff` threshold draws (and as many
            # value draws) is within total variation `slack` of the exact law, so the
            # stream is (eps, delta + (1 + e^eps) * total slack)-DP.
            total = cutoff * (slack_thr + (slack_val if numeric else 0.0))
            extra = (
                min(1.0, inflate((1.0 + math.exp(min(epsilon, 700.0))) * total))
                if total
                else 0.0
            )
        else:
            g_fast: float | None = None
            s = inflate(float(sigma) * sensitivity)
            sv = (
                inflate(float(sigma_value) * sensitivity)
                if sigma_value is not None
                else 0.0
            )
            self._configure_fast(rng, cutoff, numeric, threshold, s, 2.0 * s, sv)
            noise = {
                "threshold_scale": s,
                "query_scale": 2.0 * s,
                "value_scale": sv if numeric else None,
            }
            extra = 0.0
            effective_range = vrange if vrange is not None else math.inf
        if vrange is not None:
            self._set_value_range(vrange)
        # (configuring succeeds once only, so these are set once only)
        self._value_range = effective_range
        self._threshold = threshold
        self._epsilon = epsilon
        self._delta = delta
        self._sensitivity = sensitivity
        self._cutoff = cutoff
        self._mode = mode
        self._constant_time = constant_time
        self._grid = g if mode == "secure" else g_fast
        self._noise = noise
        # exact: the caller's delta plus the sampler's slack (a float bound, at its value)
        self._cost = (
            epsilon,
            _v.Amount(_v.charged(delta) + _v.charged(extra)) if extra else delta,
        )
        # the whole cost, before any noise is drawn; raising here leaves nothing drawn
        if budget is not None:
            charge(budget, Cost(*self._cost), label)
        self._start()

    _threshold: float
    _epsilon: float
    _delta: float
    _sensitivity: float
    _cutoff: int
    _mode: str
    _grid: float | None
    _constant_time: bool
    _cost: tuple[float, float]
    _noise: dict[str, Any]
    _value_range: float

    # read-only public parameters
    @property
    def threshold(self) -> float:
        """The public threshold T."""
        return self._threshold

    @property
    def epsilon(self) -> float:
        """The privacy parameter epsilon."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """The privacy parameter delta as given."""
        return self._delta

    @property
    def sensitivity(self) -> float:
        """Sensitivity of each query."""
        return self._sensitivity

    @property
    def cutoff(self) -> int:
        """Positive answers before the halt."""
        return self._cutoff

    @property
    def mode(self) -> str:
        """'secure' or 'fast'."""
        return self._mode

    @property
    def granularity(self) -> float | None:
        """The secure grid step g (a power of two), None in fast mode."""
        return self._grid

    @property
    def value_range(self) -> float:
        """Query values are clamped to [-value_range, value_range] before they are
        compared (and, for NumericSparse, released): the ``value_range=`` given, or on the
        secure path the grid's range (just below 2**61 * granularity; about 2.2e12 at
        sensitivity 1), or inf in fast mode.  Public: it depends on the parameters only."""
        return self._value_range

    @property
    def privacy_cost(self) -> tuple[float, float]:
        """(epsilon, delta) of the whole stream, however many queries it answers; on the
        secure path with ``constant_time=True`` delta includes the sampler's certified
        slack."""
        return self._cost

    def __repr__(self) -> str:
        extra = f", cutoff={self._cutoff}" if type(self) is not AboveThreshold else ""
        return (
            f"{type(self).__name__}(threshold={self._threshold!r}{extra}, "
            f"epsilon={self._epsilon!r}, delta={self._delta!r}, mode={self._mode!r}, "
            f"consumed={self.consumed}, positives={self.positives}, "
            f"halted={self.halted})"
        )


def _common(
    threshold: Real,
    epsilon: PrivacyParam,
    sensitivity: Real,
    mode: str,
    constant_time: bool,
    granularity: Real | None,
    budget: SupportsSpend | None,
) -> tuple[float, float, float, str, float | None, SupportsSpend | None]:
    threshold = _v.finite("threshold", threshold)
    epsilon = _v.epsilon(epsilon)
    sensitivity = _v.positive("sensitivity", sensitivity)
    mode = _insecure.mode(mode)
    if not isinstance(constant_time, bool):
        raise TypeError(f"constant_time must be a bool; got {type(constant_time).__name__}")
    if constant_time and mode != "secure":
        raise PrivacyParameterError("constant_time applies only to mode='secure'")
    granularity = _granularity(granularity, mode)
    return threshold, epsilon, sensitivity, mode, granularity, _budget(budget)


_SHARED_DOC = """
    Streaming
    ---------
    ``feed(values, thresholds=None)``
        Answers a 1-D batch in order, in one C loop (GIL released, generator lock held),
        and returns the answers of the prefix it consumed: the whole batch, or up to and
        including the query that made the stream halt.  ``thresholds`` (a scalar or an
        array shaped like ``values``) replaces the threshold T for those queries; the
        threshold *noise* is the same as for T.  The batch is checked before anything is
        drawn.  Query values are private: a finite value of any size is answered
        (clamped to :attr:`value_range`), integers beyond 2**53 are clamped to ±2**53
        (exact in float64), and a type that cannot be converted exactly (np.longdouble,
        object, Decimal) raises ``TypeError`` whatever the values.  A NaN or infinite
        query value is outside every sensitivity bound (no query of finite sensitivity
        returns one on a data set and a finite value on a neighbour): it raises
        :class:`~dpfast.PrivacyParameterError` naming its position, never its value, and
        nothing is consumed.  Thresholds are public: a non-finite threshold, or one beyond
        the secure grid's range, raises naming it.  The check is a
        pass over the whole batch at memory speed, also over the part after a halt, so a
        stream that may halt early is best fed in batches of moderate size (say 1e4
        queries) rather than "everything that is left" again and again.  A batch of n queries has exactly the law of n calls of ``step``; on
        the secure path, from the same generator state, it gives the very same answers
        (query noise is drawn in chunks of 64 at fixed query positions).  A long batch
        checks for Ctrl-C every 2**20 queries (outside the C loop): an interrupted ``feed``
        raises ``KeyboardInterrupt`` whose ``svt_answers`` attribute holds the answers of
        the queries answered before it (``consumed`` counts them; the next ``feed``
        starts with the next query): nothing answered is lost or answered twice.
    ``step(value, threshold=None)``
        Answers one query.
    ``halted``, ``consumed``, ``positives``, ``remaining_positives``
        Public progress.  After the halt every call raises
        :class:`~dpfast.MechanismHaltedError`.

    One object may be shared by threads: each call holds the object's lock for the whole
    batch, so batches are serialised and the state changes atomically.

    The stream refuses ``pickle`` and ``copy``: a copy would let the same noisy threshold
    answer twice as many queries.
"""

_SECURE_DOC = """
    Secure path (``mode="secure"``)
        Values and thresholds are floored to the grid ``g`` (``granularity``; default
        ``2**(floor(log2(sensitivity)) - 20)``, coarser only when the noise would need more
        than 2**40 grid steps).  Flooring can move a query by less than one step, so the
        sensitivity is charged as ``K = ceil(sensitivity / g)`` steps, that is
        ``K * g < sensitivity + g`` (no charge when the sensitivity is a multiple of g).
        The threshold noise is an exact discrete Laplace of scale ``sigma * K`` steps; the
        query noise is certified for ``K + 1`` steps (the extra step pays for the
        inversion that draws it from one 64-bit word), so its scale is about
        ``2 * sigma * (K + 1)`` steps.  That word's 64-bit resolution, and an atom of
        probability ``2**-A`` per query where the noise is +inf (an unconditional ⊤),
        cost a factor ``1 + 2**(A-63)`` in each query's likelihood ratio, paid out of the
        epsilon by a slightly larger query noise; ``A`` (``_noise["query_atom_bits"]``) is
        the largest integer <= 48 that keeps this below 2**-10 of the query noise's
        epsilon share, but at least 20.  Every scale is rounded up by at most a relative
        2**-40.  The mechanism is then exactly as private as stated; its accuracy is that
        of the theorems with the sensitivity replaced by ``(K + 1) * g`` for the query
        noise, plus one grid step, and with ``beta`` larger by ``k * 2**-A`` over k
        queries (the atom).  A query value beyond 2**61 grid steps (or beyond
        ``value_range``) is clamped to that range (clamping cannot increase the
        sensitivity, and an error would depend on the data); a threshold must lie within
        it.
        With ``constant_time=True`` the threshold (and released-value) noise comes from
        the constant-time bitwise sampler instead of the exact one; its certified slack
        is added to ``privacy_cost``'s delta.  With the default exact sampler the time of
        a threshold draw (at the start and after each positive answer) depends on the
        noise drawn; the per-query work never depends on the data or on the noise, and no
        arithmetic touches a query value (each is only compared with a bound computed
        from the noise), so even subnormal values take no slow path.  The exceptions are
        thresholds beyond 2**50 grid steps (an integer path) and the value NumericSparse
        releases at a ⊤.
"""


class AboveThreshold(_SVTBase):
    __doc__ = (
        """AboveThreshold (Dwork & Roth, Algorithm 1): report the first query above a
    noisy threshold, then halt.

    ``T^ = T + Lap(2 Δ/ε)``, drawn once before any query; for each query
    ``ν_i = Lap(4 Δ/ε)`` and the answer is ⊤ (``True``) iff ``f_i + ν_i >= T^``, which
    halts the stream.

    Parameters
    ----------
    threshold : float
        The public threshold T (finite).
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : float, default 1.0
        Bound Δ on how much one individual can change any query value.
    rng : None, ChaCha20, numpy BitGenerator or Generator
        Source of randomness; ``None`` is the calling thread's OS-keyed ChaCha20.
    mode : {"secure", "fast"}
        ``"fast"`` is a simulation path that is not floating-point safe.
    budget : object with ``spend(epsilon, delta, *, label=None)``, optional
        Charged with :attr:`privacy_cost` once, before any noise is drawn.  None: the
        active budget (``with b.active():``), if any; ``dpfast.NO_BUDGET``: nothing.
    granularity : float, optional
        Secure grid step g, a power of two.
    constant_time : bool, default False
        Secure path: draw the threshold noise with the constant-time sampler.
    value_range : float > 0, optional
        Public bound R: every query value is clamped to ``[-R, R]`` before it is used
        (clamping cannot increase the sensitivity).  On the secure path the grid is
        coarsened, if needed, so that its range (2**61 steps) covers R.  Default: the
        secure grid's own range (about ``2.2e12 * sensitivity``), no clamp in fast mode.
        The value in force is :attr:`value_range`.
    label : str, optional
        Recorded with the charge (default ``"AboveThreshold"``).

    Privacy
    -------
    ε-differentially private whatever the number of queries (Thm 3.23), including
    adaptively chosen queries and per-query thresholds.
"""
        + _SECURE_DOC
        + """
    Accuracy
    --------
    If of k queries only the last can be within α of T, then except with probability β
    the stream answers ⊥ to the first k - 1 and correctly to the last, with
    ``α = 8 Δ (ln k + ln(2/β)) / ε`` (Thm 3.24;
    :func:`dpfast.accuracy.above_threshold_alpha`).
"""
        + _SHARED_DOC
        + """
    References
    ----------
    C. Dwork and A. Roth, The Algorithmic Foundations of Differential Privacy, 2014,
    section 3.6.  M. Lyu, D. Su and N. Li, Understanding the Sparse Vector Technique for
    Differential Privacy, PVLDB 10(6), 2017.  I. Mironov, On Significance of the Least
    Significant Bits for Differential Privacy, CCS 2012.  C. Canonne, G. Kamath and
    T. Steinke, The Discrete Gaussian for Differential Privacy, NeurIPS 2020.

    Examples
    --------
    >>> import dpfast
    >>> at = dpfast.sparse.AboveThreshold(100.0, epsilon=0.5)
    >>> answers = at.feed([3.0, 10.0, 250.0, 7.0])   # stops at the first True
    """
    )
    __slots__ = ()

    if TYPE_CHECKING:

        def feed(
            self, values: npt.ArrayLike, thresholds: npt.ArrayLike | None = None
        ) -> npt.NDArray[np.bool_]: ...
        def step(self, value: Real, threshold: Real | None = None) -> bool: ...

    def __init__(
        self,
        threshold: Real,
        *,
        epsilon: PrivacyParam,
        sensitivity: Real = 1.0,
        rng: RngLike = None,
        mode: str = "secure",
        budget: SupportsSpend | None = None,
        granularity: Real | None = None,
        constant_time: bool = False,
        value_range: Real | None = None,
        label: str | None = None,
    ) -> None:
        threshold, epsilon, sensitivity, mode, granularity, budget = _common(
            threshold, epsilon, sensitivity, mode, constant_time, granularity, budget
        )
        label = _label(label, "AboveThreshold")
        sigma, _ = _calibration("AboveThreshold", epsilon, 0.0, 1)
        self._setup(
            threshold=threshold,
            epsilon=epsilon,
            delta=0.0,
            cutoff=1,
            sensitivity=sensitivity,
            rng=rng,
            mode=mode,
            budget=budget,
            granularity=granularity,
            constant_time=constant_time,
            sigma=sigma,
            sigma_value=None,
            label=label,
            value_range=value_range,
        )


class Sparse(_SVTBase):
    __doc__ = (
        """Sparse (Dwork & Roth, Algorithm 2): report which queries are above a
    noisy threshold, until ``cutoff`` of them have been.

    ``σ = 2 c Δ/ε`` if δ = 0, else ``σ = sqrt(32 c ln(1/δ)) Δ/ε``.  The threshold noise is
    ``Lap(σ)``, each query's ``Lap(2σ)``; after each ⊤ a fresh noisy threshold is drawn;
    the stream halts at the c-th ⊤.

    Parameters
    ----------
    threshold : float
        The public threshold T.
    cutoff : int
        c >= 1, the number of ⊤ answers before the halt.
    epsilon : float
        Finite and > 0.
    delta : float, default 0.0
        In [0, 1).
    sensitivity, rng, mode, budget, granularity, constant_time, value_range
        As for :class:`AboveThreshold`.
    label : str, optional
        Recorded with the charge (default ``"Sparse(cutoff=c)"``).

    Privacy
    -------
    (ε, δ)-differentially private (Thm 3.25): c runs of AboveThreshold with
    ``ε' = ε/c`` (basic composition) or ``ε' = ε/sqrt(8 c ln(1/δ))`` (advanced
    composition, Thm 3.20).  For δ > 0 the constructor refuses (ε, δ, c) for which
    neither composition theorem certifies the calibration (large ε and c).
"""
        + _SECURE_DOC
        + """
    Accuracy
    --------
    If at most c of k queries are above T - α: ``α = 8 c Δ (ln k + ln(2c/β)) / ε``
    (δ = 0) or ``α = Δ (ln k + ln(2c/β)) sqrt(512 c ln(1/δ)) / ε`` (Thm 3.26;
    :func:`dpfast.accuracy.sparse_alpha`).
"""
        + _SHARED_DOC
        + """
    References
    ----------
    Dwork and Roth 2014, section 3.6; Lyu, Su and Li 2017; Mironov 2012;
    Canonne, Kamath and Steinke 2020.
    """
    )
    __slots__ = ()

    if TYPE_CHECKING:

        def feed(
            self, values: npt.ArrayLike, thresholds: npt.ArrayLike | None = None
        ) -> npt.NDArray[np.bool_]: ...
        def step(self, value: Real, threshold: Real | None = None) -> bool: ...

    def __init__(
        self,
        threshold: Real,
        *,
        cutoff: int,
        epsilon: PrivacyParam,
        delta: PrivacyParam = 0.0,
        sensitivity: Real = 1.0,
        rng: RngLike = None,
        mode: str = "secure",
        budget: SupportsSpend | None = None,
        granularity: Real | None = None,
        constant_time: bool = False,
        value_range: Real | None = None,
        label: str | None = None,
    ) -> None:
        self._setup_with_cutoff(
            "Sparse",
            threshold,
            cutoff,
            epsilon,
            delta,
            sensitivity,
            rng,
            mode,
            budget,
            granularity,
            constant_time,
            value_range,
            label,
        )


class NumericSparse(_SVTBase):
    __doc__ = (
        """NumericSparse (Dwork & Roth, Algorithm 3): Sparse that also releases a
    fresh noisy value of each query above the noisy threshold.

    δ = 0: ``ε1 = 8ε/9``, ``ε2 = 2ε/9``, ``σ(e) = 2 c Δ/e``;
    δ > 0: ``ε1 = sqrt(512)/(sqrt(512)+1) ε``, ``ε2 = 2/(sqrt(512)+1) ε``,
    ``σ(e) = sqrt(32 c ln(2/δ)) Δ/e``.  Threshold noise ``Lap(σ(ε1))``, query noise
    ``Lap(2σ(ε1))``, and at each ⊤ the answer ``f_i + Lap(σ(ε2))`` with noise drawn for
    that purpose only (releasing ``f_i + ν_i`` would not be private: Lyu, Su & Li 2017).

    Answers are float64: the noisy value for ⊤, ``NaN`` for ⊥.  On the secure path the
    value is ``g * (floor(f_i/g) + N + 1/2)`` with N an exact discrete Laplace of scale
    ``σ(ε2) K`` grid steps (the ``+ 1/2`` centres the floor; it is post-processing).

    Parameters
    ----------
    threshold, cutoff, epsilon, delta, sensitivity, rng, mode, budget, granularity
        As for :class:`Sparse`.
    constant_time, value_range, label
        As for :class:`Sparse` (default label ``"NumericSparse(cutoff=c)"``).  Query values -- and so the released values, up to their
        noise -- are clamped to ``[-value_range, value_range]``; on the secure path the
        default range is the grid's (just below ``2**61 * granularity``, about
        ``2.2e12`` at sensitivity 1: a true 1e13 comes back near 2.2e12).  Pass a larger
        ``value_range`` (which coarsens the grid) when answers can be larger.

    Returns
    -------
    numpy.ndarray or float
        ``feed`` returns a float64 array, ``step`` a float.  Each released value is the
        clamped query value plus noise (see :attr:`value_range`); ``NaN`` for ⊥.

    Privacy
    -------
    (ε, δ)-differentially private (Thm 3.27): Sparse with (ε1, δ/2) composed with c
    Laplace releases that are together (ε/9, 0) (δ = 0) or (ε/(sqrt(512)+1), δ/2).  For
    δ > 0 the constructor refuses parameters for which the composition theorems do not
    certify either part.
"""
        + _SECURE_DOC
        + """
    Accuracy
    --------
    If at most c of k queries are above T - α: ``α = 9 c Δ (ln k + ln(4c/β)) / ε``
    (δ = 0) or ``α = Δ max(ln k + ln(4c/β), sqrt(8) ln(2c/β)) sqrt(c ln(2/δ))
    (sqrt(512) + 1) / ε`` (Thm 3.28; for δ > 0 the book prints only the first term of the
    max, which does not cover the released values' noise -- see
    :func:`dpfast.accuracy.numeric_sparse_alpha`).
"""
        + _SHARED_DOC
        + """
    References
    ----------
    Dwork and Roth 2014, section 3.6; Lyu, Su and Li 2017; Mironov 2012;
    Canonne, Kamath and Steinke 2020.
    """
    )
    __slots__ = ()

    if TYPE_CHECKING:

        def feed(
            self, values: npt.ArrayLike, thresholds: npt.ArrayLike | None = None
        ) -> npt.NDArray[np.float64]: ...
        def step(self, value: Real, threshold: Real | None = None) -> float: ...

    def __init__(
        self,
        threshold: Real,
        *,
        cutoff: int,
        epsilon: PrivacyParam,
        delta: PrivacyParam = 0.0,
        sensitivity: Real = 1.0,
        rng: RngLike = None,
        mode: str = "secure",
        budget: SupportsSpend | None = None,
        granularity: Real | None = None,
        constant_time: bool = False,
        value_range: Real | None = None,
        label: str | None = None,
    ) -> None:
        self._setup_with_cutoff(
            "NumericSparse",
            threshold,
            cutoff,
            epsilon,
            delta,
            sensitivity,
            rng,
            mode,
            budget,
            granularity,
            constant_time,
            value_range,
            label,
        )
