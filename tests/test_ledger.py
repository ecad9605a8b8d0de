"""dpfast.ledger: the API, exactness (one filter shared with PrivacyBudget), crash
semantics of reservations, tamper evidence, bad stores, and the command line.  Real
SQLite files; the PostgreSQL counterparts are in test_ledger_concurrency.py."""

import json
import os
import pickle
import random
import sqlite3
from fractions import Fraction

import numpy as np
import pytest

import dpfast.mechanisms as M
from dpfast import BudgetExceededError, PrivacyParameterError, ledger
from dpfast.__main__ import main as dpfast_main
from dpfast.accounting import PrivacyBudget


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path}/ledger.db"


# ---- API and exactness -------------------------------------------------------------------


def test_create_open_and_spend(url):
    led = ledger.open(url)
    b = led.budget("census-2026", epsilon=1.0, delta=1e-6, rule="basic", create=True)
    assert isinstance(b, PrivacyBudget)
    b.spend(0.25, label="count")
    # create-or-open with the same caps opens; other caps are refused; plain open works
    assert (
        led.budget("census-2026", epsilon=1.0, delta=1e-6, create=True).spent.epsilon
        == 0.25
    )
    with pytest.raises(PrivacyParameterError, match="other caps"):
        led.budget("census-2026", epsilon=2.0, delta=1e-6, create=True)
    with pytest.raises(ledger.LedgerError, match="no budget"):
        led.budget("nope")
    led.close()
    again = ledger.open(url).budget("census-2026")  # a restart forgets nothing
    assert again.remaining == (0.75, 1e-6, None)
    assert [(r.seq, r.kind, r.label) for r in again.history()] == [
        (0, "create", None),
        (1, "spend", "count"),
    ]
    assert again.history()[1].epsilon == Fraction(1, 4)


def test_mechanisms_charge_a_ledger_budget_before_drawing(url):
    b = ledger.open(url).budget("m", epsilon=0.5, create=True)
    M.laplace_mechanism(10, epsilon=0.3, budget=b)
    with pytest.raises(BudgetExceededError):
        M.laplace_mechanism(np.zeros(3), epsilon=0.3, budget=b)
    assert [(r.kind, r.label) for r in b.history()[1:]] == [("spend", "laplace_mechanism")]


@pytest.mark.parametrize(
    "rule,caps",
    [
        ("basic", dict(epsilon=1.0, delta=1e-6)),
        ("advanced", dict(epsilon=1.0, delta=1e-5, delta_prime=1e-6)),
        ("zcdp", dict(rho=0.5)),
        ("zcdp", dict(epsilon=1.0, delta=1e-6)),
    ],
)
def test_same_decisions_as_the_in_memory_budget(rule, caps):
    """One Filter serves both: a random sequence of charges (floats, Fractions, reserve
    and rollback) is admitted or refused identically, and the totals agree exactly."""
    rng = random.Random(rule + str(sorted(caps)))
    mem = PrivacyBudget(composition=rule, **caps)
    dur = ledger.open("memory:").budget("k", rule=rule, create=True, **caps)
    for i in range(120):
        eps = rng.choice([rng.uniform(0, 0.05), Fraction(1, rng.randint(20, 400)), 0.0])
        dlt = 0.0 if rule == "zcdp" else rng.choice([0.0, 1e-8, Fraction(1, 10**8)])
        action = rng.random()
        results = []
        for b in (mem, dur):
            try:
                if rule == "zcdp" and action < 0.3:
                    b.spend_rho(eps / 10, label=str(i))
                elif action < 0.8:
                    b.spend(eps, dlt, label=str(i))
                else:
                    r = b.reserve(eps, dlt, label=str(i))
                    (b.rollback if action < 0.9 else b.commit)(r)
                results.append("ok")
            except BudgetExceededError:
                results.append("refused")
        assert results[0] == results[1], (i, eps, dlt)
        assert mem.spent == dur.spent and mem.remaining == dur.remaining
    assert "refused" in results or mem.spent != (0.0, 0.0, None)
    assert [e.status for e in mem.ledger] == [e.status for e in dur.ledger]


def test_exact_thirds_and_float_tenths(url):
    led = ledger.open(url)
    thirds = led.budget("thirds", epsilon=1, create=True)
    for _ in range(3):
        thirds.spend(Fraction(1, 3))
    with pytest.raises(BudgetExceededError):
        thirds.spend(Fraction(1, 10**300))
    tenths = led.budget("tenths", epsilon=1.0, create=True)
    for _ in range(10):  # decimal parameters: the float 0.1 charges exactly 1/10
        tenths.spend(0.1)
    with pytest.raises(BudgetExceededError):  # the eleventh overspends
        tenths.spend(0.1)
    assert sum((r.epsilon for r in tenths.history()[1:]), Fraction(0)) == 1


def test_spend_many_is_all_or_nothing(url):
    b = ledger.open(url).budget("batch", epsilon=1.0, create=True)
    assert [e.index for e in b.spend_many([(0.25, 0.0, "a"), (0.25, 0.0)])] == [1, 2]
    with pytest.raises(BudgetExceededError, match="none of them was recorded"):
        b.spend_many([(0.25, 0.0), (0.5, 0.0)])
    assert b.spent.epsilon == 0.5 and len(b.history()) == 3
    with pytest.raises(PrivacyParameterError):
        b.spend_many([(0.1, 0.0), (-1.0, 0.0)])
    assert len(b.history()) == 3


def test_invalid_arguments_record_nothing(url):
    led = ledger.open(url)
    b = led.budget("v", epsilon=1.0, create=True)
    for call, exc in [
        (lambda: b.spend(float("nan")), PrivacyParameterError),
        (lambda: b.spend(Fraction(-1, 10**400)), PrivacyParameterError),
        (lambda: b.spend(True), TypeError),
        (lambda: b.spend(0.1, label=3), TypeError),
        (lambda: b.spend_rho(0.1), ValueError),
    ]:
        with pytest.raises(exc):
            call()
    for key in ("", 3, "a\nb"):
        with pytest.raises((TypeError, PrivacyParameterError)):
            led.budget(key, epsilon=1.0, create=True)
    with pytest.raises(ValueError, match="unknown ledger URL"):
        ledger.open("mysql://x")
    with pytest.raises(ValueError, match="synchronous"):
        ledger.open(url + "?synchronous=off")
    assert len(b.history()) == 1


# ---- processes: fork, pickle, crash semantics ------------------------------------------


def _child(fn):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = fn()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_memory_ledger_is_not_shared(tmp_path):
    b = ledger.open("memory:").budget("m", epsilon=1.0, create=True)
    b.spend(0.5)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(b)

    def child():
        try:
            b.spend(0.1)
        except BudgetExceededError as e:
            return 0 if "another process" in str(e) else 3
        return 2

    assert _child(child) == 0
    assert b.spend(0.5).index == 2


def test_forked_child_reopens_and_pickles_reconnect(url):
    b = ledger.open(url).budget("f", epsilon=1.0, create=True)
    b.spend(0.25)
    assert _child(lambda: 0 if b.spend(0.25, label="child").index == 2 else 1) == 0
    copy = pickle.loads(pickle.dumps(b))
    copy.spend(0.25, label="copy")
    assert b.spent.epsilon == 0.75  # one store, not two balances
    with pytest.raises(BudgetExceededError):
        copy.spend(0.5)


def test_reservation_of_a_dead_process_stays_spent_until_released(url):
    led = ledger.open(url)
    b = led.budget("r", epsilon=1.0, create=True)
    assert _child(lambda: 0 if b.reserve(0.75, label="dies").index == 1 else 1) == 0
    assert b.spent.epsilon == 0.75  # the child died without settling: conservatively spent
    (res,) = b.open_reservations()
    assert res.label == "dies" and res.pid != os.getpid()
    with pytest.raises(BudgetExceededError):
        b.spend(0.5)
    # an operator may release it (the process is gone); our own live reservation is refused
    mine = b.reserve(0.25)
    with pytest.raises(ledger.LedgerError, match="still running"):
        led.release("r", mine.index, reason="test")
    with pytest.raises(PrivacyParameterError, match="reason"):
        led.release("r", res.seq, reason=" ")
    led.release("r", res.seq, reason="worker crashed before drawing")
    assert b.spent.epsilon == 0.25
    b.commit(mine)
    with pytest.raises(RuntimeError, match="already settled"):
        b.rollback(mine)
    with pytest.raises(ledger.LedgerError, match="no open reservation"):
        led.release("r", res.seq, reason="twice")
    assert [e.status for e in b.ledger] == ["released", "committed"]
    assert led.verify()[0].ok


# ---- tamper evidence ------------------------------------------------------------------


def _raw(url):
    return sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)


def test_history_is_append_only_and_verify_detects_edits(url):
    led = ledger.open(url)
    b = led.budget("t", epsilon=1.0, create=True)
    for i in range(5):
        b.spend(0.125, label=f"q{i}")
    assert led.verify()[0].ok
    raw = _raw(url)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute("UPDATE dpfast_history SET epsilon = '0' WHERE seq = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute("DELETE FROM dpfast_history WHERE seq = 5")
    # an attacker who drops the triggers and edits a row is still caught
    raw.execute("DROP TRIGGER dpfast_history_no_update")
    raw.execute("DROP TRIGGER dpfast_history_no_delete")
    raw.execute("UPDATE dpfast_history SET epsilon = '1/1000' WHERE seq = 2")
    (rep,) = led.verify("t")
    assert not rep.ok and any("row 2" in p and "edited" in p for p in rep.problems)
    raw.execute("UPDATE dpfast_history SET epsilon = '1/8' WHERE seq = 2")
    assert led.verify("t")[0].ok
    raw.execute("DELETE FROM dpfast_history WHERE seq = 3")
    assert any("removed" in p for p in led.verify("t")[0].problems)
    # the state of the budget row must match the replayed history
    raw2 = _raw(url)
    b2 = led.budget("t2", epsilon=1.0, create=True)
    b2.spend(0.5)
    raw2.execute("UPDATE dpfast_budget SET state = '0;0' WHERE key = 't2'")
    assert any("state" in p for p in led.verify("t2")[0].problems)


# ---- bad stores ------------------------------------------------------------------------


def test_corrupt_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "junk.db"
    junk = bytes(random.Random(1).randrange(256) for _ in range(8192))
    path.write_bytes(junk)
    with pytest.raises(ledger.LedgerError, match="not a SQLite database"):
        ledger.open(f"sqlite:///{path}")
    assert path.read_bytes() == junk


def test_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "app.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(ledger.LedgerError, match="another application"):
        ledger.open(f"sqlite:///{path}")
    con = sqlite3.connect(path)
    assert [
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
    ] == ["users"]


def test_newer_schema_is_refused(url):
    ledger.open(url).budget("n", epsilon=1.0, create=True).spend(0.5)
    _raw(url).execute("UPDATE dpfast_meta SET value = '99' WHERE name = 'schema_version'")
    with pytest.raises(ledger.LedgerError, match="schema version 99, newer"):
        ledger.open(url)
    _raw(url).execute("UPDATE dpfast_meta SET value = '1' WHERE name = 'schema_version'")
    assert ledger.open(url).budget("n").spent.epsilon == 0.5


def test_locked_store_times_out_with_the_budget_unchanged(tmp_path):
    url = f"sqlite:///{tmp_path}/l.db"
    b = ledger.open(url, timeout=0.2).budget("l", epsilon=1.0, create=True)
    b.spend(0.25)
    holder = _raw(url)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock and hangs
    with pytest.raises(ledger.LedgerError, match="locked"):
        b.spend(0.25)
    holder.execute("ROLLBACK")
    assert b.spent.epsilon == 0.25
    b.spend(0.25)
    assert b.spent.epsilon == 0.5


def test_disk_full_refuses_cleanly_and_loses_nothing(url):
    led = ledger.open(url)
    b = led.budget("full", epsilon=1e6, create=True)
    b.spend(1.0)
    conn = led._store._conn  # the store's own connection: cap its file size (SQLITE_FULL)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    done = 1
    with pytest.raises(ledger.LedgerError, match="full"):
        for _ in range(100_000):
            b.spend(1.0, label="x" * 500)
            done += 1
    assert b.spent.epsilon == done  # every returned charge is there, the failed one is not
    assert led.verify()[0].ok
    conn.execute("PRAGMA max_page_count = 1073741823")
    b.spend(1.0)
    assert b.spent.epsilon == done + 1


# ---- command line ----------------------------------------------------------------------


def test_cli_create_show_history_verify_release(url, capsys):
    assert (
        dpfast_main(
            ["ledger", "create", url, "census", "--epsilon", "1", "--delta", "1e-6"]
        )
        == 0
    )
    b = ledger.open(url).budget("census")
    b.spend(Fraction(1, 10), label="count")
    assert _child(lambda: 0 if b.reserve(0.5, label="lost").index == 2 else 1) == 0
    capsys.readouterr()
    assert dpfast_main(["ledger", "show", url]) == 0
    out = capsys.readouterr().out
    assert "census" in out and "0.6" in out and "basic" in out
    assert dpfast_main(["ledger", "history", url, "census", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["kind"] for r in rows] == ["create", "spend", "reserve"] and rows[1][
        "epsilon"
    ] == "1/10"
    assert dpfast_main(["ledger", "history", url, "census", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("key,seq,kind") and len(lines) == 4
    assert dpfast_main(["ledger", "verify", url]) == 0
    assert "ok" in capsys.readouterr().out
    assert (
        dpfast_main(["ledger", "release", url, "census", "2", "--reason", "worker died"])
        == 0
    )
    assert b.spent.epsilon == 0.1
    _raw(url).execute("DROP TRIGGER dpfast_history_no_update")
    _raw(url).execute("UPDATE dpfast_history SET label = 'edited' WHERE seq = 1")
    assert dpfast_main(["ledger", "verify", url]) == 1
    assert "TAMPERED" in capsys.readouterr().out
    assert dpfast_main(["ledger", "history", url, "missing"]) == 2


def test_cli_version_and_help(capsys):
    for argv in (["--version"], ["--help"], ["ledger", "--help"]):
        with pytest.raises(SystemExit) as e:
            dpfast_main(argv)
        assert e.value.code == 0
    out = capsys.readouterr().out
    assert "dpfast 0." in out and "demo" in out and "verify" in out
