"""The one home of dpfast's calibration constants: the precision of every power-of-two
grid a secure path releases on, each with its reason.

A secure float path rounds its input to a public grid ``g = 2^k`` chosen from public
parameters only (Mironov 2012), adds exact integer noise in grid steps and rounds once.
``k`` is ``floor(log2(reference)) - bits``: the grid is ``2^-bits`` of a public reference
quantity (a noise scale, a sensitivity or a clamping bound) or a little finer.  ``bits``
trades the rounding's cost (charged to the sensitivity, so a coarser grid adds noise or
slack) against the range of the integer arithmetic (a finer grid means more grid steps of
noise).  docs/privacy-map.md maps each path to its plan, its C kernel and its proof.

This module imports only dpfast's leaves (validation, errors), so every module may
import it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from . import _validation as _v
from ._errors import PrivacyParameterError

__all__ = ["GRID_BITS", "GridBits", "dyadic_floor", "grid_exponent", "selection_grid"]


@dataclass(frozen=True)
class GridBits:
    """Grid precisions in bits below the reference quantity named per field."""

    # Float Laplace mechanism (mechanisms.laplace_mechanism, objects.Laplace, the
    # diffprivlib/pipeline_dp backends' Laplace): g <= 2^-40 of the noise scale b.  The
    # noise is then about 2^40 grid steps, far below the 2^53 at which g Z stops being
    # exact (P[|Z| >= 2^53] < exp(-2^12)), and the rounding, charged as d extra steps of
    # sensitivity, adds a relative d 2^-40 / epsilon to the noise.
    laplace: int = 40
    # Float Gaussian mechanism (mechanisms.gaussian_mechanism, objects.Gaussian, the
    # backends' Gaussian): g <= 2^-24 of sigma, so sigma^2 in grid steps stays below
    # 2^52, an exact integer for the discrete Gaussian sampler.
    gauss: int = 24
    # Float Gaussian on d > 1 coordinates: the rounding adds sqrt(d) steps to the l2
    # sensitivity, so the grid is refined (by at most 2^6: sigma^2 < 2^62 steps) until
    # sqrt(d) g <= 2^-12 of the l2 sensitivity, i.e. sigma grows by at most ~2^-12.
    gauss_vector: int = 12
    # dpfast.opendp float Laplace: the rounding is charged in the privacy map, not in the
    # noise, as a relative excess n g / d_in = n 2^-44 scale / d_in.  2^-44 keeps that
    # below 1e-12 for atoms at scale / d_in <= 17 (17 2^-44 < 1e-12), the tolerance at which
    # the map is tested against OpenDP's built-in (docs/backends.md); 2^-40 would not
    # (17 2^-40 > 1.5e-11).  No other reason for 44 rather than mechanisms' 40 is written
    # down; the noise, 2^44 to 2^45 steps, stays below 2^53.
    opendp_laplace: int = 44
    # dpfast.opendp float Gaussian: map excess about 2 sqrt(n) 2^-30 scale / d_in (~1e-9,
    # docs/backends.md); sigma^2 < 2^62 grid steps, the finest grid the mechanisms' vector
    # Gaussian uses (gauss + 6).  Why 30 rather than 24 is not written down beyond that.
    opendp_gauss: int = 30
    # Bounded-domain Laplace (random.laplace_truncated, diffprivlib's LaplaceTruncated and
    # LaplaceBoundedNoise): as the Laplace mechanism's grid, coarsened when a finite bound
    # would lie beyond 2^61 grid steps.
    bounded_laplace: int = 40
    # Staircase and uniform mechanisms (compat.diffprivlib): g <= 2^-40 of the
    # sensitivity, so neighbours differ by W = floor(sensitivity / g) + 1 ~ 2^40 steps and
    # the rounding's extra step costs a relative 2^-40.  Their arithmetic is exact on
    # Python integers, so no 2^53 limit applies.
    step: int = 40
    # Sparse vector (sparse.AboveThreshold/Sparse/NumericSparse): default grid 2^-20 of
    # the sensitivity, coarsened only while the query noise would exceed the secure
    # inversion's limit (about 2^40 grid steps, csrc/sparse.c).
    sparse: int = 20
    # Secure selection on float scores (exponential mechanism, noisy max, permute-and-flip,
    # top-k): Delta / G in [2^12, 2^13), so the 5 rounding steps added to the score width
    # (Delta / G + 5) shrink the noise rate by a relative 5 2^-12 at most (selection_grid below).
    selection: int = 12
    # Everyday sum / mean (releases.sum, releases.mean): the value grid is at most 2^-30 of
    # the clamping bound B, so rounding moves a record by at most B 2^-31.
    sum_value: int = 30
    # Grouped sum / mean (grouped.grouped_release): the value grid is at most 2^-30 of the
    # clamping bound (as sum_value) ...
    grouped_value: int = 30
    # ... and at least 2^-20 of the noise scale, whichever is larger: a finer grid than
    # the noise can see only lengthens the integers.
    grouped_noise: int = 20
    # Variance / std (releases.variance): step = 2^(e - 15) with (upper - lower) / 2 <
    # 2^e, so (upper - lower) / step < 2^16 and squares < 2^35 grid units: exact int64
    # partial sums.
    variance: int = 15
    # Quantiles (releases.quantile, releases.quantiles): levels are rounded to multiples of
    # 2^-16, so the utility's sensitivity max(a, 2^16 - a) is an integer.
    quantile_level: int = 16


#: The one table of grid precisions (read-only).
GRID_BITS: Final = GridBits()


def grid_exponent(scale: float, bits: int, granularity: float | None) -> int:
    """k with 2^k the grid: 2^k <= 2^-bits scale (bits from GRID_BITS), or the largest
    power of two <= granularity when the caller chose one; from public parameters only,
    never from the data."""
    if not scale < math.inf:
        raise PrivacyParameterError(
            f"the noise scale {scale!r} is outside the range of doubles: use a larger "
            "epsilon or a smaller sensitivity"
        )
    if granularity is None:
        # never finer than 2^-1000, even when the scale underflows (huge epsilon): a
        # coarser grid is a public choice, calibrated like any other
        k = max(math.frexp(scale)[1] - 1 - bits, -1000) if scale > 0.0 else -1000
    else:
        k = math.frexp(_v.positive("granularity", granularity))[1] - 1  # 2^k <= granularity
    if not -1000 <= k <= 1000:
        raise PrivacyParameterError(
            f"the grid 2^{k} for noise scale {scale!r} is outside the supported range "
            "[2^-1000, 2^1000]"
        )
    return k


# ------------------------------------------------------------------ selection (secure path)

_MIN_FLOAT_SENSITIVITY = 1e-290  # 1/G must stay a normal double
_MAX_GAMMA = 2**62  # larger gammas are clamped (smaller gamma: still private)


def dyadic_floor(gamma: Fraction) -> tuple[int, int]:
    """The largest g / 2**s <= gamma with g < 2**63 and 0 <= s <= 63 (exact).

    Rounding gamma *down* only makes the mechanism more private."""
    gamma = min(gamma, Fraction(_MAX_GAMMA))
    s = 63
    g = math.floor(gamma * 2**s)
    while g >= 2**63:
        s -= 1
        g = math.floor(gamma * 2**s)
    return g, s


@functools.lru_cache(maxsize=256)
def selection_grid(
    epsilon: float, sensitivity: float, monotonic: bool, integer: bool, rounds: int = 1
) -> tuple[float, int, int]:
    """Public parameters ``(inv_grid, g, s)`` of the secure paths; depend on no data.

    Privacy.  Let ``v_i`` be the score in grid units (``u_i / G``; ``u_i`` itself for integer
    scores).  The C kernels realise weights proportional to ``exp(gamma w_i)`` where ``w_i``
    differs from the clamped utility ``max(v_i, v* - 2**50)`` by less than 5/4 (rounding of
    the float subtraction and of the grid; csrc/selection.c, ``gap_f64``), and ``w_i = v_i``
    exactly for integer scores.  Between neighbours every ``w_i`` therefore moves within an
    interval of width

    * ``W = 2 Delta/G + 5`` in general (each score moves by at most ``Delta/G + 5/2``),
    * ``W = Delta/G + 5`` for monotone scores (all move the same way, by at most
      ``Delta/G``, plus rounding),

    and ``2 Delta``, ``Delta`` for integer scores.  If all utilities move within an interval
    of width ``W``, the exponential mechanism's probabilities change by a factor of at most
    ``exp(gamma W)`` (the proof of Thm 3.10, Dwork & Roth), and so do report noisy max's
    with exact integer noise (the proof of Claim 3.9: the winning threshold moves by an
    integer number of grid steps, at most ``W``; csrc/selection.c,
    ``dpf_noisy_max_secure``).  With
    ``gamma <= epsilon / (rounds W)`` each of ``rounds`` draws is ``epsilon/rounds``-DP and
    together they are epsilon-DP (Thm 3.16).  gamma is rounded *down* to a dyadic ``g/2**s``.
    """
    if integer:
        inv_grid = 1.0
        width = Fraction(sensitivity) * (1 if monotonic else 2)
    else:
        if sensitivity < _MIN_FLOAT_SENSITIVITY:
            raise PrivacyParameterError(
                "sensitivity must be >= 1e-290 for float scores on the secure path; got "
                f"{sensitivity!r}"
            )
        _, e = math.frexp(sensitivity)  # sensitivity in [2**(e-1), 2**e)
        j = e - 1 - GRID_BITS.selection  # G = 2**j: Delta / G in [2**12, 2**13)
        inv_grid = math.ldexp(1.0, -j)
        steps = Fraction(sensitivity) / Fraction(2) ** j  # Delta/G, exact
        width = steps + 5 if monotonic else 2 * steps + 5
    g, s = dyadic_floor(Fraction(epsilon) / (rounds * width))
    return inv_grid, g, s
