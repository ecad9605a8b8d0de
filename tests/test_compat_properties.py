"""Hostile public parameters and private values against the drop-in backends
(``dpfast.compat.diffprivlib``, ``dpfast.opendp``), in the style of
tests/test_properties.py (issue 22 items 8, 11 and 13).

For every shim class and every public parameter set to each hostile value: either the
host's own validation refuses it, or the mechanism answers; nothing escapes but the
documented exceptions (no ZeroDivisionError, OverflowError, RecursionError, ...).  For
private values (the value randomised), nothing may escape that diffprivlib itself would
not raise for the same value: a private number never decides an exception.
Needs ``dpfast[diffprivlib]`` and ``dpfast[opendp]`` (the integration step runs it).
"""

import math
import numbers
import os
import warnings

import numpy as np
import pytest

from test_properties import HOSTILE, _documented

if os.environ.get("DPFAST_BACKENDS_CI"):  # CI integration step: never skip
    import diffprivlib  # noqa: F401
pytest.importorskip("diffprivlib", reason="needs the dpfast[diffprivlib] extra")
import diffprivlib.mechanisms as dm  # noqa: E402

from dpfast.compat import diffprivlib as shim  # noqa: E402

FMAX = 1.7976931348623157e308
PUBLIC_EXTRA = [1e-320, 1e-30, 1e30, 1e300, FMAX, 10**29, 10**400, -0.5, 0.5, 1.0, 2.0]
PRIVATE = [
    0.0,
    -0.0,
    1.0,
    -1e308,
    1e308,
    FMAX,
    -FMAX,
    math.inf,
    -math.inf,
    math.nan,
    2**53 + 1,
    2**63,
    2**64,
    10**29,
    10**400,
    -(10**400),
    True,
    np.float32(0.5),
    np.int64(2**62),
    np.uint64(2**64 - 1),
]

# (class name, valid keyword arguments, a valid private value)
SCALAR = [
    ("Laplace", dict(epsilon=1.0, delta=0.0, sensitivity=1.0), 0.5),
    (
        "LaplaceTruncated",
        dict(epsilon=1.0, delta=0.0, sensitivity=1.0, lower=0.0, upper=10.0),
        0.5,
    ),
    (
        "LaplaceFolded",
        dict(epsilon=1.0, delta=0.0, sensitivity=1.0, lower=0.0, upper=10.0),
        0.5,
    ),
    (
        "LaplaceBoundedDomain",
        dict(epsilon=1.0, delta=0.0, sensitivity=1.0, lower=0.0, upper=10.0),
        0.5,
    ),
    ("LaplaceBoundedNoise", dict(epsilon=1.0, delta=0.1, sensitivity=1.0), 0.5),
    ("Gaussian", dict(epsilon=0.5, delta=1e-5, sensitivity=1.0), 0.5),
    ("GaussianAnalytic", dict(epsilon=1.0, delta=1e-5, sensitivity=1.0), 0.5),
    ("GaussianDiscrete", dict(epsilon=1.0, delta=1e-5, sensitivity=1), 3),
    ("Geometric", dict(epsilon=1.0, sensitivity=1), 3),
    ("GeometricTruncated", dict(epsilon=1.0, sensitivity=1, lower=0, upper=10), 3),
    ("GeometricFolded", dict(epsilon=1.0, sensitivity=1, lower=0, upper=10), 3),
    ("Snapping", dict(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0), 0.5),
    ("Staircase", dict(epsilon=1.0, sensitivity=1.0, gamma=0.5), 0.5),
    ("Uniform", dict(delta=0.1, sensitivity=1.0), 0.5),
]
NUMERIC_PRIVATE = {"GaussianDiscrete", "Geometric", "GeometricTruncated", "GeometricFolded"}


def _host(name, kwargs):
    """diffprivlib's own class: whether it accepts these parameters."""
    try:
        getattr(dm, name)(**kwargs)
    except (TypeError, ValueError):
        return False
    return True


def _raises(fn):
    """The exception type fn raises, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as exc:  # noqa: BLE001
        return type(exc)
    return None


def _call(fn, host=None):
    """'refused' (a documented exception, or the one the host itself raises for the
    same call: diffprivlib's validation is not ours to change), the answer, or fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
    except MemoryError:
        return "refused"
    except Exception as exc:  # noqa: BLE001
        if not _documented(exc) and host is not None and _raises(host) is type(exc):
            return "refused"
        assert _documented(exc), f"{type(exc).__name__}: {exc}"
        return "refused"
    return out


def _host_hangs(name, kwargs):
    """diffprivlib 0.6's GaussianDiscrete constructor searches its scale without end for
    a huge epsilon (host code, before any of dpfast's): not a case the shim can reach."""
    eps = kwargs.get("epsilon")
    if name != "GaussianDiscrete" or isinstance(eps, (str, complex, type(None))):
        return False
    try:
        return float(eps) > 1e6
    except (TypeError, ValueError, OverflowError):
        return False


def _cases():
    for name, kwargs, value in SCALAR:
        for key in kwargs:
            for bad in HOSTILE + PUBLIC_EXTRA:
                if not _host_hangs(name, {**kwargs, key: bad}):
                    yield pytest.param(
                        name, {**kwargs, key: bad}, value, id=f"{name}-{key}-{bad!r}"[:90]
                    )


def _host_call(name, kwargs, value):
    def call():
        getattr(dm, name)(**kwargs, random_state=np.random.RandomState(1)).randomise(value)

    return call


@pytest.mark.parametrize("name,kwargs,value", list(_cases()))
def test_hostile_public_parameters(name, kwargs, value):
    """Only documented exceptions, or exactly the one diffprivlib's own class raises
    for the same call (its validation and its folding recursion are not ours)."""
    host = _host_call(name, kwargs, value)
    mech = _call(
        lambda: getattr(shim, name)(**kwargs, random_state=np.random.RandomState(1)),
        host=host,
    )
    if mech == "refused":
        return
    out = _call(lambda: mech.randomise(value), host=host)
    if out != "refused":
        assert isinstance(out, numbers.Real)


@pytest.mark.parametrize("name,kwargs,value", SCALAR, ids=[c[0] for c in SCALAR])
def test_private_values_never_decide_an_exception(name, kwargs, value):
    mech = getattr(shim, name)(**kwargs, random_state=np.random.RandomState(1))
    host = getattr(dm, name)(**kwargs, random_state=np.random.RandomState(1))
    for x in PRIVATE:
        if name in NUMERIC_PRIVATE and not isinstance(x, (int, np.integer)):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                host.randomise(x)
            host_ok = True
        except Exception:  # noqa: BLE001
            host_ok = False
        out = _call(lambda: mech.randomise(x))  # never an undocumented exception
        if host_ok:
            assert out != "refused", (name, x)


@pytest.mark.parametrize("name,kwargs,value", SCALAR, ids=[c[0] for c in SCALAR])
def test_a_seeded_random_state_warns_and_none_does_not(name, kwargs, value):
    """Secure by default: a seeded random_state makes the noise predictable, so every
    shim warns as dpfast's own mechanisms do; the default (None: the CSPRNG) is silent."""
    import dpfast

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        getattr(shim, name)(**kwargs, random_state=3).randomise(value)
    assert any(w.category is dpfast.InsecureRandomnessWarning for w in seen), name
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpfast.InsecureRandomnessWarning)
        getattr(shim, name)(**kwargs).randomise(value)
