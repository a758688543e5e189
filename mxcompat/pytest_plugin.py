"""mxcompat's pytest plugin, active in every pytest run where mxcompat is installed (the
``pytest11`` entry point; ``-p no:mxcompat`` turns it off).

* The report header: mxcompat, MXNet (and its build features), NumPy, Python, wrapt, and the
  patches active.
* ``@pytest.mark.mxnet(">=1.6,<1.9")``: the test runs only where the installed MXNet release
  matches the PEP 440 specifier, and is skipped elsewhere with a reason naming both.
* At the end, "legacy MXNet traps handled by mxcompat": each patch that changed what MXNet
  would have done, how often, and the first test that hit it -- the migration to-do list.
  ``--mxcompat-strict`` fails the tests that hit one instead.
* The fixture ``mxcompat_frozen("fc1_*", ...)``: parameters frozen for one test only.

Loading the plugin imports mxcompat, as ``import mxcompat`` in the tests would: the patches land
when (and only if) a test imports mxnet.  The plugin itself never imports mxnet.
"""

import contextlib
import sys

import pytest

import mxcompat

from ._core import facts, registry, versions

# Every patch registered (and the environment's settings applied) at the plugin's import, as
# always: the header and the traps-handled section name them.
mxcompat._load()

OUTSIDE_TESTS = "(outside any test: import or collection)"


def pytest_addoption(parser):
    group = parser.getgroup("mxcompat")
    group.addoption(
        "--mxcompat-strict",
        action="store_true",
        default=False,
        help="fail each test in which mxcompat handled a legacy MXNet trap (for "
        "code that should be clean of the traps rather than patched)",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "mxnet(spec, reason=None): run only where the installed MXNet release "
        "matches the PEP 440 specifier spec, e.g. '>=1.6,<1.9'",
    )
    config.pluginmanager.register(_Traps(config.getoption("mxcompat_strict")), "mxcompat-traps")


def pytest_report_header(config):
    import wrapt  # noqa: F401  (reported)

    imported = getattr(sys.modules.get("mxnet"), "__version__", None) is not None
    stack = versions.running(installed=True)
    names = ("MXNet", "NumPy", "Python", "wrapt")
    lines = [
        "mxcompat %s: %s"
        % (stack["mxcompat"], versions.stack_line(stack, names, "(not installed)"))
    ]
    if imported:
        try:
            features = facts.build_features()
        except Exception as exc:
            features = "unknown (%s: %s)" % (type(exc).__name__, exc)
        if features is None:
            features = "unknown (mxnet.runtime is MXNet 1.5+)"
        elif not isinstance(features, str):
            features = ", ".join(features)
        lines.append("mxcompat: MXNet build features: %s" % features)
        lines.append("mxcompat: active patches: %s" % (", ".join(mxcompat.patched()) or "none"))
    elif stack["mxnet"] is not None:
        lines.append("mxcompat: mxnet is not imported yet; the patches land when a test imports it")
    return lines


def pytest_runtest_setup(item):
    markers = list(item.iter_markers("mxnet"))
    if not markers:
        return
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    version = versions.running(installed=True)["mxnet"]
    # Specifiers are matched against the release (facts.release): 1.5.1.post0 is 1.5.1.
    release = facts.release(version) if version else None
    for marker in markers:
        if len(marker.args) != 1 or not isinstance(marker.args[0], str):
            pytest.fail(
                "@pytest.mark.mxnet takes one specifier string, e.g. "
                "@pytest.mark.mxnet('>=1.6,<1.9'); got %r" % (marker.args,),
                pytrace=False,
            )
        spec = marker.args[0]
        try:
            specifier = SpecifierSet(spec)
        except InvalidSpecifier:
            pytest.fail(
                "@pytest.mark.mxnet(%r): not a PEP 440 version specifier (e.g. "
                "'>=1.6,<1.9')" % spec,
                pytrace=False,
            )
        why = marker.kwargs.get("reason") or "needs MXNet %s" % spec
        if release is None:
            pytest.skip("%s (MXNet is not installed)" % why)
        if not specifier.contains(release, prereleases=True):
            pytest.skip("%s (this is MXNet %s)" % (why, version))


@pytest.fixture
def mxcompat_frozen():
    """``mxcompat_frozen("fc1_*", re.compile(...))`` freezes parameters for this test only
    (``mxcompat.freeze``'s patterns); whatever the test's outcome, the patterns it added are
    removed at teardown and those registered before are left as they were.  Returns the
    registered patterns."""
    with contextlib.ExitStack() as stack:

        def freeze(*patterns):
            return stack.enter_context(mxcompat.frozen(*patterns))

        yield freeze


class _Traps:
    """Counts what the patches handle (``registry.record``) per patch and per test."""

    def __init__(self, strict):
        self.strict = strict
        self.counts = {}
        self.first = {}
        self.current = None
        self.in_test = {}
        self._listener = self._record
        registry.add_listener(self._listener)

    def _record(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1
        self.first.setdefault(name, self.current or OUTSIDE_TESTS)
        if self.current is not None:
            self.in_test[name] = self.in_test.get(name, 0) + 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.current = item.nodeid
        self.in_test = {}
        try:
            yield
        finally:
            self.current = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        # Setup's traps are judged with the call (a fixture that loads a legacy model is the
        # test's own code); teardown's with the teardown.
        if not self.strict or report.when == "setup" or not self.in_test or not report.passed:
            return
        hits = ", ".join("%s (%d)" % kv for kv in sorted(self.in_test.items()))
        self.in_test = {}
        report.outcome = "failed"
        report.longrepr = (
            "--mxcompat-strict: mxcompat handled legacy MXNet trap(s) in this "
            "test: %s; without mxcompat this code would fail or compute "
            "something else (`pytest -p no:mxcompat` shows how)" % hits
        )

    def pytest_terminal_summary(self, terminalreporter):
        if not self.counts:
            return
        tr = terminalreporter
        tr.write_sep("=", "legacy MXNet traps handled by mxcompat")
        rows = [
            (name, str(self.counts[name]), self.first[name])
            for name in registry.names()
            if name in self.counts
        ]
        widths = [
            max(len(r[i]) for r in rows + [("patch", "count", "first hit")]) for i in range(2)
        ]
        tr.write_line("%-*s  %*s  %s" % (widths[0], "patch", widths[1], "count", "first hit"))
        for name, count, first in rows:
            tr.write_line("%-*s  %*s  %s" % (widths[0], name, widths[1], count, first))
        tr.write_line(
            "Each is legacy code that only works (or computes what it did on its own "
            "stack) because of mxcompat; `mxcompat patches` says what each patch "
            "fixes, --mxcompat-strict fails the tests that hit one."
        )

    def pytest_unconfigure(self, config):
        registry.remove_listener(self._listener)
