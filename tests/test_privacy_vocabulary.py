"""The one privacy vocabulary (issue 23 item 1): one Cost class, one charge(), one budget
protocol, one Rng alias and one set of directed-rounding helpers, in dpfast._privacy."""

from __future__ import annotations

import ast
import math
import pathlib
import pickle
import re
import sys
from fractions import Fraction

import pytest

import dpfast
from dpfast import PrivacyParameterError
from dpfast import _privacy as P
from dpfast.accounting import PrivacyBudget

SRC = pathlib.Path(dpfast.__file__).resolve().parent


# ---- one Cost ------------------------------------------------------------------------


def test_every_old_cost_name_is_the_one_class():
    import dpfast.accounting as A
    import dpfast.learn as L
    import dpfast.objects as O
    import dpfast.query_release as R
    from dpfast.accounting.budget import PrivacyAmount
    from dpfast.query_release.cost import PrivacyCost

    for alias in (
        A.PrivacyAmount,
        A.Cost,
        PrivacyAmount,
        O.PrivacyCost,
        R.PrivacyCost,
        PrivacyCost,
        L.PrivacyCost,
    ):
        assert alias is P.Cost


def test_cost_is_the_named_tuple_it_replaces():
    c = P.Cost(0.5, 0.0, 0.125)
    eps, delta, rho = c
    assert (eps, delta, rho) == (0.5, 0.0, 0.125) == (c.epsilon, c.delta, c.rho)
    assert c == (0.5, 0.0, 0.125) and (0.5, 0.0, 0.125) == c and c[:2] == (0.5, 0.0)
    assert c._fields == ("epsilon", "delta", "rho") and len(c) == 3
    assert c._asdict() == {"epsilon": 0.5, "delta": 0.0, "rho": 0.125}
    assert P.Cost(1.0, 0.0) == (1.0, 0.0, None)  # rho defaults to None
    assert c != [0.5, 0.0, 0.125] and c != 0.5 and c != (0.5, 0.0) and not c == None  # noqa: E711
    assert repr(c) == "Cost(epsilon=0.5, delta=0.0, rho=0.125)"
    assert c.parts == () and c.breakdown == {} and c.certified is True
    with pytest.raises(AttributeError):
        c.epsilon = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        c.parts = ()  # type: ignore[misc]


def test_cost_parts_and_notes():
    c = P.Cost(
        1.0,
        1e-6,
        None,
        [("a", (0.5, 0.0)), ("b", (0.5, 1e-6))],
        variant="grid",
        n_samples=10,
        adjacency="replace-one",
    )
    assert c.parts == (("a", (0.5, 0.0)), ("b", (0.5, 1e-6)))
    assert c.breakdown == {"a": (0.5, 0.0), "b": (0.5, 1e-6)}
    assert c == (1.0, 1e-6, None)  # a plain tuple compares the three fields
    assert c != P.Cost(1.0, 1e-6, None)  # two costs compare their parts and notes too
    assert (
        c != c._replace(certified=False) and c._replace(certified=False).certified is False
    )
    assert (
        c._replace(epsilon=2.0).epsilon == 2.0 and c._replace(epsilon=2.0).parts == c.parts
    )
    assert pickle.loads(pickle.dumps(c)) == c and hash(
        pickle.loads(pickle.dumps(c))
    ) == hash(c)
    assert "parts=" in repr(c) and "variant='grid'" in repr(c)


def test_every_privacy_cost_is_a_cost():
    from dpfast import objects as O
    from dpfast import query_release as R
    from dpfast.learn import boosting_privacy_cost

    for obj in (
        O.Laplace(0.5),
        O.DiscreteLaplace(0.5),
        O.Gaussian(rho=0.1),
        O.Gaussian(epsilon=0.5, delta=1e-6),
        O.ExponentialMechanism(1.0),
        O.RandomizedResponse(1.0, k=3),
    ):
        assert type(obj.privacy_cost) is P.Cost
    dom = R.Domain(["a"], [4])
    wl = R.MarginalWorkload(dom, [("a",)])
    assert type(R.MWEM(wl, epsilon=1.0, rounds=2, n_public=10.0).privacy_cost) is P.Cost
    cost = boosting_privacy_cost(
        n_samples=32561,
        n_rounds=15,
        sample_size=1000,
        smoothness=8000,
        eta=0.1,
        epsilon_test=0.02,
        epsilon_threshold=0.02,
        base_epsilon=0.15,
    )
    assert type(cost) is P.Cost and cost.rho is None and cost.adjacency == "replace-one"
    b = PrivacyBudget(1.0)
    assert type(b.spent) is P.Cost and type(b.remaining) is P.Cost


# ---- one charge ----------------------------------------------------------------------


def test_charge_an_epsilon_delta_budget():
    b = PrivacyBudget(epsilon=2.0, delta=1e-5)
    P.charge(b, P.Cost(0.5, 1e-6, 0.9), "x")  # rho is not what this budget adds
    assert b.spent == (0.5, 1e-6, None) and b.ledger[-1].label == "x"
    P.charge(None, P.Cost(0.5, 0.0), "nothing")  # None: charge nothing
    assert len(b.ledger) == 1


def test_charge_a_zcdp_budget():
    b = PrivacyBudget(rho=1.0, composition="zcdp")
    P.charge(b, P.Cost(0.5, 1e-6, Fraction(1, 10)), "rho")  # the cost knows rho
    assert b.spent.rho == 0.1 and b.ledger[-1].epsilon == 0.0
    P.charge(b, P.Cost(0.5, 0.0), "pure")  # no rho: epsilon^2/2
    assert b.spent.rho == 0.225


def test_charge_refuses_only_what_cannot_be_expressed():
    z = PrivacyBudget(rho=1.0, composition="zcdp")
    with pytest.raises(PrivacyParameterError, match="delta must be 0"):
        P.charge(z, P.Cost(0.5, 1e-6), "approx")  # delta > 0 and no rho
    b = PrivacyBudget(epsilon=1.0)
    with pytest.raises(PrivacyParameterError, match="zCDP budget"):
        P.charge(b, P.Cost(None, None, 0.1), "rho only")  # rho only: no (epsilon, delta)
    assert z.ledger == [] and b.ledger == []


def test_charge_passes_the_amounts_exactly_as_given():
    seen = []

    class Spy:
        composition = "zcdp"

        def spend(self, epsilon, delta=0.0, *, label=None):
            seen.append(("spend", epsilon, delta, label))

        def spend_rho(self, rho, *, label=None):
            seen.append(("rho", rho, label))

    P.charge(Spy(), P.Cost(0.1, 0.0, Fraction(1, 3)), "a")
    P.charge(Spy(), P.Cost(0.1, 0.0), "b")
    assert seen == [("rho", Fraction(1, 3), "a"), ("spend", 0.1, 0.0, "b")]
    assert type(seen[0][1]) is Fraction and type(seen[1][1]) is float


# ---- directed rounding ---------------------------------------------------------------


def test_float_up_and_down_known_answers():
    third = Fraction(1, 3)
    assert P.float_down(third) == 1 / 3 and P.float_up(third) == math.nextafter(1 / 3, 1)
    assert Fraction(P.float_down(third)) < third < Fraction(P.float_up(third))
    tenth = Fraction(1, 10)  # 0.1 is just above 1/10
    assert P.float_up(tenth) == 0.1 and P.float_down(tenth) == math.nextafter(0.1, 0)
    assert P.float_up(Fraction(1, 2)) == P.float_down(Fraction(1, 2)) == 0.5  # exact
    assert P.float_up(0.1) == P.float_down(0.1) == 0.1  # a float
    big = Fraction(sys.float_info.max) * 2
    assert P.float_up(big) == math.inf
    with pytest.raises(OverflowError):
        P.float_up_finite(big)
    assert P.float_up_finite(third) == P.float_up(third)
    assert P.decimal_up(tenth) == 0.1 and P.decimal_down(tenth) == 0.1
    assert P.decimal_up(third) == 0.33333333333333337


def test_margin_helpers_known_answers():
    assert P.MARGIN == 2.0**-40
    assert P.inflate(1.0) == 1.0 + 2.0**-40 and P.deflate(1.0) == 1.0 - 2.0**-40
    assert P.bound_up(0.0) == 0.0
    assert P.bound_up(1.0) == math.nextafter(1.0 + 2.0**-40, math.inf)


# ---- one definition of each ----------------------------------------------------------


def _trees():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _is_protocol(node: ast.ClassDef) -> bool:
    return any(
        (isinstance(b, ast.Name) and b.id == "Protocol")
        or (isinstance(b, ast.Attribute) and b.attr == "Protocol")
        for b in node.bases
    )


def test_one_cost_class_one_charge_function_one_budget_protocol():
    costs, charges, protocols, rngs = [], [], [], []
    for name, tree in _trees():
        for node in tree.body:  # module level: methods named charge are not it
            if isinstance(node, ast.FunctionDef) and re.fullmatch(
                r"_*charge(_\w*)?", node.name
            ):
                charges.append((name, node.name))
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                value = node.value
                if (
                    value is not None
                    and not isinstance(value, (ast.Name, ast.Attribute))
                    and "Rng"
                    in ast.unparse(
                        node.targets[0] if isinstance(node, ast.Assign) else node.target
                    )
                ):
                    rngs.append(name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                if "Cost" in node.name or "PrivacyAmount" in node.name:
                    costs.append((name, node.name))
                if _is_protocol(node):
                    protocols.append((name, node.name))
    assert costs == [("_privacy.py", "Cost")]
    assert charges == [("_privacy.py", "charge")]
    # the one protocol a budget meets; a budget's store (memory, SQLite, PostgreSQL:
    # accounting.budget.BudgetStore) is another concept, what a budget keeps its state in
    assert [p for p in protocols if not p[1].endswith("Store")] == [
        ("_privacy.py", "Budget")
    ]
    assert [p for p in protocols if p[1].endswith("Store")] == [
        ("accounting/budget.py", "BudgetStore")
    ]
    assert rngs == ["_privacy.py"]  # every other Rng is a name for this one


def test_only_charge_calls_spend():
    """Outside the budgets themselves (accounting/, ledger/), no code calls spend or
    spend_rho but charge()."""
    calls = []
    for name, tree in _trees():
        if name.startswith(("accounting/", "ledger/")):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("spend", "spend_rho", "reserve", "reserve_rho")
            ):
                calls.append(name)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) == 2
                and getattr(node.args[1], "value", None) in ("spend", "spend_rho")
            ):
                calls.append(name)  # getattr(budget, "spend_rho")(...)
    assert sorted(set(calls)) == ["_privacy.py"], calls
