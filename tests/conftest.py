"""Shared test machinery.

Every test starts with all of mxcompat's patches applied and leaves them so (the
OpenTelemetry instrument-in-setUp/uninstrument-in-tearDown pattern, inverted: patched is the
normal state).  A test that needs a release marks itself as users do, with mxcompat's own
pytest plugin: ``@pytest.mark.mxnet(">=1.6")`` skips it elsewhere and says why.
"""

import os
import subprocess
import sys
import textwrap

import pytest

# Imports mxcompat, which mxcompat's pytest plugin has imported already.
from mxcompat._core import settings

# mxcompat's own switches from the caller's shell (a stray MXCOMPAT_FREEZE) would change what
# the tests test; each test sets what it means to test.  The test cache and the MXNet-suite
# runner's source folder are inputs of the tests, not switches.
_KEPT = (settings.TEST_CACHE, settings.MXNET_SRC)
_stray = sorted(set(os.environ) - set(settings.environ_without_ours(keep=_KEPT)))
for _name in _stray:
    del os.environ[_name]

import mxcompat  # noqa: E402
from mxcompat._core import facts, log  # noqa: E402

if _stray:
    # mxcompat's pytest plugin imported it before this file ran, with those switches.
    mxcompat.unfreeze()
    mxcompat.numpy_legacy(False)

import mxnet as mx  # noqa: E402  (after mxcompat: the patches land at this import)

MX_VERSION = facts.parse_version(mx.__version__)

# The repository's root (the tests sit one folder deeper, as the package's parts do).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The checkout's tools/ (processes, horovod, the MXNet-suite runner) for the tests: appended,
# so that `import mxcompat` still finds the installed package under test, not the checkout.
if ROOT not in sys.path:
    sys.path.append(ROOT)

# The oneDNN FullyConnected fact (facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS): the builds where
# a weight's grad_req 'null' stops its bias (there mxcompat keeps the weight's gradient), and
# whether oneDNN's kernels really run (not with MXNET_MKLDNN_ENABLED=0: MXNet then trains
# the bias itself).
ONEDNN_FC = facts.since(facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS) and "MKLDNN" in (
    facts.build_features() or ()
)
ONEDNN_FC_RUNS = ONEDNN_FC and facts.onednn_enabled()


def reference_directives(page):
    """The generated tables a documentation page shows (its ``mxcompat-reference`` directives,
    in order): the docs build renders each from the code, so the page can hold no copy."""
    import re

    with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as f:
        return re.findall(r"^```\{mxcompat-reference\} ([\w-]+)\s*$", f.read(), re.M)


def applicable_patches():
    """The patch names ``patch()`` applies here, in stacking order.  Derived from the facts,
    not from the patches' own ``applies_to``, so the tests that compare it with
    ``mxcompat.patched()`` check those too."""
    numpy_major = facts.parse_version(sys.modules["numpy"].__version__)[0]
    conditional = {
        "onednn_fc_bias": ONEDNN_FC,
        "distutils": sys.version_info >= (3, 12),
        "numpy2": numpy_major >= 2,
        "python_oo": sys.flags.optimize >= 2,
        # Every 1.x release traps (facts.INT_DIVISION_SIGFPE names no release that raises).
        "int_division": True,
        # Every release asserts without a message; before UNBOUND_GET_PARAMS it also refuses
        # a loaded module, so the patch is needed on both sides of that fact.
        "unbound_get_params": True,
        # A Pool-based DataLoader (1.4+) is retired without terminate().
        "dataloader_teardown": facts.since(facts.DATALOADER_WORKER_POOL),
        # Where fork is no longer multiprocessing's default (Python 3.14+ on Linux).
        "dataloader_start_method": sys.platform.startswith("linux")
        and facts.python_since(facts.PYTHON_FORKSERVER_DEFAULT),
        "dataloader_spawn": sys.platform.startswith("linux"),
        # A dist Trainer's broadcast races its first pushpull from 1.7 only.
        # mxnet.test_utils' chisquare, where SciPy (imported by `import mxnet`) checks sums.
        "scipy_chisquare": getattr(mx.test_utils, "ss", None) is not None
        and facts.scipy_since(facts.SCIPY_CHISQUARE_SUM_CHECK),
        # glibc 2.41+ (unless told otherwise at start) refuses an executable-stack library.
        "exec_stack": glibc_refuses_exec_stack(),
    }
    return tuple(n for n in mxcompat.patch_names() if conditional.get(n, True))


def glibc_refuses_exec_stack():
    """Whether this glibc refuses to load a library that asks for an executable stack (from
    the facts, not from the patch, whose own answer the tests check)."""
    try:
        name, _, number = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    except (ValueError, OSError):
        return False
    if name != "glibc" or facts.parse_version(number)[:2] < (facts.GLIBC_DLOPEN_REFUSES_EXECSTACK):
        return False
    return "glibc.rtld.execstack=2" not in os.environ.get("GLIBC_TUNABLES", "")


_plain_import = []


def plain_import_works():
    """Whether ``import mxnet`` works here *without* mxcompat imported first.  It does not for
    MXNet 1.6+ on NumPy >= 1.24 or Python >= 3.12 (numpy.bool, numpy.PZERO, distutils), where
    only mxcompat's pre-import finder makes MXNet importable."""
    if not _plain_import:
        _plain_import.append(run_python("import mxnet").returncode == 0)
    return _plain_import[0]


# The versions this env really got (the *latest envs take the newest NumPy there is) are in
# the report header of mxcompat's pytest plugin (mxcompat/pytest_plugin.py).


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_plain_import: the test imports mxnet before (or without) mxcompat"
    )


def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_plain_import") and not plain_import_works():
        pytest.skip(
            "plain `import mxnet` fails here without mxcompat imported first "
            "(MXNet %s on NumPy %s / Python %d.%d)"
            % (
                mx.__version__,
                sys.modules["numpy"].__version__,
                sys.version_info[0],
                sys.version_info[1],
            )
        )


@pytest.fixture(autouse=True)
def _patched_state():
    """Each test starts fully patched, with an empty freeze registry and fresh one-time
    warnings, and ends so."""
    mxcompat.patch()
    mxcompat.unfreeze()
    log.reset_once()
    yield
    mxcompat.patch()
    mxcompat.unfreeze()
    log.reset_once()


@pytest.fixture
def unpatched():
    """MXNet exactly as it ships, for the "without mxcompat" side of a test."""
    mxcompat.unpatch()
    assert mxcompat.patched() == ()
    yield
    mxcompat.patch()


def subprocess_env(env=None):
    """This process's environment less mxcompat's own variables (each test sets what it
    means to test), one OpenMP thread, tracebacks without colour (Python 3.13 colours them
    under FORCE_COLOR), plus ``env``."""
    full_env = settings.environ_without_ours()
    full_env.setdefault("OMP_NUM_THREADS", "1")
    full_env["PYTHON_COLORS"] = "0"
    full_env.update(env or {})
    return full_env


def mxcompat_cmd(*args, **kwargs):
    """``python -m mxcompat ARGS`` in this env, as a user runs it (CompletedProcess)."""
    return subprocess.run(
        [sys.executable, "-m", "mxcompat"] + list(args),
        capture_output=True,
        text=True,
        env=subprocess_env(kwargs.pop("env", None)),
        timeout=kwargs.pop("timeout", 180),
        **kwargs,
    )


def write(path, text):
    with open(str(path), "w") as f:
        f.write(textwrap.dedent(text))
    return str(path)


def run_python(code, env=None, timeout=180, cwd=None):
    """Run ``code`` in a fresh interpreter (this env's), returning the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=timeout,
        cwd=cwd,
    )


def run_threads(target, count, timeout):
    """Run ``target`` in ``count`` threads at once, the interpreter switching between them
    every microsecond (so their critical sections overlap on every run); the threads still
    alive after ``timeout`` seconds each (hung) are returned."""
    import threading

    threads = [threading.Thread(target=target) for _ in range(count)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout)
    finally:
        sys.setswitchinterval(interval)
    return [t for t in threads if t.is_alive()]


@pytest.fixture
def python():
    """``python(code)`` runs code in a fresh interpreter and fails the test on a non-zero exit."""

    def run(code, env=None, timeout=180, check=True):
        proc = run_python(code, env=env, timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(
                "subprocess failed (%d):\n%s\n%s"
                % (proc.returncode, proc.stdout, proc.stderr[-4000:])
            )
        return proc

    return run
