"""The patch lifecycle, each permutation in a fresh interpreter (ddtrace's patch test style)."""

import re
import sys
import textwrap

import mxnet as mx  # noqa: E402  (after mxcompat)
import pytest

import mxcompat
from mxcompat._core import facts

# Prepended to each subprocess: a map of every patched attribute to the mxcompat wrappers
# stacked on it, outermost first.
PRELUDE = """
import sys, warnings
warnings.simplefilter("always")

def chains():
    import mxcompat._core.registry as P
    import mxcompat._core.stacking as stacking
    out = {}
    for name, p in P._registry.items():
        for t in p.targets:
            resolved = stacking.resolve(t)
            if resolved is None:
                continue
            parent, attr = resolved
            if t.new is None and attr not in vars(parent):
                # Absent on this release, or inherited from a class the patch wrapped
                # already (wrapping it again would run the wrapper twice).
                continue
            obj = vars(parent).get(attr)
            if t.new is not None:  # an added attribute: present or not, never stacked
                out[t.module + ":" + t.path] = [name] if obj is t.new else []
                continue
            stack = []
            while hasattr(obj, "__wrapped__") and hasattr(obj, "_self_mxcompat_patch"):
                stack.append(obj._self_mxcompat_patch)
                obj = obj.__wrapped__
            out[t.module + ":" + t.path] = stack
    return out

def originals():
    import mxcompat._core.registry as P
    import mxcompat._core.stacking as stacking
    out = {}
    for p in P._registry.values():
        for t in p.targets:
            resolved = stacking.resolve(t)
            if resolved is not None:
                out[t.module + ":" + t.path] = vars(resolved[0]).get(resolved[1])
    return out

def our_warnings(action):   # the MXCompatWarning messages action() issues
    import mxcompat
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [str(w.message) for w in caught if w.category is mxcompat.MXCompatWarning]

def import_mxnet():
    import mxnet

def assert_each_once(active):
    import mxcompat._core.registry as P
    for name, p in P._registry.items():
        for t in p.targets:
            if t.module + ":" + t.path not in chains():
                continue
            stack = chains()[t.module + ":" + t.path]
            # A hot target is wrapped while its patch is armed (nothing frozen here: not).
            want = [n for n in reversed(list(P._registry)) if n in active
                    and any(x.module == t.module and x.path == t.path
                            and (not x.hot or P.is_armed(n))
                            for x in P._registry[n].targets)]
            assert stack == want, (t.path, stack, want)
"""

from tests.support.processes import run_threads  # noqa: E402
from tests.support.repo import ROOT  # noqa: E402
from tests.support.stack import applicable_patches  # noqa: E402

ALL = applicable_patches()


def run(python, body, env=None):
    proc = python(PRELUDE + textwrap.dedent(body), env=env)
    return proc.stdout.strip().splitlines()


def test_import_does_not_import_mxnet_or_numpy(python):
    out = run(
        python,
        """
        import mxcompat
        print(sorted(m for m in ("mxnet", "numpy") if m in sys.modules))
        print(mxcompat.patched())
    """,
    )
    assert out == ["[]", "()"]


def test_mxcompat_before_mxnet(python):
    out = run(
        python,
        """
        import mxcompat
        import mxnet
        print(mxcompat.patched())
        assert_each_once(mxcompat.patched())
        print("ok")
    """,
    )
    assert out == [repr(ALL), "ok"]


@pytest.mark.requires_plain_import
def test_mxnet_before_mxcompat(python):
    out = run(
        python,
        """
        import mxnet
        import mxcompat
        print(mxcompat.patched())
        assert_each_once(mxcompat.patched())
        print("ok")
    """,
    )
    assert out == [repr(ALL), "ok"]


def test_double_import_reload_and_patch_twice_wrap_once(python):
    out = run(
        python,
        """
        import importlib
        import mxcompat
        import mxnet
        import mxcompat as again
        importlib.reload(mxcompat)
        mxcompat.patch()
        mxcompat.patch("labels")
        assert_each_once(mxcompat.patched())
        print(mxcompat.patched())
    """,
    )
    assert out == [repr(ALL)]


@pytest.mark.requires_plain_import
def test_unpatch_restores_exact_originals_and_repatch(python):
    out = run(
        python,
        """
        import mxnet
        from mxnet.module import Module, BucketingModule
        before_bind, before_init = Module.bind, vars(Module)["__init__"]
        import mxcompat._core.registry as P
        import mxcompat
        mxcompat.unpatch()  # from the state import mxcompat left
        print(mxcompat.patched())
        # Every attribute is MXNet's own object again, identical, not an equal copy.
        assert Module.bind is before_bind and vars(Module)["__init__"] is before_init
        first = originals()
        mxcompat.patch()
        assert Module.bind is not before_bind
        mxcompat.unpatch()
        assert all(originals()[k] is v for k, v in first.items())
        mxcompat.patch()
        assert_each_once(mxcompat.patched())
        print(mxcompat.patched())
    """,
    )
    assert out == ["()", repr(ALL)]


@pytest.mark.requires_plain_import
def test_unpatching_a_lower_patch_keeps_the_upper_one(python):
    # labels and bare_names both wrap Module.__init__; removing the lower one must leave
    # exactly the upper one over MXNet's original.
    out = run(
        python,
        """
        import mxnet
        from mxnet.module import Module
        original = vars(Module)["__init__"]
        import mxcompat
        mxcompat.unpatch("bare_names")
        print(mxcompat.patched())
        assert chains()["mxnet.module.module:Module.__init__"] == ["labels"]
        assert vars(Module)["__init__"].__wrapped__ is original
        mxcompat.patch("bare_names")
        assert_each_once(mxcompat.patched())
        mxcompat.unpatch("labels")
        assert_each_once(mxcompat.patched())
        print(mxcompat.patched())
    """,
    )
    assert out == [
        repr(tuple(n for n in ALL if n != "bare_names")),
        repr(tuple(n for n in ALL if n != "labels")),
    ]


def test_threads_patch_concurrently_and_with_the_import(python):
    out = run(
        python,
        """
        import threading
        import mxcompat
        barrier = threading.Barrier(9)
        errors = []
        def churn(i):
            try:
                barrier.wait()
                for _ in range(20):
                    mxcompat.unpatch("labels") if i % 2 else mxcompat.patch()
                    mxcompat.patch()
            except Exception as e:
                errors.append(e)
        def importer():
            barrier.wait()
            import mxnet
        threads = [threading.Thread(target=churn, args=(i,)) for i in range(8)]
        threads.append(threading.Thread(target=importer))
        [t.start() for t in threads]
        [t.join(120) for t in threads]
        assert not any(t.is_alive() for t in threads), "a thread hung"
        mxcompat.patch()
        assert not errors, errors
        assert_each_once(mxcompat.patched())
        print(mxcompat.patched())
    """,
    )
    assert out == [repr(ALL)]


@pytest.mark.requires_plain_import
def test_patch_before_mxnet_is_deferred(python):
    out = run(
        python,
        """
        import mxcompat
        mxcompat.unpatch()
        mxcompat.patch("labels")
        print(mxcompat.patched())
        import mxnet
        print(mxcompat.patched())
    """,
    )
    assert out == ["()", "('labels',)"]


@pytest.mark.requires_plain_import
def test_env_disable_all(python):
    out = run(
        python,
        """
        import mxnet
        from mxnet.module import Module
        before = Module.bind
        import mxcompat
        print(mxcompat.patched(), Module.bind is before)
        mxcompat.patch("labels")  # an explicit call still works
        print(mxcompat.patched())
    """,
        env={"MXCOMPAT_DISABLE": "1"},
    )
    assert out == ["() True", "('labels',)"]


def test_env_disable_named(python):
    out = run(
        python,
        """
        import mxcompat, mxnet
        print(mxcompat.patched())
    """,
        env={"MXCOMPAT_DISABLE_PATCHES": "labels"},
    )
    assert out == [repr(tuple(n for n in ALL if n != "labels"))]


def test_env_disable_unknown_name_warns_once(python):
    proc = python(
        PRELUDE
        + textwrap.dedent("""
        import mxcompat, mxnet
        print(mxcompat.patched())
    """),
        env={"MXCOMPAT_DISABLE_PATCHES": "labels, nosuch"},
    )
    assert proc.stdout.strip() == repr(tuple(n for n in ALL if n != "labels"))
    assert proc.stderr.count("MXCompatWarning") == 1
    assert "MXCOMPAT_DISABLE_PATCHES names unknown patch(es) 'nosuch'" in proc.stderr


def test_unknown_name_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown patch name\\(s\\) 'label'; known patches: "):
        mxcompat.patch("label")
    with pytest.raises(ValueError, match="'nosuch'"):
        mxcompat.unpatch("nosuch")


def test_patched_lists_stacking_order():
    assert mxcompat.patched() == ALL
    mxcompat.unpatch("labels")
    assert "labels" not in mxcompat.patched()
    mxcompat.patch("labels")
    assert mxcompat.patched() == ALL


@pytest.mark.parametrize("version", ["2.0.0", "1.2.1", "nonsense"])
def test_unsupported_mxnet_version_warns_once_and_patches_nothing(python, tmpdir, version):
    # A stand-in package named mxnet: the gate only reads __version__, and this is the one
    # way to put a release outside the range on this machine.
    fake = tmpdir.mkdir("fake").mkdir("mxnet")
    fake.join("__init__.py").write("__version__ = %r\n" % version)
    proc = python(
        PRELUDE
        + textwrap.dedent(
            """
        import mxcompat
        import mxnet
        print(mxnet.__file__.startswith(%r), mxcompat.patched())
        mxcompat.patch()
        print(mxcompat.patched())
    """
            % str(tmpdir)
        ),
        env={"PYTHONPATH": str(tmpdir.join("fake"))},
    )
    assert proc.stdout.split() == ["True", "()", "()"]
    assert proc.stderr.count("MXCompatWarning") == 1
    assert (
        "mxcompat supports mxnet >=1.3, <2; the imported mxnet is %r, so nothing is patched"
        % version
    ) in proc.stderr


# --- never hurts: a failing patch, foreign wrappers, -O/-OO, one message per warning ---------


@pytest.mark.parametrize("how", ["missing target", "error in on_apply"])
def test_a_patch_that_cannot_be_applied_warns_once_and_the_rest_apply(python, how):
    # A target this build lacks (as some MXNet builds lack an attribute), or a bug of ours.
    break_it = {
        "missing target": """
            from mxcompat._core.registry import Target
            P._registry[labels.PATCH].targets.append(Target(
                "mxnet.module.module", "Module.no_such_method",
                wrapper=lambda w, i, a, k: w(*a, **k)))
        """,
        "error in on_apply": """
            def on_apply():
                raise ZeroDivisionError("a bug")
            P._registry[labels.PATCH].on_apply = on_apply
        """,
    }[how]
    out = run(
        python,
        textwrap.dedent("""
        import mxcompat
        import mxcompat._core.registry as P
        from mxcompat.patches import labels
    """)
        + textwrap.dedent(break_it)
        + textwrap.dedent("""
        ours = our_warnings(import_mxnet)
        print(len(ours))
        print(ours[0])
        print(mxcompat.patched())
        assert_each_once(mxcompat.patched())
        assert all("labels" not in stack for stack in chains().values())
        # Asked again (another patch() call): no second warning.
        print(len(our_warnings(mxcompat.patch)))
    """),
    )
    reason = {
        "missing target": "AttributeError: mxcompat: mxnet.module.module."
        "Module.no_such_method not found",
        "error in on_apply": "ZeroDivisionError: a bug",
    }[how]
    assert out[0] == "1", out
    assert out[1].startswith("mxcompat's patch 'labels' could not be applied to mxnet ")
    assert out[1].endswith("(%s), so it is off; the other patches are applied" % reason), out[1]
    assert out[2] == repr(tuple(n for n in ALL if n != "labels"))
    assert out[3] == "0"


def test_a_failing_pre_import_action_warns_and_mxnet_imports(python):
    out = run(
        python,
        """
        import mxcompat
        from mxcompat._core import hooks
        def boom(version):
            raise RuntimeError("broken pre-import step")
        hooks.register("labels", boom)
        ours = our_warnings(import_mxnet)
        print(len(ours))
        print(ours[0])
        print(mxcompat.patched())
    """,
    )
    assert out[0] == "1", out
    assert out[1] == (
        "mxcompat's patch 'labels' could not prepare mxnet's import (RuntimeError: "
        "broken pre-import step); mxnet may fail to import or misbehave where it "
        "needed it"
    )
    assert out[2] == repr(ALL)


def _top_of_reshape():
    """Module, the wrapper on top of Module.reshape and its patch (labels, or onednn_fc_bias
    where it applies: both wrap reshape)."""
    from mxnet.module import Module

    ours = vars(Module)["reshape"]
    return Module, ours, ours._self_mxcompat_patch


def test_a_wrapt_wrapper_over_ours_survives_unpatch():
    import wrapt

    Module, ours, name = _top_of_reshape()
    original = ours.__wrapped__
    calls = []

    def spy(wrapped, instance, args, kwargs):
        calls.append(args)
        return wrapped(*args, **kwargs)

    theirs = wrapt.wrap_function_wrapper(Module, "reshape", spy)
    try:
        mxcompat.unpatch(name)
        assert name not in mxcompat.patched()
        assert vars(Module)["reshape"] is theirs and theirs.__wrapped__ is original
        mxcompat.patch(name)
        top = vars(Module)["reshape"]
        assert top._self_mxcompat_patch == name and top.__wrapped__ is theirs
        sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
        mod = mx.mod.Module(sym, label_names=None)
        mod.bind(data_shapes=[("data", (2, 3))])
        mod.reshape(data_shapes=[("data", (4, 3))])
        assert len(calls) == 1 and mod.data_shapes[0].shape == (4, 3)
    finally:
        mxcompat.unpatch(name)
        Module.reshape = original
        mxcompat.patch()
    assert vars(Module)["reshape"].__wrapped__ is original


@pytest.mark.skipif(
    "numpy2" not in applicable_patches(),
    reason="the numpy2 patch applies on NumPy 2 only (this is NumPy %s)"
    % __import__("numpy").__version__,
)
def test_a_wrapt_wrapper_over_numpy2s_function_stand_in_survives_unpatch():
    # numpy2 stands in for _imperative_invoke with a plain function (not a wrapt proxy):
    # removing it from beneath a tracer's wrapper must work as for a proxy.
    import numpy as np
    import wrapt
    from mxnet.ndarray import register

    ours = vars(register)["_imperative_invoke"]
    assert ours._self_mxcompat_patch == "numpy2" and not isinstance(ours, wrapt.ObjectProxy)
    original = ours.__wrapped__
    calls = []

    def spy(wrapped, instance, args, kwargs):
        calls.append(1)
        return wrapped(*args, **kwargs)

    theirs = wrapt.wrap_function_wrapper(register, "_imperative_invoke", spy)
    try:
        mxcompat.unpatch("numpy2")
        assert "numpy2" not in mxcompat.patched()
        assert vars(register)["_imperative_invoke"] is theirs and theirs.__wrapped__ is original
        mxcompat.patch("numpy2")
        top = vars(register)["_imperative_invoke"]
        assert top._self_mxcompat_patch == "numpy2" and top.__wrapped__ is theirs
        # NEP 51: a NumPy integer in a shape works again through both wrappers.
        x = mx.nd.zeros((2, 3))
        del calls[:]
        out = mx.nd.reshape(x, shape=(np.int64(3), np.int64(2)))
        assert out.shape == (3, 2) and len(calls) == 1
    finally:
        mxcompat.unpatch("numpy2")
        register._imperative_invoke = original
        mxcompat.patch()
    assert vars(register)["_imperative_invoke"].__wrapped__ is original


def test_unpatch_refuses_when_a_plain_wrapper_holds_ours():
    import functools
    import warnings

    Module, ours, name = _top_of_reshape()
    original = ours.__wrapped__

    @functools.wraps(ours)
    def theirs(self, *args, **kwargs):
        return ours(self, *args, **kwargs)

    Module.reshape = theirs
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mxcompat.unpatch(name)
            mxcompat.unpatch(name)
        ours_warnings = [str(w.message) for w in caught if w.category is mxcompat.MXCompatWarning]
        assert len(ours_warnings) == 1, ours_warnings
        assert ours_warnings[0].startswith(
            "mxcompat cannot remove its patch %r: other code has wrapped over what patch "
            "%r wraps (with <function Module.reshape" % (name, name)
        )
        assert ours_warnings[0].endswith("so patch %r stays applied" % name)
        assert name in mxcompat.patched() and vars(Module)["reshape"] is theirs
    finally:
        Module.reshape = ours
        mxcompat.unpatch(name)
        assert vars(Module)["reshape"] is original
        mxcompat.patch()


def test_a_plain_replacement_is_left_alone_by_unpatch():
    Module, ours, name = _top_of_reshape()
    original = ours.__wrapped__

    def replacement(self, *args, **kwargs):
        return original(self, *args, **kwargs)

    Module.reshape = replacement
    try:
        mxcompat.unpatch(name)
        assert name not in mxcompat.patched() and vars(Module)["reshape"] is replacement
    finally:
        Module.reshape = original
        mxcompat.patch()


@pytest.mark.parametrize("flag", ["-O", "-OO"])
def test_import_under_optimize_flags(flag):
    # -OO strips docstrings: nothing of mxcompat may depend on __doc__.
    import subprocess
    import sys

    from tests.support.processes import subprocess_env

    # patch_names() loads every patch module, as `import mxnet` would.
    code = (
        "import mxcompat; from mxcompat._core import registry as P; mxcompat.patch_names(); "
        "print(all(p.doc for p in P._registry.values()), len(P._registry))"
    )
    proc = subprocess.run(
        [sys.executable, flag, "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", str(len(mxcompat.patch_names()))]
    proc = subprocess.run(
        [sys.executable, flag, "-c", "import mxcompat, mxnet; print(mxcompat.patched())"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    # Under -OO the python_oo patch (MXNet's own import needs it) applies as well.
    assert proc.stdout.strip() == repr(ALL + (("python_oo",) if flag == "-OO" else ()))


def test_one_message_per_warning_under_logging_basic_config(python):
    code = """
        import logging, sys, warnings
        logging.basicConfig(level=logging.INFO)
        import mxcompat, mxnet as mx
        if sys.argv[-1] == "ignore":
            warnings.filterwarnings("ignore", category=mxcompat.MXCompatWarning)
        sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
        mx.mod.Module(sym, data_names="data", label_names=None)
    """
    import subprocess
    import sys

    from tests.support.processes import subprocess_env

    for mode, want in (("default", 1), ("ignore", 0)):
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), mode],
            capture_output=True,
            text=True,
            env=subprocess_env(),
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if "'data'" in ln and "one name" in ln]
        assert len(lines) == want, (mode, proc.stderr)
        if want:
            # Attributed to the user's line (the Module(...) call), not to mxcompat or mxnet.
            # (Python 3.7 names a -c program "-c", later ones "<string>".)
            assert re.match(r"(<string>|-c):8: MXCompatWarning: ", lines[0]), lines[0]


def test_warning_points_at_the_callers_line():
    import warnings

    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1  # the next line's number
        mx.mod.Module(sym, data_names="data", label_names=None)
    ours = [w for w in caught if w.category is mxcompat.MXCompatWarning]
    assert len(ours) == 1
    assert (ours[0].filename, ours[0].lineno) == (__file__, line)


def test_unpatch_restores_exact_originals_with_mxcompat_imported_first(python):
    # The order that works everywhere, NumPy 2 / Python 3.12+ included, where numpy_names,
    # numpy2 and distutils apply: MXNet's own objects are found beneath our wrappers.
    out = run(
        python,
        """
        import numpy, types
        def plain(module):   # submodules imported meanwhile (numpy.random…) are not ours
            return {k: v for k, v in vars(module).items()
                    if not isinstance(v, types.ModuleType)}
        numpy_before = plain(numpy)
        import mxcompat
        import mxnet
        from mxcompat._core import registry as P
        from mxcompat.patches import numpy_names
        expected = {}
        for name, records in P._active.items():      # lowest patch first
            for parent, attr, owned, original, installed in records:
                if (parent, attr) in expected:
                    continue
                obj = vars(parent)[attr]
                while hasattr(obj, "_self_mxcompat_patch"):   # down our stack to MXNet's own
                    obj = obj.__wrapped__
                # (an attribute mxcompat added, or one inherited, must be gone)
                expected[(parent, attr)] = obj if owned else None
        added = set(numpy_names.added())
        print(sorted(mxcompat.patched()) == sorted(P._active))
        mxcompat.unpatch()
        print(mxcompat.patched())
        for (parent, attr), original in expected.items():
            assert vars(parent).get(attr) is original, (parent, attr)
        assert not any(hasattr(getattr(p, a, None), "_self_mxcompat_patch")
                       for (p, a) in expected), "a wrapper of ours is left"
        after = plain(numpy)
        assert after.keys() == numpy_before.keys(), set(after) ^ set(numpy_before)
        assert all(after[k] is numpy_before[k] for k in after)
        assert not added & set(vars(numpy))
        assert not any(getattr(f, "_mxcompat_distutils", False) for f in sys.meta_path)
        mxcompat.patch()
        assert_each_once(mxcompat.patched())
        print(mxcompat.patched())
    """,
    )
    assert out == ["True", "()", repr(ALL)]


def test_declared_wrapt_floor():
    import os

    import wrapt

    root = ROOT
    with open(os.path.join(root, "pyproject.toml")) as f:
        floor = re.search(r'"wrapt>=([0-9.]+)"', f.read()).group(1)
    installed = facts.parse_version(wrapt.__version__)[:2]
    assert installed >= facts.parse_version(floor)[:2]
    # The tox env that pins the floor (py312-mxnet191-numpy126-wrapt114) says so.
    expected = os.environ.get("EXPECT_WRAPT")
    if expected is not None:
        assert wrapt.__version__ == expected and expected.startswith(floor + ".")


def test_a_wrapt_wrapper_over_an_added_attribute_keeps_it():
    import wrapt
    from mxnet.module import Module

    added = vars(Module)["to_gluon"]
    theirs = wrapt.wrap_function_wrapper(
        Module, "to_gluon", lambda wrapped, instance, args, kwargs: "theirs"
    )
    try:
        mxcompat.unpatch("convert")
        # Ours was an added attribute: nothing of MXNet's lies beneath to splice to.
        assert "convert" not in mxcompat.patched()
        assert vars(Module)["to_gluon"] is theirs and theirs.__wrapped__ is added
    finally:
        del Module.to_gluon
        mxcompat.patch()
    assert vars(Module)["to_gluon"] is added


# --- SharedScope: one change while any thread needs it --------------------------------------------


def _counting_scope(fail_first=False):
    from mxcompat._core.scope import SharedScope

    log = []

    def install():
        if fail_first and not log:
            log.append("failed")
            raise RuntimeError("install failed")
        log.append("install")
        return lambda: log.append("undo")

    return SharedScope(install), log


def test_shared_scope_installs_on_first_entry_and_undoes_on_last_exit_out_of_order():
    import threading

    scope, log = _counting_scope()
    first_in, second_in, first_may_leave = (threading.Event() for _ in range(3))

    def first():
        with scope:
            first_in.set()
            second_in.wait(10)
            first_may_leave.wait(10)
        # The second thread is still inside: nothing undone yet.
        assert log == ["install"]

    def second():
        first_in.wait(10)
        with scope:
            second_in.set()
            first_may_leave.set()
            thread.join(10)  # the first leaves while this one is inside
            assert log == ["install"]

    thread = threading.Thread(target=first)
    thread.start()
    second()
    assert not thread.is_alive()
    assert log == ["install", "undo"]
    with scope:  # and again from scratch
        with scope:
            pass
    assert log == ["install", "undo", "install", "undo"]


def test_shared_scope_install_that_fails_counts_nobody_in():
    scope, log = _counting_scope(fail_first=True)
    with pytest.raises(RuntimeError, match="install failed"):
        with scope:
            pass
    with scope:
        pass
    assert log == ["failed", "install", "undo"]


def test_shared_scope_many_threads():
    import threading

    scope, log = _counting_scope()
    barrier = threading.Barrier(8)

    def run():
        barrier.wait(10)
        for _ in range(200):
            with scope:
                pass

    assert run_threads(run, 8, 60) == []
    # Every install was undone, in turn: never two in place at once.
    half = len(log) // 2
    assert log and log[::2] == ["install"] * half and log[1::2] == ["undo"] * half
