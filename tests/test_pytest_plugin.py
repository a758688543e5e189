"""mxcompat's pytest plugin (mxcompat/pytest_plugin.py), run on small test files with pytest's
own ``pytester``: the header, ``@pytest.mark.mxnet``, the traps-handled section,
``--mxcompat-strict`` and the ``mxcompat_frozen`` fixture."""

import sys

import mxnet as mx
import pytest

import mxcompat
from mxcompat._core import facts, registry

pytest_plugins = ("pytester",)

# Two traps a test can hit cheaply: a bare string as data_names (twice: data and fixed
# names), and an integer NDArray divided by 0.5 (SIGFPE without mxcompat).
TRAPS = """
import mxnet as mx
import pytest

def _symbol():
    return mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")

def test_bare_names():
    mod = mx.mod.Module(_symbol(), data_names="data", label_names=None,
                        fixed_param_names="fc_bias")
    assert mod.data_names == ["data"]

def test_int_division():
    with pytest.raises(ZeroDivisionError):
        mx.nd.array([1, 2], dtype="int32") / 0.5

def test_clean():
    mod = mx.mod.Module(_symbol(), data_names=("data",), label_names=None)
    assert mod.data_names == ["data"]
"""


def _features():
    features = facts.build_features()
    return "unknown (mxnet.runtime is MXNet 1.5+)" if features is None else ", ".join(features)


def test_the_header_names_the_versions_the_build_and_the_active_patches(pytester):
    import wrapt

    pytester.makepyfile("import mxnet\n\ndef test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    header = [line for line in result.outlines if line.startswith("mxcompat")]
    assert header == [
        "mxcompat %s: MXNet %s, NumPy %s, Python %s, wrapt %s"
        % (
            mxcompat.__version__,
            mx.__version__,
            sys.modules["numpy"].__version__,
            sys.version.split()[0],
            wrapt.__version__,
        ),
        "mxcompat: MXNet build features: %s" % _features(),
        "mxcompat: active patches: %s" % ", ".join(mxcompat.patched()),
    ]


def test_the_plugin_never_imports_mxnet_itself(pytester):
    # A fresh process: the header reads the installed versions, and a test that never
    # imports mxnet runs without it.
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7: pytest's dependency
        import importlib_metadata as metadata
    pytester.makepyfile(
        "import sys\n\ndef test_no_mxnet():\n    assert 'mxnet' not in sys.modules\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)
    header = [line for line in result.outlines if line.startswith("mxcompat")]
    assert header[0].startswith(
        "mxcompat %s: MXNet %s, NumPy %s, Python "
        % (mxcompat.__version__, metadata.version("mxnet"), sys.modules["numpy"].__version__)
    )
    assert header[1:] == [
        "mxcompat: mxnet is not imported yet; the patches land when a test imports it"
    ]


def test_the_mxnet_marker_runs_where_the_release_matches_and_says_why_elsewhere(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.mxnet(">=1.6,<1.9")
        def test_16_to_18():
            pass

        @pytest.mark.mxnet("<1.5")
        def test_before_15():
            pass

        @pytest.mark.mxnet(">=1.3", reason="any 1.x")
        def test_any():
            pass

        @pytest.mark.mxnet("=>1.6")
        def test_bad_spec():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", "-v")
    release = facts.parse_version(mx.__version__)
    in_16_to_18 = (1, 6) <= release[:2] < (1, 9)
    before_15 = release[:2] < (1, 5)
    result.assert_outcomes(
        passed=1 + in_16_to_18 + before_15, skipped=2 - in_16_to_18 - before_15, errors=1
    )
    reasons = sorted(
        line.split(": ", 1)[1] for line in result.outlines if line.startswith("SKIPPED")
    )
    expected = []
    if not before_15:
        expected.append("needs MXNet <1.5 (this is MXNet %s)" % mx.__version__)
    if not in_16_to_18:
        expected.append("needs MXNet >=1.6,<1.9 (this is MXNet %s)" % mx.__version__)
    assert reasons == expected
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.mxnet('=>1.6'): not a PEP 440 version specifier (e.g. '>=1.6,<1.9')"]
    )


def test_the_mxnet_marker_matches_the_release_of_a_post_release():
    assert facts.release("1.5.1.post0") == "1.5.1"
    assert facts.release("1.8.0.post0") == "1.8.0"
    assert facts.release("junk") is None


def test_record_counts_each_trap_handled_exactly():
    before = registry.handled().get("int_division", 0)
    x = mx.nd.array([1, 2], dtype="int32")
    for _ in range(3):
        with pytest.raises(ZeroDivisionError):
            x / 0.5
    (x / 2).wait_to_read()  # no trap: nothing counted
    assert registry.handled()["int_division"] == before + 3


def test_the_end_of_the_run_lists_the_traps_handled_with_the_first_test(pytester):
    pytester.makepyfile(test_legacy_code=TRAPS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=3)
    lines = result.outlines
    start = next(
        i for i, line in enumerate(lines) if "legacy MXNet traps handled by mxcompat" in line
    )
    assert lines[start + 1 : start + 5] == [
        "patch         count  first hit",
        "bare_names        2  test_legacy_code.py::test_bare_names",
        "int_division      1  test_legacy_code.py::test_int_division",
        "Each is legacy code that only works (or computes what it did on its own stack) "
        "because of mxcompat; `mxcompat patches` says what each patch fixes, "
        "--mxcompat-strict fails the tests that hit one.",
    ]


def test_no_section_when_nothing_was_handled(pytester):
    pytester.makepyfile(
        "import mxnet as mx\n\ndef test_add():\n"
        "    assert (mx.nd.ones(2) + 1).asnumpy().tolist() == [2.0, 2.0]\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines if "traps handled" in line]


def test_strict_fails_the_tests_that_hit_a_trap(pytester):
    pytester.makepyfile(test_legacy_code=TRAPS)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-W", "ignore::UserWarning", "--mxcompat-strict"
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*--mxcompat-strict: mxcompat handled legacy MXNet trap(s) in this test: "
            "bare_names (2); without mxcompat*",
            "*--mxcompat-strict: mxcompat handled legacy MXNet trap(s) in this test: "
            "int_division (1); without mxcompat*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "FAILED test_legacy_code.py::test_bare_names*",
            "FAILED test_legacy_code.py::test_int_division*",
        ]
    )


def test_strict_counts_a_fixture_that_hits_a_trap(pytester):
    pytester.makepyfile("""
        import mxnet as mx
        import pytest

        @pytest.fixture
        def module():
            sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
            return mx.mod.Module(sym, data_names="data", label_names=None)

        def test_uses_it(module):
            assert module.data_names == ["data"]
    """)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-W", "ignore::UserWarning", "--mxcompat-strict"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*in this test: bare_names (1);*"])


def test_mxcompat_frozen_freezes_for_one_test_and_always_cleans_up(pytester):
    pytester.makepyfile("""
        import re
        import mxcompat
        import mxnet as mx

        def test_a_frozen_kernel_stays(mxcompat_frozen):
            assert mxcompat_frozen("kw", re.compile(r"fc\\d_bias")) == (
                "before", "kw", re.compile(r"fc\\d_bias"))
            kernel = mx.nd.array([[1, 2, 3]] * 3).reshape((1, 1, 3, 3))
            loss = mx.sym.MakeLoss(mx.sym.Convolution(
                data=mx.sym.var("data"), weight=mx.sym.var("kw"), kernel=(3, 3),
                num_filter=1, no_bias=True))
            mod = mx.mod.Module(loss, data_names=("data",), label_names=None)
            mod.bind(data_shapes=[("data", (1, 1, 3, 3))])
            mod.set_params({"kw": kernel}, {})
            mod.init_optimizer()
            mod.forward(mx.io.DataBatch([kernel], []))
            mod.backward()
            mod.update()
            assert mod.get_params()[0]["kw"].asnumpy().tolist() == kernel.asnumpy().tolist()

        def test_failing_while_frozen(mxcompat_frozen):
            mxcompat_frozen("fc1_*")
            assert mxcompat.is_frozen("fc1_weight")
            raise AssertionError("boom")

        def test_afterwards():
            assert mxcompat.frozen_patterns() == ("before",)
    """)
    mxcompat.freeze("before")
    try:
        result = pytester.runpytest("-p", "no:cacheprovider")
        assert mxcompat.frozen_patterns() == ("before",)
    finally:
        mxcompat.unfreeze()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: boom"])


def _delta(name, action):
    before = registry.handled().get(name, 0)
    action()
    return registry.handled().get(name, 0) - before


def _no_label_module(label_names):
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    kwargs = {} if label_names is None else {"label_names": label_names}
    return mx.mod.Module(sym, data_names=("data",), **kwargs)


def _get_params_of_nothing():
    with pytest.raises(AssertionError, match="mxcompat: Module.get_params"):
        _no_label_module([]).get_params()


@pytest.mark.parametrize(
    "name, trap, clean",
    [
        # MXNet's default label on a symbol without one: dropped at Module(...).
        ("labels", lambda: _no_label_module(None), lambda: _no_label_module([])),
        (
            "unbound_get_params",
            _get_params_of_nothing,
            lambda: _no_label_module([]).params_initialized,
        ),
        (
            "ndarray_to_numpy",
            lambda: __import__("numpy").asarray(mx.nd.ones(2)),
            lambda: mx.nd.ones(2).asnumpy(),
        ),
    ],
    ids=["labels", "unbound_get_params", "ndarray_to_numpy"],
)
def test_each_trap_handled_counts_once_and_the_clean_path_never(name, trap, clean):
    assert _delta(name, trap) == 1
    assert _delta(name, clean) == 0


@pytest.mark.skipif(
    facts.parse_version(sys.modules["numpy"].__version__)[0] < 2,
    reason="the numpy2 patch applies on NumPy 2 only",
)
def test_numpy2_counts_an_operator_call_given_numpy_scalars():
    import numpy as np

    x = mx.nd.ones((2, 3))
    assert _delta("numpy2", lambda: mx.nd.reshape(x, shape=(np.int64(3), 2))) == 1
    assert _delta("numpy2", lambda: mx.nd.reshape(x, shape=(3, 2))) == 0
