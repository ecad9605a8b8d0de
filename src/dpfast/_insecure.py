"""``InsecureRandomnessWarning``: a secure mechanism run with predictable randomness.

A seeded or keyed :class:`~dpfast.random.ChaCha20`, any numpy ``BitGenerator`` or
``Generator``, and ``mode="fast"`` are right for tests and simulations and wrong for a
release: whoever knows the seed knows the noise, and the fast path is not
floating-point safe (Mironov 2012).  Secure mechanisms (mechanisms, objects, releases,
selection, sparse vector, grouped releases, release systems, learners) warn so that such
code is not shipped by accident.  The raw samplers of :mod:`dpfast.random` do not: they are
simulation tools with numpy's conventions, where a seeded generator is the normal case and
nothing claims privacy.

The warning is attributed to the first frame outside the dpfast package (the caller's
line), however deep inside dpfast it is raised, so Python's default filter shows it once
per calling line; a call that reaches it twice through dpfast's own layers repeats the same
message at the same line, which that filter also shows once.  The check costs nothing on
the default path: ``rng=None`` is decided in C before any of this runs
(``_core.secure_rng``).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from . import _validation as _v
from ._errors import InsecureRandomnessWarning

__all__ = ["warn_rng", "warn_fast", "mode"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


# [(copy of warnings.filters, whether they ignore this warning unconditionally)]: one
# tuple swapped whole, so a thread never pairs one snapshot with another's verdict
_SILENCED: list[tuple[Any, bool]] = [(None, False)]


def _silenced() -> bool:
    """True when the first filter that can match InsecureRandomnessWarning is an
    unconditional "ignore" (what pytest's ini option or a simulation's
    ``filterwarnings("ignore", category=...)`` installs): then the frame walk and
    ``warnings.warn`` below are skipped, which is most of the warning's cost (a few
    microseconds per scalar call).  Any other filter, or one restricted by message, module
    or line, takes the full path, so nothing is lost that Python would have shown."""
    filters = warnings.filters
    snapshot, verdict = _SILENCED[0]
    if snapshot != filters:
        verdict = False
        for action, msg, category, module, lineno in filters:
            if issubclass(InsecureRandomnessWarning, category):
                verdict = (
                    action == "ignore" and msg is None and module is None and not lineno
                )
                break
        _SILENCED[0] = (list(filters), verdict)
    return verdict


def _warn(message: str) -> None:
    if _silenced():
        return
    # stacklevel 1 is this frame; skip every frame of the package (Cython functions have
    # none), so the warning names the user's line (Python 3.12's skip_file_prefixes, by
    # hand for 3.10 and 3.11)
    frame = sys._getframe(0)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, InsecureRandomnessWarning, stacklevel=level)


# (type, ChaCha20 mode) -> message: simulation loops pass here on every call
_RNG_MESSAGES: dict[tuple[type, str | None], str] = {}


def warn_rng(bit_generator: object) -> None:
    """Warn that a secure mechanism was given ``bit_generator`` (seeded, keyed or not a
    ChaCha20 at all).  Called from ``_core.secure_rng`` only for such generators."""
    kind = type(bit_generator)
    mode = getattr(bit_generator, "mode", None) if kind.__name__ == "ChaCha20" else None
    message = _RNG_MESSAGES.get((kind, mode))
    if message is None:
        what = f"a {mode} ChaCha20" if mode else f"numpy's {kind.__name__}"
        message = _RNG_MESSAGES[kind, mode] = (
            f"a secure mechanism drew its noise from {what}: its output is predictable "
            "from the seed, fine for tests and simulation, never for a real release "
            "(use rng=None, the OS-keyed ChaCha20)"
        )
    _warn(message)


def warn_fast() -> None:
    """Warn that a secure mechanism runs with ``mode="fast"``."""
    _warn(
        "a mechanism ran with mode='fast': continuous floating-point noise, not safe "
        "against floating-point attacks (Mironov 2012); for simulation only, never for "
        "a real release (use mode='secure', the default)"
    )


def mode(value: object, options: tuple[str, ...] = ("secure", "fast")) -> str:
    """``_validation.choice("mode", ...)``, warning when the mode is ``"fast"``."""
    if value == "secure" and type(value) is str:
        return value
    chosen: str = _v.choice("mode", value, options)
    if chosen == "fast":
        warn_fast()
    return chosen
