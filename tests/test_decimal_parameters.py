"""Decimal privacy parameters (issue 14 item 1), checked against exact arithmetic.

The rule: a float epsilon/delta/rho means the decimal it prints as, ``Fraction(repr(x))``;
ints, Fractions and Decimals are exact.  Budgets add those exact values; every mechanism
calibrates with a float at or below them (so it is DP for the decimal); composition
helpers return floats that mean their exact result whenever it prints as a float.
"""

import math
import os
import pickle
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpfast
from dpfast import BudgetExceededError, PrivacyParameterError, ledger
from dpfast import _calibration as C
from dpfast import _validation as V
from dpfast import mechanisms as M
from dpfast import selection as S
from dpfast.accounting import (
    PrivacyBudget,
    advanced_composition,
    basic_composition,
    heterogeneous_advanced_composition,
)
from dpfast.accounting import budget as B
from dpfast.objects import Laplace
from dpfast.random import ChaCha20

FEW = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
TENTH = Fraction(1, 10)


def dec(x):
    return Fraction(repr(x))


# ---- the parser -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, exact",
    [
        (0.1, TENTH),
        (1e-5, Fraction(1, 10**5)),
        (0.3, Fraction(3, 10)),
        (1, Fraction(1)),
        (Fraction(1, 3), Fraction(1, 3)),
        (Decimal("0.1"), TENTH),
        (Decimal("1E-400"), Fraction(1, 10**400)),
        (np.float32(0.1), TENTH),
        (np.float16(0.1), TENTH),
        (np.float64(0.1), TENTH),
        (np.int64(7), Fraction(7)),
        (5e-324, Fraction(5, 10**324)),
        (1.7976931348623157e308, dec(1.7976931348623157e308)),
    ],
)
def test_exact_reads_what_the_caller_wrote(value, exact):
    assert V.exact("epsilon", value) == exact


@pytest.mark.parametrize(
    "value",
    [True, np.bool_(False), "0.1", None, 1j, [0.1], np.longdouble(0.1), np.array(0.1)],
)
def test_exact_refuses_by_type(value):
    with pytest.raises(TypeError, match="epsilon"):
        V.epsilon(value)


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        Decimal("NaN"),
        Decimal("Infinity"),
        0,
        0.0,
        -0.1,
        Decimal("-0.1"),
        Fraction(-1, 10**400),
        Fraction(1, 10**400),
        10**400,
    ],
)
def test_bad_values_are_refused_with_the_same_message(value):
    # PrivacyParameterError naming the parameter and the rule, as before
    with pytest.raises(PrivacyParameterError, match=r"epsilon must be finite and > 0; got"):
        V.epsilon(value)
    if value != Fraction(1, 10**400):  # a budget holds it exactly; no float is that small
        with pytest.raises(
            PrivacyParameterError, match=r"epsilon must be finite and > 0; got"
        ):
            PrivacyBudget(value)


@pytest.mark.parametrize("value", [1, 1.0, Decimal("1.0"), -1e-9, math.nan])
def test_delta_range(value):
    with pytest.raises(PrivacyParameterError, match=r"delta must be in \[0, 1\); got"):
        V.delta(value)


def test_amount_is_the_largest_float_at_or_below_the_decimal():
    a = V.epsilon(0.1)
    assert a.exact == TENTH
    assert Fraction(float(a)) <= TENTH < Fraction(math.nextafter(float(a), math.inf))
    assert float(a) == math.nextafter(0.1, 0.0)  # the float 0.1 is above one tenth
    assert float(V.epsilon(0.5)) == 0.5 and float(V.epsilon(0.3)) == 0.3  # at or below
    assert V.epsilon(a) is a  # validating again never rounds again
    assert V.positive("epsilon", a) is a
    assert repr(a) == "0.1" and repr(V.epsilon(Fraction(1, 3))) == "1/3"
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is V.Amount and b.exact == TENTH and float(b) == float(a)
    assert type(a + 0.0) is float  # arithmetic gives plain floats


@FEW
@given(st.floats(min_value=5e-324, max_value=1e300, allow_nan=False, allow_infinity=False))
def test_rounding_down_property(x):
    a = V.epsilon(x)
    q = dec(x)
    assert a.exact == q
    assert Fraction(float(a)) <= q < Fraction(math.nextafter(float(a), math.inf))
    # the decimal of a float lies in its rounding interval: a is x or the float below it
    assert float(a) in (x, math.nextafter(x, 0.0))


@FEW
@given(
    st.fractions(min_value=Fraction(0), max_value=Fraction(10**6), max_denominator=10**30)
)
def test_decimal_up_and_down(q):
    up, down = V.decimal_up(q), V.decimal_down(q)
    assert dec(up) >= q >= dec(down)
    assert dec(math.nextafter(up, -math.inf)) < q or up == 0.0
    assert dec(math.nextafter(down, math.inf)) > q
    if dec(float(q)) == q:
        assert up == down == float(q)


# ---- budgets: ten 0.1 fill 1.0 ----------------------------------------------------------


def _fill_with_tenths(b):
    for _ in range(10):
        b.spend(0.1)
    with pytest.raises(BudgetExceededError):
        b.spend(0.1)
    with pytest.raises(BudgetExceededError):
        b.spend(Fraction(1, 10**300))
    assert b.spent.epsilon == 1.0 and b.remaining.epsilon == 0.0


def test_ten_tenths_fill_a_memory_budget():
    _fill_with_tenths(PrivacyBudget(1.0))
    _fill_with_tenths(PrivacyBudget(Decimal("1")))
    b = PrivacyBudget(0.3)
    b.spend(0.1)
    b.spend(0.2)  # 0.1 + 0.2 == 0.3 exactly, as decimals
    assert b.spent.epsilon == 0.3 and not b.can_spend(5e-324)
    b = PrivacyBudget(1.0, 1e-5)
    for d in (Decimal("3e-6"), np.float32(3e-6), 4e-6):
        b.spend(0.0, d)
    assert b.remaining.delta == 0.0 and b.spent.delta == 1e-5


def test_other_filters_use_the_decimals():
    z = PrivacyBudget(composition="zcdp", rho=0.005)
    z.spend(0.1)  # rho = 0.1**2 / 2 = 0.005 exactly
    assert not z.can_spend(1e-100) and z.spent.rho == 0.005
    z = PrivacyBudget(composition="zcdp", rho=0.3)
    z.spend_rho(0.1)
    z.spend_rho(0.2)
    assert not z.can_spend_rho(Fraction(1, 10**300))
    a = PrivacyBudget(1.0, 1e-5, "advanced", delta_prime=1e-6)
    for _ in range(10):
        a.spend(0.1)
    assert not a.can_spend(1e-3)


def test_ledger_entries_show_what_was_charged():
    b = PrivacyBudget(1.0)
    e = b.spend(Decimal("0.1"), label="d")
    assert e.epsilon == 0.1
    assert "epsilon=0.1," in repr(b.ledger[0])


@FEW
@given(st.lists(st.integers(1, 999), min_size=1, max_size=30), st.integers(1, 20_000))
def test_budget_admits_iff_the_exact_decimal_sum_fits(milli, cap_milli):
    cap = cap_milli / 1000
    b = PrivacyBudget(cap)
    total = Fraction(0)
    for m in milli:
        x = m / 1000  # a float that prints as m/1000
        fits = total + Fraction(m, 1000) <= Fraction(cap_milli, 1000)
        assert b.can_spend(x) == fits
        if fits:
            b.spend(x)
            total += Fraction(m, 1000)
    assert dec(b.spent.epsilon) == total


def test_ten_tenths_fill_a_sqlite_ledger(tmp_path):
    led = ledger.open(f"sqlite:///{tmp_path}/l.db")
    b = led.budget("tenths", epsilon=1.0, create=True)
    _fill_with_tenths(b)
    assert [r.epsilon for r in b.history()[1:]] == [TENTH] * 10
    assert all(r.ok for r in led.verify())
    led.close()
    again = ledger.open(f"sqlite:///{tmp_path}/l.db").budget("tenths")
    assert again.remaining.epsilon == 0.0 and not again.can_spend(1e-300)


def test_ten_tenths_fill_a_postgresql_ledger(pg_server):  # noqa: F811  (the fixture)
    url = pg_server.database(f"decimal{os.getpid()}")
    led = ledger.open(url)
    b = led.budget("tenths", epsilon=1.0, delta=1e-6, create=True)
    _fill_with_tenths(b)
    b.spend_many([(0.0, 3e-7), (0.0, Decimal("7e-7"))])
    with pytest.raises(BudgetExceededError):
        b.spend(0.0, 1e-300)
    assert all(r.ok for r in led.verify())
    led.close()


def test_a_ledger_written_in_the_old_units_still_reads_and_verifies(tmp_path, monkeypatch):
    """Schema 1 stored states and costs in units of 2**-1074, without the u2: tag."""
    from dpfast.ledger import _chain, _store

    def old_state_text(state):
        out = []
        for s, p in zip(state, (1, 1, 2, 1) if len(state) == 4 else (1,) * len(state)):
            q = Fraction(s) / B.LEGACY_FACTOR**p
            assert q.denominator == 1  # dyadic amounts only in old ledgers
            out.append(str(q.numerator))
        return ";".join(out)

    url = f"sqlite:///{tmp_path}/old.db"
    monkeypatch.setattr(_store, "state_text", old_state_text)
    led = ledger.open(url)
    # caps as schema 1 stored them: floats at their binary value
    led._store.create("tenth", B.Filter(Fraction(0.1), Fraction(1e-6)))
    b = led.budget("old", epsilon=1.0, create=True)
    a = led.budget(
        "adv", epsilon=1.0, delta=1e-5, rule="advanced", delta_prime=1e-6, create=True
    )
    b.spend(0.25)
    a.spend(0.5)
    led.close()
    monkeypatch.undo()
    led = ledger.open(url)
    assert all(r.ok for r in led.verify())
    b = led.budget("old")
    assert b.remaining.epsilon == 0.75
    b.spend(0.5)  # new rows in the new units
    b.spend(0.25)
    with pytest.raises(BudgetExceededError):
        b.spend(1e-300)
    assert led.budget("adv").spent.epsilon == 0.5
    old = led.budget("tenth", epsilon=0.1, delta=1e-6, create=True)  # opens, keeps its caps
    assert old.history()[0].note == led._store.params("tenth")
    old.spend(0.1)  # 1/10 <= the binary 0.1000000000000000055...
    with pytest.raises(PrivacyParameterError, match="other caps"):
        led.budget("tenth", epsilon=0.2, delta=1e-6, create=True)
    assert all(r.ok for r in led.verify())
    raw = _chain.parse_state(old_state_text((B.UNIT, 0)))
    assert raw == (B.UNIT, 0)


# ---- composition ------------------------------------------------------------------------


def test_basic_composition_is_exact():
    assert basic_composition([0.1] * 10) == (1.0, 0.0)
    assert basic_composition(np.full(10, 0.1), np.full(10, 1e-7)) == (1.0, 1e-6)
    assert basic_composition([0.1, 0.2]) == (0.3, 0.0)
    exact = basic_composition([0.1] * 10, [Decimal("1e-7")] * 10, exact=True)
    assert exact == (Fraction(1), Fraction(1, 10**6)) and type(exact.epsilon) is Fraction
    third = basic_composition([Fraction(1, 3)])
    assert dec(third.epsilon) >= Fraction(1, 3) > dec(math.nextafter(third.epsilon, 0.0))
    with pytest.raises(TypeError):
        basic_composition([0.1], exact=1)
    with pytest.raises(PrivacyParameterError, match=r"epsilons\[1\]"):
        basic_composition([0.1, -0.1])
    with pytest.raises(TypeError, match=r"epsilons\[0\]"):
        basic_composition([True])


@FEW
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=40))
def test_basic_composition_against_fractions(micro):
    xs = [m / 10**6 for m in micro]
    want = sum((Fraction(m, 10**6) for m in micro), Fraction(0))
    assert basic_composition(xs, exact=True).epsilon == want
    got = basic_composition(xs).epsilon
    assert dec(got) == want  # a short decimal: exactly representable


def test_composition_helpers_return_the_target_delta():
    assert advanced_composition(0.1, 0, 10, 1e-6).delta == 1e-6
    assert advanced_composition(0.1, 1e-7, 10, 1e-6).delta == 2e-6
    assert (
        heterogeneous_advanced_composition([0.1, 0.2], [1e-7, 2e-7], 1e-6).delta == 1.3e-6
    )


def test_advanced_composition_bound_is_safe_for_the_decimal():
    for eps, k, dp in [(0.1, 10, 1e-6), (0.3, 7, 1e-5), (1e-3, 10_000, 1e-9)]:
        got = advanced_composition(eps, 0, k, dp).epsilon
        with mpmath.workdps(50):  # (local precision: other modules set their own)
            e, d = mpmath.mpf(repr(eps)), mpmath.mpf(repr(dp))
            exact = mpmath.sqrt(2 * k * mpmath.log(1 / d)) * e + k * e * mpmath.expm1(e)
            assert mpmath.mpf(repr(got)) >= exact and mpmath.mpf(got) >= exact


def test_per_step_epsilon_composes_as_a_decimal():
    from dpfast.accounting import advanced_composition_per_step

    e = advanced_composition_per_step(1.0, math.exp(-32), 10_000)
    with mpmath.workdps(50):
        x = mpmath.mpf(repr(e))  # what a mechanism/budget reads
        total = mpmath.sqrt(2 * 10_000 * 32) * x + 10_000 * x * mpmath.expm1(x)
        assert total <= 1 and abs(e - 0.00123104) < 1e-7


# ---- calibration: DP for the decimal ----------------------------------------------------


def test_laplace_scale_is_at_least_sensitivity_over_the_decimal():
    lap = Laplace(epsilon=0.1, sensitivity=1.0)
    assert Fraction(lap.scale) >= 1 / TENTH
    assert lap.privacy_cost.epsilon.exact == TENTH
    # the exact integer sampler's scale num/den, and the float grid's (in grid steps,
    # sensitivity/g + 1 for the rounding): both at least what the exact decimal needs
    num, den = M._laplace_int_plan(V.epsilon(0.1), 1.0).scale
    assert Fraction(num, den) >= 1 / TENTH
    k, sampler = M._laplace_grid_plan(V.epsilon(0.1), 1.0, 1, None)
    num, den = sampler.scale
    assert Fraction(num, den) >= (1 / Fraction(2) ** k + 1) / TENTH


def test_scalar_fast_path_uses_the_rounded_down_epsilon():
    M._SCALAR_LAPLACE_PLANS.clear()
    M.laplace_mechanism(1.0, epsilon=0.1, rng=ChaCha20(1))
    cached = M._SCALAR_LAPLACE_PLANS[0.1, 1.0]
    plan = (cached.k, cached.sampler)
    assert plan == M._laplace_grid_plan(V.epsilon(0.1), 1.0, 1, None)
    assert plan == M._laplace_grid_plan(math.nextafter(0.1, 0.0), 1.0, 1, None)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (0.3, 1e-7), (1.1, 0.3), (2.0, 1e-9)])
def test_gaussian_sigma_is_dp_for_the_decimal(eps, delta):
    sigma = C.gaussian_sigma(eps, delta)
    # >= the binary floats' sigma, up to the bisection's 1e-12 resolution (each sigma is
    # proved for its own input; the real check is the exact curve below)
    assert sigma >= C.analytic_gaussian_sigma(eps, delta, 1.0) * (1 - 1e-11)
    # Balle & Wang Thm 8 at the exact decimal epsilon and sigma, 50 digits: <= delta
    with mpmath.workdps(50):
        e, s = mpmath.mpf(repr(eps)), mpmath.mpf(sigma)
        phi = mpmath.ncdf
        d = phi(1 / (2 * s) - e * s) - mpmath.exp(e) * phi(-1 / (2 * s) - e * s)
        assert d <= mpmath.mpf(repr(delta))
    assert C.gaussian_sigma(Decimal(repr(eps)), Decimal(repr(delta))) == sigma
    assert C.gaussian_sigma(np.float32(eps), delta) == C.gaussian_sigma(
        Fraction(str(np.float32(eps))), delta
    )


def test_mechanisms_charge_the_exact_decimal():
    b = PrivacyBudget(1.0, 1e-5)
    g = ChaCha20(3)
    for _ in range(4):
        M.laplace_mechanism(1.0, epsilon=0.1, budget=b, rng=g)  # scalar fast path
    M.laplace_mechanism(np.ones(3), epsilon=Decimal("0.1"), budget=b, rng=g)
    M.laplace_mechanism(3, epsilon=Fraction(1, 10), budget=b, rng=g)
    M.gaussian_mechanism(1.0, epsilon=0.1, delta=5e-6, budget=b, rng=g)
    S.exponential_mechanism([1.0, 2.0], epsilon=0.1, budget=b, rng=g)
    dpfast.mechanisms.randomized_response(True, epsilon=0.1, budget=b, rng=g)
    Laplace(epsilon=0.1).release(1.0, budget=b, rng=g)
    assert [e.epsilon for e in b.ledger] == [0.1] * 10
    assert b.remaining == (0.0, 5e-6, None)
    with pytest.raises(BudgetExceededError):
        M.laplace_mechanism(1, epsilon=1e-9, budget=b, rng=g)


def test_bounded_range_rho_is_the_exact_decimal():
    z = PrivacyBudget(composition="zcdp", rho=Fraction(1, 800) * 3)
    for _ in range(3):
        S.exponential_mechanism([1.0, 2.0], epsilon=0.1, budget=z, rng=ChaCha20(2))
    assert not z.can_spend_rho(Fraction(1, 10**300))  # 3 * (1/10)^2/8 exactly


def test_sparse_and_report_noisy_max_charge_exactly():
    from dpfast.sparse import AboveThreshold

    b = PrivacyBudget(0.3)
    AboveThreshold(threshold=0.0, epsilon=0.1, budget=b, rng=ChaCha20(4))
    S.report_noisy_max(
        [1.0, 3.0], epsilon=0.1, return_value=True, budget=b, rng=ChaCha20(5)
    )
    assert b.remaining.epsilon == 0.0


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(st.integers(1, 10**6), st.integers(1, 12), st.integers(1, 5))
def test_calibrations_cover_random_decimals(digits, places, sens):
    """For a decimal epsilon = digits / 10**places: the exact Laplace sampler's scale is
    >= sensitivity / epsilon exactly, and the Gaussian sigma calibrated for it meets
    delta on the exact privacy curve at the decimal epsilon (Balle & Wang Thm 8, 30
    digits)."""
    q = Fraction(digits, 10**places)
    x = float(q)  # the float that prints as this decimal
    assert dec(x) == q
    a = V.epsilon(x)
    num, den = M._laplace_int_plan(a, float(sens)).scale
    assert Fraction(num, den) >= sens / q
    assert M._laplace_int_plan(
        V.epsilon(Decimal(digits).scaleb(-places)), float(sens)
    ) is M._laplace_int_plan(a, float(sens))  # Decimal and float agree
    if q < 50:
        s = C.gaussian_sigma(x, 1e-6, float(sens))
        with mpmath.workdps(30):
            e, sg, dl = (
                mpmath.mpf(q.numerator) / q.denominator,
                mpmath.mpf(s),
                mpmath.mpf(sens),
            )
            got = mpmath.ncdf(dl / (2 * sg) - e * sg / dl) - mpmath.exp(e) * mpmath.ncdf(
                -dl / (2 * sg) - e * sg / dl
            )
            assert got <= mpmath.mpf(1) / 10**6
