"""A SQLite ledger is one file, found once (issue 22, item 9): deleting or replacing it
(or its -wal) while it is open, or reaching it through a path whose meaning changes (a
relative path after a chdir, a symlinked directory pointed elsewhere), must never split
one budget in two.  The process that had the file open fails closed with LedgerError:
no charge goes to an orphaned file, and ``budget(key, create=True)`` never creates a
full new budget next to the spent one."""

import os
import pickle

import pytest

from dpfast import BudgetExceededError, ledger
from dpfast.ledger.testing import fork_worker, read_lines


def _ledger_with_spending(path):
    led = ledger.open(f"sqlite:///{path}")
    b = led.budget("k", epsilon=1.0, create=True)
    b.spend(0.75, label="before")
    return led, b


def _in_child(fn):
    """fn() in a forked child; its outcome as one line ("ok ..." or "E Type: message")."""
    pid, fd = fork_worker(lambda w: os.write(w, f"ok {fn()}\n".encode()))
    lines = read_lines(fd)
    os.waitpid(pid, 0)
    return lines[0]


def _refused_everywhere(led, b):
    """Every way of charging this budget again fails closed, in this process and in a
    forked worker (which reconnects), and create=True creates nothing."""
    with pytest.raises(ledger.LedgerError, match="deleted or replaced"):
        b.spend(0.5, label="after")
    with pytest.raises(ledger.LedgerError, match="deleted or replaced"):
        led.budget("k", epsilon=1.0, create=True)
    with pytest.raises(ledger.LedgerError, match="deleted or replaced"):
        led.budget("other", epsilon=1.0, create=True)
    child = _in_child(lambda: led.budget("k", epsilon=1.0, create=True).spend(0.5).index)
    assert child.startswith("E LedgerError") and "deleted or replaced" in child, child
    child = _in_child(lambda: b.spend(0.5, label="child").index)
    assert child.startswith("E LedgerError") and "deleted or replaced" in child, child


@pytest.mark.parametrize("removed", [("",), ("", "-wal", "-shm")], ids=["db", "db-wal-shm"])
def test_deleted_file_fails_closed(tmp_path, removed):
    path = tmp_path / "ledger.db"
    led, b = _ledger_with_spending(path)
    for suffix in removed:
        os.remove(f"{path}{suffix}")
    _refused_everywhere(led, b)
    assert not path.exists()  # nothing recreated a fresh ledger (and a full budget) there


def test_removed_wal_fails_closed_until_the_connection_closes(tmp_path):
    # the -wal removed under an open connection (what a process that cannot see this one's
    # lock does when it closes): commits would go to a file no other process reads
    path = tmp_path / "ledger.db"
    led, b = _ledger_with_spending(path)
    os.remove(f"{path}-wal")
    with pytest.raises(ledger.LedgerError, match="-wal removed"):
        b.spend(0.125, label="after")
    with pytest.raises(ledger.LedgerError, match="-wal removed"):
        led.budget("k", epsilon=1.0, create=True)
    # closing the connection checkpoints what it committed into the database file itself;
    # the next connection (a new -wal) sees every charge and goes on from there
    led.close()
    assert b.spent.epsilon == 0.75
    b.spend(0.25, label="last")
    with pytest.raises(BudgetExceededError):
        b.spend(0.125)
    assert [r.label for r in b.history()] == [None, "before", "last"]


def test_replaced_file_fails_closed(tmp_path):
    path, other = tmp_path / "ledger.db", tmp_path / "other.db"
    led, b = _ledger_with_spending(path)
    fresh = ledger.open(f"sqlite:///{other}")
    fresh.budget("k", epsilon=1.0, create=True)  # the same key with its whole budget
    fresh.close()
    os.replace(other, path)
    _refused_everywhere(led, b)


def test_relative_path_is_resolved_once(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    led = ledger.open("sqlite:///ledger.db")
    b = led.budget("k", epsilon=1.0, create=True)
    b.spend(0.25, label="parent")
    assert led.url == f"sqlite:///{first / 'ledger.db'}"
    monkeypatch.chdir(second)  # e.g. a service that daemonizes to another directory
    b.spend(0.25, label="after chdir")
    # a forked worker and a pickled copy charge the file opened first, not second/ledger.db
    assert _in_child(lambda: b.spend(0.25, label="child").index) == "ok 3"
    copy = pickle.loads(pickle.dumps(b))
    copy.spend(0.125, label="copy")
    assert not (second / "ledger.db").exists()
    assert (
        ledger.open(f"sqlite:///{first / 'ledger.db'}").budget("k").spent.epsilon == 0.875
    )


def test_symlinked_directory_pointed_elsewhere(tmp_path):
    # a deployment reaches the ledger through a symlink ("current" -> a release directory)
    # that is later pointed at another directory: the open store keeps its file
    v1, v2, current = tmp_path / "v1", tmp_path / "v2", tmp_path / "current"
    v1.mkdir()
    v2.mkdir()
    current.symlink_to(v1)
    led, b = _ledger_with_spending(current / "ledger.db")
    current.unlink()
    current.symlink_to(v2)
    # a worker forked now, and this process after the fork, still charge v1's file ...
    assert _in_child(lambda: b.spend(0.125, label="child").index) == "ok 2"
    b.spend(0.125, label="parent")
    with pytest.raises(BudgetExceededError):
        led.budget("k", epsilon=1.0, create=True).spend(0.125)
    # ... and nothing created a second ledger (with a full budget) in v2
    assert not (v2 / "ledger.db").exists()
    assert ledger.open(f"sqlite:///{v1 / 'ledger.db'}").budget("k").spent.epsilon == 1.0
