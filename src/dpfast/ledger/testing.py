"""A throwaway PostgreSQL cluster for tests, benchmarks and examples.

``initdb`` + ``pg_ctl`` in a temporary directory, on a free loopback port, with trust
authentication; stopped (immediately) and deleted by :meth:`ThrowawayPostgres.stop`.
The server binaries come from the machine (Debian: ``apt-get install postgresql``,
see ``.ci/ledger_setup.sh``).  ``initdb`` and ``postgres`` refuse to run as root, so as
root the cluster is owned and run by the ``postgres`` user (``runuser``).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from typing import Literal


def server_bindir() -> str | None:
    """The directory of pg_ctl/initdb: on PATH, else the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which("pg_ctl")
    if found:
        return os.path.dirname(os.path.realpath(found))
    dirs = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2])
    )
    return dirs[-1] if dirs else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ThrowawayPostgres:
    """Start a cluster; ``url`` connects to it.  Use as a context manager or call stop().

    Parameters
    ----------
    fsync : bool, default True
        False for tests that do not need durability across power loss (faster).
    max_connections : int, default 200
    """

    def __init__(self, *, fsync: bool = True, max_connections: int = 200) -> None:
        bindir = server_bindir()
        if bindir is None:
            raise RuntimeError(
                "no PostgreSQL server binaries (apt-get install postgresql; "
                "see .ci/ledger_setup.sh)"
            )
        self._user = None
        if os.geteuid() == 0:
            import pwd

            try:
                ids = pwd.getpwnam("postgres")
            except KeyError as e:
                raise RuntimeError(
                    "running as root without a 'postgres' user to own the cluster"
                ) from e
            self._user = "postgres"
        self._bindir = bindir
        self.dir = tempfile.mkdtemp(prefix="dpfast-pg-")
        try:
            os.chmod(self.dir, 0o755)
            if self._user:
                os.chown(self.dir, ids.pw_uid, ids.pw_gid)
            self._data = os.path.join(self.dir, "data")
            self.port = _free_port()
            self._run(
                "initdb",
                "-D",
                self._data,
                "-U",
                "dpfast",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            )
            opts = (
                f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                f"-c max_connections={int(max_connections)}"
                + ("" if fsync else " -c fsync=off")
            )
            self._run(
                "pg_ctl",
                "-D",
                self._data,
                "-l",
                os.path.join(self.dir, "log"),
                "-w",
                "-t",
                "60",
                "-o",
                opts,
                "start",
            )
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.url = f"postgresql://dpfast@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [os.path.join(self._bindir, tool), *args]
        if self._user:
            cmd = ["runuser", "-u", self._user, "--"] + cmd
        try:
            subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)
        except subprocess.CalledProcessError as e:
            raise RuntimeError(f"{tool} failed: {e.stderr.strip()}") from e

    def database(self, name: str) -> str:
        """Create database ``name`` (letters, digits, _) and return its URL."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"database name must be letters, digits and _; got {name!r}")
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url.rsplit("/", 1)[0] + "/" + name

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self._data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ThrowawayPostgres:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.stop()
        return False


def fork_worker(fn: Callable[[int], object]) -> tuple[int, int]:
    """Run ``fn(w)`` in a forked child that reports lines on the pipe end ``w``; return
    ``(pid, r)``.  The child always leaves with ``os._exit`` (never runs the parent's
    code); an exception is reported as a line starting with "E"."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            fn(w)
            code = 0
        except BaseException as e:
            try:
                os.write(w, f"E {type(e).__name__}: {e}\n".encode()[:4000])
            except BaseException:
                pass  # (the reader is gone: still never run the parent's code)
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def read_lines(fd: int) -> list[str]:
    """Everything a worker wrote until it exited (or was killed), as lines; closes ``fd``.
    Lines shorter than PIPE_BUF are written atomically, so a killed worker never leaves
    half a line."""
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return b"".join(chunks).decode().splitlines()
