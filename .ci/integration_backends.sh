#!/usr/bin/env bash
# Heavy integrations of the drop-in backends (issue 11, docs/backends.md): the peers'
# real code, installed here in a venv of their own, never dependencies of dpfast.
#
#   * dpfast's shim tests against diffprivlib 0.6, OpenDP 0.16 and PipelineDP 0.3
#     (tests/test_compat_*.py, tests/test_opendp.py), with nothing allowed to skip;
#   * PipelineDP on Spark local[2] (pyspark 3.5, Java 17): draws counted per process,
#     with a driver-only negative control;
#   * diffprivlib's own test suite, downloaded from its sdist, with dpfast patched in
#     before collection, against the same suite on diffprivlib alone.
#
# Runs from the repository root on a clean clone (as root in CI: installs Java if
# missing).  About 5 minutes on 2 cores, most of it pip and two Spark start-ups.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v java >/dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q openjdk-17-jre-headless
fi
VENV="${TMPDIR:-/tmp}/dpfast-ci-backends-venv"
rm -rf "$VENV"
python3 -m venv "$VENV"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
set -x
python -m pip install -q ".[test,diffprivlib,opendp,pipeline-dp]" "pyspark==3.5.*"
DPFAST_BACKENDS_CI=1 python -m pytest -q -p no:cacheprovider -rs \
    tests/test_compat_samplers.py tests/test_compat_diffprivlib.py tests/test_opendp.py \
    tests/test_compat_pipeline_dp.py tests/test_compat_properties.py
# the classifier's estimator checks again, on the older scikit-learn (< 1.8) that the
# diffprivlib extra pins (the README test command runs them on the newest)
python -m pytest -q -p no:cacheprovider -rs tests/test_learn.py -k sklearn
python tests/integration/run_diffprivlib_suite.py --broken-laplace --workdir "$(mktemp -d)"
