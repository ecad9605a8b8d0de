"""Hostile public parameters at the ledger's public entry points (issue 22): ``ledger.open``
(URLs and options), ``Ledger.budget`` (keys, caps, rules) and the charges of a
``LedgerBudget`` (amounts, labels).  Only documented exceptions escape (TypeError,
ValueError and its subclasses, dpfast's errors including LedgerError), and a refused call
records nothing: the budget's history and balance are unchanged."""

import math
import os
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings  # the [test] extra installs it
from hypothesis import strategies as st

import dpfast
from dpfast import ledger

FEW = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)

HOSTILE = [
    math.nan,
    math.inf,
    -math.inf,
    0,
    0.0,
    -0.0,
    5e-324,
    1e-300,
    1e308,
    10**400,
    -1,
    -0.5,
    2**63,
    2**64,
    True,
    False,
    Fraction(1, 3),
    Fraction(-1, 10**400),
    Fraction(1, 10**400),
    Decimal("0.5"),
    Decimal("NaN"),
    Decimal("1e-400"),
    "1",
    "0.5",
    b"1",
    None,
    1j,
    [0.5],
    np.float32(0.5),
    np.longdouble(0.5),
    np.uint64(2**64 - 1),
    np.int8(3),
    np.float64("nan"),
    np.bool_(True),
]


def _documented(exc):
    if isinstance(
        exc,
        (
            ZeroDivisionError,
            OverflowError,
            IndexError,
            AttributeError,
            FloatingPointError,
            AssertionError,
            SystemError,
            KeyError,
        ),
    ):
        return False
    if "math domain error" in str(exc) or "math range error" in str(exc):
        return False
    return isinstance(exc, (TypeError, ValueError, dpfast.DPFastError))


def _outcome(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001
        assert _documented(exc), f"{type(exc).__name__}: {exc}"
        return "refused", type(exc)
    return "answered", None


def _state(b):
    return [(r.seq, r.kind, r.label) for r in b.history()], tuple(b.spent)


# ---- ledger.open ---------------------------------------------------------------------------


def _urls(tmp):
    return [
        None,
        1,
        b"sqlite:///x.db",
        "",
        "memory",
        "memory:x",
        "sqlite://",
        "sqlite:///",
        "sqlite:///?synchronous=normal",
        f"sqlite:///{tmp}/a.db?synchronous=bogus",
        f"sqlite:///{tmp}/a.db?synchronous=",
        f"sqlite:///{tmp}/a.db?foo=1",
        f"sqlite:///{tmp}/a.db?synchronous=normal&synchronous=full",
        f"sqlite:///{tmp}/a.db?synchronous=off",
        f"sqlite:///{tmp}/a.db?=",
        f"sqlite:///{tmp}/a.db?synchronous=normal#frag",
        f"sqlite:///{tmp}/a\x00.db",
        f"sqlite:///{tmp}/" + "x" * 5000 + ".db",
        f"sqlite:///{tmp}/no/such/dir/a.db",
        f"sqlite:///{tmp}",
        f"sqlite:///{tmp}/a.db/",
        f"sqlite:///{tmp}/\udcff.db",
        f"sqlite:///{tmp}/%zz?.db",
        "mysql://localhost/x",
        "postgresql://",
        "postgresql://127.0.0.1:1/x",
        "postgres://%zz@127.0.0.1:1/x",
        "postgresql://127.0.0.1:1/x?sslmode=bogus",
        "postgresql://127.0.0.1:99999999/x",
        "file:x.db",
        "sqlite:///" + "é" * 300,
    ]


def test_open_refuses_hostile_urls_with_documented_errors(tmp_path):
    for url in _urls(tmp_path):
        _outcome(lambda: ledger.open(url, timeout=1.0).close())


def test_open_refuses_hostile_timeouts_before_opening_anything(tmp_path):
    for i, timeout in enumerate(HOSTILE):
        path = tmp_path / f"t{i}.db"
        kind, _ = _outcome(
            lambda: ledger.open(f"sqlite:///{path}", timeout=timeout).close()
        )
        assert (kind == "answered") == _valid_timeout(timeout), timeout
        if kind == "refused":
            assert not path.exists()  # refused before the file was created
        for url in ("memory:", "postgresql://127.0.0.1:1/x"):
            kind2, _ = _outcome(lambda: ledger.open(url, timeout=timeout).close())
            if url == "memory:":
                assert kind2 == kind, timeout


def _valid_timeout(t):
    """A finite real number of seconds >= 0 (not a bool, a str or a Decimal)."""
    if isinstance(t, (bool, np.bool_)) or not isinstance(
        t, (int, float, Fraction, np.integer, np.floating)
    ):
        return False
    try:  # (a timeout is seconds as a float: -1e-400 is 0 seconds)
        return math.isfinite(float(t)) and float(t) >= 0
    except OverflowError:  # 10**400: an int that no float holds
        return False


@FEW
@given(timeout=st.floats(allow_nan=True, allow_infinity=True))
def test_open_random_timeouts(tmp_path_factory, timeout):
    path = tmp_path_factory.mktemp("t") / "t.db"
    kind, _ = _outcome(lambda: ledger.open(f"sqlite:///{path}", timeout=timeout).close())
    assert (kind == "answered") == (math.isfinite(timeout) and timeout >= 0)


# ---- Ledger.budget -------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def led(request, tmp_path):
    url = "memory:" if request.param == "memory" else f"sqlite:///{tmp_path}/p.db"
    return ledger.open(url)


KEYS = [
    None,
    1,
    b"k",
    "",
    " ",
    "x" * 200,
    "x" * 201,
    "\n",
    "a\x00b",
    "\udcff",
    "é",
    "k" * 10**5,
    ["k"],
    np.str_("k"),
]


def test_budget_keys(led):
    for key in KEYS:
        _outcome(lambda: led.budget(key, epsilon=1.0, create=True))
        _outcome(lambda: led.budget(key))
        _outcome(lambda: led.history(key))
        _outcome(lambda: led.verify(key))
    # nothing but valid keys was created
    assert all(0 < len(k) <= 200 and k.isprintable() for k in led.keys())


@pytest.mark.parametrize("param", ["epsilon", "delta", "delta_prime", "rho"])
def test_budget_caps(led, param):
    base = {"epsilon": 1.0, "delta": 1e-6, "rule": "advanced", "delta_prime": 1e-7}
    if param == "rho":
        base = {"rho": 0.5, "rule": "zcdp"}
    for i, value in enumerate(HOSTILE):
        key = f"{param}-{i}"
        kind, _ = _outcome(lambda: led.budget(key, **{**base, param: value}, create=True))
        if kind == "refused":
            assert key not in led.keys()  # a refused budget was not created


def test_budget_rules_and_create_flags(led):
    for rule in [None, "", "BASIC", "zCDP", 1, b"basic", "basic ", ["basic"], math.nan]:
        kind, _ = _outcome(lambda: led.budget("r", epsilon=1.0, rule=rule, create=True))
        assert kind == "refused" and "r" not in led.keys(), rule
    _outcome(lambda: led.budget("r", create=True))  # no caps: refused
    assert "r" not in led.keys()


@FEW
@given(
    eps=st.floats(allow_nan=True, allow_infinity=True),
    delta=st.floats(allow_nan=True, allow_infinity=True),
)
def test_budget_random_caps(eps, delta):
    with ledger.open("memory:") as led:
        kind, _ = _outcome(lambda: led.budget("k", epsilon=eps, delta=delta, create=True))
        assert (kind == "answered") == ("k" in led.keys())


# ---- charges -------------------------------------------------------------------------------


def _charges(b):
    """(name, call(value)) for every charging method of a basic budget."""
    return [
        ("spend eps", lambda v: b.spend(v)),
        ("spend delta", lambda v: b.spend(0.125, v)),
        ("spend label", lambda v: b.spend(0.125, label=v)),
        ("reserve eps", lambda v: b.reserve(v)),
        ("reserve delta", lambda v: b.reserve(0.125, v)),
        ("spend_many eps", lambda v: b.spend_many([(0.0625, 0.0), (v, 0.0)])),
        ("spend_many delta", lambda v: b.spend_many([(0.0625, v)])),
        ("spend_many row", lambda v: b.spend_many([v])),
        ("spend_many all", lambda v: b.spend_many(v)),
        ("can_spend", lambda v: b.can_spend(v)),
    ]


def test_charges_with_hostile_amounts_record_nothing_when_refused(led):
    b = led.budget("c", epsilon=1e6, delta=0.5, create=True)
    for name, call in _charges(b):
        for value in HOSTILE + ["label", "x" * 10**5, "\x00"]:
            before = _state(b)
            kind, _ = _outcome(lambda: call(value))
            if kind == "refused":
                assert _state(b) == before, (name, value)


def test_zcdp_charges_with_hostile_amounts(led):
    b = led.budget("z", rho=1e6, rule="zcdp", create=True)
    for call in (
        lambda v: b.spend_rho(v),
        lambda v: b.reserve_rho(v) if hasattr(b, "reserve_rho") else b.spend_rho(v),
        lambda v: b.spend(v, 1e-9),
    ):
        for value in HOSTILE:
            before = _state(b)
            kind, _ = _outcome(lambda: call(value))
            if kind == "refused":
                assert _state(b) == before, value


def test_settling_hostile_reservations(led):
    b = led.budget("s", epsilon=1.0, create=True)
    other = led.budget("s2", epsilon=1.0, create=True)
    r = b.reserve(0.25)
    for value in [None, 1, "r", r._replace(index=99) if hasattr(r, "_replace") else 99]:
        before = _state(b)
        _outcome(lambda: b.commit(value))
        _outcome(lambda: b.rollback(value))
        assert _state(b) == before
    _outcome(lambda: other.commit(r))  # another budget's reservation
    b.commit(r)
    before = _state(b)
    for settle in (b.commit, b.rollback):  # settled twice: RuntimeError, as
        with pytest.raises(
            RuntimeError, match="already settled"
        ):  # PrivacyBudget documents
            settle(r)
    assert _state(b) == before


@FEW
@given(
    eps=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.fractions(),
        st.decimals(allow_nan=True, allow_infinity=True),
    ),
    delta=st.floats(allow_nan=True, allow_infinity=True),
)
def test_random_charges(eps, delta):
    with ledger.open("memory:") as led:
        b = led.budget("k", epsilon=10.0, delta=0.5, create=True)
        before = _state(b)
        kind, _ = _outcome(lambda: b.spend(eps, delta))
        if kind == "refused":
            assert _state(b) == before
        else:
            assert len(b.history()) == 2


def test_release_with_hostile_arguments(led):
    b = led.budget("rel", epsilon=1.0, create=True)
    r = b.reserve(0.25)
    before = _state(b)
    for key, seq, reason in [
        (None, r.index, "x"),
        ("rel", None, "x"),
        ("rel", "1", "x"),
        ("rel", 2**64, "x"),
        ("rel", -1, "x"),
        ("rel", r.index, ""),
        ("rel", r.index, None),
        ("rel", r.index, b"x"),
        ("rel", math.nan, "x"),
        ("rel", True, "x"),
        ("nope", r.index, "x"),
    ]:
        _outcome(lambda: led.release(key, seq, reason=reason, force=True))
    assert _state(b) == before


if sys.platform.startswith("linux"):

    def test_open_on_a_directory_or_device(tmp_path):
        os.mkdir(tmp_path / "dir.db")
        for url in (
            f"sqlite:///{tmp_path}/dir.db",
            "sqlite:////dev/null",
            "sqlite:////proc/self/status",
        ):
            _outcome(lambda: ledger.open(url, timeout=0.5).close())
