"""The ``operator_cache`` patch: the functions MXNet generates for its operators, built from
the cache, equal MXNet's own one by one; a cache in doubt is never used, never crashes.

Every test runs fresh interpreters with a cache folder of its own
(``MXCOMPAT_OPERATOR_CACHE``)."""

import ctypes
import json
import marshal
import os
import shutil
import stat
import subprocess
import sys
import time

import mxnet as mx
import pytest

import mxcompat
from mxcompat._core import elf
from mxcompat.patches import operator_cache
from mxcompat.patches.operator_cache import store
from tests.support.processes import subprocess_env
from tests.support.repo import ROOT

LIBRARY = os.path.realpath(mx.base._LIB._name)
# What a fresh process reports: the patch's own count of what it served and made.
REPORT = (
    "import json, mxcompat, mxnet\n"
    "from mxcompat.patches import operator_cache\n"
    "print(json.dumps(operator_cache.last_import()))\n"
)


# The length of the operators' handles is in their code, and each length has its cache file:
# where it varies from one process to the next (a Python built without PIE, e.g. Debian's), a
# test that needs the file it prepared, or code comparable with another process's, starts the
# process again until one fits.
# Debian's Python 3.14: 9 digits 13 times in 16, 10 twice, 8 once; a reference process of the
# rarest length is matched within 120 tries but for 1 time in 2,000 (40 failed 1 in 13).
TRIES = 120


def python(args, cache, env=None, flags=(), same_as=None, file_of=lambda out: out.get("file")):
    """The JSON a fresh process prints last; with ``same_as`` (a cache file), the first of
    up to TRIES processes whose cache file (``file_of(output)``) is that one."""
    return _until(args, cache, env, flags, lambda out: same_as in (None, file_of(out)))


def _until(args, cache, env, flags, fits):
    for _ in range(TRIES):
        out = _python(args, cache, env, flags)
        if fits(out):
            return out
    pytest.fail("no process of %d fit" % TRIES)


def _python(args, cache, env, flags):
    proc = subprocess.run(
        [sys.executable] + list(flags) + list(args),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=subprocess_env(dict({"MXCOMPAT_OPERATOR_CACHE": str(cache)}, **(env or {}))),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "MXCompatWarning" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def functions(cache, env=None, flags=(), same_as=None, like=None):
    """Every generated function of a fresh process, described (tests/support/...); with
    ``same_as``, of one that read that cache file, with ``like``, of one whose handles have
    the lengths of ``like``'s (another process's output)."""
    args = ["-m", "tests.support.operator_functions"]

    def fits(out):
        return same_as in (None, out["cache"].get("file")) and (
            like is None or out["lengths"] == like["lengths"]
        )

    return _until(args, cache, env, flags, fits)


def cold_functions(tmp_path, like, flags=()):
    """``functions`` of a first import (an empty cache folder of its own, under ``tmp_path``)
    whose handles have the lengths of ``like``'s: the folder and the output."""
    for attempt in range(TRIES):
        folder = tmp_path / ("cold-%d" % attempt)
        folder.mkdir(mode=0o700)
        out = functions(folder, flags=flags)
        if out["lengths"] == like["lengths"]:
            return folder, out
    pytest.fail("no process of %d fit" % TRIES)


def report(cache, env=None, flags=(), same_as=None):
    return python(["-c", REPORT], cache, env, flags, same_as)


def assert_same(mine, theirs):
    assert sorted(mine["functions"]) == sorted(theirs["functions"])
    differ = [k for k in theirs["functions"] if mine["functions"][k] != theirs["functions"][k]]
    assert differ == []
    assert mine["all"] == theirs["all"]


def reference(cache, flags=()):
    """``functions`` of an import with the patch off, one whose handles all have one length
    (the other processes compared with it must have the same lengths: see TRIES)."""
    off = {"MXCOMPAT_DISABLE_PATCHES": "operator_cache"}
    return _until(
        ["-m", "tests.support.operator_functions"],
        cache,
        off,
        flags,
        lambda out: len(out["digits"]) == 1,
    )


@pytest.fixture(scope="module")
def mxnets_own(tmp_path_factory):
    """The functions of an import with the patch off."""
    cache = tmp_path_factory.mktemp("off")
    own = reference(cache)
    assert own["cache"] == {} and os.listdir(str(cache)) == []
    # Every operator has its function (MXNet 1.3.1 makes the fewest: about 1,900).
    assert len(own["functions"]) > 1500
    return own


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A cache folder filled by imports, and the report of the first whose file the most of
    three read (the commonest length of handles: see TRIES)."""
    cache = tmp_path_factory.mktemp("warm")
    reports = [report(cache) for _ in range(3)]
    files = [r["file"] for r in reports]
    common = max(files, key=files.count)
    return cache, next(r for r in reports if r["file"] == common)


def test_cold_and_warm_functions_equal_mxnets_own_one_by_one(mxnets_own, tmp_path):
    folder, cold = cold_functions(tmp_path, mxnets_own)
    assert_same(cold, mxnets_own)
    made, served = cold["cache"]["made"], cold["cache"]["served"]
    # Cold: every function made from MXNet's source; those MXNet makes twice (the old
    # mx.nd.contrib / mx.sym.contrib names) come from the first one.
    assert made > 1000 and 0 < served < made
    path = cold["cache"]["file"]
    assert os.path.dirname(path) == str(folder)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700

    warm = functions(folder, same_as=path, like=mxnets_own)
    assert_same(warm, mxnets_own)
    assert warm["cache"] == {"served": made + served, "made": 0, "file": path}  # nothing written


@pytest.mark.skipif(sys.flags.optimize, reason="the test runs its own -OO processes")
def test_under_OO_too(mxnets_own, tmp_path):
    # -OO strips the docstring from the compiled code (not the __doc__ MXNet sets): its own
    # cache file, and the functions still MXNet's.
    off = reference(tmp_path, ["-OO"])
    folder, cold = cold_functions(tmp_path, off, ["-OO"])
    assert cold["cache"]["made"] > 1000
    assert_same(cold, off)
    warm = functions(folder, flags=["-OO"], same_as=cold["cache"]["file"], like=off)
    assert warm["cache"]["made"] == 0
    assert_same(warm, off)
    assert off["all"] == mxnets_own["all"]
    # Without python_oo MXNet fails under -OO as it ships: the file does not hide that.
    proc = subprocess.run(
        [sys.executable, "-OO", "-c", REPORT],
        capture_output=True,
        text=True,
        env=subprocess_env(
            {"MXCOMPAT_OPERATOR_CACHE": str(folder), "MXCOMPAT_DISABLE_PATCHES": "python_oo"}
        ),
        timeout=300,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "TypeError: sequence item 0: expected str instance, NoneType found"
    )


def test_operators_compute_from_the_cache(warm, tmp_path):
    path, total = _copy_warm(warm, tmp_path)
    program = """
        import json, mxcompat, mxnet as mx
        from mxcompat.patches import operator_cache
        x = mx.nd.array([[-1.0, 2.0, -3.0]])
        out = {"relu": mx.nd.relu(x).asnumpy().tolist(),
               "fc": mx.nd.FullyConnected(x, mx.nd.ones((2, 3)), mx.nd.array([0.5, 1.0]),
                                          num_hidden=2).asnumpy().tolist()}
        s = mx.sym.Activation(mx.sym.var("a"), act_type="relu") * 2
        out["sym"] = s.eval(a=x)[0].asnumpy().tolist()
        out["contrib"] = mx.nd.contrib.div_sqrt_dim(mx.nd.ones((1, 4))).asnumpy().tolist()
        if hasattr(mx, "np"):
            out["np"] = mx.np.add(mx.np.array([1.0, 2.0]), 1).asnumpy().tolist()
        out["cache"] = operator_cache.last_import()
        print(json.dumps(out))
    """
    import textwrap

    program = textwrap.dedent(program)
    out = python(["-c", program], tmp_path / "cache", same_as=path, file_of=_cache_of)
    assert out.pop("cache") == {"served": total, "made": 0, "file": path}
    assert out.pop("relu") == [[0.0, 2.0, 0.0]]
    assert out.pop("fc") == [[-1.5, -1.0]]
    assert out.pop("sym") == [[0.0, 4.0, 0.0]]
    assert out.pop("contrib") == [[0.5, 0.5, 0.5, 0.5]]
    assert out.pop("np", [2.0, 3.0]) == [2.0, 3.0]
    assert out == {}


def _cache_of(out):
    return out["cache"].get("file")


def test_mxnets_own_functions_are_back_after_the_import(warm, tmp_path):
    program = """
        import json, sys, types, mxcompat, mxnet
        own = {}
        for attr in ("_init_op_module", "_init_np_op_module"):
            original = getattr(mxnet.base, attr, None)
            if original is None:
                continue
            holders = sorted(n for n, m in sys.modules.items()
                             if n.startswith("mxnet") and attr in vars(m))
            own[attr] = [type(original) is types.FunctionType
                         and original.__module__ == "mxnet.base",
                         all(vars(sys.modules[n])[attr] is original for n in holders),
                         len(holders)]
        from mxnet.ndarray import register as nd
        from mxnet.symbol import register as sym
        own["generators"] = [type(f) is types.FunctionType and f.__module__ == m.__name__
                             for m, f in ((nd, nd._generate_ndarray_function_code),
                                          (sym, sym._generate_symbol_function_code))]
        own["patched"] = "operator_cache" in mxcompat.patched()
        mxcompat.unpatch("operator_cache")
        own["unpatched"] = "operator_cache" not in mxcompat.patched()
        own["works"] = float(mxnet.nd.ones((2,)).sum().asscalar()) == 2.0
        print(json.dumps(own))
    """
    import textwrap

    _copy_warm(warm, tmp_path)
    out = python(["-c", textwrap.dedent(program)], tmp_path / "cache")
    assert out.pop("generators") == [True, True]
    assert out.pop("patched") and out.pop("unpatched") and out.pop("works")
    init = out.pop("_init_op_module")
    # base, ndarray.register, symbol.register (and library.py from 1.7).
    assert init[:2] == [True, True] and init[2] >= 3
    if out:
        np_init = out.pop("_init_np_op_module")
        assert np_init[:2] == [True, True] and np_init[2] >= 6
    assert out == {}


def test_a_failure_of_its_own_leaves_mxnet_its_own_way(warm, tmp_path):
    # A bug of ours while serving: one warning, and MXNet makes every function itself.
    path, total = _copy_warm(warm, tmp_path)
    program = (
        "import json, mxcompat\n"
        "from mxcompat.patches import operator_cache\n"
        "def broken(*args):\n"
        "    raise RuntimeError('a bug')\n"
        "operator_cache._usable = broken\n"
        "import mxnet as mx\n"
        "print(json.dumps([operator_cache.last_import(), mx.nd.relu(mx.nd.array([-1, 1]))"
        ".asnumpy().tolist()]))\n"
    )
    for _ in range(TRIES):  # until a process reads the file (see TRIES)
        proc = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            env=subprocess_env({"MXCOMPAT_OPERATOR_CACHE": str(tmp_path / "cache")}),
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        cache, relu = json.loads(proc.stdout.splitlines()[-1])
        if cache["file"] == path:
            break
    assert cache["file"] == path
    assert relu == [0.0, 1.0]
    # Those MXNet makes twice in one import still come from the first (no handle to change).
    assert cache["made"] > 1000 and cache["made"] + cache["served"] == total
    assert proc.stderr.count("MXCompatWarning") == 1
    assert "operator cache failed (RuntimeError: a bug)" in proc.stderr


def test_switched_off_like_any_patch(tmp_path):
    out = report(tmp_path, {"MXCOMPAT_DISABLE_PATCHES": "operator_cache"})
    assert out == {}
    assert os.listdir(str(tmp_path)) == []


def _copy_warm(warm, tmp_path):
    """A copy of the warm file in a folder ``tmp_path/"cache"`` of its own: the copy's path,
    and how many functions an import makes."""
    _, first = warm
    os.mkdir(str(tmp_path / "cache"), 0o700)
    path = str(tmp_path / "cache" / os.path.basename(first["file"]))
    shutil.copy2(first["file"], path)
    return path, first["served"] + first["made"]


def _rewrite(path, change):
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(change(data))


def _layout(data):
    """Where the library, the key, the CRC and the payload begin in a cache file's bytes."""
    library = len(store.MAGIC)
    key = store._field(data, library)[1]
    crc = store._field(data, key)[1]
    return library, key, crc, crc + store._CRC.size


def _flip(data, at):
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]


def _entries(path):
    """The library, the key and the entries of the cache file at ``path``, as stored."""
    with open(path, "rb") as f:
        data = f.read()
    library, key, _, body = _layout(data)
    return store._field(data, library)[0], store._field(data, key)[0], marshal.loads(data[body:])


def assert_written_anew(path, stored):
    # The same functions again, with this process's handles (of the same lengths as a rule:
    # where one straddles a power of ten, that operator's entry is another).
    library, key, entries = stored
    assert sorted(set(k[:3] for k in store.read(path, library, key))) == sorted(
        set(k[:3] for k in entries)
    )


DAMAGE = {
    "empty": lambda data: b"",
    "truncated": lambda data: data[: len(data) // 2],
    "not ours": lambda data: b"\x7fELF" + data[4:],
    "another format": lambda data: store._FORMAT + b"0" + data[len(store.MAGIC) - 1 :],
    "a byte of the library": lambda data: _flip(data, _layout(data)[0] + 6),
    "a byte of the key": lambda data: _flip(data, _layout(data)[1] + 6),
    "a byte of the CRC": lambda data: _flip(data, _layout(data)[2] + 1),
    "a byte of the code": lambda data: _flip(data, len(data) * 2 // 3),
    "a longer library length": lambda data: (
        data[: len(store.MAGIC)] + store._LENGTH.pack(len(data)) + data[_layout(data)[0] + 4 :]
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_file_is_never_used_and_written_anew(warm, tmp_path, damage):
    path, total = _copy_warm(warm, tmp_path)
    stored = _entries(path)
    _rewrite(path, DAMAGE[damage])
    out = report(tmp_path / "cache", same_as=path)
    # MXNet's own path for every function, then a good file again.
    assert out["made"] > 1000 and out["made"] + out["served"] == total
    assert_written_anew(path, stored)


STRANGE = {
    # Each keeps the CRC right (written through store.write), the form wrong.
    "not a dict": lambda entries: list(entries.items()),
    "a value of another shape": lambda entries: {k: v[:3] for k, v in entries.items()},
    "another function's code": lambda entries: dict(
        (k, (entries[other][0],) + v[1:])
        for (k, v), other in zip(entries.items(), list(entries)[1:])
    ),
    "the handle elsewhere": lambda entries: {
        k: v[:3] + ((v[3][0], v[3][1] + 1),) for k, v in entries.items()
    },
    "a handle that is not there": lambda entries: {
        k: v[:2] + (v[2] + 8,) + v[3:] for k, v in entries.items()
    },
    "a docstring that is not a str": lambda entries: {
        k: (v[0], None) + v[2:] for k, v in entries.items()
    },
}


@pytest.mark.parametrize("strange", sorted(STRANGE))
def test_entries_of_another_form_are_made_anew(warm, tmp_path, strange):
    path, total = _copy_warm(warm, tmp_path)
    library, key, entries = stored = _entries(path)
    store.write(path, library, key, STRANGE[strange](entries))
    out = report(tmp_path / "cache", same_as=path)
    assert out["made"] > 1000 and out["made"] + out["served"] == total
    assert_written_anew(path, stored)


@pytest.mark.parametrize("other", ["library", "key"])
def test_another_library_or_key_is_not_read(warm, tmp_path, other):
    # The key holds the library, MXNet, MXNet's generating files, Python, mxcompat and the
    # operator list: any of them otherwise, and the stored code is not used.
    path, total = _copy_warm(warm, tmp_path)
    library, key, entries = stored = _entries(path)
    assert library == os.fsencode(LIBRARY) and b"('mxcompat', '" in key
    if other == "library":
        library = os.fsencode(os.path.dirname(LIBRARY))  # exists: kept by the prune
    else:
        key = key.replace(b"('mxcompat', '", b"('mxcompat', 'other ")
    store.write(path, library, key, entries)
    assert report(tmp_path / "cache", same_as=path)["made"] > 1000
    assert_written_anew(path, stored)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file owners are POSIX")
def test_a_file_or_folder_others_may_write_is_not_read(warm, tmp_path):
    path, total = _copy_warm(warm, tmp_path)
    stored = _entries(path)
    folder = os.path.dirname(path)
    before = os.stat(path).st_mtime_ns
    os.chmod(folder, 0o770)
    # Not read, not written into.
    assert report(tmp_path / "cache")["made"] > 1000
    assert os.stat(path).st_mtime_ns == before and os.listdir(folder) == [os.path.basename(path)]
    os.chmod(folder, 0o700)
    os.chmod(path, 0o622)
    out = report(tmp_path / "cache", same_as=path)
    assert out["made"] > 1000 and out["made"] + out["served"] == total
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # written anew, the user's alone
    assert_written_anew(path, stored)


def test_a_symbolic_link_is_not_followed(warm, tmp_path):
    path, total = _copy_warm(warm, tmp_path)
    elsewhere = str(tmp_path / "elsewhere.bin")  # outside the cache folder
    os.rename(path, elsewhere)
    os.symlink(elsewhere, path)
    assert report(tmp_path / "cache", same_as=path)["made"] > 1000
    assert not os.path.islink(path)  # replaced by a file of its own


def test_a_write_removes_the_files_of_libraries_that_are_gone(warm, tmp_path):
    path, total = _copy_warm(warm, tmp_path)
    folder = os.path.dirname(path)
    library, key, entries = _entries(path)
    # A deleted environment's file, another program's file, a killed writer's temporary file
    # (an hour old) and one being written now.
    gone = os.path.join(folder, "libmxnet-0123456789abcdef.bin")
    store.write(gone, os.fsencode(str(tmp_path / "deleted" / "libmxnet.so")), key, {})
    for name, age in (("notes.bin", 0), (".writing-killed", 7200), (".writing-now", 0)):
        with open(os.path.join(folder, name), "w") as f:
            f.write("not a cache file")
        os.utime(os.path.join(folder, name), (time.time() - age,) * 2)
    os.unlink(path)
    out = report(tmp_path / "cache")
    assert out["made"] > 1000  # and written
    assert os.path.dirname(out["file"]) == folder
    kept = [".writing-now", "notes.bin", os.path.basename(out["file"])]
    assert sorted(os.listdir(folder)) == sorted(kept)


def test_an_unwritable_cache_only_costs_time(tmp_path):
    # A file where the folder would go (permissions do not stop root).
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    assert report(blocker / "cache")["made"] > 1000


def test_processes_that_fill_the_cache_at_once(tmp_path):
    env = subprocess_env({"MXCOMPAT_OPERATOR_CACHE": str(tmp_path)})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", REPORT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for _ in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out.decode().splitlines()[-1])["made"] > 1000
    # One file per length of the handles met (one as a rule), no temporary one left.
    names = os.listdir(str(tmp_path))
    assert 1 <= len(names) <= 4 and not [n for n in names if n.startswith(".")]
    for name in names:
        path = os.path.join(str(tmp_path), name)
        assert_written_anew(path, _entries(path))


class _Handle(ctypes.c_void_p):
    """An operator's handle whose ``value`` (the number MXNet writes into the code) is
    ``number``: MXNet reads the operator through the real pointer all the same."""

    number = None

    @property
    def value(self):
        return self.number


def _mxnets_code(operator, number):
    """The code MXNet's generator writes for ``operator`` with a handle of value ``number``,
    compiled as the patch compiles it (as MXNet's ``exec`` does)."""
    from mxnet.ndarray import register

    real = mx.base.OpHandle()
    mx.base.check_call(mx.base._LIB.NNGetOpHandle(mx.base.c_str(operator), ctypes.byref(real)))
    handle = _Handle(real.value)
    handle.number = number
    source, _ = register._generate_ndarray_function_code(handle, operator, operator)
    flags = register._make_ndarray_function.__code__.co_flags & operator_cache._FUTURE_FLAGS
    return compile(source, "<string>", "exec", flags, True)


def _positions(code):
    nested = [c for c in code.co_consts if isinstance(c, type(code))]
    return [list(getattr(c, "co_positions", lambda: [])()) for c in [code] + nested]


@pytest.mark.parametrize("operator", ["Activation", "FullyConnected", "add_n"])
def test_the_code_served_is_mxnets_for_the_handle_it_serves(operator):
    # The cache keeps the code of one process's handle and serves it to another's: it must
    # be the code MXNet writes for that handle, value and columns (Python 3.11+ keeps the
    # column of every token after the number on its line, so its length counts).
    stored, number = _mxnets_code(operator, 94000000000011), 94000000000011
    place = operator_cache._place(stored, number)
    for other in (94999999999987, 10000000000003):  # as many digits
        served = operator_cache._rebind(stored, place, other)
        theirs = _mxnets_code(operator, other)
        assert served == theirs and _positions(served) == _positions(theirs)
        key = operator_cache._entry_key("s", operator, operator, other)
        assert key == operator_cache._entry_key("s", operator, operator, number)
    longer = 140000000000017  # a digit more: another entry
    served = operator_cache._rebind(stored, place, longer)
    if sys.version_info >= (3, 11):
        assert _positions(served) != _positions(_mxnets_code(operator, longer))
    key = operator_cache._entry_key("s", operator, operator, longer)
    assert key != operator_cache._entry_key("s", operator, operator, number)


def test_the_key_follows_the_library(tmp_path):
    copy = str(tmp_path / os.path.basename(LIBRARY))
    shutil.copyfile(LIBRARY, copy)
    names = operator_cache._operator_names(mx.base)

    def key(library):
        return operator_cache._key(mx.base, library, names)

    assert key(LIBRARY) == key(LIBRARY)
    assert key(copy) != key(LIBRARY)
    before = key(copy)
    st = os.stat(copy)
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert key(copy) != before
    assert (", %r)" % elf.build_id(LIBRARY)).encode() in key(LIBRARY)
    # And the operators the library registers.
    assert operator_cache._key(mx.base, LIBRARY, names[1:]) != key(LIBRARY)


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs binutils' readelf")
def test_the_build_id_is_readelfs():
    text = subprocess.run(["readelf", "-n", LIBRARY], capture_output=True, text=True).stdout
    ids = [line.split()[-1] for line in text.splitlines() if "Build ID:" in line]
    assert ids and elf.build_id(LIBRARY) == ids[0]
    with pytest.raises(ValueError):
        elf.build_id(os.path.join(ROOT, "README.md"))


def test_listed_as_a_patch_with_its_trap():
    assert "operator_cache" in mxcompat.patch_names()
    from mxcompat._core import traps

    assert traps.for_patch("operator_cache")
