"""Old module paths, kept for one release behind a ``DeprecationWarning`` (issue 23).

``dpfast.releases`` is now :mod:`dpfast.stats` (the everyday statistics) and
``dpfast.release`` is :mod:`dpfast.query_release` (query release and synthetic data): two
names one letter apart for two different things.  ``import dpfast.releases``,
``from dpfast.release.mwem import MWEM`` and ``dpfast.releases.mean`` keep working: the
old name is the new module itself (same objects, same pickles), and the first use of an
old name warns.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

__all__ = ["RENAMED", "install", "old_attribute"]

#: old dotted name -> new dotted name (a package's submodules follow it)
RENAMED = {"dpfast.releases": "dpfast.stats", "dpfast.release": "dpfast.query_release"}


def _new_name(fullname: str) -> str | None:
    for old, new in RENAMED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} is renamed {new}; the old name goes in the next release",
        DeprecationWarning,
        stacklevel=3,
    )


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and loads it as the new module (no second copy)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if _new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = _new_name(spec.name)
        assert new is not None
        _warn(spec.name, new)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The new module ran when it was imported."""


_FINDER = _Finder()


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once (dpfast's ``__init__`` calls it):
    after the path finder, ``dpfast.release.mwem`` would be found again in the new
    package's folder and run a second time, a second copy of every class."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def old_attribute(package: str, name: str) -> ModuleType | None:
    """``dpfast.<name>`` for an old module name (warning), else None."""
    new = _new_name(f"{package}.{name}")
    if new is None:
        return None
    _warn(f"{package}.{name}", new)
    return importlib.import_module(new)
