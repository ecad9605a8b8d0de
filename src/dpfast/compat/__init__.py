"""Drop-in backends: dpfast as the noise source of other DP tools.

Each submodule imports its host library lazily and is installed with an extra:

* :mod:`dpfast.compat.diffprivlib` -- ``pip install dpfast[diffprivlib]``
* :mod:`dpfast.compat.pipeline_dp` -- ``pip install dpfast[pipeline-dp]``
* :mod:`dpfast.opendp` -- ``pip install dpfast[opendp]``

docs/backends.md says what each routes, what it does not, and how it is tested.

Importing this package imports none of them.
"""

from __future__ import annotations

from types import ModuleType


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise ImportError naming the dpfast extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this dpfast backend needs {module!r}: install it with "
            f"pip install 'dpfast[{extra}]'"
        ) from exc
