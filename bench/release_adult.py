"""UCI Adult binned as RELEASE.md §5.1 says: 8 attributes, |X| = 57,600 cells.

age 5 bins [17,25) [25,35) [35,45) [45,55) [55,inf); education 16; relationship 6;
race 5; sex 2; hours-per-week 3 bins (<40, =40, >40); native country 2 (United-States,
anything else including '?'); income 2.  Train + test rows, '?' kept: n = 48,842.
"""

from __future__ import annotations

import bisect

import numpy as np

from _adult import COLUMNS, read_rows
from dpfast.query_release import Domain, Histogram

EDUCATION = [
    "Preschool",
    "1st-4th",
    "5th-6th",
    "7th-8th",
    "9th",
    "10th",
    "11th",
    "12th",
    "HS-grad",
    "Some-college",
    "Assoc-voc",
    "Assoc-acdm",
    "Bachelors",
    "Masters",
    "Prof-school",
    "Doctorate",
]
RELATIONSHIP = [
    "Husband",
    "Not-in-family",
    "Other-relative",
    "Own-child",
    "Unmarried",
    "Wife",
]
RACE = ["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"]
SEX = ["Female", "Male"]
DOMAIN = Domain(
    ["age", "education", "relationship", "race", "sex", "hours", "native", "income"],
    [5, 16, 6, 5, 2, 3, 2, 2],
)
_C = {name: i for i, name in enumerate(COLUMNS)}


def _encode(r):
    hours = int(r[_C["hours_per_week"]])
    return (
        bisect.bisect_right([25, 35, 45, 55], int(r[_C["age"]])),
        EDUCATION.index(r[_C["education"]]),
        RELATIONSHIP.index(r[_C["relationship"]]),
        RACE.index(r[_C["race"]]),
        SEX.index(r[_C["sex"]]),
        0 if hours < 40 else (1 if hours == 40 else 2),
        0 if r[_C["native_country"]] == "United-States" else 1,
        0 if r[_C["income"]] == "<=50K" else 1,
    )


def codes():
    """(48842, 8) int64 codes of train + test."""
    rows = read_rows("adult.data") + read_rows("adult.test")
    return np.asarray([_encode(r) for r in rows], dtype=np.int64)


def histogram():
    return Histogram.from_codes(DOMAIN, codes())
