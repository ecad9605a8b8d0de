"""dpfast.InsecureRandomnessWarning (issue 14 item 5): a secure mechanism given a seeded or
keyed ChaCha20, a numpy generator, or mode="fast" warns, once per calling line under
Python's default filter, pointing at the caller; the default path (rng=None, or an
OS-keyed ChaCha20 in any wrapper) never warns; dpfast.random's samplers do not warn.

pyproject.toml ignores this warning for the rest of the suite (it seeds everything); the
tests here set their own filters inside ``warnings.catch_warnings``."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dpfast
import dpfast.random as dr
from dpfast import mechanisms as M
from dpfast import objects as O
from dpfast import selection as S
from dpfast import sparse
from dpfast import stats as R
from dpfast.accounting import PrivacyBudget
from test_active_budget import ENTRY_POINTS

W = dpfast.InsecureRandomnessWarning

PREDICTABLE = {
    "seeded ChaCha20": lambda: dr.ChaCha20(7),
    "bytes-seeded ChaCha20": lambda: dr.ChaCha20(b"seed"),
    "keyed ChaCha20": lambda: dr.ChaCha20(key=b"k" * 32),
    "numpy PCG64": lambda: np.random.PCG64(1),
    "numpy Generator": lambda: np.random.default_rng(1),
    "Generator(seeded ChaCha20)": lambda: np.random.Generator(dr.ChaCha20(3)),
}


def _record(f, action="always"):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter(action, W)
        f()
    return [r for r in rec if issubclass(r.category, W)]


def test_it_is_a_user_warning_exported_from_dpfast():
    assert issubclass(W, UserWarning)
    assert dpfast.InsecureRandomnessWarning is dpfast._errors.InsecureRandomnessWarning
    assert "InsecureRandomnessWarning" in dpfast.__all__


@pytest.mark.parametrize("name", sorted(PREDICTABLE))
def test_predictable_generators_warn(name):
    rec = _record(lambda: M.laplace_mechanism(1.0, epsilon=1.0, rng=PREDICTABLE[name]()))
    assert len(rec) == 1
    assert "predictable" in str(rec[0].message) and "rng=None" in str(rec[0].message)


@pytest.mark.parametrize("rng", [None, "os", "generator(os)"])
def test_the_secure_default_never_warns(rng):
    gen = {
        None: None,
        "os": dr.ChaCha20(),
        "generator(os)": np.random.Generator(dr.ChaCha20()),
    }[rng]
    with warnings.catch_warnings():
        warnings.simplefilter("error", W)
        M.laplace_mechanism(1.0, epsilon=1.0, rng=gen)
        M.laplace_mechanism([1, 2], epsilon=1.0, rng=gen)
        M.gaussian_mechanism(1.0, epsilon=1.0, delta=1e-6, rng=gen)
        O.Laplace(1.0).release(1.0, rng=gen)
        O.DiscreteLaplace(1.0).release(1, rng=gen)
        O.Gaussian(epsilon=1.0, delta=1e-6).release(1.0, rng=gen)
        S.exponential_mechanism([1.0, 2.0], epsilon=1.0, rng=gen)
        R.mean([1.0, 2.0], lower=0, upper=3, epsilon=1.0, rng=gen)
        sparse.AboveThreshold(1.0, epsilon=1.0, rng=gen)


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_secure_entry_point_warns_with_a_seeded_generator(name):
    f = ENTRY_POINTS[name]
    if name == "PrivateBoostingClassifier.fit":
        from test_active_budget import _learn

        rec = _record(lambda: _learn(rng=11))  # an int seed: a seeded ChaCha20
    else:
        rec = _record(lambda: f(rng=dr.ChaCha20(1)))
    assert rec, f"{name} did not warn"
    pkg = os.path.dirname(dpfast.__file__)
    assert not [r.filename for r in rec if r.filename.startswith(pkg)]  # the caller's line


@pytest.mark.parametrize(
    "call",
    [
        lambda: M.laplace_mechanism(1.0, epsilon=1.0, mode="fast"),
        lambda: M.gaussian_mechanism([1.0], epsilon=1.0, delta=1e-6, mode="fast"),
        lambda: O.Laplace(1.0, mode="fast").release(1.0),
        lambda: S.top_k([1.0, 2.0], 1, epsilon=1.0, mode="fast"),
        lambda: R.quantile([1.0], 0.5, lower=0, upper=2, epsilon=1.0, mode="fast"),
        lambda: sparse.Sparse(1.0, cutoff=1, epsilon=1.0, mode="fast"),
    ],
)
def test_fast_mode_warns(call):
    rec = _record(call)
    assert rec and all("mode='fast'" in str(r.message) for r in rec)


def test_constructing_a_fast_object_does_not_warn_running_it_does():
    assert _record(lambda: O.Laplace(1.0, mode="fast")) == []
    assert _record(lambda: O.ExponentialMechanism(1.0, mode="fast")) == []


def test_the_warning_points_at_the_calling_line():
    def call():
        here = sys._getframe().f_lineno
        M.laplace_mechanism(1.0, epsilon=1.0, rng=dr.ChaCha20(1))  # the line after `here`
        return here + 1

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", W)
        line = call()
    assert (rec[0].filename, rec[0].lineno) == (__file__, line)


def test_once_per_location_under_the_default_filter():
    g = dr.ChaCha20(1)

    def run():
        for _ in range(5):
            M.laplace_mechanism(1.0, epsilon=1.0, rng=g)  # location A
        for _ in range(5):
            O.Gaussian(epsilon=1.0, delta=1e-6).release(
                [1.0, 2.0], rng=g
            )  # location B (two layers)
        for _ in range(3):
            R.quantile(
                [1.0], 0.5, lower=0, upper=2, epsilon=1.0, mode="fast"
            )  # C (three layers)

    rec = _record(run, action="default")
    assert len(rec) == 3
    assert len({r.lineno for r in rec}) == 3


def test_an_error_filter_stops_the_call_before_the_budget_is_charged():
    b = PrivacyBudget(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", W)
        with pytest.raises(W):
            M.laplace_mechanism(1.0, epsilon=0.5, rng=dr.ChaCha20(1), budget=b)
        with pytest.raises(W):
            O.Laplace(0.5).release(1.0, rng=np.random.default_rng(1), budget=b)
        with pytest.raises(W):
            R.count([1, 2], epsilon=0.5, mode="fast", budget=b)
        with pytest.raises(W):
            sparse.NumericSparse(1.0, cutoff=1, epsilon=0.5, rng=dr.ChaCha20(1), budget=b)
    assert b.ledger == []


def test_random_samplers_are_simulation_tools_and_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", W)
        g = np.random.default_rng(1)
        dr.uniform(size=3, rng=g)
        dr.discrete_laplace(2.0, size=3, rng=dr.ChaCha20(1))
        dr.discrete_gaussian(sigma2=4.0, size=3, rng=g)


def test_a_fresh_interpreter_shows_it_once_per_line_on_stderr():
    code = (
        "import dpfast, dpfast.random as dr\n"
        "g = dr.ChaCha20(1)\n"
        "for _ in range(3):\n"
        "    dpfast.mechanisms.laplace_mechanism(1.0, epsilon=1.0, rng=g)\n"
        "dpfast.mechanisms.laplace_mechanism(1.0, epsilon=1.0)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    assert out.stderr.count("InsecureRandomnessWarning") == 1
    assert "<string>:4: InsecureRandomnessWarning" in out.stderr


def test_the_demo_does_not_warn():
    out = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-m", "dpfast"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert "InsecureRandomnessWarning" not in out.stderr, out.stderr[-2000:]
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_ignore_shortcut_follows_every_change_of_the_filters():
    g = dr.ChaCha20(1)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("ignore", W)
        M.laplace_mechanism(1.0, epsilon=1.0, rng=g)  # shortcut: nothing shown
        warnings.simplefilter("error", W)
        with pytest.raises(W):
            M.laplace_mechanism(1.0, epsilon=1.0, rng=g)
        warnings.resetwarnings()
        warnings.filterwarnings("ignore", message="other", category=W)  # conditional
        warnings.simplefilter("always", W, append=True)
        M.laplace_mechanism(1.0, epsilon=1.0, rng=g)
        warnings.filterwarnings("ignore", category=UserWarning)  # covers W too
        M.laplace_mechanism(1.0, epsilon=1.0, rng=g)
    assert len(rec) == 1
