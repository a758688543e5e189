"""``mxcompat-cuda-libs.pth`` (mxcompat/cuda/plain_import.py) and the module it imports
(``_mxcompat_cuda_libs``), in fresh venvs made from this interpreter: an interpreter that never
imports mxnet gets one finder and nothing else of mxcompat; where mxcompat is uninstalled or
broken the file does nothing and says nothing; a plain ``import mxnet`` of a CPU build is what
it is without the file.  On a CUDA build (the gpu-* env, whose ``mxcompat install`` wrote the
file): a plain ``import mxnet`` loads the libraries from the pip packages, with the switches of
the patch ``cuda_libs``, and steps aside where ``import mxcompat`` came first.  The install
itself, into fresh venvs, is tests/cli/test_install.py's."""

import ast
import json
import os
import subprocess
import sys
import textwrap

import mxnet as mx
import numpy
import pytest

import _mxcompat_cuda_libs
import mxcompat
from mxcompat.cuda import libs, plain_import
from tests.support import reference_env
from tests.support.processes import run_python, subprocess_env
from tests.support.stack import CUDA_BUILD

# Where this env has them: the module the wheel puts beside the package, the package, mxnet.
MODULE = os.path.abspath(_mxcompat_cuda_libs.__file__)
PACKAGE = os.path.dirname(os.path.abspath(mxcompat.__file__))
MXNET_SITE = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))

_REPORT = """
import sys
print(sorted(m for m in sys.modules if "mxcompat" in m or m in ("wrapt", "ctypes", "numpy")))
print([type(f).__name__ for f in sys.meta_path])
"""


def _venv(tmp_path, pth=True, link=False):
    """A venv made from this interpreter (no pip): its Python and site-packages, with the
    ``.pth`` (``pth``) and, where ``link``, the module and the package linked in as the wheel
    installs them."""
    venv = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    python = os.path.join(venv, "bin", "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if pth:
        assert plain_import.write(site) == os.path.join(site, plain_import.NAME)
    if link:
        os.symlink(MODULE, os.path.join(site, os.path.basename(MODULE)))
        os.symlink(PACKAGE, os.path.join(site, "mxcompat"))
    return python, site


def _run(python, code, tmp_path, env=None):
    return subprocess.run(
        [python, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        cwd=str(tmp_path),
        timeout=300,
    )


def test_the_pth_is_one_import_line_after_its_comments():
    lines = plain_import.TEXT.splitlines()
    assert all(line.startswith("#") for line in lines[:-1])
    assert lines[-1] == plain_import.LINE
    # site runs a line that starts with "import " and reads every other one as a folder.
    assert plain_import.LINE.startswith("import ")
    assert len(plain_import.LINE) < 120


def test_without_mxcompat_the_pth_does_nothing_and_says_nothing(tmp_path):
    python, _site = _venv(tmp_path)
    done = _run(python, _REPORT, tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    without, _site = _venv(tmp_path / "plain", pth=False)
    assert done.stdout == _run(without, _REPORT, tmp_path).stdout
    assert done.stdout.splitlines()[0] == "[]"


@pytest.mark.parametrize(
    "module",
    [
        "raise RuntimeError('a broken mxcompat')",
        "def install():\n    raise RuntimeError('a broken mxcompat')",
        "def install(:",  # a syntax error
        "install = None",
    ],
    ids=["import-raises", "install-raises", "syntax-error", "not-callable"],
)
def test_a_broken_mxcompat_does_not_break_the_start(tmp_path, module):
    python, site = _venv(tmp_path)
    with open(os.path.join(site, os.path.basename(MODULE)), "w") as f:
        f.write(module + "\n")
    done = _run(python, "print('started')", tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "started\n", "")


def test_an_interpreter_that_never_imports_mxnet_loads_nothing_of_mxcompat(tmp_path):
    python, _site = _venv(tmp_path, link=True)
    done = _run(
        python,
        "import asyncio, email.message, http.client, json, logging, subprocess, unittest\n"
        + _REPORT,
        tmp_path,
    )
    assert (done.returncode, done.stderr) == (0, "")
    modules, finders = done.stdout.splitlines()
    assert modules == "['_mxcompat_cuda_libs']"  # no package, no wrapt, ctypes or NumPy
    assert finders.startswith("['Finder', ")
    assert finders.count("'Finder'") == 1


def test_install_is_once_per_process_and_a_probe_loads_nothing(tmp_path):
    python, _site = _venv(tmp_path)
    done = _run(
        python,
        """
        import importlib.util, sys
        import _mxcompat_cuda_libs
        _mxcompat_cuda_libs.install()
        _mxcompat_cuda_libs.install()
        print(sum(hasattr(f, "_mxcompat_cuda_libs") for f in sys.meta_path))
        spec = importlib.util.find_spec("mxnet")
        print(type(spec.loader).__name__, spec.name, "mxnet" in sys.modules)
        print(sorted(m for m in sys.modules if "mxcompat" in m))
        with open("/proc/self/maps") as f:
            print(any("libmxnet" in line for line in f))
        """,
        tmp_path,
        env={"PYTHONPATH": os.pathsep.join([os.path.dirname(MODULE), MXNET_SITE])},
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "1",
        "_Loader mxnet False",
        "['_mxcompat_cuda_libs']",
        "False",
    ]


def test_without_the_package_beside_it_mxnet_imports_as_it_is_with_one_warning(tmp_path):
    # A damaged install: the module without mxcompat's package folder beside it.  Run without
    # site (-S), so that the module is this copy whatever this env's .pth imported.
    folder = tmp_path / "alone"
    folder.mkdir()
    with open(MODULE) as f:
        (folder / os.path.basename(MODULE)).write_text(f.read())
    done = subprocess.run(
        [
            sys.executable,
            "-S",
            "-c",
            "import sys; sys.path.insert(0, %r); import _mxcompat_cuda_libs as m; "
            "print(m.preload(), m.preload())" % str(folder),
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=str(tmp_path),
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "{} {}\n"), done.stderr
    warned = [line for line in done.stderr.splitlines() if "Warning: " in line]
    assert len(warned) == 1, done.stderr  # once
    assert warned[0].endswith(
        "RuntimeWarning: mxcompat could not load the CUDA libraries before mxnet "
        "(ModuleNotFoundError: No module named '_mxcompat_cuda_libs.mxcompat._core'); mxnet "
        "is imported as it is"
    ), warned


_PLAIN = """
import sys
try:
    import mxnet as mx
    print((mx.nd.ones((2, 3)) * 2).asnumpy().tolist(), mx.context.num_gpus())
except Exception as exc:
    print("%s: %s" % (type(exc).__name__, exc))
print(sorted(m for m in sys.modules if m.split(".")[0] in ("mxcompat", "wrapt")))
"""


@pytest.mark.skipif(CUDA_BUILD, reason="a CUDA build: a plain import there is the tests below")
def test_a_plain_import_of_a_cpu_build_is_mxnet_as_without_the_pth(tmp_path):
    # The env's packages on PYTHONPATH: mxnet, NumPy and mxcompat's files as installed here.
    env = {"PYTHONPATH": os.pathsep.join([os.path.dirname(MODULE), MXNET_SITE])}
    python, _site = _venv(tmp_path)
    without, _site = _venv(tmp_path / "plain", pth=False)
    ours, theirs = _run(python, _PLAIN, tmp_path, env), _run(without, _PLAIN, tmp_path, env)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    if reference_env.is_reference_stack(numpy.__version__):
        assert ours.stdout == theirs.stdout
    else:
        # MXNet alone cannot be imported here (NumPy's removed names, Python 3.12's
        # distutils); the .pth brings those two patches' code and nothing else.
        assert theirs.stdout.startswith(("AttributeError: ", "ModuleNotFoundError: "))
        assert ours.stdout.splitlines()[0] == "[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]] 0"
    assert ours.stdout.splitlines()[-1] == "[]"  # no mxcompat, no wrapt: MXNet as it is
    check = _run(python, "import sys; print(sys.meta_path[0].__class__.__module__)", tmp_path, env)
    assert check.stdout == "_mxcompat_cuda_libs\n"


# --- a CUDA build: this env's own .pth, which `mxcompat install` wrote ------------------------

cuda_only = pytest.mark.skipif(
    not CUDA_BUILD, reason="a CPU build of MXNet: these need an mxnet-cu11X wheel (the gpu-* env)"
)

_MAPPED = """
with open("/proc/self/maps") as f:
    maps = f.read()
print(sorted(n for n in %r if n in maps))
""" % (sorted(libs.PIP_LIBRARIES),)


# What libmxnet.so needs from the pip packages (the driver is the stand-in or the system's).
_NEEDED = (
    set(n for n in libs.cuda_needed(libs.library()) if n != libs.DRIVER) if CUDA_BUILD else set()
)


def _this_envs_pth():
    return os.path.join(os.path.dirname(os.path.dirname(libs.library())), plain_import.NAME)


@cuda_only
def test_mxcompat_install_wrote_the_pth_here():
    with open(_this_envs_pth()) as f:
        assert f.read() == plain_import.TEXT
    assert plain_import.folder_of(libs.library()) == os.path.dirname(_this_envs_pth())


@cuda_only
def test_a_plain_import_loads_the_libraries_from_the_pip_packages(tmp_path):
    done = run_python(_PLAIN + _MAPPED, cwd=str(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    outcome, modules, mapped = done.stdout.splitlines()
    assert _NEEDED <= set(ast.literal_eval(mapped))
    assert outcome == "[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]] 0"
    # No mxcompat: only the libraries, and on a newer stack the two patches' own code (under
    # the .pth's private name), which loads wrapt with the patch registry.
    modules = ast.literal_eval(modules)
    assert [m for m in modules if not m.startswith("wrapt")] == []
    if reference_env.is_reference_stack(numpy.__version__):
        assert modules == []


_IMPORTABLE = """
import json, sys, numpy
before = [n for n in ("PZERO", "alltrue", "Inf") if not hasattr(numpy, n)]
import mxnet
distutils = sys.modules.get("distutils")
origin = distutils.__spec__.origin if distutils is not None else None
print(json.dumps([before, [n for n in before if hasattr(numpy, n)], origin]))
"""


@cuda_only
def test_on_a_newer_stack_the_plain_import_gets_what_mxnets_import_needs_and_no_more(tmp_path):
    # NumPy 2 removed names MXNet's import reads and Python 3.12 removed distutils: without
    # them no plain `import mxnet` computes there, so the .pth brings those two and nothing
    # else (no mxcompat, no wrapt: the test above).
    done = run_python(_IMPORTABLE, cwd=str(tmp_path))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    before, restored, origin = json.loads(done.stdout)
    assert restored == before  # the names MXNet reads that NumPy lacks, added
    if reference_env.is_reference_stack(numpy.__version__):
        assert before == []
    assert (origin == "mxcompat") == (sys.version_info >= (3, 12)), origin
    # Each switched off as its patch is: then MXNet's own error.
    off = run_python(_PLAIN, env={"MXCOMPAT_DISABLE_PATCHES": "numpy_names"}, cwd=str(tmp_path))
    if "PZERO" in before:
        assert off.stdout.startswith("AttributeError: `np.PZERO` was removed"), off.stdout


@cuda_only
@pytest.mark.parametrize(
    "env",
    [
        {"MXCOMPAT_CUDA_LIBS": "system"},
        {"MXCOMPAT_DISABLE": "1"},
        {"MXCOMPAT_DISABLE_PATCHES": "labels,cuda_libs"},
    ],
    ids=["cuda-libs-system", "disable", "disable-patches"],
)
def test_the_switches_of_the_patch_turn_it_off(tmp_path, env):
    done = run_python("import mxnet", env=env, cwd=str(tmp_path))
    if done.returncode == 0:
        pytest.skip("this machine has a system CUDA 11 and an NVIDIA driver")
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("OSError: lib") and "cannot open shared object file" in last, last


@cuda_only
def test_pip_preferred_loads_them_too(tmp_path):
    done = run_python(_PLAIN + _MAPPED, env={"MXCOMPAT_CUDA_LIBS": "pip"}, cwd=str(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    assert _NEEDED <= set(ast.literal_eval(done.stdout.splitlines()[-1]))


@cuda_only
def test_a_missing_library_is_one_import_error_naming_its_package(tmp_path):
    # The same site-packages seen through a folder of links to all of it but nvidia/.
    site = os.path.dirname(os.path.dirname(libs.library()))
    view = tmp_path / "site"
    view.mkdir()
    for name in os.listdir(site):
        if name != "nvidia":
            os.symlink(os.path.join(site, name), str(view / name))
    done = run_python(
        """
        import os, sys
        sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "nvidia"))]
        sys.path.insert(0, %r)
        import mxnet
        """
        % str(view),
        cwd=str(tmp_path),
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: MXNet's %s" % view), last
    assert "libcudnn.so.8 (pip package nvidia-cudnn-cu11==8.*)" in last
    assert done.stderr.count("ImportError:") == 1  # one error, no chained one
    assert "During handling" not in done.stderr


@cuda_only
def test_with_mxcompat_imported_first_its_own_patch_does_the_work(tmp_path):
    done = run_python(
        """
        import sys
        import mxcompat, mxnet as mx
        print((mx.nd.ones((2,)) * 3).asnumpy().tolist())
        print("cuda_libs" in mxcompat.patched())
        print(sorted(m for m in sys.modules if m.startswith("_mxcompat_cuda_libs")))
        """,
        cwd=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[3.0, 3.0]", "True", "['_mxcompat_cuda_libs']"]


@cuda_only
def test_pytest_under_filterwarnings_error_runs_here(tmp_path):
    # mxcompat's pytest plugin makes pytest mark _mxcompat_cuda_libs (same distribution) for
    # assertion rewriting, and the .pth has imported it before pytest starts.
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-W", "error", "-p", "no:cacheprovider", "test_one.py"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=str(tmp_path),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
