"""The embedding example runs: a pre-forked HTTP service with per-analyst SQLite budgets,
under the load script, whose audit (answered epsilon == recorded spend <= cap, intact
hash chains) exits 0."""

import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"
)


@pytest.mark.slow
def test_service_under_load_audits_clean():
    out = subprocess.run(
        [
            sys.executable,
            os.path.join(EXAMPLES, "ledger_load.py"),
            "--requests",
            "240",
            "--clients",
            "4",
            "--analysts",
            "3",
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "verify: 3/3 budgets intact" in out.stdout
    assert out.stdout.count("-> ok") == 3
