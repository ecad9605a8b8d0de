"""Findings of the hardening review (issue 9) on the in-memory PrivacyBudget: forked
copies, pickled copies, a negative amount that rounds to -0.0, and overflow in the
advanced filter."""

import copy
import os
import pickle
from fractions import Fraction

import pytest

from dpfast import BudgetExceededError, PrivacyParameterError
from dpfast.accounting import PrivacyAmount, PrivacyBudget


def _in_child(fn):
    """Run ``fn`` in a forked child; return its exit status (0 = fn returned True)."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = 0 if fn() else 1
        except BaseException:
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_forked_copy_refuses_to_spend():
    b = PrivacyBudget(1.0)
    b.spend(0.25)

    def child():
        for call in (
            lambda: b.spend(0.1),
            lambda: b.spend(0.1, label="x"),
            lambda: b.reserve(0.1),
            lambda: b.spend(Fraction(1, 10)),
        ):
            try:
                call()
                return False
            except BudgetExceededError as e:
                if "another process" not in str(e):
                    return False
        return b.spent.epsilon == 0.25  # reading is harmless

    assert _in_child(child) == 0
    # the parent keeps spending normally, and the child's attempts left no trace
    assert b.spend(0.75).index == 1
    assert b.spent == PrivacyAmount(1.0, 0.0, None)


def test_forked_copy_cannot_settle_a_reservation():
    b = PrivacyBudget(1.0)
    r = b.reserve(0.5)

    def child():
        try:
            b.rollback(r)  # would give the parent's budget back in the copy
        except BudgetExceededError:
            return True
        return False

    assert _in_child(child) == 0
    assert b.commit(r).status == "committed"


@pytest.mark.parametrize("dup", [pickle.dumps, copy.copy, copy.deepcopy])
def test_budget_cannot_be_duplicated(dup):
    b = PrivacyBudget(1.0, 1e-6)
    b.spend(0.5)
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        dup(b)


@pytest.mark.parametrize("tiny", [Fraction(-1, 10**400), Fraction(-1, 2**1100)])
def test_negative_fraction_rounding_to_minus_zero_is_refused(tiny):
    assert float(tiny) == 0.0  # -0.0: a float check alone would accept it
    b = PrivacyBudget(1.0, 1e-6)
    b.spend(1.0)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        b.spend(tiny)
    with pytest.raises(PrivacyParameterError, match="delta"):
        b.spend(0.0, tiny)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        b.reserve(tiny)
    z = PrivacyBudget(composition="zcdp", rho=1.0)
    with pytest.raises(PrivacyParameterError, match="rho"):
        z.spend_rho(tiny)
    # nothing was credited: the budget is still exhausted
    with pytest.raises(BudgetExceededError):
        b.spend(Fraction(1, 10**300))
    assert len(b.ledger) == 1


def test_huge_integer_and_longdouble_amounts_are_refused_cleanly():
    import numpy as np

    b = PrivacyBudget(1.0)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        b.spend(10**400)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        PrivacyBudget(10**400)
    if np.dtype(np.longdouble).itemsize > 8:
        with pytest.raises(TypeError, match="epsilon"):
            b.spend(np.longdouble(0.1))
    assert b.ledger == []


@pytest.mark.parametrize("eps", [800.0, 709.9, 1e308, 10**300])
def test_advanced_filter_large_charge_is_a_clear_answer(eps):
    small = PrivacyBudget(1.0, 1e-5, "advanced", delta_prime=1e-6)
    with pytest.raises(BudgetExceededError):
        small.spend(eps)
    assert small.ledger == [] and small.can_spend(0.5)
    big = PrivacyBudget(1e308, 1e-5, "advanced", delta_prime=1e-6)
    if eps <= 1e308:
        e = big.spend(eps)
        assert e.epsilon == float(eps)
        assert big.spent.epsilon == float(eps) and big.spent.delta == 0.0
        r = big.reserve(0.0)
        big.rollback(r)
    # a reservation of a huge charge rolls back exactly
    huge = PrivacyBudget(1e308, 1e-5, "advanced", delta_prime=1e-6)
    r = huge.reserve(800.0)
    huge.rollback(r)
    assert huge.spent == PrivacyAmount(0.0, 0.0, None)
    assert huge.can_spend(1e308)
