"""PrivacyBudget.spend_parallel: parallel composition over disjoint partitions charges the
max, not the sum, through the same filter as spend (memory budgets in every rule and a
real SQLite ledger budget)."""

from fractions import Fraction

import pytest

from dpfast import BudgetExceededError, PrivacyParameterError, ledger
from dpfast.accounting import PrivacyBudget


def test_charges_the_max_once():
    b = PrivacyBudget(1.0)
    e = b.spend_parallel([0.5, 0.25, 0.5], label="count per region")
    assert (e.index, e.label, e.epsilon, e.delta, e.status) == (
        0,
        "count per region",
        0.5,
        0.0,
        "spent",
    )
    assert b.spent == (0.5, 0.0, None)
    assert len(b.ledger) == 1
    b.spend_parallel([(0.5, 0.0)])
    assert b.remaining == (0.0, 0.0, None)
    with pytest.raises(BudgetExceededError):
        b.spend_parallel([1e-300])
    assert len(b.ledger) == 2 and b.spent == (1.0, 0.0, None)


def test_epsilon_and_delta_maxima_are_taken_separately():
    b = PrivacyBudget(1.0, 1e-5)
    e = b.spend_parallel([(0.5, 1e-6), (0.2, 4e-6), (0.1, 0.0)])
    assert (e.epsilon, e.delta) == (0.5, 4e-6)
    ref = PrivacyBudget(1.0, 1e-5)
    ref.spend(0.5, 4e-6)
    assert b.spent == ref.spent and b.remaining == ref.remaining


def test_exact_fractions_fill_the_budget_exactly():
    b = PrivacyBudget(1.0)
    for _ in range(3):
        b.spend_parallel([Fraction(1, 3), Fraction(1, 4), (Fraction(1, 5), 0)])
    assert b.spent.epsilon == 1.0 and not b.can_spend(1e-300)
    with pytest.raises(BudgetExceededError):
        b.spend_parallel([Fraction(1, 10**9)])
    # the parallel charge is far below the sum: sequential charges of the same releases overflow
    s = PrivacyBudget(1.0)
    s.spend(Fraction(1, 3))
    s.spend(Fraction(1, 4))
    s.spend(Fraction(1, 5))
    with pytest.raises(BudgetExceededError):
        s.spend(Fraction(1, 3))


def test_refused_or_invalid_charges_record_nothing():
    b = PrivacyBudget(1.0, 1e-6)
    with pytest.raises(BudgetExceededError):
        b.spend_parallel([0.1, 1.5])
    with pytest.raises(BudgetExceededError):
        b.spend_parallel([(0.1, 0.0), (0.1, 2e-6)])
    with pytest.raises(PrivacyParameterError, match="at least one"):
        b.spend_parallel([])
    with pytest.raises(PrivacyParameterError):
        b.spend_parallel([0.1, -0.1])
    with pytest.raises(PrivacyParameterError):
        b.spend_parallel([(0.1, 1.0)])
    with pytest.raises(TypeError):
        b.spend_parallel([(0.1, 0.0, "x")])
    with pytest.raises(TypeError):
        b.spend_parallel(["0.1"])
    with pytest.raises(TypeError):
        b.spend_parallel([0.1], label=3)
    assert b.ledger == [] and b.spent == (0.0, 0.0, None)


def test_zcdp_and_advanced_rules():
    z = PrivacyBudget(rho=0.5, composition="zcdp")
    e = z.spend_parallel([0.1, 0.2])
    assert e.rho == pytest.approx(0.02) and e.rho >= 0.02
    assert z.spent.rho == e.rho
    with pytest.raises(PrivacyParameterError, match="delta must be 0"):
        z.spend_parallel([(0.1, 1e-9)])
    a = PrivacyBudget(1.0, 1e-5, "advanced", delta_prime=1e-6)
    ref = PrivacyBudget(1.0, 1e-5, "advanced", delta_prime=1e-6)
    for _ in range(15):
        a.spend_parallel([0.05, 0.01, (0.02, 1e-8)])
        ref.spend(0.05, 1e-8)
    assert a.spent == ref.spent


def test_sqlite_ledger_budget_charges_the_max_durably(tmp_path):
    url = f"sqlite:///{tmp_path}/ledger.db"
    led = ledger.open(url)
    b = led.budget("regions", epsilon=1.0, delta=1e-6, create=True)
    e = b.spend_parallel([(0.25, 1e-7), (0.5, 0.0), 0.125], label="sum per region")
    assert (e.epsilon, e.delta, e.label, e.status) == (0.5, 1e-7, "sum per region", "spent")
    with pytest.raises(BudgetExceededError):
        b.spend_parallel([0.25, 0.75])  # the max (0.75) no longer fits
    led.close()
    again = ledger.open(url).budget("regions")  # another connection sees one charge
    rows = again.history()
    assert [(r.kind, r.label) for r in rows] == [
        ("create", None),
        ("spend", "sum per region"),
    ]
    assert (rows[1].epsilon, rows[1].delta) == (Fraction(1, 2), Fraction("1e-7"))  # decimal
    assert again.spent == (0.5, 1e-7, None)
    again.spend_parallel([0.5, 0.5])
    assert again.remaining.epsilon == 0.0
    again.verify()
