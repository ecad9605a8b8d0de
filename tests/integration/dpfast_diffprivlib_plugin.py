"""pytest plugin: route diffprivlib through dpfast before any test module is collected.

Loaded with ``-p dpfast_diffprivlib_plugin`` by run_diffprivlib_suite.py.  The patch is
applied when pytest loads the plugin, i.e. before collection imports the test modules, so
their ``from diffprivlib.mechanisms import Laplace`` already binds the dpfast class.  With
DPFAST_BROKEN_LAPLACE set (the negative control), the Laplace draw uses a scale 10 %
too small.
"""

import os

from dpfast.compat import diffprivlib as _dpl

REBOUND = _dpl.patch()

if os.environ.get("DPFAST_BROKEN_LAPLACE"):
    _release = _dpl._laplace_release

    def _broken(mech, value, scale, sensitivity):
        return _release(mech, value, 0.9 * scale, sensitivity)

    _dpl._laplace_release = _broken


def pytest_report_header(config):
    broken = (
        " (NEGATIVE CONTROL: Laplace scale x0.9)"
        if os.environ.get("DPFAST_BROKEN_LAPLACE")
        else ""
    )
    return f"dpfast.compat.diffprivlib: patched, {REBOUND} bindings rebound{broken}"


def pytest_sessionfinish(session, exitstatus):
    assert _dpl.is_patched(), "the dpfast patch was removed during the run"
