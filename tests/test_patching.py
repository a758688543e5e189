"""The patch lifecycle, each permutation in a fresh interpreter (ddtrace's patch test style)."""
import textwrap

import pytest

import mxcompat

# Prepended to each subprocess: a map of every patched attribute to the mxcompat wrappers
# stacked on it, outermost first.
PRELUDE = """
import sys, warnings
warnings.simplefilter("always")

def chains():
    import mxcompat._patching as P
    out = {}
    for name, p in P._registry.items():
        for t in p.targets:
            resolved = P._resolve(t)
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
    import mxcompat._patching as P
    out = {}
    for p in P._registry.values():
        for t in p.targets:
            resolved = P._resolve(t)
            if resolved is not None:
                out[t.module + ":" + t.path] = vars(resolved[0]).get(resolved[1])
    return out

def assert_each_once(active):
    import mxcompat._patching as P
    for name, p in P._registry.items():
        for t in p.targets:
            if t.module + ":" + t.path not in chains():
                continue
            stack = chains()[t.module + ":" + t.path]
            want = [n for n in reversed(list(P._registry)) if n in active
                    and any(x.module == t.module and x.path == t.path
                            for x in P._registry[n].targets)]
            assert stack == want, (t.path, stack, want)
"""

from conftest import applicable_patches  # noqa: E402

ALL = applicable_patches()


def run(python, body, env=None):
    proc = python(PRELUDE + textwrap.dedent(body), env=env)
    return proc.stdout.strip().splitlines()


def test_import_does_not_import_mxnet_or_numpy(python):
    out = run(python, """
        import mxcompat
        print(sorted(m for m in ("mxnet", "numpy") if m in sys.modules))
        print(mxcompat.patched())
    """)
    assert out == ["[]", "()"]


def test_mxcompat_before_mxnet(python):
    out = run(python, """
        import mxcompat
        import mxnet
        print(mxcompat.patched())
        assert_each_once(mxcompat.patched())
        print("ok")
    """)
    assert out == [repr(ALL), "ok"]


@pytest.mark.requires_plain_import
def test_mxnet_before_mxcompat(python):
    out = run(python, """
        import mxnet
        import mxcompat
        print(mxcompat.patched())
        assert_each_once(mxcompat.patched())
        print("ok")
    """)
    assert out == [repr(ALL), "ok"]


def test_double_import_reload_and_patch_twice_wrap_once(python):
    out = run(python, """
        import importlib
        import mxcompat
        import mxnet
        import mxcompat as again
        importlib.reload(mxcompat)
        mxcompat.patch()
        mxcompat.patch("labels")
        assert_each_once(mxcompat.patched())
        print(mxcompat.patched())
    """)
    assert out == [repr(ALL)]


@pytest.mark.requires_plain_import
def test_unpatch_restores_exact_originals_and_repatch(python):
    out = run(python, """
        import mxnet
        from mxnet.module import Module, BucketingModule
        before_bind, before_init = Module.bind, vars(Module)["__init__"]
        import mxcompat._patching as P
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
    """)
    assert out == ["()", repr(ALL)]


@pytest.mark.requires_plain_import
def test_unpatching_a_lower_patch_keeps_the_upper_one(python):
    # labels and bare_names both wrap Module.__init__; removing the lower one must leave
    # exactly the upper one over MXNet's original.
    out = run(python, """
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
    """)
    assert out == [repr(tuple(n for n in ALL if n != "bare_names")),
                   repr(tuple(n for n in ALL if n != "labels"))]


def test_threads_patch_concurrently_and_with_the_import(python):
    out = run(python, """
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
        mxcompat.patch()
        assert not errors, errors
        assert_each_once(mxcompat.patched())
        print(mxcompat.patched())
    """)
    assert out == [repr(ALL)]


@pytest.mark.requires_plain_import
def test_patch_before_mxnet_is_deferred(python):
    out = run(python, """
        import mxcompat
        mxcompat.unpatch()
        mxcompat.patch("labels")
        print(mxcompat.patched())
        import mxnet
        print(mxcompat.patched())
    """)
    assert out == ["()", "('labels',)"]


@pytest.mark.requires_plain_import
def test_env_disable_all(python):
    out = run(python, """
        import mxnet
        from mxnet.module import Module
        before = Module.bind
        import mxcompat
        print(mxcompat.patched(), Module.bind is before)
        mxcompat.patch("labels")  # an explicit call still works
        print(mxcompat.patched())
    """, env={"MXCOMPAT_DISABLE": "1"})
    assert out == ["() True", "('labels',)"]


def test_env_disable_named(python):
    out = run(python, """
        import mxcompat, mxnet
        print(mxcompat.patched())
    """, env={"MXCOMPAT_DISABLE_PATCHES": "labels"})
    assert out == [repr(tuple(n for n in ALL if n != "labels"))]


def test_env_disable_unknown_name_warns_once(python):
    proc = python(PRELUDE + textwrap.dedent("""
        import mxcompat, mxnet
        print(mxcompat.patched())
    """), env={"MXCOMPAT_DISABLE_PATCHES": "labels, nosuch"})
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
    proc = python(PRELUDE + textwrap.dedent("""
        import mxcompat
        import mxnet
        print(mxnet.__file__.startswith(%r), mxcompat.patched())
        mxcompat.patch()
        print(mxcompat.patched())
    """ % str(tmpdir)), env={"PYTHONPATH": str(tmpdir.join("fake"))})
    assert proc.stdout.split() == ["True", "()", "()"]
    assert proc.stderr.count("MXCompatWarning") == 1
    assert ("mxcompat supports mxnet >=1.3, <2; the imported mxnet is %r, so nothing is patched"
            % version) in proc.stderr
