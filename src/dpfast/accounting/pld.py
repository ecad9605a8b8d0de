"""Privacy loss distributions (PLDs): numerical accounting that is pessimistic by construction.

A mechanism's privacy curve delta(epsilon) = E_P[(1 - e^(epsilon - L))_+] + P(L = inf)
is a functional of its privacy loss L = ln(P/Q)(X), X ~ P, for the pair (P, Q) of output
laws on a worst-case pair of neighbours ("remove" and "add" directions separately when
the mechanism is not symmetric).  Composition adds independent losses, so the composed
curve is that functional of a convolution (Koskela, Jälkö & Honkela 2020; Meiser &
Mohammadi 2018; Sommer, Meiser & Mohammadi 2019; adaptive composition: Zhu, Dong & Wang
2022, Thm 10).

How every number here stays an upper bound
------------------------------------------
Losses live on the grid j h with h a power of two (so j h is exact).  Each mechanism's
loss law is replaced by one that *dominates* it:

* a loss value L in (j h, (j+1) h) is split between the two grid points with weights that
  keep E[e^-L] (the "connect the dots" discretisation of Doroshenko, Ghazi, Kamath,
  Kumar & Manurangsi 2022, Thm 4.2).  For every epsilon, (1 - e^epsilon t)_+ is convex in
  t = e^-L, so by Jensen each split can only raise the composed delta, whatever the other
  mechanisms are (the composed delta is convex in each mechanism's t separately);
* the upper tail beyond the kept range moves to L = +inf and the lower tail up to the
  lowest kept grid point (raising a loss raises delta);
* bucket masses are computed from accurate tail functions and rounded up by a bound on
  their floating-point error (16 ulps of the tails); a split weight that is uncertain by
  its own error bound is moved to the upper grid point.

Composition multiplies discrete Fourier transforms (one per distinct mechanism, raised to
its count: repeated squaring in the frequency domain).  The cyclic convolution wraps mass
outside the window [A, B] back into it; the wrapped mass is nonnegative, so it can only
raise the computed delta, and the mass above B, which is lost from the window, is bounded
by a Chernoff bound, min_t prod_i M_i(t)^c_i e^(-t B), and added to delta.  The FFT's own
rounding is bounded from the output (its negative entries are pure error) and added too.

What is not a proof: the last step (an a-posteriori estimate of the FFT noise floor,
checked in the tests against exact values), the libm error bounds assumed for
``erfc``/``exp``, and the bucket edges x = L^-1(j h), computed in floating point (a loss
within a few ulps of a grid point may be bucketed on the wrong side of it).  Every other
step is exact or rounded up.

References
----------
A. Koskela, J. Jälkö, A. Honkela, "Computing Tight Differential Privacy Guarantees Using
FFT", AISTATS 2020; A. Koskela, J. Jälkö, L. Prediger, A. Honkela, "Tight Differential
Privacy for Discrete-Valued Mechanisms and for the Subsampled Gaussian Mechanism Using
FFT", AISTATS 2021.
S. Meiser, E. Mohammadi, "Tight on Budget? Tight Bounds for r-Fold Approximate
Differential Privacy", CCS 2018.
V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi, "Connect the Dots: Tighter
Discrete Approximations of Privacy Loss Distributions", PETS 2022.
Y. Zhu, J. Dong, Y.-X. Wang, "Optimal Accounting of Differential Privacy via
Characteristic Function", AISTATS 2022.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._errors import PrivacyParameterError
from .._typing import PrivacyParam, Real
from ._numeric import _CLOSED_FORM_SLACK, _INF, _finite
from ._numeric import _up as _up_slack

_U = 2.0**-53
_MASS_SLACK = 16.0 * 2.0**-52  # relative error bound of one tail evaluation (erfc/exp)
_Z = 12.5  # per-mechanism truncation, in noise units: Gaussian tails below 1e-35
_TAIL_TARGET = 1e-30  # window: mass lost above it or wrapped from below it
_MAX_GRID = 1 << 22
_SQRT2 = math.sqrt(2.0)
_ERFC = np.frompyfunc(math.erfc, 1, 1)
_F = npt.NDArray[np.float64]
#: A mixture of shifted base laws: (weight, shift) pairs.
_Mixture = tuple[tuple[float, float], ...]


def _erfc(x: npt.ArrayLike) -> _F:
    return np.asarray(_ERFC(np.asarray(x, dtype=np.float64)), dtype=np.float64)


# ------------------------------------------------------------------ base noise laws


def _gauss_tails(x: npt.ArrayLike) -> tuple[_F, _F]:
    """(lower, upper) = (Phi(x), 1 - Phi(x)).  One erfc per point: the tail on the far
    side of the median, to a few ulps relative; the other is 1 minus it (absolute
    accuracy), which is all the callers use it for (see _edge_masses)."""
    x = np.asarray(x, dtype=np.float64)
    far = 0.5 * _erfc(np.abs(x) / _SQRT2)
    neg = x < 0.0
    return np.where(neg, far, 1.0 - far), np.where(neg, 1.0 - far, far)


def _laplace_tails(x: npt.ArrayLike) -> tuple[_F, _F]:
    """(lower, upper) tails of Lap(0, 1): e^x/2 for x < 0 and e^-x/2 for x >= 0."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        lo = np.where(
            x < 0.0, 0.5 * np.exp(np.minimum(x, 0.0)), 1.0 - 0.5 * np.exp(-np.abs(x))
        )
        up = np.where(
            x >= 0.0, 0.5 * np.exp(-np.maximum(x, 0.0)), 1.0 - 0.5 * np.exp(-np.abs(x))
        )
    return lo, up


_TAILS = {"gauss": _gauss_tails, "laplace": _laplace_tails}


def _edge_masses(kind: str, x: _F) -> tuple[_F, _F]:
    """Masses of the intervals (x[i], x[i+1]] under the base law, and absolute bounds on
    their errors; the tails are evaluated once per edge.

    Both ends are taken from the tail on their side of the median, so the result keeps
    its relative accuracy far out in either tail."""
    lo, up = _TAILS[kind](x)
    lo1, up1, lo2, up2 = lo[:-1], up[:-1], lo[1:], up[1:]
    x1, x2 = x[:-1], x[1:]
    below = x2 <= 0.0  # both in the lower half
    above = x1 >= 0.0  # both in the upper half
    mass = np.where(below, lo2 - lo1, np.where(above, up1 - up2, 1.0 - lo1 - up2))
    t1 = np.where(below | ~above, lo1, up1)
    t2 = np.where(above | ~below, up2, lo2)
    err = _MASS_SLACK * (t1 + t2 + np.abs(mass)) + 4.0 * _U * np.where(
        below | above, 0.0, 1.0
    )
    return np.maximum(mass, 0.0), err


def _mixture_mass(kind: str, components: _Mixture, x: _F) -> tuple[_F, _F]:
    mass = np.zeros(x.size - 1)
    err = np.zeros(x.size - 1)
    for w, shift in components:
        m, e = _edge_masses(kind, x - shift)
        mass += w * m
        err += w * e + 4.0 * _U * w * m
    return mass, err


def _mixture_cdf_up(kind: str, components: _Mixture, x: npt.ArrayLike) -> tuple[Any, Any]:
    """Upper bounds on P(X <= x) and P(X > x) under a mixture."""
    lo_total: Any = 0.0
    up_total: Any = 0.0
    for w, shift in components:
        lo, up = _TAILS[kind](np.asarray(x, dtype=np.float64) - shift)
        lo_total = lo_total + w * lo
        up_total = up_total + w * up
    return lo_total * (1.0 + 4 * _MASS_SLACK), up_total * (1.0 + 4 * _MASS_SLACK)


# ------------------------------------------------------------------ subsampling maps


def _logsub(t: npt.ArrayLike, q: float) -> _F:
    """ln(1 - q + q e^t): the privacy loss after Poisson subsampling at rate q of a loss t
    (Balle, Barthe & Gaboardi 2018; Zhu, Dong & Wang 2022, Prop. 30), without overflow."""
    t = np.asarray(t, dtype=np.float64)
    if q == 1.0:
        return t
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        big = t + np.log(q + (1.0 - q) * np.exp(-np.maximum(t, 0.0)))
        small = np.log1p(q * np.expm1(np.minimum(t, 0.0)))
    result: npt.NDArray[np.float64] = np.where(t > 0.0, big, small)
    return result


def _invlogsub(ell: npt.ArrayLike, q: float) -> _F:
    """The t with _logsub(t, q) = ell, for ell in (ln(1 - q), inf)."""
    ell = np.asarray(ell, dtype=np.float64)
    if q == 1.0:
        return ell
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        big = ell - math.log(q) + np.log1p(-(1.0 - q) * np.exp(-np.maximum(ell, 0.0)))
        small = np.log1p(np.expm1(np.minimum(ell, 0.0)) / q)
    result: npt.NDArray[np.float64] = np.where(ell > 0.0, big, small)
    return result


# ------------------------------------------------------------------ one direction of a mechanism


@dataclass(frozen=True)
class _Piece:
    """A continuous part of the loss: x in (x_lo, x_hi), loss(x) strictly increasing,
    P and Q mixtures of shifted base laws (weights, shifts)."""

    kind: str
    P: _Mixture
    Q: _Mixture
    x_lo: float
    x_hi: float
    loss: Callable[[_F], _F]
    inv: Callable[[_F], _F]
    tails: bool = True  # False: the mass beyond [x_lo, x_hi] is given as atoms


@dataclass(frozen=True)
class _Law:
    """One direction of a mechanism: continuous pieces, atoms (loss, P-mass upper bound),
    a proxy of the loss variance (for the grid choice) and whether the law is the same in
    both directions."""

    pieces: tuple[_Piece, ...]
    atom_loss: _F
    atom_mass: _F
    var: float


@dataclass
class _Discrete:
    """A dominating loss law on the grid: mass[i] at loss (start + i) h, inf_mass at +inf."""

    start: int
    mass: _F
    inf_mass: float


def _split(ell: _F, mass: _F, h: float, out: _F, start: int) -> None:
    """Add atoms (loss ell, P-mass) to ``out`` (grid from index ``start``), splitting each
    between its grid neighbours so that E[e^-L] is kept (Doroshenko et al. 2022).
    Each loss is first raised by 4 ulps: the float it was computed as (a log1p, a
    quotient) may sit an ulp or two below the exact loss, and raising a loss is safe."""
    ell = ell + 4.0 * np.spacing(np.abs(ell))
    j = np.floor(ell / h)
    j = np.where(j * h > ell, j - 1, j)
    j = np.where((j + 1) * h <= ell, j + 1, j)
    # weight of the lower point: (e^(-L) - e^(-(j+1)h)) / (e^(-jh) - e^(-(j+1)h))
    w_lo = np.expm1((j + 1) * h - ell) / math.expm1(h)
    w_lo = np.clip(w_lo - 8.0 * _U, 0.0, 1.0)  # uncertain weight goes up: pessimistic
    w_lo = np.where(j * h == ell, 1.0, w_lo)
    idx = (j - start).astype(np.int64)
    np.add.at(out, idx, mass * w_lo)
    np.add.at(out, idx + 1, mass * (1.0 - w_lo))


def _discretise(law: _Law, h: float) -> _Discrete:
    """A dominating law on the grid of step h (see the module docstring)."""
    lows, highs = [], []
    for p in law.pieces:
        lows.append(float(p.loss(np.array([p.x_lo]))[0]))
        highs.append(float(p.loss(np.array([p.x_hi]))[0]))
    fin = np.isfinite(law.atom_loss)
    if fin.any():
        lows.append(float(law.atom_loss[fin].min()))
        highs.append(float(law.atom_loss[fin].max()))
    inf_mass = float(np.sum(law.atom_mass[law.atom_loss == _INF]))
    if not lows:
        return _Discrete(0, np.zeros(1), min(1.0, inf_mass))
    start = math.floor(min(lows) / h) - 1
    stop = math.ceil(max(highs) / h) + 2
    if stop - start > 4 * _MAX_GRID:
        raise PrivacyParameterError(
            "a mechanism's privacy loss spans too many grid points for PLD accounting "
            f"({stop - start}); use a coarser method such as 'rdp'"
        )
    out = np.zeros(stop - start + 1)
    if fin.any():
        _split(law.atom_loss[fin], law.atom_mass[fin], h, out, start)
    for p in law.pieces:
        inf_mass += _discretise_piece(p, h, out, start)
    return _Discrete(start, out, min(1.0, inf_mass))


def _discretise_piece(p: _Piece, h: float, out: _F, start: int) -> float:
    """Add the piece's buckets to ``out``; return its mass sent to +inf."""
    l_lo = float(p.loss(np.array([p.x_lo]))[0])
    l_hi = float(p.loss(np.array([p.x_hi]))[0])
    j0 = math.floor(l_lo / h)
    j1 = math.ceil(l_hi / h)
    grid = np.arange(j0, j1 + 1, dtype=np.float64) * h
    inner = np.clip(grid, l_lo, l_hi)
    x = p.inv(inner)
    x = np.clip(
        np.where(np.isfinite(x), x, np.where(inner <= l_lo, p.x_lo, p.x_hi)), p.x_lo, p.x_hi
    )
    x[0], x[-1] = p.x_lo, p.x_hi
    a, ea = _mixture_mass(p.kind, p.P, x)
    b, eb = _mixture_mass(p.kind, p.Q, x)
    up = grid[1:]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        # r = E_P[e^(up - L) | bucket] = (Q-mass / P-mass) e^up, in [1, e^h]
        r = np.exp(np.log(b) - np.log(a) + up)
        rel = (ea / a + eb / b) * r + 8.0 * _U * r
        w_lo = (r - 1.0) / math.expm1(h) - (rel + 8.0 * _U) / math.expm1(h)
    w_lo = np.where(np.isfinite(w_lo) & (a > 0.0), np.clip(w_lo, 0.0, 1.0), 0.0)
    a_up = a + ea
    idx = np.arange(j0, j1, dtype=np.int64) - start
    out[idx] += a_up * w_lo
    out[idx + 1] += a_up * (1.0 - w_lo)
    # Tails: x < x_lo has loss < l_lo <= (j0 + 1) h; x > x_hi has loss > l_hi -> +inf.
    if not p.tails:
        return 0.0
    below, _ = _mixture_cdf_up(p.kind, p.P, p.x_lo)
    _, above = _mixture_cdf_up(p.kind, p.P, p.x_hi)
    out[j0 + 1 - start] += float(below)
    return float(above)


# ------------------------------------------------------------------ mechanisms


def _gaussian_laws(mu: float, q: float) -> list[_Law]:
    """Directions of the (Poisson-subsampled) Gaussian mechanism with mu = Delta/sigma:
    remove: P = (1-q) N(0,1) + q N(mu,1) vs Q = N(0,1); add: the reverse pair, written
    in the mirrored coordinate so that the loss increases (Zhu, Dong & Wang 2022, §6;
    Koskela et al. 2021, §5).  For q = 1 one direction (the pair is symmetric)."""
    half = 0.5 * mu * mu
    remove = _Piece(
        "gauss",
        ((1.0 - q, 0.0), (q, mu)) if q < 1.0 else ((1.0, mu),),
        ((1.0, 0.0),),
        -_Z,
        mu + _Z,
        lambda x: _logsub(mu * x - half, q),
        lambda ell: (_invlogsub(ell, q) + half) / mu,
    )
    var = (q * mu) ** 2 * (1.0 if q == 1.0 else max(1.0, math.expm1(min(mu * mu, 50.0))))
    laws = [_Law((remove,), np.zeros(0), np.zeros(0), var)]
    if q < 1.0:
        add = _Piece(
            "gauss",
            ((1.0, 0.0),),
            ((1.0 - q, 0.0), (q, -mu)),
            -mu - _Z,
            _Z,
            lambda x: -_logsub(-mu * x - half, q),
            lambda ell: -(_invlogsub(-ell, q) + half) / mu,
        )
        laws.append(_Law((add,), np.zeros(0), np.zeros(0), var))
    return laws


def _laplace_laws(s: float, q: float) -> list[_Law]:
    """Directions of the (Poisson-subsampled) Laplace mechanism with s = Delta/b, in units
    of the noise scale.  Base loss |x| - |x - s| for Lap(s) against Lap(0): atoms at -s
    (x <= 0) and s (x >= s), linear in between."""
    es = math.exp(-s)
    remove = _Piece(
        "laplace",
        ((1.0 - q, 0.0), (q, s)) if q < 1.0 else ((1.0, s),),
        ((1.0, 0.0),),
        0.0,
        s,
        lambda x: _logsub(2.0 * x - s, q),
        lambda ell: 0.5 * (_invlogsub(ell, q) + s),
        False,
    )
    up = 1.0 + 4 * _MASS_SLACK
    atoms_l = np.array([float(_logsub(-s, q)), float(_logsub(s, q))])
    atoms_m = (
        np.array([(1.0 - q) * 0.5 + q * 0.5 * es, (1.0 - q) * 0.5 * es + q * 0.5]) * up
    )
    var = (q * s) ** 2 * (1.0 if q == 1.0 else max(1.0, math.expm1(min(s, 50.0))))
    laws = [_Law((remove,), atoms_l, atoms_m, var)]
    if q < 1.0:
        add = _Piece(
            "laplace",
            ((1.0, s),),
            ((1.0 - q, s), (q, 0.0)),
            0.0,
            s,
            lambda x: -_logsub(s - 2.0 * x, q),
            lambda ell: 0.5 * (s - _invlogsub(-ell, q)),
            False,
        )
        atoms_l = np.array([-float(_logsub(s, q)), -float(_logsub(-s, q))])
        atoms_m = np.array([0.5 * es, 0.5]) * up
        laws.append(_Law((add,), atoms_l, atoms_m, var))
    return laws


def _rr_law(epsilon: float, k: int) -> _Law:
    """k-ary randomized response with epsilon (truth kept w.p. e^eps/(e^eps + k - 1)): the
    worst pair of inputs gives losses +eps, 0 (k - 2 outputs) and -eps."""
    z = 1.0 + (k - 1) * math.exp(-epsilon)  # (e^eps + k - 1)/e^eps
    up = 1.0 + 4 * _MASS_SLACK
    mass = (
        np.array([1.0 / z, (k - 2) * math.exp(-epsilon) / z, math.exp(-epsilon) / z]) * up
    )
    loss = np.array([epsilon, 0.0, -epsilon])
    keep = mass > 0.0
    return _Law((), loss[keep], mass[keep], epsilon * epsilon)


def _discrete_laplace_law(scale: float, shift: int) -> _Law:
    """Discrete Laplace P(x) = (1-r)/(1+r) r^|x|, r = e^(-1/scale), shift Delta (integer):
    P = shift + Y, Q = Y; loss (|x| - |x - Delta|)/scale takes Delta + 1 values."""
    r = math.exp(-1.0 / scale)
    c = -math.expm1(-1.0 / scale) / (1.0 + r)
    j = np.arange(shift + 1, dtype=np.float64)
    loss = (2.0 * j - shift) / scale
    with np.errstate(under="ignore"):
        mass = c * np.exp(-(shift - j) / scale)  # P(Y = j - Delta), 0 < j < Delta
        mass[0] = math.exp(-shift / scale) / (1.0 + r)  # P(Y <= -Delta)
    mass[-1] = 1.0 / (1.0 + r)  # P(Y >= 0)
    return _Law((), loss, mass * (1.0 + 4 * _MASS_SLACK), (shift / scale) ** 2)


def _discrete_gaussian_law(sigma: float, shift: int) -> _Law:
    """Discrete Gaussian N_Z(0, sigma^2) with integer shift Delta: P = Delta + Y, Q = Y,
    loss (2 x Delta - Delta^2)/(2 sigma^2) at each integer x (Canonne, Kamath & Steinke
    2020, the exact curve of their Thm 7 as a PLD).  Truncated at |y| <= K: the upper tail
    goes to +inf, the lower one up to the lowest kept loss; the normaliser is bounded below
    by its kept part, which bounds every mass above."""
    K = int(math.ceil(_Z * sigma)) + 2  # sigma <= 4e5: checked by discrete_gaussian()
    y = np.arange(-K, K + 1, dtype=np.float64)
    with np.errstate(under="ignore"):
        f = np.exp(-0.5 * (y / sigma) ** 2)
    norm_lo = math.fsum(f.tolist()) * (1.0 - 64 * _U)
    # sum_{y > K} e^(-y^2/2s^2) <= e^(-K^2/2s^2) / (1 - e^(-K/s^2))
    tail = math.exp(-0.5 * (K / sigma) ** 2) / -math.expm1(-K / sigma**2) / norm_lo
    mass = f / norm_lo * (1.0 + 8 * _MASS_SLACK)
    x = y + shift
    loss = (2.0 * x * shift - shift * shift) / (2.0 * sigma * sigma)
    mass[0] += tail  # lower tail: losses below the lowest kept one, raised to it
    loss = np.append(loss, _INF)
    mass = np.append(mass, tail)
    return _Law((), loss, mass, (shift / sigma) ** 2)


# ------------------------------------------------------------------ descriptions


@dataclass(frozen=True)
class Mechanism:
    """A mechanism an accountant can compose: its kind and exact noise parameters.

    Build one with :func:`gaussian`, :func:`laplace`, :func:`discrete_laplace`,
    :func:`discrete_gaussian`, :func:`randomized_response` or :func:`pure_dp`; every
    argument is validated there.  Hashable: identical mechanisms are grouped and
    composed by powering (repeated squaring in the frequency domain)."""

    kind: str
    params: tuple[Any, ...]

    def laws(self) -> list[_Law]:
        k, p = self.kind, self.params
        if k == "gaussian":
            sigma, sens, q = p
            return _gaussian_laws(_finite("sensitivity / sigma", sens / sigma), q)
        if k == "laplace":
            scale, sens, q = p
            return _laplace_laws(_finite("sensitivity / scale", sens / scale), q)
        if k == "discrete_laplace":
            return [_discrete_laplace_law(*p)]
        if k == "discrete_gaussian":
            return [_discrete_gaussian_law(*p)]
        if k == "randomized_response":
            return [_rr_law(*p)]
        raise AssertionError(k)

    @property
    def symmetric(self) -> bool:
        return self.kind not in ("gaussian", "laplace") or self.params[2] == 1.0


def _at_most(name: str, value: float, limit: float) -> float:
    """Refuse a public ratio past which the loss leaves the range the grid can hold."""
    if value > limit:
        raise PrivacyParameterError(
            f"{name} must be <= {limit:g} for PLD accounting; got {value!r}"
        )
    return value


def _rate(sampling_rate: Real) -> float:
    q = _v.probability("sampling_rate", sampling_rate)
    if q == 0.0:
        raise PrivacyParameterError("sampling_rate must be in (0, 1]; got 0.0")
    return q


def gaussian(sigma: Real, sensitivity: Real = 1.0, sampling_rate: Real = 1.0) -> Mechanism:
    """The Gaussian mechanism N(0, sigma^2) on a query of l2 sensitivity ``sensitivity``,
    optionally on a Poisson subsample with rate ``sampling_rate`` (add/remove neighbours)."""
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.positive("sensitivity", sensitivity)
    _at_most(
        "sensitivity / sigma", _finite("sensitivity / sigma", sensitivity / sigma), 40.0
    )
    return Mechanism("gaussian", (sigma, sensitivity, _rate(sampling_rate)))


def laplace(scale: Real, sensitivity: Real = 1.0, sampling_rate: Real = 1.0) -> Mechanism:
    """The Laplace mechanism Lap(scale) on a query of l1 sensitivity ``sensitivity``,
    optionally on a Poisson subsample with rate ``sampling_rate``."""
    scale = _v.positive("scale", scale)
    sensitivity = _v.positive("sensitivity", sensitivity)
    _at_most(
        "sensitivity / scale", _finite("sensitivity / scale", sensitivity / scale), 500.0
    )
    return Mechanism("laplace", (scale, sensitivity, _rate(sampling_rate)))


def discrete_laplace(scale: Real, sensitivity: int = 1) -> Mechanism:
    """Discrete Laplace noise ``P(x) ∝ exp(-|x|/scale)`` on an integer query of sensitivity
    ``sensitivity`` (an integer, at most 10**6)."""
    scale = _v.positive("scale", scale)
    sensitivity = _v.integer("sensitivity", sensitivity, minimum=1, maximum=10**6)
    _at_most("sensitivity / scale", sensitivity / scale, 500.0)
    return Mechanism("discrete_laplace", (scale, sensitivity))


def discrete_gaussian(sigma: Real, sensitivity: int = 1) -> Mechanism:
    """Discrete Gaussian noise N_Z(0, sigma^2) on an integer query of (integer)
    sensitivity ``sensitivity``: its own exact privacy curve, not the continuous one."""
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.integer("sensitivity", sensitivity, minimum=1, maximum=10**6)
    _at_most("sensitivity / sigma", sensitivity / sigma, 40.0)
    # its PLD has ~25 sigma atoms; beyond this the continuous Gaussian's curve is within 1e-9
    _at_most("sigma", sigma, 4e5)
    return Mechanism("discrete_gaussian", (sigma, sensitivity))


def randomized_response(epsilon: PrivacyParam, categories: int = 2) -> Mechanism:
    """k-ary randomized response with parameter epsilon (the truth is kept with
    probability e^eps / (e^eps + k - 1)); its exact privacy curve."""
    epsilon = _v.positive("epsilon", epsilon)
    _at_most("epsilon", epsilon, 500.0)
    categories = _v.integer("categories", categories, minimum=2)
    return Mechanism("randomized_response", (epsilon, categories))


def pure_dp(epsilon: PrivacyParam) -> Mechanism:
    """Any epsilon-DP mechanism, e.g. the exponential mechanism or permute-and-flip at
    epsilon: accounted as binary randomized response, whose privacy region contains that
    of every epsilon-DP mechanism (Kairouz, Oh & Viswanath 2015, Thm 2.1 / Murtagh &
    Vadhan 2016), so its composed curve bounds theirs (dominating pairs compose:
    Zhu, Dong & Wang 2022, Thm 10).  Tighter bounded-range analyses of the exponential
    mechanism (Dong, Durfee & Rogers 2020) are not used."""
    return randomized_response(epsilon, 2)


# ------------------------------------------------------------------ composition


def _grid_step(items: Sequence[tuple[Mechanism, int]], grid_step: Real | None) -> float:
    """h = 2^-m.  Given: rounded down to a power of two.  Default: the connect-the-dots
    spread adds at most h^2/4 of variance per mechanism, kept below ~2e-5 of the composed
    variance (epsilon within ~1e-5 relative of the exact curve on the test grid); capped
    at 2^-6 and raised if the composed window would exceed the grid limit."""
    var = sum(c * law.var for m, c in items for law in m.laws()[:1])
    count = sum(c for _, c in items)
    if grid_step is None:
        h = min(2.0**-6, math.sqrt(8e-5 * max(var, 1e-300) / count))
    else:
        h = _v.positive("grid_step", grid_step)
    h = max(h, 60.0 * math.sqrt(var) / _MAX_GRID, 2.0**-40)
    return 2.0 ** math.floor(math.log2(h))


def _log_mgf(d: _Discrete, h: float, t: _F) -> _F:
    """Upper bounds on ln sum_i mass_i e^(t (start+i) h) for each t (finite part only).

    The masses are pooled in at most 1024 blocks, each placed at its largest loss for
    t > 0 and its smallest for t < 0: a bound, and cheap on long arrays."""
    nz = np.nonzero(d.mass)[0]
    if nz.size == 0:
        return np.full(len(t), -_INF)
    i0, i1 = int(nz[0]), int(nz[-1]) + 1
    m = d.mass[i0:i1]
    block = max(1, -(-m.size // 1024))
    pad = (-m.size) % block
    sums = np.concatenate([m, np.zeros(pad)]).reshape(-1, block).sum(axis=1) * (1.0 + 1e-12)
    first = (d.start + i0 + np.arange(sums.size) * block) * h
    last = first + (block - 1) * h
    keep = sums > 0.0
    lm = np.log(sums[keep])
    first, last = first[keep], last[keep]
    t = np.asarray(t, dtype=np.float64)
    ell = np.where(t[:, None] > 0.0, last[None, :], first[None, :])
    e = lm[None, :] + t[:, None] * ell
    mx = e.max(axis=1)
    result: npt.NDArray[np.float64] = mx + np.log(np.sum(np.exp(e - mx[:, None]), axis=1))
    return result


class ComposedPLD:
    """The composed privacy loss distribution of a list of mechanisms (both directions).

    Build it with :func:`compose`.  :meth:`delta` and :meth:`epsilon` are upper bounds of
    the exact values (see the module docstring)."""

    def __init__(self, h: float, dirs: list[_Direction]) -> None:
        self._h = h
        self._dirs = dirs  # _Direction objects

    @property
    def grid_step(self) -> float:
        return self._h

    def _mass_for(self, d: _Direction, epsilon: float) -> _F:
        """The masses to use at epsilon: the tilted refinement from the threshold on,
        where the FFT noise floor stops being negligible against delta (a grid point
        fixed by the untilted masses alone, so answers never depend on earlier queries,
        and delta stays monotone: the refined masses are elementwise <= the others)."""
        if d.job is None:
            return d.mass0
        if d.threshold is None:
            d.threshold = self._refine_threshold(d)
        return d.refined_mass() if epsilon >= d.threshold * self._h else d.mass0

    def _refine_threshold(self, d: _Direction) -> float:
        h, start, n = self._h, d.start, d.mass0.size

        def noisy(
            j: int,
        ) -> bool:  # noise floor above loss j h vs 1e-3 of the untilted delta there
            result: bool = d.err_suffix[
                min(max(j - start + 1, 0), n)
            ] > 1e-3 * self._delta_eval(d, d.mass0, j * h)
            return result

        # The last entry is noise against a delta of (nearly) nothing but the inf mass;
        # if even there the floor is negligible, it is everywhere.
        lo, hi = start - 1, start + n - 2
        if not noisy(hi):
            return _INF
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if noisy(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def _delta_dir(self, d: _Direction, epsilon: float) -> float:
        return self._delta_eval(d, self._mass_for(d, epsilon), epsilon)

    def _delta_eval(self, d: _Direction, mass: _F, epsilon: float) -> float:
        start, inf_mass, extra = d.start, d.inf_mass, d.extra
        h = self._h
        if epsilon >= (start + mass.size) * h:  # no finite loss above epsilon
            return min(
                1.0, math.nextafter(inf_mass + extra, _INF) if inf_mass + extra else 0.0
            )
        lo = math.floor(epsilon / h) - start + 1  # first index with loss > epsilon
        lo = max(lo, 0)
        while lo > 0 and (start + lo - 1) * h > epsilon:
            lo -= 1
        m = mass[lo:]
        if m.size == 0:
            return min(1.0, inf_mass + extra)
        ell = (start + lo + np.arange(m.size)) * h
        with np.errstate(under="ignore"):
            w = -np.expm1(epsilon - ell)
        terms = m * w
        s = float(np.sum(terms))
        # pairwise-sum rounding of nonnegative terms (see _numeric._sum_up)
        s = s * (1.0 + (130 + math.log2(m.size + 1)) * 2 * _U) + inf_mass + extra
        return min(1.0, math.nextafter(s, _INF))

    def delta(self, epsilon: PrivacyParam) -> float:
        """An upper bound on the composed delta at ``epsilon`` (max over both directions)."""
        epsilon = _v.nonnegative("epsilon", epsilon)
        return max(self._delta_dir(d, epsilon) for d in self._dirs)

    def epsilon(self, delta: PrivacyParam) -> float:
        """The smallest epsilon >= 0 at which :meth:`delta` is <= ``delta`` (rounded up)."""
        delta = _v.delta(delta, allow_zero=False)
        return max(self._epsilon_dir(d, delta) for d in self._dirs)

    def _epsilon_dir(self, d: _Direction, delta: float) -> float:
        h = self._h
        if self._delta_dir(d, 0.0) <= delta:
            return 0.0
        floor_mass = d.inf_mass + d.extra
        top = max((d.start + d.mass.size) * h, 0.0)
        if (
            floor_mass >= delta or self._delta_eval(d, d.mass0, top) > delta
        ):  # no mass above top
            raise PrivacyParameterError(
                f"delta must exceed the mass of infinite privacy loss ({floor_mass!r}) "
                f"for a finite epsilon; got {delta!r}"
            )
        # Grid points first (delta decreases): the answer lies in [j h, (j+1) h].
        start = d.start
        lo, hi = start, start + d.mass0.size
        mass = d.mass0
        if d.job is not None:
            if d.threshold is None:
                d.threshold = self._refine_threshold(d)
            thr = d.threshold
            if thr != _INF:
                if self._delta_eval(d, d.mass0, thr * h) <= delta:
                    hi = max(int(thr), lo + 1)  # below the threshold: untilted masses only
                else:
                    mass = d.refined_mass()
                    if self._delta_eval(d, mass, thr * h) <= delta:
                        return max(thr * h, 0.0)  # delta drops past the target right there
                    lo = int(thr)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._delta_eval(d, mass, mid * h) <= delta:
                hi = mid
            else:
                lo = mid
        a, b = max(lo * h, 0.0), hi * h
        # Inside the segment, delta = S0 - e^(eps - b) T + floor with S0 the mass above b
        # and T = sum m_i e^(b - loss_i) over it: both summed once, S0 rounded up and T
        # down, then bisection to float resolution on that (upward) form.
        i0 = hi - start
        m = mass[i0:]
        n_sum = (130 + math.log2(m.size + 1)) * 2 * _U
        s0 = float(np.sum(m)) * (1.0 + n_sum)
        with np.errstate(under="ignore"):
            t = float(np.sum(m * np.exp(-np.arange(m.size) * h))) * (1.0 - n_sum - 8 * _U)
        for _ in range(200):
            x = 0.5 * (a + b)
            if not a < x < b:
                break
            val = s0 - math.exp(x - hi * h) * t * (1.0 - 4 * _U) + floor_mass
            if val <= delta:
                b = x
            else:
                a = x
        while (
            self._delta_eval(d, mass, b) > delta
        ):  # the direct evaluation has the last word
            b = math.nextafter(b + 1e-12 * b, _INF)
        return b


def compose(
    mechanisms: Iterable[tuple[Mechanism, int]],
    *,
    grid_step: Real | None = None,
) -> ComposedPLD:
    """Compose mechanisms by PLD.

    Parameters
    ----------
    mechanisms : sequence of (Mechanism, int)
        Each mechanism with the number of times it runs (>= 1).  Identical mechanisms are
        grouped; the order does not matter (composition is commutative).
    grid_step : float, optional
        Loss discretisation step (rounded down to a power of two).  Default: chosen from
        the mechanisms so that epsilon is within ~1e-5 relative of the exact value.
        Any step gives an upper bound; a coarser one is faster and looser.

    Returns
    -------
    ComposedPLD
        With :meth:`ComposedPLD.delta` and :meth:`ComposedPLD.epsilon`, both upper bounds
        of the exact values for the adaptive composition.

    Privacy
    -------
    Each mechanism is replaced by a dominating discrete loss law and the composition is
    computed with every approximation on the safe side (module docstring).

    References
    ----------
    Koskela et al. 2020/2021; Doroshenko et al. 2022; Zhu, Dong & Wang 2022.
    """
    grouped: dict[Mechanism, int] = {}
    for m, c in mechanisms:
        if not isinstance(m, Mechanism):
            raise TypeError(
                f"mechanisms must hold Mechanism objects; got {type(m).__name__}"
            )
        c = _v.integer("count", c, minimum=1)
        grouped[m] = grouped.get(m, 0) + c
    if not grouped:
        raise PrivacyParameterError("compose needs at least one mechanism")
    # Gaussians without subsampling compose exactly into one Gaussian with
    # mu = sqrt(sum c_i mu_i^2) (Dong, Roth & Su 2022, Cor. 3.3): merge them first, so
    # that their composition adds no discretisation error at all.
    gauss = [
        (m, c) for m, c in grouped.items() if m.kind == "gaussian" and m.params[2] == 1.0
    ]
    if len(gauss) > 1 or (gauss and gauss[0][1] > 1):
        mus = [(m.params[1] / m.params[0]) ** 2 * c for m, c in gauss]
        mu = math.sqrt(math.fsum(mus)) * (1.0 + 8 * _CLOSED_FORM_SLACK)
        for m, _ in gauss:
            del grouped[m]
        merged = Mechanism("gaussian", (1.0, _finite("mu", mu), 1.0))
        grouped[merged] = grouped.get(merged, 0) + 1
    items = sorted(grouped.items(), key=lambda mc: repr(mc[0]))
    h = _grid_step(items, grid_step)
    # remove-direction laws, and add-direction laws (the same for symmetric mechanisms)
    per_mech: list[tuple[_Discrete, _Discrete, int]] = []
    for m, c in items:
        laws = m.laws()
        ds = [_discretise(law, h) for law in laws]
        per_mech.append((ds[0], ds[-1], c))
    dirs: list[_Direction] = []
    for which in (0, 1):
        if which == 1 and all(m.symmetric for m, _ in items):
            dirs.append(dirs[0])
            break
        dirs.append(
            _compose_direction([(add if which else rem, c) for rem, add, c in per_mech], h)
        )
    return ComposedPLD(h, dirs)


def _cgf(parts: Sequence[tuple[_Discrete, int]], h: float, t: _F) -> _F:
    """ln of the composed finite part's moment generating function at each t."""
    total: _F = np.zeros(np.shape(t))
    for d, c in parts:
        total = total + c * _log_mgf(d, h, t)
    return total


def _compose_direction(parts: Sequence[tuple[_Discrete, int]], h: float) -> _Direction:
    """Compose one direction: (start index, masses (upper bounds), inf mass, extra delta)."""
    log_keep = 0.0
    smin = smax = 0
    mean = var = 0.0
    for d, c in parts:
        log_keep += c * math.log1p(-min(d.inf_mass, 1.0 - 2**-53))
        nz = np.nonzero(d.mass)[0]
        if nz.size == 0:
            continue
        tot = float(d.mass.sum())
        ell = (d.start + nz) * h
        mu = float(np.dot(d.mass[nz], ell)) / tot
        mean += c * mu
        var += c * float(np.dot(d.mass[nz], (ell - mu) ** 2)) / tot
        smin += c * (d.start + int(nz[0]))
        smax += c * (d.start + int(nz[-1]))
    # 1 - prod (1 - p_i)^c_i, rounded up (zero stays zero: no infinite loss at all)
    inf_mass = 0.0 if log_keep == 0.0 else min(1.0, _up_slack(-math.expm1(log_keep)))
    if len(parts) == 1 and parts[0][1] == 1:  # nothing to compose: the law itself
        d = parts[0][0]
        return _Direction(d.start, d.mass, np.zeros(d.mass.size), inf_mass, 0.0, None)
    sd = max(math.sqrt(var), h)
    ts = np.geomspace(1e-3, 1e3, 25) / sd
    # Exponential tilts: the FFT's absolute noise floor sits at ~1e-16 of the largest
    # entry, which swamps the far upper tail that small deltas are made of.  Composing
    # m(l) e^(theta l) (the tilt commutes with convolution) and untilting moves the
    # floor down by e^(-theta l) there; each entry keeps the tilt whose error bound is
    # smallest (Koskela et al. 2021 discuss the same floor; the tilt is the classical
    # saddle-point device).
    thetas = (0.0, 6.0 / sd)
    k_pos = _cgf(parts, h, ts)
    k_neg = _cgf(parts, h, -ts)
    width = 12.0
    while True:
        A = max(smin, math.floor((mean - width * sd) / h) - 1)
        B = min(smax, math.ceil((mean + width * sd) / h) + 1)
        up_tail = 0.0 if B >= smax else float(np.exp(np.min(k_pos - ts * (B + 1) * h)))
        lo_tail = 0.0 if A <= smin else float(np.exp(np.min(k_neg + ts * (A - 1) * h)))
        if max(up_tail, lo_tail) <= _TAIL_TARGET or (A <= smin and B >= smax):
            break
        if (B - A) > _MAX_GRID:
            break
        width *= 1.5
    n = B - A + 1
    if n > _MAX_GRID:
        raise PrivacyParameterError(
            f"the composed privacy loss needs {n} grid points (more than {_MAX_GRID}); "
            "compose fewer mechanisms or use method='rdp'"
        )
    size = _good_size(n)
    top = A + size - 1  # the ring holds the losses A .. A + size - 1
    up_tail = 0.0 if top >= smax else float(np.exp(np.min(k_pos - ts * (top + 1) * h)))
    job = dict(parts=parts, h=h, A=A, size=size, top=top, smax=smax, ts=ts, thetas=thetas)
    val, err = _tilted_estimate(job, 0.0)
    return _Direction(A, val, err, inf_mass, up_tail, job)


class _Direction:
    """One direction of a composed PLD: masses = val + err (err bounds the FFT noise
    floor of each entry), inf mass and the window's lost upper tail.  ``refine`` adds the
    exponentially tilted compositions, only when a query finds the noise floor matters
    (small deltas): each entry keeps the estimate with the smallest error bound."""

    def __init__(
        self,
        start: int,
        val: _F,
        err: _F,
        inf_mass: float,
        extra: float,
        job: dict[str, Any] | None,
    ) -> None:
        self.start, self.inf_mass, self.extra, self.job = start, inf_mass, extra, job
        self._val, self._err = val, err
        self.mass0 = val + err
        # err_suffix[i]: the most the noise floor adds above entry i - 1
        self.err_suffix = np.append(np.cumsum(err[::-1])[::-1], 0.0)
        self.threshold: float | None = None
        self._refined: _F | None = None

    def refined_mass(self) -> _F:
        if self._refined is None:
            assert self.job is not None  # refined only when there is a tilted job
            val, err = self._val, self._err
            for theta in self.job["thetas"][1:]:
                v, e = _tilted_estimate(self.job, theta)
                better = e < err
                val = np.where(better, v, val)
                err = np.where(better, e, err)
            # both are upper bounds entry by entry: keep the smaller
            self._refined = np.minimum(val + err, self.mass0)
        return self._refined

    @property
    def mass(self) -> _F:
        return self.mass0


def _power(f: npt.NDArray[np.complex128], c: int) -> npt.NDArray[np.complex128]:
    """f**c elementwise by repeated squaring (k identical mechanisms: log2 k products)."""
    result = None
    while c:
        if c & 1:
            result = f if result is None else result * f
        c >>= 1
        if c:
            f = f * f
    assert result is not None  # c >= 1
    return result


def _fold(a: _F, size: int) -> _F:
    """a as a cyclic array of length size (entries i and i + size add up)."""
    if a.size <= size:
        return np.concatenate([a, np.zeros(size - a.size)])
    pad = (-a.size) % size
    result: npt.NDArray[np.float64] = (
        np.concatenate([a, np.zeros(pad)]).reshape(-1, size).sum(axis=0)
    )
    return result


def _good_size(n: int) -> int:
    """The smallest 2^a 3^b 5^c >= max(n, 16): lengths numpy's FFT handles fast."""
    n = max(n, 16)
    best = 1 << math.ceil(math.log2(n))
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            m = p35
            while m < n:
                m *= 2
            best = min(best, m)
            p35 *= 3
        p5 *= 5
    return best


def _fft_size(n: int, size: int) -> int:
    """A fast transform length >= n, or the ring size when n exceeds it."""
    return size if n >= size else _good_size(n)


def _self_compose(m: _F, c: int, size: int) -> _F:
    """The c-fold convolution of m: exact (linear) while it fits in the ring, cyclic mod
    size beyond (mass folded back is nonnegative: pessimistic, see the module docstring)."""
    if c == 1:
        return m
    n = c * (m.size - 1) + 1
    L = _fft_size(n, size)
    out = np.fft.irfft(_power(np.fft.rfft(_fold(m, L)), c), L)
    return out[:n] if n <= L else out


def _product_tree(arrays: list[_F], size: int) -> _F:
    """Convolve all arrays pairwise (smallest first), each product at the smallest FFT
    length that holds it: O(total support log) instead of one ring-size FFT per part."""
    arrays = sorted(arrays, key=lambda a: a.size)
    while len(arrays) > 1:
        nxt = []
        for i in range(0, len(arrays) - 1, 2):
            a, b = arrays[i], arrays[i + 1]
            n = a.size + b.size - 1
            L = _fft_size(n, size)
            out = np.fft.irfft(np.fft.rfft(_fold(a, L)) * np.fft.rfft(_fold(b, L)), L)
            nxt.append(out[:n] if n <= L else out)
        if len(arrays) % 2:
            nxt.append(arrays[-1])
        arrays = sorted(nxt, key=lambda a: a.size)
    return arrays[0]


def _tilted_estimate(job: dict[str, Any], theta: float) -> tuple[_F, _F]:
    """Compose the parts tilted by e^(theta l), untilt: (values, error bounds) per entry."""
    parts, h, A, size, top, smax, ts = (
        job[k] for k in ("parts", "h", "A", "size", "top", "smax", "ts")
    )
    ell = (A + np.arange(size)) * h
    s0 = 0
    log_scale = 0.0
    arrays = []
    for d, c in parts:
        m = d.mass
        if theta != 0.0:
            with np.errstate(divide="ignore"):
                lm = np.log(m) + theta * (d.start + np.arange(m.size)) * h
            mx = float(lm.max())
            # normalised to total mass 1, so that |rfft| <= 1 and its power cannot overflow
            top_i = mx + math.log(float(np.sum(np.exp(lm - mx))))
            m = np.exp(lm - top_i)
            log_scale += c * top_i
        arrays.append((m, c))
        s0 += c * d.start
    if len(arrays) <= 32:
        # few distinct mechanisms: one ring-size transform each, powered and multiplied
        prod = None
        for m, c in arrays:
            f = _power(np.fft.rfft(_fold(m, size)), c)
            prod = f if prod is None else prod * f
        assert prod is not None
        spec = np.fft.irfft(prod, size)
    else:
        # many: a product tree keeps most transforms short
        spec = _product_tree([_self_compose(m, c, size) for m, c in arrays], size)
    out = np.roll(_fold(spec, size), (s0 - A) % size)
    if not np.isfinite(out).all():  # cannot happen with normalised masses; never trust it
        return np.zeros(size), np.full(size, _INF)
    # Negative entries are pure rounding error (exact values are >= 0): four times the
    # largest bounds the noise floor of every entry.
    floor = 4.0 * max(float(-out.min()), 1e-3 * _U * float(np.abs(out).max()), 1e-300)
    if theta == 0.0:
        return np.maximum(out, 0.0), np.full(size, floor)
    if top < smax:
        # Tilted mass above the ring wraps into it: nonnegative, so safe, but it inflates
        # this tilt's entries; count it in the error used to choose a tilt.
        kt = _cgf(parts, h, theta + ts)
        floor += float(np.exp(min(np.min(kt - ts * (top + 1) * h) - log_scale, 700.0)))
    log_untilt = log_scale - theta * ell
    with np.errstate(divide="ignore", over="ignore"):
        val = np.exp(np.minimum(np.log(np.maximum(out, 0.0)) + log_untilt, 700.0))
        err = np.exp(np.minimum(math.log(floor) + log_untilt, 700.0))
    return val, err
