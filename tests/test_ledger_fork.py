"""Durable budgets after fork (issue 22, items 1, 9 and 10): the SQLite ledger must not
lose or double-spend charges when the process that opened it forks workers and then exits
or is killed before them, when its file is deleted or replaced while open, or when a
worker is forked while another thread of the parent is inside a charge.

Real processes only: the opener is a fresh interpreter that forks its workers with
``os.fork`` (they inherit its budget, or open the ledger afresh); the test process reads
their reports through a pipe and afterwards opens the ledger as a new process would.
"""

import os
import pickle
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from dpfast import BudgetExceededError, ledger
from dpfast.ledger.testing import fork_worker

UNIT = 2.0**-10  # every charge is one unit: totals are exact integers of units
CAP_UNITS = 96  # the budget's total, in units
WORKERS = 4  # even workers charge the inherited budget, odd ones reopen the URL
FIRST = 3  # charges per worker before the opener goes away

# The opener: opens the ledger, creates the budget, charges once (its connection is open),
# forks the workers, waits until each has charged FIRST times, then exits normally (the
# interpreter closes its connection) or kills itself with SIGKILL.  Each worker charges
# FIRST times, waits for the test's go, then charges until the budget refuses.  Every
# admitted charge is reported on the pipe *after* its call returned.
_OPENER = textwrap.dedent("""
    import os, signal, sys
    from dpfast import BudgetExceededError, ledger

    url, mode = sys.argv[1], sys.argv[2]
    report, go, ready_r, ready_w = map(int, sys.argv[3:7])
    unit, cap, workers, first = float(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])

    def say(line):
        os.write(report, (line + "\\n").encode())

    led = ledger.open(url)
    budget = led.budget("fork", epsilon=cap * unit, create=True)
    budget.spend(unit, label="opener")
    say("S opener")

    def work(wid):
        b = budget if wid % 2 == 0 else ledger.open(url).budget("fork")
        say(f"P {os.getpid()}")
        for i in range(first):
            b.spend(unit, label=f"w{wid}-{i}")
            say(f"S w{wid}-{i}")
        os.write(ready_w, b"r")
        os.read(go, 1)
        i = first
        while True:
            try:
                b.spend(unit, label=f"w{wid}-{i}")
            except BudgetExceededError:
                say("X")
                return
            say(f"S w{wid}-{i}")
            i += 1

    for wid in range(workers):
        if os.fork() == 0:
            code = 0
            try:
                work(wid)
            except BaseException as e:
                say(f"E {type(e).__name__}: {e}"[:3000].replace("\\n", " "))
                code = 1
            os._exit(code)
    got = 0
    while got < workers:
        got += len(os.read(ready_r, workers))
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(0)   # a normal exit: the interpreter closes the ledger's connection
""")


def _read_all(fd, pids, deadline):
    """Lines from the report pipe until every writer exited (EOF); a hang guard kills the
    writers at ``deadline`` (then the test fails on the lines missing)."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            for line in b"".join(chunks).decode().splitlines():
                if line.startswith("P "):
                    pids.add(int(line.split()[1]))
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 30
            continue
        b = os.read(fd, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return b"".join(chunks).decode().splitlines()


def _opener_outlived_by_workers(url, mode):
    """Run the scenario; return (admitted labels, lines) once every worker ended."""
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    fds = (report_w, go_r, ready_r, ready_w)
    opener = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _OPENER,
            url,
            mode,
            *map(str, fds),
            repr(UNIT),
            str(CAP_UNITS),
            str(WORKERS),
            str(FIRST),
        ],
        pass_fds=fds,
    )
    for fd in fds:
        os.close(fd)
    code = opener.wait(timeout=120)
    assert code == (-signal.SIGKILL if mode == "kill" else 0)
    # another process opens and closes the ledger while the workers are still charging
    # (an operator's `ledger show`): with SQLite it checkpoints, and deletes the -wal if it
    # finds no other process holding the database
    shown = subprocess.run(
        [sys.executable, "-m", "dpfast", "ledger", "show", url, "fork"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    os.write(go_w, b"g" * WORKERS)
    os.close(go_w)
    lines = _read_all(report_r, set(), time.monotonic() + 120)
    return lines


def _audit(url, lines):
    """What a fresh process sees: (admitted, lost, units spent by everyone in the end)."""
    errors = [line for line in lines if line[0] not in "SXP"]
    assert not errors, errors
    admitted = [line.split()[1] for line in lines if line[0] == "S"]
    assert len(admitted) == len(set(admitted))
    led = ledger.open(url)
    b = led.budget("fork")
    rows = b.history()
    recorded = {r.label for r in rows if r.kind == "spend"}
    lost = sorted(set(admitted) - recorded)
    # the fresh process spends whatever the store says is left: everyone together must
    # still stay within the total
    extra = 0
    while True:
        try:
            b.spend(UNIT, label=f"fresh-{extra}")
        except BudgetExceededError:
            break
        extra += 1
    return admitted, lost, len(admitted) + extra, led


# (pg_server: a throwaway PostgreSQL cluster per module, tests/conftest.py)


_DATABASES = [0]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/ledger.db"
    _DATABASES[0] += 1
    return request.getfixturevalue("pg_server").database(f"f{os.getpid()}_{_DATABASES[0]}")


# ---- item 1: the opener exits, or is killed, before its forked workers --------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exit", "kill"])
def test_workers_outliving_their_opener_lose_no_charge_and_never_overspend(store_url, mode):
    lines = _opener_outlived_by_workers(store_url, mode)
    admitted, lost, spent_units, led = _audit(store_url, lines)
    numbers = (
        f"{store_url.split(':')[0]}/{mode}: {len(admitted)} charges admitted, "
        f"{len(lost)} lost, {spent_units} units spent in all of a total {CAP_UNITS}"
    )
    print(numbers)
    assert lines.count("X") == WORKERS, numbers  # every worker ran out of budget
    assert not lost, numbers
    assert spent_units == CAP_UNITS, numbers  # no overspend, nothing left over
    assert led.verify()[0].ok


# ---- item 10: a worker forked while another thread is inside a charge ------------------

# Events this module's fork hooks set: its "before" hook runs before dpfast's (hooks run
# in reverse order of registration), its "after in parent" hook after dpfast's.
_SET_BEFORE_FORK: list[threading.Event] = []
_SET_AFTER_FORK: list[threading.Event] = []
os.register_at_fork(
    before=lambda: [e.set() for e in _SET_BEFORE_FORK],
    after_in_parent=lambda: [e.set() for e in _SET_AFTER_FORK],
)


def _hold_inside_charges(store, thread_ok):
    """Make the store stop inside each charge of a thread for which ``thread_ok()`` holds
    (after its row is locked, before it is written) until the returned event is set;
    ``inside`` is set when one is stopped there."""
    inside, release = threading.Event(), threading.Event()
    append = store._append

    def held(*args, **kwargs):
        if thread_ok():
            inside.set()
            assert release.wait(120), "never released"
        return append(*args, **kwargs)

    store._append = held
    return inside, release


def _outcome_in_child(fn):
    pid, fd = fork_worker(lambda w: os.write(w, f"ok {fn()}\n".encode()))
    return pid, fd


def _finish(pid, fd, guard=120):
    """The child's line, once it exited (it finished its call).  A hang guard, not a speed
    claim: a child still running after ``guard`` seconds is killed and reported hung."""
    lines = _read_all(fd, {pid}, time.monotonic() + guard)
    os.waitpid(pid, 0)
    return lines[0] if lines else "(hung, or exited without a word)"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_fork_waits_for_a_charge_in_progress(tmp_path, backend, request):
    url = (
        f"sqlite:///{tmp_path}/ledger.db"
        if backend == "sqlite"
        else request.getfixturevalue("pg_server").database(f"w{os.getpid()}")
    )
    led = ledger.open(url, timeout=5)
    b = led.budget("t", epsilon=1.0, create=True)
    b.spend(0.125, label="first")
    charger = threading.Thread(target=lambda: b.spend(0.25, label="thread"))
    inside, release = _hold_inside_charges(
        led._store, lambda: threading.current_thread() is charger
    )
    charger.start()
    assert inside.wait(60)
    _SET_BEFORE_FORK.append(release)  # the thread may go on only once the fork has begun
    try:
        pid, fd = _outcome_in_child(lambda: b.spend(0.125, label="child").index)
    finally:
        _SET_BEFORE_FORK.clear()
    charger.join(120)
    assert not charger.is_alive()
    assert (
        _finish(pid, fd) == "ok 3"
    )  # the fork waited for the charge: the child charged next
    assert [r.label for r in b.history()] == [None, "first", "thread", "child"]
    assert b.spent.epsilon == 0.5 and led.verify()[0].ok


def test_fork_from_inside_a_charge_child_refuses_at_once(tmp_path):
    # the forking thread itself is inside a charge (e.g. a signal handler that forks): its
    # connection cannot be closed, so the child refuses the file with a clear error
    url = f"sqlite:///{tmp_path}/ledger.db"
    led = ledger.open(url, timeout=5)
    b = led.budget("t", epsilon=1.0, create=True)
    b.spend(0.125, label="first")
    children = []
    store = led._store
    append = store._append

    def forking(*args, **kwargs):
        if not children:
            children.append(_outcome_in_child(lambda: b.spend(0.125, label="child").index))
            children.append(
                _outcome_in_child(
                    lambda: (
                        ledger.open(url, timeout=5)
                        .budget("t")
                        .spend(0.125, label="fresh")
                        .index
                    )
                )
            )
        return append(*args, **kwargs)

    store._append = forking
    b.spend(0.25, label="parent")
    store._append = append
    for line in [_finish(pid, fd) for pid, fd in children]:
        assert line.startswith("E LedgerError") and "forked" in line and "spawn" in line, (
            line
        )
    assert [r.label for r in b.history()] == [None, "first", "parent"]
    # the parent goes on, and so do workers it forks now
    pid, fd = _outcome_in_child(lambda: b.spend(0.125, label="later").index)
    assert _finish(pid, fd) == "ok 3"


def test_fork_while_a_charge_outlasts_the_timeout_child_refuses_at_once(tmp_path):
    # another thread stays inside a charge for longer than the store's timeout (here: until
    # the fork is over): the fork does not wait for ever, and the child refuses the file
    url = f"sqlite:///{tmp_path}/ledger.db"
    led = ledger.open(url, timeout=0.2)
    b = led.budget("t", epsilon=1.0, create=True)
    charger = threading.Thread(target=lambda: b.spend(0.25, label="thread"))
    inside, release = _hold_inside_charges(
        led._store, lambda: threading.current_thread() is charger
    )
    charger.start()
    assert inside.wait(60)
    _SET_AFTER_FORK.append(release)
    try:
        pid, fd = _outcome_in_child(lambda: b.spend(0.125, label="child").index)
    finally:
        _SET_AFTER_FORK.clear()
    release.set()
    charger.join(120)
    line = _finish(pid, fd)
    assert line.startswith("E LedgerError") and "forked" in line, line
    assert [r.label for r in b.history()] == [None, "thread"]


def test_fork_while_another_thread_unpickles_a_budget(tmp_path, monkeypatch):
    # the other thread holds the lock that unpickling takes (one Ledger per URL and process)
    b = ledger.open(f"sqlite:///{tmp_path}/ledger.db").budget("u", epsilon=1.0, create=True)
    data = pickle.dumps(b)
    inside, release = threading.Event(), threading.Event()
    real_open = ledger.open

    def held_open(url, **kwargs):
        if threading.current_thread() is unpickler:
            inside.set()
            assert release.wait(120), "never released"
        return real_open(url, **kwargs)

    monkeypatch.setattr(ledger, "open", held_open)
    unpickler = threading.Thread(target=lambda: pickle.loads(data))
    unpickler.start()
    assert inside.wait(60)
    pid, fd = _outcome_in_child(lambda: pickle.loads(data).spend(0.25, label="child").index)
    release.set()
    unpickler.join(120)
    assert _finish(pid, fd, guard=30) == "ok 1"
    assert b.spent.epsilon == 0.25


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="libc's fork through ctypes"
)
def test_fork_bypassing_the_hooks_child_refuses(tmp_path):
    # a fork that Python's fork hooks never see (C code calling fork()): the child finds
    # the parent's connection by its process id, and refuses the file however it asks
    import ctypes

    url = f"sqlite:///{tmp_path}/ledger.db"
    b = ledger.open(url).budget("h", epsilon=1.0, create=True)
    b.spend(0.25, label="parent")
    r, w = os.pipe()
    pid = ctypes.PyDLL(None).fork()  # (PyDLL: the GIL stays held across the call)
    if pid == 0:
        code = 1
        try:
            for call in (
                lambda: b.spend(0.25, label="inherited"),
                lambda: ledger.open(url, timeout=5).budget("h").spend(0.25, label="fresh"),
            ):
                try:
                    call()
                    os.write(w, b"ok\n")
                except Exception as e:  # noqa: BLE001 - reported to the test
                    os.write(w, f"E {type(e).__name__}: {e}\n".encode()[:3000])
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    lines = _read_all(r, {pid}, time.monotonic() + 60)
    os.waitpid(pid, 0)
    assert len(lines) == 2, lines
    for line in lines:
        assert line.startswith("E LedgerError") and "forked" in line, line
    assert [row.label for row in b.history()] == [None, "parent"]
    b.spend(0.25, label="parent again")
