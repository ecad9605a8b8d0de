"""scikit-learn's parameter conventions without scikit-learn (sklearn/base.py, the
"developing estimators" guide): every ``__init__`` argument is stored unchanged under its
own name, ``get_params``/``set_params`` are read from the signature, nested parameters
use ``outer__inner``."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

_Self = TypeVar("_Self", bound="ParamsMixin")


class ParamsMixin:
    """get_params / set_params / repr from the constructor's signature."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind != p.VAR_KEYWORD
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self: _Self, **params: Any) -> _Self:
        valid = self._param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__}; "
                    f"valid parameters: {valid}"
                )
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self._param_names():
            default = sig.parameters[name].default
            value = getattr(self, name)
            if default is inspect.Parameter.empty or value is not default:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"
