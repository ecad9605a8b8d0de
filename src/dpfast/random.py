"""Generators and raw samplers.

``ChaCha20`` is dpfast's CSPRNG; ``default_rng()`` is the calling thread's OS-keyed one.
Every sampler takes ``rng=``: ``None`` (that default), a ``ChaCha20``, any numpy
``BitGenerator`` or a numpy ``Generator``.

The continuous samplers here (``uniform``, ``laplace``, ``gaussian``, ``exponential``,
``gumbel``) are the fast *simulation* path: ordinary floating-point noise, which leaks
through the low bits of its results (Mironov 2012).  They are never a mechanism's
default; the mechanisms in :mod:`dpfast.mechanisms` use the exact, grid-based path
unless asked for ``mode="fast"``.
"""

from . import _core
from . import _validation as _v
from ._core import ChaCha20, default_rng, os_entropy

__all__ = [
    "ChaCha20", "default_rng", "os_entropy",
    "uniform", "laplace", "gaussian", "exponential", "gumbel",
]


def _shape(size, out):
    size = _v.size(size)
    if out is not None:
        _v.out_array(out, size)
    return size


def uniform(low=0.0, high=1.0, size=None, *, rng=None, out=None):
    """Uniform floats on [low, high) with 53 random bits each (simulation path)."""
    low = _v.finite("low", low)
    high = _v.finite("high", high)
    if not low <= high:
        raise _v.PrivacyParameterError(f"high must be >= low; got low={low!r}, high={high!r}")
    return _core.continuous(_core.UNIFORM, low, high - low, _shape(size, out), rng, out)


def laplace(scale=1.0, size=None, *, rng=None, out=None):
    """Laplace(0, scale) noise, density exp(-|x|/scale) / (2 scale) (simulation path).

    Parameters
    ----------
    scale : float, finite and >= 0
    size : int or tuple of ints, optional
        Output shape; ``None`` (and no ``out``) returns one float.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    out : float64 ndarray, optional
        Written in place and returned.
    """
    if type(scale) is not float or not 0.0 <= scale < _v._INF:
        scale = _v.nonnegative("scale", scale)
    if size is None and out is None:
        return _core.continuous(_core.LAPLACE, scale, 0.0, None, rng, None)
    return _core.continuous(_core.LAPLACE, scale, 0.0, _shape(size, out), rng, out)


def gaussian(sigma=1.0, size=None, *, rng=None, out=None):
    """Normal(0, sigma**2) noise (ziggurat; simulation path)."""
    sigma = _v.nonnegative("sigma", sigma)
    return _core.continuous(_core.NORMAL, sigma, 0.0, _shape(size, out), rng, out)


def exponential(scale=1.0, size=None, *, rng=None, out=None):
    """Exponential noise with mean ``scale`` (ziggurat; simulation path)."""
    scale = _v.nonnegative("scale", scale)
    return _core.continuous(_core.EXPONENTIAL, scale, 0.0, _shape(size, out), rng, out)


def gumbel(scale=1.0, size=None, *, rng=None, out=None):
    """Gumbel(0, scale) noise, CDF exp(-exp(-x/scale)) (simulation path)."""
    scale = _v.nonnegative("scale", scale)
    return _core.continuous(_core.GUMBEL, scale, 0.0, _shape(size, out), rng, out)
