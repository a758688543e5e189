"""The tests' fixtures and hooks (the helpers they import are in tests/support/).

Every test starts with all of mxcompat's patches applied and leaves them so (the
OpenTelemetry instrument-in-setUp/uninstrument-in-tearDown pattern, inverted: patched is the
normal state).  A test that needs a release marks itself as users do, with mxcompat's own
pytest plugin: ``@pytest.mark.mxnet(">=1.6")`` skips it elsewhere and says why.
"""

import os
import sys

# The checkout's root, for `tests.support`, `benchmarks` and `tools`: appended, never put first
# (pytest's `pythonpath` setting would), so that `import mxcompat` everywhere in the tests is the
# installed distribution under test, not the checkout's folder.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

import pytest  # noqa: E402

# Imports mxcompat, which mxcompat's pytest plugin has imported already.
from mxcompat._core import settings  # noqa: E402

# mxcompat's own switches from the caller's shell (a stray MXCOMPAT_FREEZE) would change what
# the tests test; each test sets what it means to test.  The test cache, the MXNet-suite
# runner's source folder, and what tox and .ci/run tell tests/packaging (the built
# distributions' folder; whether a missing Python fails) are inputs of the tests, not switches.
_KEPT = (settings.TEST_CACHE, settings.MXNET_SRC, "MXCOMPAT_DIST", "MXCOMPAT_CI_REQUIRE_ALL")
_stray = sorted(set(os.environ) - set(settings.environ_without_ours(keep=_KEPT)))
for _name in _stray:
    del os.environ[_name]

import mxcompat  # noqa: E402
from mxcompat._core import log  # noqa: E402

if _stray:
    # mxcompat's pytest plugin imported it before this file ran, with those switches.
    mxcompat.unfreeze()
    mxcompat.numpy_legacy(False)

import importlib.util  # noqa: E402

# After mxcompat: the patches land at this import.  py311-nomx has no MXNet at all (its tests
# convert checkpoints without it); an MXNet that is there and fails to import fails here.
mx = None
if importlib.util.find_spec("mxnet") is not None:
    import mxnet as mx  # noqa: E402

from tests.support.processes import run_python  # noqa: E402

# The versions this env really got (the *latest envs take the newest NumPy there is) are in
# the report header of mxcompat's pytest plugin (mxcompat/pytest_plugin.py).


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_plain_import: the test imports mxnet before (or without) mxcompat"
    )


def pytest_runtest_setup(item):
    if not item.get_closest_marker("requires_plain_import"):
        return
    from tests.support.stack import plain_import_works  # imports mxnet

    if not plain_import_works():
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
