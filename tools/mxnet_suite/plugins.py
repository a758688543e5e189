"""The program text the MXNet-suite runner writes into each side's run folder: the pytest
plugin that records every test's outcome, the pytest.ini of the extracted unittest folder, and
the stand-ins the release's test files (never MXNet) need on the candidate's Python."""

_PLUGIN = r"""
import json, os, time
%(first)s


# A stand-in the test FILES need, on either side: 1.3-1.6's test_profiler.py calls
# time.clock(), which Python 3.8 removed (MXNet itself never calls it).  Served only to a
# lookup that finds nothing, and recorded when it serves.
def _time_getattr(name):
    if name != "clock":
        raise AttributeError("module 'time' has no attribute %%r" %% name)
    with open(os.environ["SUITE_RECORD"] + ".standins", "a") as f:
        f.write("time.clock\n")
    return time.perf_counter


if not hasattr(time, "clock"):
    time.__getattr__ = _time_getattr
_out = open(os.environ["SUITE_RECORD"], "a")
_skip = set(json.load(open(os.environ["SUITE_SKIP_IDS"])))


def _write(**kw):
    _out.write(json.dumps(kw) + "\n")
    _out.flush()


def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if i.nodeid not in _skip]
    gone = [i for i in items if i.nodeid in _skip]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = kept
        with open(os.environ["SUITE_RECORD"] + ".deselected", "a") as f:
            f.write("".join(i.nodeid + "\n" for i in gone))


def pytest_collectreport(report):
    if report.failed:
        _write(id=report.nodeid, outcome="error", when="collect",
               message=_first_line(report))


def pytest_runtest_logstart(nodeid, location):
    _write(id=nodeid, outcome="started")


def _first_line(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    if isinstance(report.longrepr, tuple):   # a skip: (path, line, reason)
        text = str(report.longrepr[2])
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0][:300] if lines else ""


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if report.skipped and hasattr(report, "wasxfail"):
            outcome = "xfailed"
        elif report.passed and hasattr(report, "wasxfail"):
            outcome = "xpassed"
        elif report.when != "call" and report.failed:
            outcome = "error"
        else:
            outcome = report.outcome
        _write(id=report.nodeid, outcome=outcome, when=report.when,
               message="" if outcome == "passed" else _first_line(report))
"""

_INI = """[pytest]
# Written by tools.mxnet_suite: MXNet's markers, so they raise no warning.
markers =
    seed: MXNet's seed marker
    serial: MXNet's serial marker
    remote_required: MXNet's network marker
    gpu: MXNet's GPU marker
    integration: MXNet's integration marker
    garbage_expected: MXNet's leak marker
"""


# A stand-in the test FILES need on Python 3.12+, never MXNet: test_ndarray.py (every release)
# does `from distutils.version import LooseVersion` after `import mxnet`, and 1.6+'s
# test_numpy_op.py / test_numpy_interoperability.py `from distutils.version import
# StrictVersion` before it (where mxcompat, by design, serves nothing yet).  It serves only an
# import made by a test file (the folder pytest runs in), and only when no other finder
# (mxcompat's, for MXNet 1.6+'s own import of distutils) has the module; the run says where
# it served.
_TEST_STANDINS = r"""
import importlib.abc, importlib.machinery, sys, types

_TESTS = os.getcwd()


class _TestFilesDistutils(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name not in ("distutils", "distutils.version"):
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                return spec
        frame = sys._getframe(1)
        while frame is not None and (
            frame.f_code.co_filename.startswith("<") or "importlib" in frame.f_code.co_filename
        ):
            frame = frame.f_back
        if frame is None or os.path.dirname(os.path.abspath(frame.f_code.co_filename)) != _TESTS:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=name == "distutils")

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        if spec.name == "distutils":
            module.__path__ = []
        else:
            from looseversion import LooseVersion

            # distutils' StrictVersion as mxcompat serves it to MXNet (test_numpy_op.py and
            # test_numpy_interoperability.py import it above their `import mxnet`).
            from mxcompat.patches.distutils import StrictVersion
            module.LooseVersion = LooseVersion
            module.StrictVersion = StrictVersion
            with open(os.environ["SUITE_RECORD"] + ".standins", "a") as f:
                f.write("distutils.version\n")
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_TestFilesDistutils())
"""
