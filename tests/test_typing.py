"""mypy --strict on the package and on typical user code (issue 13 item 4).

Runs mypy (the ``[tool.mypy]`` section of pyproject.toml: strict) once on the package
sources and on the two files of ``tests/typing/``, and fails with mypy's report if it
finds any error.  mypy takes about 5 s with a warm cache (``.mypy_cache`` at the
repository root, or ``$DPFAST_MYPY_CACHE``) and about 25 s cold on a loaded 2-core
machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
USAGE = [
    ROOT / "tests" / "typing" / "usage.py",
    ROOT / "tests" / "typing" / "usage_releases.py",
]

_ERROR = re.compile(r"^(?P<path>[^:\n]+\.pyi?):\d+(?::\d+)?: error: ", re.M)


def _run_mypy(*targets: str) -> tuple[int, str]:
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--no-error-summary",
        "--show-error-codes",
        "--hide-error-context",
        "--cache-dir",
        os.environ.get("DPFAST_MYPY_CACHE", str(ROOT / ".mypy_cache")),
    ]
    proc = subprocess.run(
        cmd + list(targets), cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def mypy_report() -> str:
    if not (SRC / "dpfast" / "__init__.py").exists():
        pytest.fail("the typing check runs on the source tree (src/dpfast); not found")
    code, out = _run_mypy(str(SRC / "dpfast"), *map(str, USAGE))
    if code != 0 and not _ERROR.search(out):
        pytest.fail(f"mypy did not run (exit {code}):\n{out}")
    return out


def _errors(report: str) -> list[str]:
    return [line for line in report.splitlines() if _ERROR.match(line)]


@pytest.mark.slow
def test_package_is_strictly_typed(mypy_report: str) -> None:
    bad = [line for line in _errors(mypy_report) if "tests/typing/" not in line]
    assert not bad, "mypy --strict errors in the package:\n" + "\n".join(bad)


@pytest.mark.slow
def test_typical_user_code_is_strictly_typed(mypy_report: str) -> None:
    bad = [line for line in _errors(mypy_report) if "tests/typing/" in line]
    assert not bad, "mypy --strict errors in tests/typing/:\n" + "\n".join(bad)


def test_usage_files_have_no_ignores() -> None:
    for path in USAGE:
        assert "type: ignore" not in path.read_text(encoding="utf-8"), path
