"""gaussian_mechanism in zCDP (issue 23 item 3): the zCDP-native form ``rho=`` (the plans of
objects.Gaussian(rho=...)), and the (epsilon, delta) form charging a zCDP budget the exact
rho of the noise it draws."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpfast import BudgetExceededError, PrivacyParameterError
from dpfast import mechanisms as M
from dpfast import objects as O
from dpfast.accounting import PrivacyBudget
from dpfast.random import ChaCha20


class Spy:
    """A zCDP budget that records the exact amounts charged."""

    composition = "zcdp"

    def __init__(self):
        self.calls = []

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append(("spend", epsilon, delta, label))

    def spend_rho(self, rho, *, label=None):
        self.calls.append(("rho", rho, label))


@pytest.mark.parametrize("x", [3, 2.5, np.arange(7), np.linspace(-1.0, 1.0, 9)])
@pytest.mark.parametrize("rho", [0.25, 0.1])
def test_rho_form_is_the_object_and_charges_rho_exactly(x, rho):
    got = M.gaussian_mechanism(x, rho=rho, l2_sensitivity=2.0, rng=ChaCha20(11))
    want = O.Gaussian(rho=rho, sensitivity=2.0).release(x, rng=ChaCha20(11))
    assert np.array_equal(got, want) and type(got) is type(want)
    spy = Spy()
    M.gaussian_mechanism(
        x, rho=rho, l2_sensitivity=2.0, rng=ChaCha20(11), budget=spy, label="g"
    )
    assert spy.calls == [("rho", Fraction(str(rho)), "g")]  # the decimal, exactly


def test_rho_form_on_budgets():
    z = PrivacyBudget(composition="zcdp", rho=1.0)
    for _ in range(4):
        M.gaussian_mechanism(np.zeros(3), rho=0.25, budget=z)
    assert z.spent.rho == 1.0
    with pytest.raises(BudgetExceededError):
        M.gaussian_mechanism(0.0, rho=0.25, budget=z)
    b = PrivacyBudget(10.0, 1e-3)  # rho alone: no (epsilon, delta)
    with pytest.raises(PrivacyParameterError, match="zCDP budget"):
        M.gaussian_mechanism(1.0, rho=0.25, budget=b)
    assert b.ledger == []
    M.gaussian_mechanism(1.0, rho=0.25, delta=1e-6, budget=b)  # with delta: its epsilon
    cost = O.Gaussian(rho=0.25, delta=1e-6).privacy_cost
    assert (b.ledger[0].epsilon, b.ledger[0].delta) == (cost.epsilon, 1e-6)


def test_rho_form_arguments():
    with pytest.raises(TypeError):
        M.gaussian_mechanism(1.0, rho=0.25, epsilon=1.0, delta=1e-6)
    with pytest.raises(TypeError):
        M.gaussian_mechanism(1.0)
    with pytest.raises(TypeError):
        M.gaussian_mechanism(1.0, epsilon=1.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(PrivacyParameterError):
            M.gaussian_mechanism(1.0, rho=bad)


def test_rho_form_fast_mode_sigma():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = M.gaussian_mechanism(np.zeros(20000), rho=0.5, mode="fast", rng=ChaCha20(3))
    assert abs(float(np.std(y)) - 1.0) < 0.03  # sigma = 1 / sqrt(2 * 0.5) = 1


def test_epsilon_delta_form_charges_a_zcdp_budget_its_rho():
    import warnings

    sigma = M.gaussian_sigma(1.0, 1e-6, 1.0)  # the continuous analytic sigma
    spy = Spy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        M.gaussian_mechanism(
            0.5, epsilon=1.0, delta=1e-6, mode="fast", rng=ChaCha20(1), budget=spy
        )
    # continuous noise of that sigma: rho = 1 / (2 sigma^2), exactly (Bun & Steinke 1.6)
    assert spy.calls == [("rho", 1 / (2 * Fraction(sigma) ** 2), "gaussian_mechanism")]
    for x in (3, 0.5, np.arange(50), np.zeros(50)):
        spy = Spy()
        M.gaussian_mechanism(x, epsilon=1.0, delta=1e-6, rng=ChaCha20(1), budget=spy)
        ((kind, rho, _),) = spy.calls
        # the discrete Gaussian's sigma is at least the continuous one's, and within
        # a few percent of it (grid rounding adds sqrt(d) steps)
        assert kind == "rho" and type(rho) is Fraction
        assert 0.9 / (2 * Fraction(sigma) ** 2) <= rho <= 1 / (2 * Fraction(sigma) ** 2)
    b = PrivacyBudget(10.0, 1e-3)  # (epsilon, delta) budgets: unchanged
    M.gaussian_mechanism(0.5, epsilon=1.0, delta=1e-6, budget=b)
    assert b.spent == (1.0, 1e-6, None)
