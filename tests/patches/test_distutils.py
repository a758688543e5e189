"""Patch ``distutils``: ``distutils.version`` served on Python 3.12+ (where the standard
library no longer has it and setuptools does not provide it) from ``import mxnet`` on, for
MXNet and for users' own code, ordering versions as distutils did.
"""

import importlib.util
import sys
import warnings

import mxnet as mx
import numpy as np
import pytest

import mxcompat
import mxcompat.patches.distutils
from mxcompat._core import facts

NUMPY_VERSION = facts.parse_version(np.__version__)[:2]
NUMPY2 = NUMPY_VERSION >= (2, 0)


def test_distutils_version_for_mxnet_and_users_code():
    # One rule for every release: served from `import mxnet` on, also where MXNet itself
    # never imports it (1.3-1.5), so users' own `from distutils.version import ...` works.
    from distutils.version import LooseVersion, StrictVersion

    assert (LooseVersion(np.__version__) >= LooseVersion("1.17")) == (NUMPY_VERSION >= (1, 17))
    assert StrictVersion("1.6.0") <= StrictVersion("1.26.4")
    assert ("distutils" in mxcompat.patched()) == (sys.version_info >= (3, 12))
    assert ("numpy2" in mxcompat.patched()) == NUMPY2
    if sys.version_info >= (3, 12):
        # Ours only when neither the stdlib nor setuptools' hack provides distutils.
        import distutils
        import importlib.util

        origin = getattr(distutils.__spec__, "origin", "")
        assert mxcompat.patches.distutils.served() == (origin == "mxcompat")
        if importlib.util.find_spec("setuptools") is None:
            assert mxcompat.patches.distutils.served()
        if mxcompat.patches.distutils.served():
            import looseversion

            assert LooseVersion is looseversion.LooseVersion
            assert StrictVersion is mxcompat.patches.distutils.StrictVersion


_NO_DISTUTILS = pytest.mark.skipif(
    sys.version_info < (3, 12) or importlib.util.find_spec("setuptools") is not None,
    reason="this Python has a distutils of its own (the standard library's before 3.12, "
    "else setuptools'): mxcompat never serves one here",
)


@_NO_DISTUTILS
def test_distutils_rule_import_order_and_opt_out(python):
    probe = """
        import importlib, sys
        import mxcompat
        def distutils_version():
            try:
                importlib.import_module("distutils.version")
                return "yes"
            except ImportError as e:
                return type(e).__name__
        print(distutils_version())  # before `import mxnet`: nothing served
        try:
            import mxnet
            print("mxnet", mxnet.__version__)
        except ImportError as e:
            print("mxnet", type(e).__name__)
        sys.modules.pop("distutils", None)
        print(distutils_version())
        print("distutils" in mxcompat.patched())
    """
    on = python(probe).stdout.split()
    assert on == ["ModuleNotFoundError", "mxnet", mx.__version__, "yes", "True"]
    off = python(probe, env={"MXCOMPAT_DISABLE_PATCHES": "distutils"}).stdout.split()
    if facts.since(facts.MXNET_IMPORTS_DISTUTILS):  # MXNet needs it itself
        assert off == ["ModuleNotFoundError", "mxnet"] + ["ModuleNotFoundError"] * 2 + ["False"]
    else:  # it does not: MXNet imports, and distutils stays absent
        assert off == ["ModuleNotFoundError", "mxnet", mx.__version__] + [
            "ModuleNotFoundError",
            "False",
        ]


# What MXNet hands distutils.version: NumPy's version strings and its own thresholds, in
# ascending order, equal ones in one tuple.  _NOT_STRICT: strings StrictVersion refuses, a
# NumPy release candidate and a development build among them.
_STRICT_ORDER = [
    ("0.4", "0.4.0"),
    ("1.0.4a3",),
    ("1.0.4b1",),
    ("1.0.4",),
    ("1.6", "1.6.0"),
    ("1.14.6",),
    ("1.23.5",),
    ("1.26.4",),
    ("2.0.0b1",),
    ("2.0.0", "2.0"),
    ("2.1.3",),
    ("2.4.6",),
    ("10.0",),
]
_NOT_STRICT = [
    "2.0.0rc1",
    "2.1.0.dev0+git20240101",
    "1.3.a4",
    "1",
    "1.2.3.4",
    "1.2b",
    "v1.2",
    "1.2.3 ",
]
_LOOSE_ORDER = [
    ("1.14.6",),
    ("1.15",),
    ("1.15.0",),
    ("1.17",),
    ("1.17.0",),
    ("1.23.5",),
    ("1.26.4",),
    ("2.0.0",),
    ("2.0.0rc1",),
    ("2.1.0.dev0+git20240101",),
    ("2.1.3",),
    ("2.4.6",),
]


def _stdlib_distutils_version():
    """The standard library's ``distutils.version``, the reference, where this Python has one
    (<= 3.11), else ``None``."""
    if sys.version_info >= (3, 12):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            from distutils import version
        except ImportError:  # a distribution's Python without its distutils package
            return None
    return version


def _comparisons(cls, order):
    """{(a, b): the five comparisons of cls(a) with cls(b) and with the string b}."""
    ops = ("__lt__", "__le__", "__eq__", "__ge__", "__gt__")
    results = {}
    for a in [v for group in order for v in group]:
        for b in [v for group in order for v in group]:
            results[a, b] = tuple(getattr(cls(a), op)(cls(b)) for op in ops) + tuple(
                getattr(cls(a), op)(b) for op in ops
            )
    return results


def _expected(order):
    rank = {v: i for i, group in enumerate(order) for v in group}
    return {
        (a, b): (
            rank[a] < rank[b],
            rank[a] <= rank[b],
            rank[a] == rank[b],
            rank[a] >= rank[b],
            rank[a] > rank[b],
        )
        * 2
        for a in rank
        for b in rank
    }


def test_served_strict_version_is_distutils():
    ours = mxcompat.patches.distutils.StrictVersion
    assert _comparisons(ours, _STRICT_ORDER) == _expected(_STRICT_ORDER)
    shown = {
        v: (str(ours(v)), repr(ours(v)), ours(v).version, ours(v).prerelease)
        for group in _STRICT_ORDER
        for v in group
    }
    assert shown["1.6.0"] == ("1.6", "StrictVersion ('1.6')", (1, 6, 0), None)
    assert shown["1.0.4a3"] == ("1.0.4a3", "StrictVersion ('1.0.4a3')", (1, 0, 4), ("a", 3))
    assert shown["2.0.0b1"] == ("2.0b1", "StrictVersion ('2.0b1')", (2, 0, 0), ("b", 1))
    assert shown["1.26.4"] == ("1.26.4", "StrictVersion ('1.26.4')", (1, 26, 4), None)
    errors = {}
    for text in _NOT_STRICT:
        with pytest.raises(ValueError) as info:
            ours(text)
        errors[text] = str(info.value)
    assert errors["2.0.0rc1"] == "invalid version number '2.0.0rc1'"
    # NotImplemented for anything else: Python then falls back to identity / TypeError.
    assert ours("1.2") != 1.2 and ours("1.2").__lt__(1.2) is NotImplemented
    stdlib = _stdlib_distutils_version()
    if stdlib is None:
        return  # Python 3.12+: no reference left to compare with, the expectations above hold
    assert _comparisons(stdlib.StrictVersion, _STRICT_ORDER) == _comparisons(ours, _STRICT_ORDER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for v in shown:
            theirs = stdlib.StrictVersion(v)
            assert (str(theirs), repr(theirs), theirs.version, theirs.prerelease) == shown[v]
        for text in _NOT_STRICT:
            with pytest.raises(ValueError) as info:
                stdlib.StrictVersion(text)
            assert str(info.value) == errors[text]


def test_served_loose_version_is_distutils():
    from looseversion import LooseVersion

    assert _comparisons(LooseVersion, _LOOSE_ORDER) == _expected(_LOOSE_ORDER)
    assert LooseVersion("1.26.4").version == [1, 26, 4]
    assert LooseVersion("2.0.0rc1").version == [2, 0, 0, "rc", 1]
    assert repr(LooseVersion("3.10a")) == "LooseVersion ('3.10a')"
    with pytest.raises(TypeError):  # int against str, as in distutils on Python 3
        _ = LooseVersion("1.5.2") < LooseVersion("1.5b2")
    stdlib = _stdlib_distutils_version()
    if stdlib is None:
        return  # Python 3.12+: no reference left to compare with, the expectations above hold
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert _comparisons(stdlib.LooseVersion, _LOOSE_ORDER) == _comparisons(
            LooseVersion, _LOOSE_ORDER
        )
        for v in ("1.26.4", "2.0.0rc1", "3.10a"):
            assert (stdlib.LooseVersion(v).version, repr(stdlib.LooseVersion(v))) == (
                LooseVersion(v).version,
                repr(LooseVersion(v)),
            )
        with pytest.raises(TypeError):
            _ = stdlib.LooseVersion("1.5.2") < stdlib.LooseVersion("1.5b2")


def test_distutils_not_served_without_mxnet_import(python):
    proc = python("""
        import sys
        import mxcompat
        try:
            import distutils
            print("have", getattr(distutils.__spec__, "origin", None))
        except ImportError:
            print("none")
    """)
    out = proc.stdout.strip()
    if sys.version_info >= (3, 12):
        assert out == "none" or out.split()[1] != "mxcompat", out
    else:
        assert out.startswith("have")
