"""Renyi differential privacy (Mironov 2017): curves of the Gaussian and Laplace mechanisms,
composition and conversion to (epsilon, delta).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._errors import PrivacyParameterError
from .._typing import PrivacyParam, Real
from ._numeric import (
    _CLOSED_FORM_SLACK,
    _finite,
    _positive_floor,
    _real_sequence,
    _up,
    _up_array,
)

DEFAULT_RDP_ORDERS = np.array(
    [
        1.25,
        1.5,
        1.75,
        2.0,
        2.25,
        2.5,
        3.0,
        3.5,
        4.0,
        4.5,
        5.0,
        6.0,
        7.0,
        8.0,
        10.0,
        12.0,
        14.0,
        16.0,
        20.0,
        24.0,
        28.0,
        32.0,
        48.0,
        64.0,
        96.0,
        128.0,
        256.0,
        512.0,
        1024.0,
    ]
)
DEFAULT_RDP_ORDERS.setflags(write=False)


class RDPConversion(NamedTuple):
    """What :func:`rdp_to_dp` returns: the epsilon and the Renyi order that achieves it."""

    epsilon: float
    order: float


def _as_sequence(values: object) -> Any:
    """A lone number becomes a one-element list; anything else is left to validation."""
    return [values] if isinstance(values, numbers.Number) else values


def _orders(
    orders: Real | Iterable[Real] | npt.NDArray[Any] | None,
) -> npt.NDArray[np.float64]:
    if orders is None:
        return DEFAULT_RDP_ORDERS
    arr = _real_sequence("orders", _as_sequence(orders), minimum_exclusive=1.0)
    if arr.shape[0] == 0:
        raise PrivacyParameterError(
            "orders must hold at least one order; got an empty sequence"
        )
    return arr


def rdp_gaussian(
    sigma: Real,
    orders: Real | Iterable[Real] | npt.NDArray[Any] | None = None,
    sensitivity: Real = 1.0,
) -> npt.NDArray[np.float64]:
    """RDP curve of the Gaussian mechanism: epsilon(alpha) = alpha Delta^2 / (2 sigma^2).

    Parameters
    ----------
    sigma : float
        Noise standard deviation > 0.
    orders : sequence of float, optional
        Renyi orders alpha > 1 (default :data:`DEFAULT_RDP_ORDERS`).
    sensitivity : float, default 1.0
        l2 sensitivity > 0.

    Returns
    -------
    numpy.ndarray
        epsilon(alpha) for each order.

    Privacy
    -------
    The Gaussian mechanism is (alpha, alpha Delta^2/(2 sigma^2))-RDP for every alpha > 1
    (Mironov 2017, Table II; it is the Renyi divergence of two Gaussians with means
    Delta apart, computed in closed form).

    References
    ----------
    I. Mironov, "Renyi Differential Privacy", CSF 2017.
    """
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.positive("sensitivity", sensitivity)
    a = _orders(orders)
    ratio = sensitivity / sigma  # (Delta/sigma)^2: sigma * sigma underflows below 1e-162
    rho = _positive_floor(_finite("sensitivity / sigma", 0.5 * ratio * ratio))
    with np.errstate(over="ignore"):
        out = _up_array(a * rho)
    if not np.isfinite(out).all():
        _finite("the RDP of the largest order", float(out.max()))
    return out


def rdp_laplace(
    scale: Real,
    orders: Real | Iterable[Real] | npt.NDArray[Any] | None = None,
    sensitivity: Real = 1.0,
) -> npt.NDArray[np.float64]:
    """RDP curve of the Laplace mechanism.

    Parameters
    ----------
    scale : float
        Laplace scale > 0.
    orders : sequence of float, optional
        Renyi orders alpha > 1 (default :data:`DEFAULT_RDP_ORDERS`).
    sensitivity : float, default 1.0
        l1 sensitivity Delta > 0.

    Returns
    -------
    numpy.ndarray
        epsilon(alpha) = 1/(alpha-1) ln( alpha/(2alpha-1) e^((alpha-1)/b)
        + (alpha-1)/(2alpha-1) e^(-alpha/b) ) with b = scale / Delta.

    Privacy
    -------
    Mironov 2017, Prop. 6 / Table II (re-derived here: the integral of
    p^alpha q^(1-alpha) for Lap(0,b) against Lap(1,b) splits at 0 and 1 into exactly
    those two exponentials).  Evaluated as ln(alpha/(2alpha-1)) + (alpha-1)/b
    + ln1p((alpha-1)/alpha e^(-(2alpha-1)/b)), which cannot overflow.  Never exceeds
    1/b, the pure-DP epsilon of the mechanism.

    References
    ----------
    I. Mironov, "Renyi Differential Privacy", CSF 2017.
    """
    scale = _v.positive("scale", scale)
    sensitivity = _v.positive("sensitivity", sensitivity)
    a = _orders(orders)
    u = _finite("sensitivity / scale", sensitivity / scale)  # the pure-DP epsilon 1/b
    with np.errstate(over="ignore", under="ignore"):
        # Small (alpha - 1)/b: the mgf minus 1 is [alpha g((alpha-1)/b) + (alpha-1) g(-alpha/b)]
        # / (2 alpha - 1) with g(x) = e^x - 1 - x >= 0 (the linear terms cancel exactly,
        # which the log form below does in floating point, losing up to 1e-8 relative
        # at large scales).  A sum of nonnegative terms: no cancellation.
        x1, x2 = (a - 1.0) * u, -a * u
        small = a * u <= 1.0  # |x1|, |x2| <= 1: the series below converges fast
        series = (
            a * _expm1_minus_x(np.where(small, x1, 0.0))
            + (a - 1.0) * _expm1_minus_x(np.where(small, x2, 0.0))
        ) / (2.0 * a - 1.0)
        near = np.log1p(series) / (a - 1.0)
        far = (
            np.log(a / (2.0 * a - 1.0))
            + x1
            + np.log1p((a - 1.0) / a * np.exp(-(2.0 * a - 1.0) * u))
        ) / (a - 1.0)
        rdp = np.where(small, near, far)
    # The far form (alpha u > 1) cancels at most a factor ~5: a few ulps, like the near form.
    rdp = _up_array(np.maximum(rdp, 0.0), 64 * _CLOSED_FORM_SLACK)
    cap = math.nextafter(u, math.inf)  # 1/b rounded up: the exact pure-DP epsilon is below
    out = np.minimum(rdp, cap)
    return np.where(out > 0.0, out, math.ulp(0.0))


def _expm1_minus_x(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """e^x - 1 - x for |x| <= 1 (elementwise), without cancellation: its Taylor series
    sum_{n>=2} x^n/n!, summed to below 2^-60 relative (24 terms at |x| = 1)."""
    x = np.asarray(x, dtype=np.float64)
    term = x * x / 2.0
    total = term.copy()
    for n in range(3, 28):
        term = term * x / n
        total = total + term
    result: npt.NDArray[np.float64] = total
    return result


def rdp_compose(*curves: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Compose RDP mechanisms evaluated on the same orders: the curves add up.

    Parameters
    ----------
    *curves : sequence of float
        epsilon_i(alpha) arrays, one per mechanism, all on the same grid of orders.

    Returns
    -------
    numpy.ndarray
        sum_i epsilon_i(alpha).

    Privacy
    -------
    Adaptive composition of (alpha, eps_i)-RDP mechanisms is (alpha, sum eps_i)-RDP
    (Mironov 2017, Prop. 1).

    References
    ----------
    I. Mironov, CSF 2017.
    """
    if not curves:
        raise PrivacyParameterError("rdp_compose needs at least one curve; got none")
    arrays = [_real_sequence(f"curves[{i}]", _as_sequence(c)) for i, c in enumerate(curves)]
    n = arrays[0].shape[0]
    for i, arr in enumerate(arrays):
        if arr.shape[0] != n:
            raise PrivacyParameterError(
                f"curves[{i}] must have {n} orders like curves[0]; got {arr.shape[0]}"
            )
    result: npt.NDArray[np.float64] = np.sum(np.vstack(arrays), axis=0)
    return result


def rdp_to_dp(
    orders: Iterable[Real] | npt.NDArray[Any],
    rdp: Iterable[Real] | npt.NDArray[Any],
    delta: PrivacyParam,
    *,
    method: str = "tight",
) -> RDPConversion:
    """Convert an RDP curve to (epsilon, delta)-DP, optimising over the orders.

    Parameters
    ----------
    orders : sequence of float
        Orders alpha > 1.
    rdp : sequence of float
        epsilon(alpha) >= 0 on those orders.
    delta : float
        delta in (0, 1).
    method : {"tight", "classic"}
        ``"classic"``: epsilon = min_alpha eps(alpha) + ln(1/delta)/(alpha-1)
        (Mironov 2017, Prop. 3).  ``"tight"`` (default):
        epsilon = min_alpha eps(alpha) + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha-1)
        (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021), never larger.

    Returns
    -------
    RDPConversion
        ``(epsilon, order)``: the best epsilon (>= 0, rounded up) and the order that achieves it.

    Privacy
    -------
    An (alpha, eps(alpha))-RDP mechanism is (epsilon, delta)-DP with the returned epsilon.

    References
    ----------
    I. Mironov, CSF 2017, Prop. 3.  C. Canonne, G. Kamath, T. Steinke, NeurIPS 2020,
    Prop. 12.
    """
    a = _orders(orders)
    r = _real_sequence("rdp", _as_sequence(rdp))
    if r.shape != a.shape:
        raise PrivacyParameterError(
            f"rdp must have one value per order ({a.shape[0]}); got {r.shape[0]}"
        )
    delta = _v.delta(delta, allow_zero=False)
    method = _v.choice("method", method, ("tight", "classic"))
    log_delta = math.log(delta)
    if method == "classic":
        eps = r - log_delta / (a - 1.0)
    else:
        eps = r + np.log1p(-1.0 / a) - (log_delta + np.log(a)) / (a - 1.0)
    i = int(np.argmin(eps))
    return RDPConversion(_up(max(0.0, float(eps[i])), 2.0**-44), float(a[i]))
