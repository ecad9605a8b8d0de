"""The ``python -m dpfast`` command line: help, version, the bench table and the demo.
(The ledger subcommand is tested in test_ledger.py.)"""

import re
import subprocess
import sys

import pytest

import dpfast
from dpfast.__main__ import main


def test_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: python -m dpfast")
    for command in ("demo", "bench", "ledger"):
        assert command in text


def test_version_from_the_module_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "dpfast", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"dpfast {dpfast.__version__}"


def test_unknown_command_and_bad_size_are_usage_errors(capsys):
    for argv in (["nonsense"], ["bench", "-n", "0"], ["bench", "--repeats", "x"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_bench_prints_a_side_by_side_table_with_a_ratio_column(capsys):
    assert main(["bench", "-n", "2000", "--repeats", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("task"))
    assert lines[header].split()[-1] == "ratio"
    rows = lines[header + 1 : header + 5]
    tasks = (
        "ChaCha20 keystream",
        "secure Laplace mechanism",
        "simulation Laplace noise",
        "exact discrete Laplace",
    )
    for task, row in zip(tasks, rows):
        assert row.startswith(task)
        ratio = float(row.split()[-1])
        assert ratio > 0
        # the ratio column is dpfast / reference, both printed on the row
        ns, ref_ns = (float(v) for v in re.findall(r"\d+\.\d\d", row)[:2])
        assert ratio == pytest.approx(ns / ref_ns, rel=0.02, abs=0.01)
    assert "numpy PCG64 random_raw" in rows[0]
    # aligned: every row ends where the header does
    assert {len(r) for r in rows} == {len(lines[header])}
    assert "dpfast time / reference time" in lines[header + 5]


def test_demo_prints_its_one_budget_first_and_spends_it(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines[0].startswith(f"dpfast {dpfast.__version__}")
    budget_line = next(i for i, ln in enumerate(lines) if "privacy budget" in ln)
    assert budget_line == 2  # after the version and the generator, before any release
    assert "eps = 4.0" in lines[budget_line] and "delta = 1e-06" in lines[budget_line]
    # the budget is announced before any release line, and there is only one
    assert out.count("budget for") == 1
    header = lines[budget_line + 1]
    assert header.split()[:5] == ["release", "mechanism", "eps", "delta", "value"]
    releases = lines[budget_line + 2 : budget_line + 8]
    eps_col = header.index("eps") + 3  # right-aligned under the header
    spent_eps = sum(float(r[eps_col - 5 : eps_col]) for r in releases)
    spent_delta = sum(float(r[eps_col + 1 : eps_col + 8]) for r in releases)
    assert spent_eps == 4.0 and spent_delta == 1e-6
    assert "budget left: eps = 0.00, delta = 0e+00" in out
    assert "refused before any noise is drawn" in out
    assert "numpy PCG64 random_raw" in out and "ratio" in out
