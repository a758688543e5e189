"""Patch ``numpy_names``: the NumPy names MXNet 1.x reads that NumPy 1.24 … 2.x took away,
restored, and nothing else.

The names are derived from MXNet's own source (``mxnet_numpy_uses``); processes that never
import mxnet keep NumPy untouched; mxnet imported before mxcompat gets one warning.
"""

import math
import os
import subprocess
import sys
import textwrap

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat.patches import numpy_names
from tests.support import mxnet_numpy_uses
from tests.support.processes import subprocess_env
from tests.support.stack import MX_VERSION

# Chains the scan finds that are not NumPy attributes at all, so nothing can restore them.
# Each entry: (chain, why).  Keep it empty unless a real case is found and explained.
NOT_NUMPY_ATTRIBUTES = {}


# --- the restored names are derived from MXNet's source --------------------------------------


def test_every_numpy_name_mxnet_uses_resolves():
    root = mxnet_numpy_uses.mxnet_dir()
    uses = mxnet_numpy_uses.scan(root)
    assert len(uses) > 300, "the scan found too few NumPy uses in %s" % root
    missing = {}
    for use in uses:
        name = mxnet_numpy_uses.resolve(np, use.chain)
        if name is not None and name not in NOT_NUMPY_ATTRIBUTES:
            missing.setdefault(name, []).append(use)
    assert not missing, "NumPy %s lacks names MXNet %s uses: %s" % (
        np.__version__,
        mx.__version__,
        "; ".join("numpy.%s (%s:%d)" % (n, u[0].path, u[0].line) for n, u in missing.items()),
    )


# The releases whose Python code reads each restored name (first, last), from this scan run
# over the 1.3.1 … 1.9.1 wheels.  Each env re-checks its own release against this table, so
# together the envs re-derive it; numpy_names.NAMES must be exactly these names.
USED_BY = {
    "int": ((1, 3), (1, 9)),
    "float": ((1, 4), (1, 7)),
    "bool": ((1, 6), (1, 9)),
    "Inf": ((1, 5), (1, 9)),
    "PZERO": ((1, 6), (1, 9)),
    "NZERO": ((1, 6), (1, 9)),
}
for _name in (
    "PINF",
    "NINF",
    "NAN",
    "NaN",
    "alltrue",
    "sometrue",
    "product",
    "round_",
    "msort",
    "compat",
    "trapz",
    "in1d",
    "mirr",
    "npv",
    "pmt",
    "ppmt",
    "pv",
    "rate",
):
    USED_BY[_name] = ((1, 7), (1, 9))


def test_restored_names_are_exactly_those_mxnet_uses():
    assert sorted(name for name, _ in numpy_names.NAMES) == sorted(USED_BY)
    used_here = {u.chain[0] for u in mxnet_numpy_uses.scan(mxnet_numpy_uses.mxnet_dir())}
    release = MX_VERSION[:2]
    for name, (first, last) in USED_BY.items():
        assert (name in used_here) == (first <= release <= last), (name, mx.__version__)
    # What was added is exactly what this NumPy lacked (nothing it has was touched).
    for name in numpy_names.added():
        assert vars(np)[name] is numpy_names._added[name]


def test_restored_values_are_numpys_documented_replacements():
    expected = {
        "bool": bool,
        "int": int,
        "float": float,
        "alltrue": np.all,
        "sometrue": np.any,
        "product": np.prod,
        "round_": np.round,
    }
    for name in numpy_names.added():
        value = getattr(np, name)
        if name in expected:
            assert value is expected[name], name
    for name, want in (
        ("Inf", math.inf),
        ("PINF", math.inf),
        ("NINF", -math.inf),
        ("PZERO", 0.0),
        ("NZERO", -0.0),
    ):
        if name in numpy_names.added():
            got = getattr(np, name)
            assert type(got) is float and got == want
            assert math.copysign(1.0, got) == math.copysign(1.0, want)
    for name in ("NAN", "NaN"):
        if name in numpy_names.added():
            assert math.isnan(getattr(np, name))
    if "msort" in numpy_names.added():
        a = np.array([[3, 1], [1, 2], [2, 0]])
        assert np.array_equal(np.msort(a), np.sort(a, axis=0))
    if "in1d" in numpy_names.added():
        got = np.in1d(np.array([[1, 2], [3, 4]]), [2, 3])
        assert got.shape == (4,) and got.tolist() == [False, True, True, False]
    if "trapz" in numpy_names.added():
        assert np.trapz is np.trapezoid
    if "compat" in numpy_names.added():
        assert np.compat.basestring is str


def test_financial_functions_raise_naming_numpy_financial_when_called():
    for name in ("mirr", "npv", "pmt", "ppmt", "pv", "rate"):
        fn = getattr(np, name, None)
        if fn is None:
            continue  # NumPy < 1.20 still has the real functions
        if name not in numpy_names.added():
            continue  # NumPy's own 1.20-1.26 stub
        with pytest.raises(RuntimeError) as info:
            fn(0.1, [1, 2])
        message = str(info.value)
        assert message.startswith("numpy.%s was taken out of NumPy in 1.20 (NEP 32)" % name)
        assert "(pip install numpy-financial) and call numpy_financial.%s." % name in message


# --- processes that never import mxnet ---------------------------------------------------------


def _without_mxnet(tmpdir):
    """A folder holding only mxcompat, wrapt and NumPy (links to this env's copies): with
    ``python -S`` and it as PYTHONPATH, MXNet is not installed."""
    import wrapt

    for module in (mxcompat, wrapt, np):
        package = os.path.dirname(os.path.abspath(module.__file__))
        name = os.path.basename(package)
        os.symlink(package, str(tmpdir.join(name)))
        libs = package + ".libs"  # NumPy wheels' bundled shared libraries
        if os.path.isdir(libs):
            os.symlink(libs, str(tmpdir.join(name + ".libs")))
    return str(tmpdir)


def test_nothing_changes_where_mxnet_is_not_installed(tmpdir):
    # The README's promise: a process that never imports mxnet keeps NumPy untouched, and a
    # failed `import mxnet` (MXNet absent) or a probe for it changes nothing at all.
    code = textwrap.dedent("""
        import importlib.util, sys
        import mxcompat
        assert any(type(f).__name__ == "MXNetImportFinder" for f in sys.meta_path)
        import numpy
        # vars, not only dir: NumPy 2's module __dir__ lists a fixed set of names.
        def names_of(module):
            return set(dir(module)) | set(vars(module))
        names, modules, finders = names_of(numpy), set(sys.modules), list(sys.meta_path)
        print("probe", importlib.util.find_spec("mxnet"))
        try:
            import mxnet
        except ImportError as e:
            print("import", type(e).__name__, e.name)
        if sys.version_info >= (3, 12):
            try:
                import distutils
                print("distutils", distutils.__spec__.origin)
            except ImportError:
                print("distutils absent")
        assert names_of(numpy) == names, sorted(names_of(numpy) ^ names)
        assert set(sys.modules) == modules, sorted(set(sys.modules) ^ modules)
        assert sys.meta_path == finders, (sys.meta_path, finders)
        print("ok")
    """)
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env({"PYTHONPATH": _without_mxnet(tmpdir)}),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout.splitlines()
    assert out[:2] == ["probe None", "import ModuleNotFoundError mxnet"]
    if sys.version_info >= (3, 12):
        assert out[2] == "distutils absent"
    assert out[-1] == "ok"


def test_numpy_untouched_without_mxnet(python):
    proc = python("""
        import sys
        import mxcompat
        assert "numpy" not in sys.modules, "import mxcompat imported numpy"
        assert "mxnet" not in sys.modules
        finders = [type(f).__name__ for f in sys.meta_path]
        assert finders.count("MXNetImportFinder") == 1, finders
        import numpy
        before, meta_path = dict(vars(numpy)), list(sys.meta_path)
        import mxcompat, importlib, importlib.util
        importlib.reload(mxcompat)
        # MXNet is installed here: a probe for it changes nothing either.
        assert importlib.util.find_spec("mxnet") is not None
        after = dict(vars(numpy))
        assert before.keys() == after.keys(), set(after) ^ set(before)
        assert all(after[k] is before[k] for k in before)
        for name in ("PZERO", "alltrue", "mirr", "compat", "bool"):
            assert (name in vars(numpy)) == (name in before), name
        assert "mxnet" not in sys.modules
        assert sys.meta_path == meta_path, (sys.meta_path, meta_path)
        print("ok")
    """)
    assert proc.stdout.strip() == "ok"


def test_existing_names_are_never_replaced(python):
    proc = python("""
        import numpy
        mine = object()
        # A name this NumPy lacks but the user set, and names NumPy has.
        numpy.PZERO = mine
        has = {k: v for k, v in vars(numpy).items()}
        import mxcompat, mxnet
        from mxcompat.patches import numpy_names
        assert numpy.PZERO is mine
        assert "PZERO" not in numpy_names.added()
        for k, v in has.items():
            assert vars(numpy).get(k) is v, k
        new = set(vars(numpy)) - set(has)
        import types
        extra = {k for k in new if not isinstance(vars(numpy)[k], types.ModuleType)}
        assert extra <= set(numpy_names.added()), extra - set(numpy_names.added())
        print("ok", sorted(numpy_names.added()))
    """)
    assert "ok" in proc.stdout


def test_disable_env_restores_nothing(python):
    for env in ({"MXCOMPAT_DISABLE": "1"}, {"MXCOMPAT_DISABLE_PATCHES": "numpy_names,distutils"}):
        proc = python(
            """
            import sys
            import mxcompat
            from mxcompat.patches import numpy_names
            try:
                import mxnet
                imported = True
            except Exception as e:
                imported = type(e).__name__
            import numpy
            print(imported, numpy_names.added(), "numpy_names" in mxcompat.patched())
            assert numpy_names.added() == ()
            assert not any(getattr(f, "_mxcompat_distutils", False) for f in sys.meta_path)
        """,
            env=env,
        )
        assert proc.stdout.split()[-1] == "False", proc.stdout


def test_unpatch_takes_the_names_back_and_patch_restores_them(unpatched):
    # `unpatched` removed every patch, numpy_names included.
    assert numpy_names.added() == ()
    assert "numpy_names" not in mxcompat.patched()
    lacking = numpy_names.missing()
    mxcompat.patch("numpy_names")
    assert set(numpy_names.added()) == set(lacking)
    for name in lacking:
        assert hasattr(np, name)


# --- mxnet imported before mxcompat ------------------------------------------------------------


def _last_error(stderr):
    lines = [line.strip() for line in stderr.splitlines() if "Error" in line]
    return lines[-1] if lines else stderr.strip()[-200:]


def test_warns_once_when_mxnet_was_imported_first(python):
    proc = python(
        """
        import warnings
        warnings.simplefilter("always")
        import numpy
        import mxnet
        # As if this NumPy lacked a name MXNet reads (NumPy 2 does), before mxcompat comes.
        numpy.__dict__.pop("NINF", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import mxcompat
            mxcompat.unpatch(); mxcompat.patch()
        from mxcompat import MXCompatWarning
        ours = [str(w.message) for w in caught if w.category is MXCompatWarning]
        print(len(ours))
        print(ours[0] if ours else "")
        assert numpy.NINF == float("-inf")
    """,
        check=False,
    )
    if proc.returncode != 0 and not proc.stdout.strip():
        pytest.skip(
            "plain `import mxnet` fails here (needs mxcompat first): %s" % _last_error(proc.stderr)
        )
    count, message = proc.stdout.split("\n", 1)
    assert count == "1", proc.stdout
    assert "imported before mxcompat" in message
    assert "import mxcompat before mxnet" in message and "mxcompat run" in message


def test_no_warning_when_mxnet_imported_first_and_nothing_was_missing(python):
    proc = python(
        """
        import warnings
        import mxnet
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import mxcompat
        from mxcompat.patches import numpy_names
        import numpy
        lacked = numpy_names.added()
        ours = [w for w in caught if w.category is mxcompat.MXCompatWarning]
        print(len(ours), bool(lacked))
    """,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(
            "plain `import mxnet` fails here (needs mxcompat first): %s" % _last_error(proc.stderr)
        )
    count, lacked = proc.stdout.split()
    # Only runtime names can be missing when a plain import succeeded; then one warning.
    assert count == ("1" if lacked == "True" else "0"), proc.stdout


def test_warns_once_after_a_failed_import(python):
    proc = python("""
        import sys, types, warnings
        warnings.simplefilter("always")
        try:
            import mxnet
            # This NumPy/Python lets plain MXNet import: fake the leftovers of a failed one.
            for name in [n for n in sys.modules if n == "mxnet" or n.startswith("mxnet.")]:
                if name == "mxnet":
                    del sys.modules[name]
            failed = False
        except Exception:
            failed = True
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import mxcompat
            try:
                import mxnet
            except Exception:
                pass
        ours = [str(w.message) for w in caught if w.category is mxcompat.MXCompatWarning]
        print(failed, len(ours))
        print(ours[0])
    """)
    first, message = proc.stdout.split("\n", 1)
    assert first.split()[1] == "1", proc.stdout
    assert "failed before mxcompat was imported" in message and "mxcompat run" in message
