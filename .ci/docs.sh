#!/usr/bin/env bash
# The documentation site (issue 13): built from the installed package with warnings as
# errors, the docstrings' examples and the Markdown pages' examples run.  The same steps
# as .github/workflows/docs.yml.  Runs inside the venv that .ci/run made.
set -euo pipefail
cd "$(dirname "$0")/.."
set -x
python -m pip install ".[docs]"
out="$(mktemp -d)"
python -m sphinx -W --keep-going -b html docs "$out/html"
python -m sphinx -W --keep-going -b doctest docs "$out/doctest"
python -m pytest -p no:cacheprovider --doctest-glob="*.md" \
    -o doctest_optionflags="ELLIPSIS NORMALIZE_WHITESPACE" docs README.md
