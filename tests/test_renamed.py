"""Old module paths (dpfast.releases -> dpfast.stats, dpfast.release ->
dpfast.query_release) still work for one release, warn DeprecationWarning, and are the
new modules themselves: no second copy of a class (isinstance and pickles keep working)."""

import pickle
import subprocess
import sys

import pytest

import dpfast


def _fresh(code):
    """Run code in a fresh interpreter with DeprecationWarning shown; (stdout, stderr)."""
    out = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip(), out.stderr


def test_old_paths_import_as_the_new_modules_with_a_warning():
    out, err = _fresh(
        "import dpfast.releases as R, dpfast.stats as S\n"
        "from dpfast.release.mwem import MWEM\n"
        "from dpfast.query_release.mwem import MWEM as M2\n"
        "from dpfast.release import Domain\n"
        "import dpfast.query_release as Q\n"
        "print(R is S, MWEM is M2, Domain is Q.Domain)\n"
    )
    assert out == "True True True"
    assert "dpfast.releases is renamed dpfast.stats" in err
    assert "dpfast.release is renamed dpfast.query_release" in err
    assert "dpfast.release.mwem is renamed dpfast.query_release.mwem" in err


def test_new_paths_do_not_warn():
    out, err = _fresh(
        "import dpfast, dpfast.stats, dpfast.query_release.mwem\n"
        "print(dpfast.stats.mean.__module__)"
    )
    assert out == "dpfast.stats"
    assert "DeprecationWarning" not in err


def test_old_attribute_of_the_package_warns():
    with pytest.warns(DeprecationWarning, match="dpfast.releases is renamed dpfast.stats"):
        assert dpfast.releases is dpfast.stats
    with pytest.warns(DeprecationWarning, match="dpfast.query_release"):
        assert dpfast.release is dpfast.query_release
    with pytest.raises(AttributeError):
        dpfast.no_such_module  # noqa: B018


def test_a_pickle_made_through_the_old_path_loads_as_the_new_class():
    with pytest.warns(DeprecationWarning):
        from dpfast.release import Domain as Old
    dom = Old(["a", "b"], [2, 3])
    back = pickle.loads(pickle.dumps(dom))
    assert type(back) is dpfast.query_release.Domain
    assert type(back).__module__.startswith("dpfast.query_release")
