"""mxcompat in strict processes: a project whose pytest turns warnings into errors runs under
``mxcompat run -m pytest`` exactly as under ``python -m pytest``, and mxcompat's own code warns
nothing but ``MXCompatWarning`` under ``python -X dev -W error``."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

import mxcompat
from tests.support.processes import subprocess_env
from tools import pytest_summary

# A user's project as a well-kept one is set up: every warning is an error.  One test passes,
# one imports MXNet and computes, one fails through a rewritten assertion (pytest's detail
# shows that rewriting still works on the project's tests).
PROJECT = {
    "pytest.ini": """
        [pytest]
        filterwarnings = error
    """,
    "test_a.py": """
        def test_ok():
            pass

        def test_mxnet_computes():
            import mxnet as mx
            assert (mx.nd.array([1, 2]) * 3).asnumpy().tolist() == [3.0, 6.0]

        def test_rewritten_assertion():
            assert [1, 2] == [1, 3]
    """,
}

_RESULT = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", re.M)


def _run_pytest(cwd, prefix, options):
    env = subprocess_env()
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable] + prefix + ["-m", "pytest", "-p", "no:cacheprovider", "-rA"] + options,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        timeout=300,
    )
    summary = pytest_summary.summary(proc.stdout)
    return (
        proc.returncode,
        sorted(set(_RESULT.findall(proc.stdout))),
        pytest_summary.counts(summary) if summary else None,
        proc.stdout,
    )


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["-W", "error"],
        ["-p", "no:mxcompat"],
        ["-n", "2"],
        ["--import-mode=importlib"],
    ],
    ids=["filterwarnings", "W-error", "no-plugin", "xdist", "importlib"],
)
def test_mxcompat_run_pytest_is_python_m_pytest(tmpdir, options):
    for name, text in PROJECT.items():
        tmpdir.join(name).write(textwrap.dedent(text))
    run = _run_pytest(str(tmpdir), ["-m", "mxcompat", "run"], options)
    # `-p no:mxcompat` turns the plugin off, not mxcompat: the patches are `run`'s, so the
    # outcomes are those of plain pytest with the plugin (which imports mxcompat), and the
    # plugin's header line is gone.
    plugin_off = options == ["-p", "no:mxcompat"]
    plain = _run_pytest(str(tmpdir), [], [] if plugin_off else options)
    # Before: `mxcompat run` stopped at start-up with PytestAssertRewriteWarning (exit 1,
    # no test run), so there was no result line at all.
    assert run[:3] == plain[:3], "plain:\n%s\nmxcompat run:\n%s" % (plain[3], run[3])
    # Whether MXNet imports under `filterwarnings = error` is MXNet's own affair (1.9.1 on
    # NumPy 1.26 asks NumPy for names it deprecated); the project's other tests are ours.
    assert {
        ("PASSED", "test_a.py::test_ok"),
        ("FAILED", "test_a.py::test_rewritten_assertion"),
    } <= set(run[1]), run[3]
    assert "At index 1 diff: 2 != 3" in run[3], run[3]
    assert "PytestAssertRewriteWarning" not in run[3], run[3]
    header = re.compile(r"^mxcompat \S+: MXNet ", re.M)
    assert bool(header.search(run[3])) is not plugin_off, run[3]
    assert header.search(plain[3]), plain[3]


# Run in a fresh interpreter under `-X dev -W error`: every warning raised there is an error,
# except those whose module is MXNet's or NumPy's own (MXNet's warnings on old NumPy are
# MXNet's, as without mxcompat), which are recorded instead.  The script then exercises what a
# user does: import, patch and unpatch, the check scenarios (every feature on a tiny model),
# freezing, conversion both ways.
STRICT_SCRIPT = r"""
import warnings, sys
warnings.filterwarnings("default", module=r"(mxnet|numpy)(\.|$)")
import mxcompat
from mxcompat import MXCompatWarning
import mxnet as mx
mxcompat.unpatch()
mxcompat.patch()
from mxcompat.cli.check import runner
results, _ = runner.run_checks()
bad = [r for r in results if r["status"] == runner.FAIL]
assert not bad, bad
net = mx.gluon.nn.HybridSequential()
net.add(mx.gluon.nn.Dense(3, in_units=4))
net.initialize()
with mxcompat.frozen("*weight"):
    mod = net.to_module(data_shapes=[("data", (2, 4))])
    back = mod.to_gluon()
print("strict ok")
"""


PACKAGE = os.path.dirname(os.path.abspath(mxcompat.__file__))


def _ours(stderr):
    """The warnings printed (not raised: a ResourceWarning of a finalizer, any warning let
    through as "default") whose file is mxcompat's, and the exceptions Python ignored."""
    lines = stderr.splitlines()
    return [
        line
        for line in lines
        if re.match(r"\S+\.py:\d+: \w+Warning", line) and line.startswith(PACKAGE)
    ] + [line for line in lines if line.startswith("Exception ignored")]


@pytest.mark.parametrize(
    "argv",
    [
        ["script"],
        ["-m", "mxcompat", "patches"],
        ["-m", "mxcompat", "run", "-X", "dev", "-W", "error", "script"],
    ],
    ids=["features", "patches", "run"],
)
def test_mxcompat_warns_nothing_of_its_own_under_dev_mode_and_W_error(tmpdir, argv):
    script = tmpdir.join("strict.py")
    script.write(STRICT_SCRIPT)
    argv = [str(script) if a == "script" else a for a in argv]
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error"] + argv,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert _ours(proc.stderr) == [], proc.stderr[-5000:]
    if argv[-1] == str(script):
        assert proc.stdout.splitlines()[-1:] == ["strict ok"], proc.stdout[-3000:]
