"""One PrivacyBudget(rule, store): the same answers in memory, SQLite and PostgreSQL, and
the layering of accounting/ (the rules) and ledger/ (the durable stores)."""

import ast
import os
import pathlib
import pickle
import random
from fractions import Fraction

import pytest

from dpfast import BudgetExceededError, PrivacyParameterError
from dpfast.accounting import PrivacyBudget
from dpfast.accounting.budget import MemoryStore
from dpfast.accounting.rules import Filter
from dpfast.ledger._budget import KeyedStore
from dpfast.ledger._postgres import PostgresStore
from dpfast.ledger._sqlite import SQLiteStore

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "dpfast"

CAPS = [
    ("basic", dict(epsilon=1.0, delta=1e-6)),
    ("advanced", dict(epsilon=1.0, delta=1e-5, delta_prime=1e-6)),
    ("zcdp", dict(rho=0.5)),
    ("zcdp", dict(epsilon=1.0, delta=1e-6)),
]


def _rule(rule, caps):
    return Filter(
        caps.get("epsilon"),
        caps.get("delta", 0.0),
        rule,
        delta_prime=caps.get("delta_prime"),
        rho=caps.get("rho"),
    )


def _budgets(rule, caps, tmp_path, pg_url):
    """The one budget class on each store, every one built as PrivacyBudget(rule, store)."""
    out = {
        "memory": PrivacyBudget.with_store(
            _rule(rule, caps), MemoryStore(_rule(rule, caps).zero())
        )
    }
    sqls = {"sqlite": SQLiteStore(str(tmp_path / "b.db"))}
    if pg_url is not None:
        sqls["postgresql"] = PostgresStore(pg_url)
    for name, sql in sqls.items():
        sql.create("k", _rule(rule, caps))
        out[name] = PrivacyBudget.with_store(_rule(rule, caps), KeyedStore(sql, "k"))
    return out


def _step(b, rule, rng_values, i):
    eps, dlt, action = rng_values
    if rule == "zcdp" and action < 0.25:
        return b.spend_rho(eps / 10, label=str(i))
    if action < 0.65:
        return b.spend(eps, dlt, label=str(i))
    if action < 0.7:
        return b.spend(-eps - 1, dlt)  # invalid: refused, nothing recorded
    if action < 0.75:
        return b.spend_parallel([(eps, dlt), (eps / 2, dlt)], label=str(i))
    r = b.reserve(eps, dlt, label=str(i))
    (b.rollback if action < 0.85 else b.commit)(r)
    with pytest.raises(RuntimeError, match="already settled"):
        b.commit(r)
    return r


def _outcome(call):
    try:
        out = call()
    except (BudgetExceededError, PrivacyParameterError, ValueError, TypeError) as e:
        # the refusal names the budget only in a ledger: the rest of the message agrees
        return type(e).__name__, str(e).replace(" on budget 'k'", "")
    return "ok", (out.epsilon, out.delta, out.rho)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("rule,caps", CAPS)
def test_every_store_gives_the_same_answers(rule, caps, backend, tmp_path, request):
    pg_url = None
    if backend == "postgresql":
        pg_url = request.getfixturevalue("pg_server").database(
            f"s{os.getpid()}_{rule}_{len(caps)}"
        )
    budgets = _budgets(rule, caps, tmp_path, pg_url)
    rng = random.Random(f"{rule}{sorted(caps)}")
    for i in range(80):
        values = (
            rng.choice([rng.uniform(0, 0.08), Fraction(1, rng.randint(10, 300)), 0.0]),
            0.0 if rule == "zcdp" else rng.choice([0.0, 1e-8, Fraction(1, 10**8)]),
            rng.random(),
        )
        outcomes = {
            name: _outcome(lambda b=b, v=values, i=i: _step(b, rule, v, i))
            for name, b in budgets.items()
        }
        assert len(set(outcomes.values())) == 1, (i, values, outcomes)
        totals = {(b.spent, b.remaining, b.can_spend(0.01)) for b in budgets.values()}
        assert len(totals) == 1, (i, totals)
    # (a ledger's line shows rho as the float nearest the stored exact rho, a memory line
    # the decimal rounded up; its index is the row of the history)
    statuses = {
        tuple((e.label, e.epsilon, e.delta, e.status) for e in b.ledger)
        for b in budgets.values()
    }
    assert len(statuses) == 1
    # a reservation of one budget is foreign to every other
    mem, durable = budgets["memory"], budgets[backend]
    for owner, other in ((mem, durable), (durable, mem)):
        try:
            r = owner.reserve(0.0)
        except BudgetExceededError:
            continue
        with pytest.raises(ValueError, match="belongs to another"):
            other.commit(r)
        owner.rollback(r)


def test_a_budget_is_its_rule_and_store():
    rule = Filter(1.0)
    b = PrivacyBudget.with_store(rule, MemoryStore(rule.zero()))
    assert b.spend(0.25).index == 0 and b.remaining.epsilon == 0.75
    assert repr(b) == (
        "PrivacyBudget(epsilon=1.0, delta=0.0, composition='basic', "
        "spent=Cost(epsilon=0.25, delta=0.0, rho=None))"
    )
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(b)


# ---- layering ------------------------------------------------------------------------------

_ALL = {
    "dpfast." + ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
    for p in SRC.rglob("*.py")
}


def _imports(path):
    """(module imported, names) for every import of a file, deferred ones and those under
    TYPE_CHECKING included; ``from pkg import sub`` of a submodule imports ``pkg.sub``."""
    pkg = "dpfast." + ".".join(path.relative_to(SRC).with_suffix("").parts)
    if pkg.endswith(".__init__"):
        pkg = pkg[: -len(".__init__")]
    else:
        pkg = pkg.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []
        elif isinstance(node, ast.ImportFrom):
            base = pkg
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            mod = (
                (base + ("." + node.module if node.module else ""))
                if node.level
                else node.module
            )
            names = [a.name for a in node.names]
            subs = [n for n in names if f"{mod}.{n}" in _ALL]
            for n in subs:
                yield f"{mod}.{n}", []
            if len(subs) < len(names):
                yield mod, [n for n in names if n not in subs]


def _modules(sub):
    return {
        p: "dpfast."
        + ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for p in sorted((SRC / sub).rglob("*.py"))
    }


def test_no_private_name_crosses_between_accounting_and_ledger():
    for mine, theirs in (("accounting", "ledger"), ("ledger", "accounting")):
        for path in _modules(mine):
            for mod, names in _imports(path):
                if not mod.startswith(f"dpfast.{theirs}"):
                    continue
                assert mine == "ledger", (
                    f"{path.name} imports {mod}: accounting/ is below ledger/"
                )
                private = [n for n in names if n.startswith("_")]
                private += [
                    p for p in mod.split(".") if p.startswith("_") and p != "__init__"
                ]
                assert not private, f"{path}: imports private {private} from {mod}"


def test_no_import_cycle_inside_ledger():
    mods = _modules("ledger")
    names = set(mods.values())
    graph = {m: set() for m in names}
    for path, m in mods.items():
        for mod, _ in _imports(path):
            if mod in names and mod != m:
                graph[m].add(mod)
    # a package's __init__ runs before any submodule: importing dpfast.ledger.x imports
    # dpfast.ledger first, so an edge to the package is an edge to its __init__
    state = {}

    def visit(m, path):
        state[m] = "open"
        for n in graph[m]:
            assert state.get(n) != "open", "import cycle: " + " -> ".join(path + [n])
            if n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(names):
        if m not in state:
            visit(m, [m])


# ---- schema 1 ------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_budget_rows_in_the_old_units_are_upgraded_once_at_open(tmp_path, backend, request):
    from dpfast import ledger
    from dpfast.accounting.rules import LEGACY_FACTOR

    if backend == "sqlite":
        import sqlite3

        url = f"sqlite:///{tmp_path}/old.db"
        raw = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
        mark = "?"
    else:
        url = request.getfixturevalue("pg_server").database(f"u{os.getpid()}")
        import psycopg

        raw = psycopg.connect(url, autocommit=True)
        mark = "%s"
    led = ledger.open(url)
    b = led.budget("k", epsilon=1.0, create=True)
    b.reserve(0.25)
    b.spend(0.5)
    history = b.history()
    led.close()
    (text,) = raw.execute("SELECT state FROM dpfast_budget").fetchone()
    eps, dlt = (int(s) for s in text.removeprefix("u2:").split(";"))
    old = f"{eps // LEGACY_FACTOR};{dlt // LEGACY_FACTOR}"  # as schema 1 wrote it
    raw.execute(f"UPDATE dpfast_budget SET state = {mark}", (old,))
    led = ledger.open(url)  # the upgrade runs here
    assert raw.execute("SELECT state FROM dpfast_budget").fetchone() == (text,)
    b = led.budget("k")
    assert b.history() == history and all(r.ok for r in led.verify())
    assert b.remaining.epsilon == 0.25
    with pytest.raises(BudgetExceededError):
        b.spend(0.5)
    raw.close()
    led.close()
