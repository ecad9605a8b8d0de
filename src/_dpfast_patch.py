"""Opt-in activation of dpfast's drop-in backends at interpreter start-up.

``dpfast-patch.pth`` (installed with dpfast into site-packages) calls :func:`activate`
only when the environment variable ``DPFAST_PATCH`` is set, e.g.
``DPFAST_PATCH=pipeline_dp`` (a comma-separated list; also ``diffprivlib``).  Nothing is
imported then: an import hook waits for the first ``import pipeline_dp`` (or
``diffprivlib``) and, once that package has loaded, installs the dpfast backend for it,
logging once per process.  This is how Spark executors and Beam worker processes, which
rebuild PipelineDP's mechanisms themselves, get dpfast noise:
``spark.executorEnv.DPFAST_PATCH=pipeline_dp``.

This module imports only the standard library (it runs in every Python process of the
environment when the variable is set).
"""

import importlib.abc
import importlib.util
import os
import sys

_TARGETS = {
    "pipeline_dp": ("dpfast.compat.pipeline_dp", "install"),
    "diffprivlib": ("dpfast.compat.diffprivlib", "patch"),
}


def _install(name):
    module, func = _TARGETS[name]
    getattr(importlib.import_module(module), func)()


class _Hook(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of a target to install after it ran."""

    def __init__(self, names):
        self.pending = set(names)
        self._busy = set()

    def find_spec(self, name, path=None, target=None):
        if name not in self.pending or name in self._busy:
            return None
        self._busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy.discard(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            self.pending.discard(name)
            _install(name)

        spec.loader.exec_module = exec_module
        return spec


def activate(value=None):
    """Arm the hook for the backends named in ``value`` (default: $DPFAST_PATCH)."""
    value = os.environ.get("DPFAST_PATCH", "") if value is None else value
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in _TARGETS]
    if unknown:
        sys.stderr.write(
            f"dpfast: DPFAST_PATCH names unknown backends {unknown}; "
            f"known: {sorted(_TARGETS)}\n"
        )
    names = [n for n in names if n in _TARGETS]
    later = []
    for name in names:
        if name in sys.modules:
            _install(name)
        else:
            later.append(name)
    if later and not any(isinstance(h, _Hook) for h in sys.meta_path):
        sys.meta_path.insert(0, _Hook(later))
