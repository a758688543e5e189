"""MXNet 1.3-1.6 on glibc >= 2.41: the ``exec_stack`` patch.

The ELF reader/writer is tested everywhere on real libraries (the installed ``libmxnet.so``,
every wheel found in ``$MXCOMPAT_TEST_CACHE/wheels``, and copies of a small library MXNet
ships, with the one field changed by the test itself).  The loading is tested in fresh
interpreters: where this glibc refuses the installed library (Debian unstable's 2.43 with
1.3.1-1.6.0), with mxcompat it loads from the cached copy and computes, without it fails;
elsewhere (an older glibc, or 1.7+) mxcompat loads the installed file itself and makes no copy.
"""

import glob
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import zipfile

import mxnet as mx
import pytest

import mxcompat
from mxcompat._core import facts, settings
from mxcompat.patches import exec_stack
from mxcompat.patches.exec_stack import copies, elf
from tests.support.processes import mxcompat_cmd, run_python, subprocess_env, write
from tests.support.stack import glibc_refuses_exec_stack

# MXNet's own find_lib_path (the patch gave it back once mxnet.base had loaded).
INSTALLED = os.path.realpath(mx.libinfo.find_lib_path()[0])
ASKS = elf.stack(INSTALLED) == elf.EXECUTABLE
REFUSES = glibc_refuses_exec_stack()
GLIBC = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else "no glibc"

needs_trap = pytest.mark.skipif(
    not (REFUSES and ASKS),
    reason=(
        "%s still loads a library that asks for an executable stack (refused from 2.41)" % GLIBC
        if not REFUSES
        else "MXNet %s's libmxnet.so %s: nothing to refuse" % (mx.__version__, elf.stack(INSTALLED))
    ),
)

# A small ELF64 library MXNet ships beside libmxnet.so in every release (RW stack).
SMALL = os.path.join(os.path.dirname(INSTALLED), "libgfortran.so.3")

PROGRAM = textwrap.dedent("""
    import mxnet as mx
    a = (mx.nd.ones((2, 3)) * 2).asnumpy().sum()
    d = mx.nd.dot(mx.nd.ones((4, 5)), mx.nd.ones((5, 3))).asnumpy().sum()
    net = mx.gluon.nn.Dense(3, in_units=5)
    net.initialize(mx.init.Constant(0.5))
    g = net(mx.nd.ones((2, 5))).asnumpy().tolist()
    mod = mx.mod.Module(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2), label_names=None)
    mod.bind(data_shapes=[("data", (1, 4))], for_training=False)
    mod.init_params(mx.init.One())
    mod.forward(mx.io.DataBatch([mx.nd.ones((1, 4))]), is_train=False)
    m = mod.get_outputs()[0].asnumpy().tolist()
    print(a, d, g, m)
    print(sorted(set(l.split()[-1] for l in open("/proc/self/maps") if "libmxnet" in l)))
    print(mx.libinfo.find_lib_path()[0])
""")
NUMBERS = "12.0 60.0 [[2.5, 2.5, 2.5], [2.5, 2.5, 2.5]] [[4.0, 4.0]]"
REFUSED = "cannot enable executable stack as shared object requires"


def _stamp(path):
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, elf.stack(path)


def _gnu_stack_entry(data):
    """Offset of the PT_GNU_STACK program header in ELF64 little-endian ``data`` (the test's
    own reading, to check the module's against)."""
    assert data[:6] == b"\x7fELF\x02\x01"
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        if struct.unpack_from("<I", data, phoff + i * phentsize)[0] == elf.PT_GNU_STACK:
            return phoff + i * phentsize
    raise AssertionError("no PT_GNU_STACK")


def _small_copy(tmp_path, change=None):
    with open(SMALL, "rb") as f:
        data = bytearray(f.read())
    if change is not None:
        change(data, _gnu_stack_entry(data))
    path = tmp_path / "libsmall.so"
    path.write_bytes(bytes(data))
    return str(path), bytes(data)


# --- the ELF reader/writer, on real files -------------------------------------------------


def test_installed_library_flag_is_the_fact():
    wheel_asks = not facts.since(facts.LIBMXNET_STACK_NOT_EXECUTABLE)
    assert elf.stack(INSTALLED) == (elf.EXECUTABLE if wheel_asks else elf.NOT_EXECUTABLE)
    assert elf.stack_flags(INSTALLED) == (7 if wheel_asks else 6)  # RWE / RW
    readelf = shutil.which("readelf")
    if readelf:  # binutils' reading agrees
        out = subprocess.run([readelf, "-lW", INSTALLED], capture_output=True, text=True).stdout
        line = [x for x in out.splitlines() if "GNU_STACK" in x][0]
        assert line.split()[-2] == ("RWE" if wheel_asks else "RW")


WHEELS = ("1.3.1", "1.4.1", "1.5.1.post0", "1.6.0", "1.7.0.post2", "1.8.0.post0", "1.9.1")


@pytest.mark.parametrize("release", WHEELS)
def test_every_wheel_library(release):
    folder = os.path.join(settings.cache_folder("tests", settings.TEST_CACHE), "wheels")
    found = glob.glob(os.path.join(folder, "mxnet-%s-*.whl" % release))
    if not found:
        pytest.skip(
            "no mxnet %s wheel in %s (`pip download --no-deps mxnet==%s -d %s` adds it)"
            % (release, folder, release, folder)
        )
    asks = not facts.since(facts.LIBMXNET_STACK_NOT_EXECUTABLE, facts.parse_version(release))
    with zipfile.ZipFile(found[0]) as wheel:
        libraries = [
            n for n in wheel.namelist() if n.startswith("mxnet/") and ".so" in n.rsplit("/")[-1]
        ]
        seen = {}
        for name in libraries:
            with wheel.open(name) as f:
                seen[name.rsplit("/")[-1]] = elf.stack(f)
    # libmxnet.so asks up to 1.6; no other library of any wheel does.
    assert seen.pop("libmxnet.so") == (elf.EXECUTABLE if asks else elf.NOT_EXECUTABLE)
    assert "libgfortran.so.3" in seen
    assert set(seen.values()) == {elf.NOT_EXECUTABLE}


def test_clearing_changes_one_flag_only(tmp_path):
    def set_x(data, at):
        struct.pack_into("<I", data, at + 4, struct.unpack_from("<I", data, at + 4)[0] | 1)

    path, before = _small_copy(tmp_path, set_x)
    assert elf.stack(path) == elf.EXECUTABLE and elf.stack_flags(path) == 7
    assert elf.clear_executable(path) == elf.EXECUTABLE
    assert elf.stack(path) == elf.NOT_EXECUTABLE and elf.stack_flags(path) == 6
    with open(path, "rb") as f:
        after = f.read()
    at = _gnu_stack_entry(before) + 4
    assert after[:at] == before[:at] and after[at + 4 :] == before[at + 4 :]
    # A library that does not ask is never written to.
    assert elf.clear_executable(path) == elf.NOT_EXECUTABLE
    with open(path, "rb") as f:
        assert f.read() == after


def test_without_gnu_stack_header_left_alone(tmp_path):
    def drop(data, at):
        struct.pack_into("<I", data, at, 0)  # PT_NULL

    path, before = _small_copy(tmp_path, drop)
    assert elf.stack(path) == elf.NO_HEADER and elf.stack_flags(path) is None
    assert elf.clear_executable(path) == elf.NO_HEADER
    assert exec_stack.loadable(path) == path
    with open(path, "rb") as f:
        assert f.read() == before


@pytest.mark.parametrize(
    "content",
    [b"not a library\n", b"", b"\x7fELF\x02\x01" + b"\0" * 30],
    ids=["text", "empty", "truncated"],
)
def test_not_elf_left_alone(tmp_path, content):
    path = tmp_path / "libnot.so"
    path.write_bytes(content)
    assert elf.stack(str(path)) == elf.UNREADABLE
    assert elf.clear_executable(str(path)) == elf.UNREADABLE
    assert exec_stack.loadable(str(path)) == str(path)
    assert path.read_bytes() == content


@pytest.mark.skipif(not ASKS, reason="MXNet %s's libmxnet.so does not ask" % mx.__version__)
def test_cleared_copy_of_the_installed_library(tmp_path, monkeypatch):
    monkeypatch.setenv("MXCOMPAT_LIB_CACHE", str(tmp_path / "cache"))
    before = _stamp(INSTALLED)
    copy = copies.cleared_copy(INSTALLED, "test")
    assert elf.stack(copy) == elf.NOT_EXECUTABLE
    assert os.path.basename(copy) == "libmxnet.so"
    assert os.path.getsize(copy) == os.path.getsize(INSTALLED)
    # The libraries its RPATH=$ORIGIN looks for are beside it.
    beside = os.path.join(os.path.dirname(copy), "libgfortran.so.3")
    assert os.path.realpath(beside) == os.path.join(os.path.dirname(INSTALLED), "libgfortran.so.3")
    assert copies.cleared_copy(INSTALLED, "test") == copy  # found, not made again
    assert os.listdir(str(tmp_path / "cache")) == [os.path.basename(os.path.dirname(copy))]
    assert _stamp(INSTALLED) == before


def test_find_lib_path_is_mxnets_own_again():
    assert not hasattr(mx.libinfo.find_lib_path, "__wrapped__")
    assert ("exec_stack" in mxcompat.patched()) == REFUSES
    assert exec_stack.glibc_refuses() == REFUSES


# --- loading, in fresh interpreters ---------------------------------------------------------


@needs_trap
def test_loads_the_copy_and_computes(tmp_path):
    cache = str(tmp_path / "cache")
    before = _stamp(INSTALLED)
    proc = run_python("import mxcompat\n" + PROGRAM, env={"MXCOMPAT_LIB_CACHE": cache})
    assert proc.returncode == 0, proc.stderr[-3000:]
    numbers, maps, found = proc.stdout.splitlines()
    assert numbers == NUMBERS
    (loaded,) = eval(maps)
    assert loaded.startswith(cache + os.sep) and elf.stack(loaded) == elf.NOT_EXECUTABLE
    assert os.path.realpath(found) == INSTALLED  # what users and tools read is unchanged
    assert _stamp(INSTALLED) == before
    assert "MXCompatWarning" not in proc.stderr


@needs_trap
def test_mxcompat_run(tmp_path):
    script = write(tmp_path / "legacy.py", PROGRAM)
    proc = mxcompat_cmd("run", script, env={"MXCOMPAT_LIB_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[0] == NUMBERS


@needs_trap
@pytest.mark.parametrize("how", ["no mxcompat", "patch disabled"])
def test_the_trap_is_real(tmp_path, how):
    code, env = "import mxnet", {"MXCOMPAT_LIB_CACHE": str(tmp_path / "cache")}
    if how == "patch disabled":
        code, env["MXCOMPAT_DISABLE_PATCHES"] = "import mxcompat, mxnet", "exec_stack"
    proc = run_python(code, env=env)
    assert proc.returncode != 0
    assert REFUSED in proc.stderr and "libmxnet.so" in proc.stderr
    assert not os.path.exists(str(tmp_path / "cache"))


@needs_trap
def test_unwritable_cache_warns_and_mxnet_fails(tmp_path):
    blocker = write(tmp_path / "a-file", "")
    proc = run_python("import mxcompat, mxnet", env={"MXCOMPAT_LIB_CACHE": blocker + "/cache"})
    assert proc.returncode != 0
    assert proc.stderr.count("MXCompatWarning") == 1
    assert "mxcompat could not make a copy without that flag" in proc.stderr
    assert "MXCOMPAT_LIB_CACHE" in proc.stderr
    assert REFUSED in proc.stderr  # MXNet's own error follows, never a silent success


@needs_trap
def test_processes_starting_together_share_one_copy(tmp_path):
    env = subprocess_env({"MXCOMPAT_LIB_CACHE": str(tmp_path / "cache")})
    code = "import mxcompat, mxnet as mx; print((mx.nd.ones((2, 3)) * 2).asnumpy().sum())"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for _ in range(3)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        assert out.strip() == "12.0"
    assert len(os.listdir(str(tmp_path / "cache"))) == 1  # no half-made folder left either


@needs_trap
def test_a_new_stamp_replaces_the_old_folder(tmp_path):
    cache = tmp_path / "cache"
    env = {"MXCOMPAT_LIB_CACHE": str(cache)}
    assert run_python("import mxcompat, mxnet", env=env).returncode == 0
    (first,) = os.listdir(str(cache))
    old = first.rsplit("-", 1)[0] + "-000000000000"  # another size/mtime/mxcompat
    os.rename(str(cache / first), str(cache / old))
    assert run_python("import mxcompat, mxnet", env=env).returncode == 0
    assert os.listdir(str(cache)) == [first]


@pytest.mark.skipif(
    REFUSES and ASKS,
    reason="%s refuses MXNet %s's libmxnet.so: the tests above load the copy"
    % (GLIBC, mx.__version__),
)
def test_nothing_changes_where_the_trap_is_absent(tmp_path):
    cache = str(tmp_path / "cache")
    proc = run_python("import mxcompat\n" + PROGRAM, env={"MXCOMPAT_LIB_CACHE": cache})
    assert proc.returncode == 0, proc.stderr[-3000:]
    numbers, maps, found = proc.stdout.splitlines()
    assert numbers == NUMBERS
    assert [os.path.realpath(p) for p in eval(maps)] == [INSTALLED]
    assert not os.path.exists(cache)
