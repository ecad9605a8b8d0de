"""Run diffprivlib's own test suite with dpfast as its backend.

    python tests/integration/run_diffprivlib_suite.py [--workdir DIR] [--json PATH]

Uses the Python running this script, which must have dpfast and dpfast[diffprivlib]
installed.  Steps:

1. ``pip download`` the sdist of the installed diffprivlib version and extract its
   ``tests/`` (only the tests: the installed package is the one under test);
2. run the suite on diffprivlib alone (the baseline);
3. run it again with ``dpfast.compat.diffprivlib.patch()`` applied by a pytest plugin
   before collection;
4. pass if every test that passed in the baseline also passed with dpfast, except the
   seed-tuned tests in ALLOWED (each with its reason).

Exit status 0 on success, 1 otherwise.  ``--broken-laplace`` adds the negative control: the
suite once more on a backend whose Laplace scale is 10 % too small, listing the tests that
newly fail (none did for 0.6.6: the suite cannot see it); our distribution tests in
tests/test_compat_diffprivlib.py reject that backend.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent

# Tests whose outcome depends on the particular random stream (tuned to diffprivlib's own
# draws, or flaky by design); any re-keyed backend fails them now and then.  Evidence for
# 0.6.6: BACKENDS.md section 1.5 (21 re-keyed runs), re-checked when this list was made.
ALLOWED = {
    # tolerance 0.01 on a proportion whose sd is 0.0095
    "tests/mechanisms/test_LaplaceBoundedNoise.py::TestLaplaceBoundedNoise::test_neighbors_prob": "tolerance of one standard deviation",
    "tests/mechanisms/test_PermuteAndFlip.py::TestPermuteAndFlip::test_monotonic_distrib": "frequency check tuned to diffprivlib's stream",
    # an exact Bingham sampler gives the (correct) lower utility that this test rejects
    "tests/models/test_PCA.py::TestPCA::test_big_epsilon": "asserts the utility of diffprivlib's non-exact Bingham sampler",
    "tests/models/test_KMeans.py::TestKMeans::test_simple": "fails about 1 run in 8 for any re-keyed backend",
}


def sh(cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=False, **kw)


def fetch_tests(workdir):
    import diffprivlib

    version = diffprivlib.__version__
    dl = workdir / "sdist"
    dl.mkdir(parents=True, exist_ok=True)
    r = sh(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"diffprivlib=={version}",
            "-d",
            str(dl),
        ]
    )
    if r.returncode:
        sys.exit("pip download of the diffprivlib sdist failed")
    (tarball,) = dl.glob("diffprivlib-*.tar.gz")
    suite = workdir / "suite"
    with tarfile.open(tarball) as tf:
        members = [
            m
            for m in tf.getmembers()
            if "/tests/" in m.name + "/" and m.name.split("/", 1)[-1].startswith("tests")
        ]
        for m in members:
            m.name = m.name.split("/", 1)[1]
        tf.extractall(suite, members=members, filter="data")
    return version, suite


def run(suite, xml, patched, env_extra=None):
    env = dict(
        os.environ, PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    env.pop("DPFAST_BROKEN_LAPLACE", None)
    env.update(env_extra or {})
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore",
        f"--junitxml={xml}",
        "tests",
    ]
    if patched:
        cmd[3:3] = ["-p", "dpfast_diffprivlib_plugin"]
    sh(cmd, cwd=suite, env=env, stdout=subprocess.DEVNULL)
    outcomes = {}
    for case in ET.parse(xml).iter("testcase"):
        path = case.get("classname").replace(".", "/")
        mod, _, cls = path.rpartition("/")
        name = f"{mod}.py::{cls}::{case.get('name')}"
        bad = any(c.tag in ("failure", "error") for c in case)
        skipped = any(c.tag == "skipped" for c in case)
        outcomes[name] = "skipped" if skipped else ("failed" if bad else "passed")
    return outcomes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--workdir", type=pathlib.Path)
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument(
        "--broken-laplace",
        action="store_true",
        help="also run the suite on a backend whose Laplace scale is 10%% low "
        "(the negative control: diffprivlib's suite does not notice; "
        "tests/test_compat_diffprivlib.py does)",
    )
    args = ap.parse_args()
    workdir = args.workdir or pathlib.Path(tempfile.mkdtemp(prefix="dpfast-dpl-"))
    version, suite = fetch_tests(workdir)
    base = run(suite, workdir / "base.xml", patched=False)
    ours = run(suite, workdir / "dpfast.xml", patched=True)
    passed_base = {t for t, o in base.items() if o == "passed"}
    regressions = sorted(t for t in passed_base if ours.get(t) != "passed")
    unexplained = [t for t in regressions if t not in ALLOWED]
    summary = {
        "diffprivlib": version,
        "tests": len(base),
        "baseline_passed": len(passed_base),
        "dpfast_passed": sum(o == "passed" for o in ours.values()),
        "allowed_failures": {t: ALLOWED[t] for t in regressions if t in ALLOWED},
        "unexplained_failures": unexplained,
    }
    if args.broken_laplace:
        broken = run(
            suite,
            workdir / "broken.xml",
            patched=True,
            env_extra={"DPFAST_BROKEN_LAPLACE": "1"},
        )
        summary["broken_laplace_new_failures"] = sorted(
            t for t in passed_base if broken.get(t) != "passed" and t not in regressions
        )
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    ok = len(base) > 0 and len(ours) == len(base) and not unexplained
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
