"""Durable ledgers under concurrency and crashes, against real SQLite files and a real
PostgreSQL server that this module starts (a throwaway cluster: initdb + pg_ctl on a
free port in a temporary directory).  No mocks.

Workers are forked from the test process (fast: no interpreter start-up), inherit the
parent's budget object and reopen their own connection, as forked service workers do.
"""

import os
import random
import signal
import threading
import time
from fractions import Fraction

import pytest

from dpfast import BudgetExceededError, ledger
from dpfast.ledger.testing import fork_worker, read_lines

UNIT = (
    2.0**-16
)  # charges are multiples of a dyadic unit: exact totals are integers of units


# ---- a throwaway PostgreSQL cluster (dpfast.ledger.testing) ------------------------------

# (pg_server: a throwaway PostgreSQL cluster per module, tests/conftest.py)


_COUNTER = [0]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/ledger.db"
    return _new_database(request.getfixturevalue("pg_server"))


def _new_database(server):
    """A fresh database on the module's server: tests stay independent."""
    _COUNTER[0] += 1
    return server.database(f"t{os.getpid()}_{_COUNTER[0]}")


# ---- forked workers ----------------------------------------------------------------------


def _spend_loop(budget, wid, w, reserve_every=0):
    """Spend (and sometimes reserve then commit) until refused; report each charge
    *after* it returned, i.e. after it was durable (a release would happen here)."""
    rng = random.Random(wid)
    i = 0
    while True:
        label = f"w{wid}-{i}"
        amount = UNIT * rng.randint(1, 4)
        try:
            if reserve_every and i % reserve_every == 0:
                res = budget.reserve(amount, label=label)
                os.write(w, f"R {label} {amount!r}\n".encode())
                budget.commit(res)
                os.write(w, f"C {label}\n".encode())
            else:
                budget.spend(amount, label=label)
                os.write(w, f"S {label} {amount!r}\n".encode())
        except BudgetExceededError:
            os.write(w, b"X\n")
            return
        i += 1


def _exact_spent(rows):
    """Sum of the amounts the history holds as spent (spend + unsettled/committed
    reservations), exactly."""
    settled = {r.ref: r.kind for r in rows if r.ref is not None}
    total = Fraction(0)
    for r in rows:
        if r.kind == "spend" or (
            r.kind == "reserve" and settled.get(r.seq) in (None, "commit")
        ):
            total += r.epsilon
    return total


@pytest.mark.slow
@pytest.mark.parametrize("kills", [300])
def test_kill9_workers_in_tight_spend_loops(store_url, kills):
    if store_url.startswith("postgresql"):
        kills = 150  # a connection costs more than a SQLite open: fewer, same coverage
    led = ledger.open(store_url)
    cap_units = 10**6
    budget = led.budget("k9", epsilon=cap_units * UNIT, create=True)
    budget.spend(UNIT, label="parent")  # the parent's connection is open when it forks
    rng = random.Random(2026)
    reported = set()
    reported_total = Fraction(UNIT)
    killed = 0
    live = {}
    wid = 0
    deadline = time.monotonic() + 50
    while killed < kills and time.monotonic() < deadline:
        while len(live) < 4:
            wid += 1
            pid, fd = fork_worker(
                lambda w, wid=wid: _spend_loop(budget, wid, w, reserve_every=3)
            )
            live[pid] = (fd, time.monotonic() + rng.uniform(0.005, 0.08))
        pid = min(live, key=lambda p: live[p][1])
        fd, when = live.pop(pid)
        time.sleep(max(0.0, when - time.monotonic()))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        killed += 1
        for line in read_lines(fd):
            kind, *rest = line.split()
            assert kind in "SRC", line  # no worker failed or ran out of budget
            if kind in "SR":
                assert rest[0] not in reported
                reported.add(rest[0])
                reported_total += Fraction(float(rest[1]))
    for pid, (fd, _) in live.items():
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for line in read_lines(fd):
            if line[0] in "SR":
                reported.add(line.split()[1])
                reported_total += Fraction(float(line.split()[2]))
    assert killed >= kills // 2, "the machine was too slow to kill enough workers"

    rows = budget.history()
    labels = [r.label for r in rows if r.kind in ("spend", "reserve")]
    assert len(labels) == len(set(labels)), "a charge was recorded twice"
    assert reported <= set(labels), "a charge that returned (and released) is missing"
    spent_exact = _exact_spent(rows)
    assert spent_exact >= reported_total
    assert Fraction(budget.spent.epsilon) == spent_exact <= cap_units * UNIT
    # reservations whose worker died before committing stay spent ...
    stuck = budget.open_reservations()
    assert all(r.pid != os.getpid() for r in stuck)
    (report,) = led.verify("k9")
    assert report.ok, report.problems
    # ... until an operator releases them (their processes are dead)
    before = Fraction(budget.spent.epsilon)
    for r in stuck:
        led.release("k9", r.seq, reason="worker killed by the test", force=True)
    assert Fraction(budget.spent.epsilon) == before - sum(
        (r.epsilon for r in stuck), Fraction(0)
    )
    assert led.verify("k9")[0].ok
    print(
        f"{store_url.split(':')[0]}: {killed} kills, {len(labels)} charges, {len(stuck)} stuck reservations"
    )


@pytest.mark.slow
def test_threads_times_processes_hammer_exact_final_balance(store_url):
    cap_units = 1500
    led = ledger.open(store_url)
    budget = led.budget(
        "hammer", epsilon=cap_units * UNIT, delta=cap_units * 2.0**-40, create=True
    )

    def worker(w, wid):
        lock = threading.Lock()
        mine = []

        def thread(tid):
            rng = random.Random(wid * 100 + tid)
            while True:
                k = rng.randint(1, 8)
                try:
                    budget.spend(k * UNIT, k * 2.0**-40, label=f"p{wid}t{tid}")
                except BudgetExceededError:
                    try:  # fill up with the smallest charge until even that is refused
                        budget.spend(UNIT, 2.0**-40, label=f"p{wid}t{tid}")
                        k = 1
                    except BudgetExceededError:
                        return
                with lock:
                    mine.append(k)

        threads = [threading.Thread(target=thread, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        os.write(w, f"{sum(mine)} {len(mine)}\n".encode())

    procs = [fork_worker(lambda w, i=i: worker(w, i)) for i in range(8)]
    units = charges = 0
    for pid, fd in procs:
        lines = read_lines(fd)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, lines
        u, c = map(int, lines[0].split())
        units += u
        charges += c
    # every unit was spent, each successful charge recorded exactly once, none more
    assert units == cap_units
    rows = budget.history()
    assert sum(1 for r in rows if r.kind == "spend") == charges
    assert _exact_spent(rows) == cap_units * UNIT
    assert budget.spent == (cap_units * UNIT, cap_units * 2.0**-40, None)
    assert budget.remaining.epsilon == 0.0
    assert led.verify()[0].ok


def test_concurrent_create_or_open_makes_one_budget(store_url):
    # six processes race to create the schema and the budget of a fresh store
    def worker(w):
        led = ledger.open(store_url)
        b = led.budget("raced", epsilon=1.0, create=True)
        b.spend(0.125, label=str(os.getpid()))
        os.write(w, b"ok\n")

    procs = [fork_worker(worker) for _ in range(6)]
    for pid, fd in procs:
        assert read_lines(fd) == ["ok"]
        os.waitpid(pid, 0)
    led = ledger.open(store_url)
    rows = led.history("raced")
    assert [r.kind for r in rows].count("create") == 1
    assert led.budget("raced").spent.epsilon == 0.75


def test_pickled_budget_reconnects_in_pool_workers(store_url):
    import multiprocessing

    led = ledger.open(store_url)
    b = led.budget("pool", epsilon=1.0, create=True)
    with multiprocessing.get_context("fork").Pool(3) as pool:
        labels = pool.map(_pool_spend, [(b, i) for i in range(12)])
    assert sorted(labels) == sorted(f"job{i}" for i in range(12))
    assert b.spent.epsilon == 12 * 0.0625
    assert {r.label for r in b.history() if r.kind == "spend"} == set(labels)


def _pool_spend(args):
    budget, i = args
    budget.spend(0.0625, label=f"job{i}")
    return f"job{i}"


def test_postgres_lost_connection_mid_charge(pg_server):
    import psycopg

    store_url = _new_database(pg_server)
    led = ledger.open(store_url)
    b = led.budget("lost", epsilon=1.0, create=True)
    b.spend(0.25)
    backend = led._store._conn.info.backend_pid
    with psycopg.connect(store_url, autocommit=True) as other:
        with other.transaction():
            # hold the budget's row lock so that our next charge blocks inside its transaction
            other.execute("SELECT state FROM dpfast_budget WHERE key = 'lost' FOR UPDATE")
            errors = []
            t = threading.Thread(target=lambda: errors.append(_catch(lambda: b.spend(0.5))))
            t.start()
            time.sleep(0.3)
            with psycopg.connect(store_url, autocommit=True) as killer:
                killer.execute("SELECT pg_terminate_backend(%s)", (backend,))
            t.join(10)
    assert len(errors) == 1 and isinstance(errors[0], ledger.LedgerError), errors
    # nothing was recorded; the budget reconnects on the next charge
    assert b.spent.epsilon == 0.25
    b.spend(0.5)
    assert b.spent.epsilon == 0.75 and led.verify()[0].ok


def _catch(fn):
    try:
        fn()
    except Exception as e:
        return e
    return None


def test_postgres_append_only_tamper_and_newer_schema(pg_server):
    import psycopg

    url = _new_database(pg_server)
    led = ledger.open(url)
    b = led.budget("t", epsilon=1.0, rule="zcdp", delta=1e-6, create=True)
    b.spend_rho(0.01, label="a")
    b.spend(0.1, label="b")
    assert led.verify()[0].ok
    with psycopg.connect(url, autocommit=True) as raw:
        for stmt in (
            "UPDATE dpfast_history SET label = 'x' WHERE seq = 1",
            "DELETE FROM dpfast_history WHERE seq = 2",
            "TRUNCATE dpfast_history",
        ):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                raw.execute(stmt)
        raw.execute("ALTER TABLE dpfast_history DISABLE TRIGGER USER")
        raw.execute("UPDATE dpfast_history SET rho = '0' WHERE seq = 1")
        (rep,) = led.verify("t")
        assert not rep.ok and any("row 1" in p for p in rep.problems)
        raw.execute("UPDATE dpfast_meta SET value = '2' WHERE name = 'schema_version'")
    with pytest.raises(ledger.LedgerError, match="schema version 2, newer"):
        ledger.open(url)
