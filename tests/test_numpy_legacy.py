"""Opt-in NumPy names for legacy user code (``mxcompat.numpy_legacy``), in fresh interpreters."""

import importlib
import json
import sys
import textwrap

import pytest

from tests.support.processes import run_python

# The module, not the public function of the same name that `mxcompat.numpy_legacy` is.
REPLACEMENTS = importlib.import_module("mxcompat.numpy_legacy").REPLACEMENTS
NAMES = sorted(REPLACEMENTS)

# What each name must give, checked in the child: an expression over `value` and `np`.
CHECKS = {
    "asscalar": "value(np.array([3.5])) == 3.5 and type(value(np.array([3.5]))) is float",
    "bool": "value is bool",
    "int": "value is int",
    "float": "value is float",
    "complex": "value is complex",
    "object": "value is object",
    "str": "value is str",
    "long": "value is int",
    "unicode": "value is str",
    "float_": "value is np.float64",
    "complex_": "value is np.complex128",
    "cfloat": "value is np.complex128",
    "singlecomplex": "value is np.complex64",
    "longfloat": "value is np.longdouble",
    "longcomplex": "value is np.clongdouble",
    "clongfloat": "value is np.clongdouble",
    "string_": "value is np.bytes_",
    "unicode_": "value is np.str_",
    "Inf": "value == float('inf')",
    "Infinity": "value == float('inf')",
    "infty": "value == float('inf')",
    "PINF": "value == float('inf')",
    "NINF": "value == float('-inf')",
    "NaN": "value != value",
    "NAN": "value != value",
    "PZERO": "value == 0.0 and str(value) == '0.0'",
    "NZERO": "value == 0.0 and str(value) == '-0.0'",
    "alltrue": "value is np.all",
    "sometrue": "value is np.any",
    "product": "value is np.prod",
    "cumproduct": "value is np.cumprod",
    "round_": "value is np.round",
    "msort": "value(np.array([[3, 1], [1, 2]])).tolist() == [[1, 1], [3, 2]]",
    "in1d": "value(np.array([[1, 2], [3, 4]]), [2, 3]).tolist() == [False, True, True, False]",
    "trapz": "value is np.trapezoid",
    "row_stack": "value is np.vstack",
    "asfarray": (
        "value([1, 2]).dtype == np.float64 and "
        "value([1, 2], dtype=np.float32).dtype == np.float32 and "
        "value([1, 2], dtype=int).dtype == np.float64"
    ),
}


def _lacking():
    """The names this env's NumPy refuses (asked without mxcompat)."""
    proc = run_python(
        """
        import json, warnings
        warnings.simplefilter("ignore")
        import numpy as np
        out = []
        for name in %r:
            try:
                getattr(np, name)
            except AttributeError:
                out.append(name)
        print(json.dumps(out))
    """
        % (NAMES,)
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_name_has_a_check():
    assert sorted(CHECKS) == NAMES


def test_nothing_changes_without_the_opt_in():
    code = """
        import json, types, warnings
        warnings.simplefilter("ignore")
        %s
        import numpy as np
        print(json.dumps([type(np) is types.ModuleType,
                          [n for n in %r if hasattr(np, n)]]))
    """
    plain = run_python(code % ("", NAMES))
    ours = run_python(code % ("import mxcompat", NAMES))
    assert plain.returncode == ours.returncode == 0, plain.stderr + ours.stderr
    assert json.loads(ours.stdout) == json.loads(plain.stdout)
    assert json.loads(ours.stdout)[0] is True


@pytest.mark.parametrize("how", ["env", "api-before-numpy", "api-after-numpy"])
def test_opt_in_serves_what_numpy_lacks_with_one_warning_per_name(how):
    lacking = _lacking()
    setup = {
        "env": "import mxcompat\nimport numpy as np",
        "api-before-numpy": "import mxcompat\nmxcompat.numpy_legacy()\nimport numpy as np",
        "api-after-numpy": "import numpy as np\nimport mxcompat\nmxcompat.numpy_legacy()",
    }[how]
    proc = run_python(
        setup
        + textwrap.dedent(
            """
        import json, sys, warnings
        warnings.simplefilter("always")
        results = {}
        lacking = %r
        for name, check in %r.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = getattr(np, name); line = sys._getframe().f_lineno
                again = getattr(np, name)
            ours = [w for w in caught if w.category is mxcompat.MXCompatWarning]
            # The replacement is checked where NumPy lacks the name; NumPy's own is NumPy's.
            results[name] = [eval(check) if name in lacking else True,
                             again is value or name in ("NaN", "NAN"),
                             [(str(w.message), w.lineno == line) for w in ours]]
        print(json.dumps([np.__version__, results]))
    """
            % (lacking, CHECKS)
        ),
        env={"MXCOMPAT_NUMPY_LEGACY": "1"} if how == "env" else None,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    version, results = json.loads(proc.stdout)
    for name in NAMES:
        ok, same, warned = results[name]
        assert ok and same, name
        if name in lacking:
            replacement = REPLACEMENTS[name][1]
            assert warned == [
                [
                    "numpy.%s is gone from NumPy %s; legacy code gets %s from "
                    "mxcompat (numpy_legacy): use that instead" % (name, version, replacement),
                    True,
                ]
            ], name
        else:
            assert warned == [], name  # NumPy's own name (or its own deprecated alias)


def test_numpy_legacy_false_takes_the_names_away():
    lacking = _lacking()
    if not lacking:
        pytest.skip("NumPy %s still has every legacy name" % sys.modules["numpy"].__version__)
    proc = run_python(
        """
        import types, mxcompat, numpy as np
        mxcompat.numpy_legacy()
        served = hasattr(np, %r)
        mxcompat.numpy_legacy(False)
        print(served, hasattr(np, %r), type(np) is types.ModuleType)
    """
        % (lacking[0], lacking[0])
    )
    assert proc.stdout.split() == ["True", "False", "True"], proc.stderr


def test_numpy_keeps_its_own_error_for_other_names():
    proc = run_python("""
        import mxcompat, numpy as np
        mxcompat.numpy_legacy()
        try:
            np.no_such_name
        except AttributeError as e:
            print(e)
    """)
    assert proc.stdout.strip().startswith("module 'numpy' has no attribute 'no_such_name'")


def test_run_numpy_legacy(tmpdir):
    from tests.support.processes import mxcompat_cmd, write

    lacking = _lacking()
    if "asscalar" not in lacking:
        pytest.skip(
            "NumPy %s still has numpy.asscalar (removed in 1.23)" % sys.modules["numpy"].__version__
        )
    script = write(
        tmpdir.join("legacy.py"),
        """
        import numpy as np
        print(np.asscalar(np.array([7])))
    """,
    )
    proc = mxcompat_cmd("run", "--numpy-legacy", script)
    assert (proc.returncode, proc.stdout) == (0, "7\n"), proc.stderr
    assert "legacy.py:3: MXCompatWarning: numpy.asscalar is gone" in proc.stderr
    proc = mxcompat_cmd("run", script)
    assert proc.returncode == 1
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith("AttributeError: module 'numpy' has no attribute 'asscalar'")
    )
