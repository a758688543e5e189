"""``mxcompat matrix`` for real: examples/matrix_project (one test uses mx.np, which MXNet added
in 1.6) over MXNet 1.9.1 and 1.5.1 on Python 3.11, with real envs built by uv, then the cache
reused and rebuilt.  The envs are cached under $MXCOMPAT_TEST_CACHE/matrix between runs.

These run in one tox env (mx191, which installs uv): the envs they build do not depend on the
env running them, so one is enough."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from mxcompat import _envs, cli
from mxcompat._core import settings, versions
from mxcompat.cli.matrix import runner
from mxcompat.cli.matrix._common import FAILED, PASSED, SKIPPED
from mxcompat.cli.matrix.display import LiveDisplay, PlainDisplay
from mxcompat.cli.matrix.select import select
from tests.support.reference_env import cache_dir
from tests.support.repo import ROOT

EXAMPLE = os.path.join(ROOT, "examples", "matrix_project")

# The uv package of this env (tox gives it to mx191 only).  Not any uv on PATH: every tox env
# would then run these tests at once over the one cache, and --recreate in one would delete
# the env another is running in.
try:
    import uv as _uv

    _UV = _uv.find_uv_bin()
except Exception:
    _UV = None

needs_uv = pytest.mark.skipif(
    _UV is None or not os.path.exists(EXAMPLE),
    reason="needs uv and the source checkout (the mx191 tox env has both)",
)


def _python311():
    return _envs.find_python(_UV, "3.11")[0] if _UV else None


def run_matrix(args, cwd, env=None, timeout=600):
    full_env = settings.environ_without_ours()
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "mxcompat", "matrix"] + args,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    if _python311() is None:
        pytest.skip("needs a Python 3.11 interpreter uv can find")
    dest = str(tmp_path_factory.mktemp("matrix") / "project")
    shutil.copytree(EXAMPLE, dest)
    return dest


@pytest.fixture(scope="module")
def cache():
    return os.path.join(cache_dir(), "matrix")


def _common(cache):
    return ["--cache-dir", cache, "--mxcompat", ROOT, "--with", "pytest", "--timeout", "300"]


@pytest.fixture(scope="module")
def two_releases(project, cache, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    json_path, junit = str(out / "matrix.json"), str(out / "junit")
    proc = run_matrix(
        [
            "--mxnet",
            "1.5.1,1.9.1",
            "--python",
            "3.11",
            "-j",
            "2",
            "--json",
            json_path,
            "--junit",
            junit,
        ]
        + _common(cache)
        + ["--", "pytest", "-q", "-p", "no:cacheprovider", "tests/"],
        project,
    )
    with open(json_path) as f:
        report = json.load(f)
    return proc, report, junit


@needs_uv
def test_a_project_passes_on_191_and_fails_on_151_where_mx_np_is_missing(two_releases):
    proc, report, _ = two_releases
    assert proc.returncode == 1, proc.stdout + proc.stderr
    python = report["envs"][0]["python_version"]
    assert python.startswith("3.11.")
    table = proc.stdout.split("\n\n")[-1].splitlines()
    assert [line.split()[:5] for line in table] == [
        ["env", "MXNet", "Python", "NumPy", "result"],
        ["mx191", "1.9.1", python, "1.23.5", "passed"],
        ["mx151", "1.5.1.post0", python, "1.23.5", "failed"],
    ]
    assert table[2].endswith(
        "FAILED tests/test_mxdemo.py::test_mean_of_squares - AttributeError: module 'm..."
    )
    assert "first failing line" in table[0]
    # Plain progress (stdout is not a terminal): one line per state change.
    for name in ("mx191", "mx151"):
        assert "%s: installing" % name in proc.stdout.splitlines()
        assert "%s: running" % name in proc.stdout.splitlines()


@needs_uv
def test_the_json_report(two_releases, cache):
    _, report, _ = two_releases
    assert report["exit_code"] == 1
    assert report["command"] == ["pytest", "-q", "-p", "no:cacheprovider", "tests/"]
    assert report["mxcompat"] == ROOT
    by_name = {e["env"]: e for e in report["envs"]}
    assert sorted(by_name) == ["mx151", "mx191"]
    e191, e151 = by_name["mx191"], by_name["mx151"]
    assert (e191["result"], e191["returncode"], e191["first_failure"]) == ("passed", 0, None)
    assert (e151["result"], e151["returncode"]) == ("failed", 1)
    assert e151["install"] == ["pip install mxnet==1.5.1.post0 numpy==1.23.5"]
    assert (e151["numpy"], e151["numpy_version"]) == ("numpy==1.23.5", "1.23.5")
    for e in (e191, e151):
        assert e["path"].startswith(os.path.join(cache, e["env"] + "-"))
        assert e["time_s"] == pytest.approx(e["install_s"] + e["run_s"], abs=0.11)
        with open(e["log"]) as f:
            log = f.read()
        # The project's tests ran in the env with mxcompat's plugin: the label trap of
        # Module.load was handled, and the section says so.
        assert "legacy MXNet traps handled by mxcompat" in log
        assert "$ pytest -q -p no:cacheprovider tests/" in log
    with open(e151["log"]) as f:
        assert "AttributeError: module 'mxnet' has no attribute 'np'" in f.read()


@needs_uv
def test_the_junit_files(two_releases):
    _, _, junit = two_releases
    assert sorted(os.listdir(junit)) == ["mx151.xml", "mx191.xml"]
    case = ET.parse(os.path.join(junit, "mx191.xml")).getroot().find("testsuite/testcase")
    assert (case.get("name"), list(case)) == ("mx191", [])
    case = ET.parse(os.path.join(junit, "mx151.xml")).getroot().find("testsuite/testcase")
    (failure,) = list(case)
    assert failure.tag == "failure"
    assert failure.get("message").startswith("FAILED tests/test_mxdemo.py::test_mean_of_squares")
    assert "AttributeError: module 'mxnet' has no attribute 'np'" in failure.text


@needs_uv
def test_the_cache_is_reused_then_rebuilt_with_recreate(two_releases, project, cache, tmp_path):
    _, first, _ = two_releases
    path = {e["env"]: e["path"] for e in first["envs"]}["mx191"]
    marker = os.path.join(path, _envs.MARKER)
    built_at = os.stat(marker).st_mtime
    json_path = str(tmp_path / "again.json")
    args = (
        ["--env", "mx191", "--json", json_path]
        + _common(cache)
        + ["--", "pytest", "-q", "-p", "no:cacheprovider", "tests/"]
    )
    proc = run_matrix(args, project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(json_path) as f:
        (again,) = json.load(f)["envs"]
    assert (again["path"], again["reused"], again["result"]) == (path, True, "passed")
    assert os.stat(marker).st_mtime == built_at
    # Only mxcompat and the project were installed again.
    assert again["install_s"] < 60

    proc = run_matrix(["--recreate"] + args, project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(json_path) as f:
        (rebuilt,) = json.load(f)["envs"]
    assert (rebuilt["path"], rebuilt["reused"], rebuilt["result"]) == (path, False, "passed")
    assert os.stat(marker).st_mtime > built_at


def _without_python37():
    """PATH without any folder holding a python3.7, and no pyenv: Python 3.7 is missing."""
    path = [
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not os.path.exists(os.path.join(d, "python3.7"))
    ]
    return {"PATH": os.pathsep.join(path), "PYENV_ROOT": "/nonexistent"}


@needs_uv
def test_a_missing_interpreter_is_listed_skipped_or_with_strict_an_error(project, cache, tmp_path):
    env = _without_python37()
    proc = run_matrix(["--list", "--env", "mx131", "--env", "mx191"], project, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # The table's order: mx191 first.
    assert lines[0].split()[:7] == [
        "mx191",
        "MXNet",
        "1.9.1",
        "Python",
        "3.11",
        "numpy==1.23.5",
        "Python",
    ]
    assert lines[1].split() == ["pip", "install", "mxnet==1.9.1", "numpy==1.23.5"]
    assert lines[2].split()[:8] == [
        "mx131",
        "MXNet",
        "1.3.1",
        "Python",
        "3.7",
        "numpy==1.14.6",
        "cannot",
        "run",
    ]
    assert "here: no Python 3.7 interpreter found (uv: " in lines[2]
    assert lines[3].split() == ["pip", "install", "mxnet==1.3.1", "numpy==1.14.6"]

    json_path = str(tmp_path / "skipped.json")
    args = [
        "--env",
        "mx131",
        "--cache-dir",
        cache,
        "--json",
        json_path,
        "--no-install-project",
        "--",
        "python",
        "-c",
        "pass",
    ]
    proc = run_matrix(args, project, env=env)
    # Nothing ran: not a success.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with open(json_path) as f:
        (e,) = json.load(f)["envs"]
    assert e["result"] == "skipped"
    assert e["reason"].startswith("no Python 3.7 interpreter found")
    proc = run_matrix(["--strict"] + args, project, env=env)
    assert proc.returncode == 1
    with open(json_path) as f:
        (e,) = json.load(f)["envs"]
    assert (e["result"], e["first_failure"]) == ("error", e["reason"])


@needs_uv
@pytest.mark.parametrize(
    "args, message",
    [
        ([], "name the command to run after --"),
        (["--mxnet", "1.2", "--", "pytest"], "--mxnet: no supported combination has MXNet 1.2"),
        (["--env", "mx100", "--", "pytest"], "--env mx100: no such combination"),
        (["--python", "3.10", "--", "pytest"], "no supported combination matches the selection"),
        (["--jobs", "0", "--", "pytest"], "--jobs must be at least 1"),
        (["--numpy", "newest", "--", "pytest"], "argument --numpy: invalid choice: 'newest'"),
    ],
)
def test_usage_errors_exit_2(args, message, tmp_path):
    proc = run_matrix(args, str(tmp_path))
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


@needs_uv
def test_a_folder_without_a_project_is_a_usage_error(tmp_path):
    proc = run_matrix(["--env", "mx191", "--", "pytest"], str(tmp_path))
    assert proc.returncode == 2
    assert "no pyproject.toml or setup.py in %s" % tmp_path in proc.stderr


def test_selection():
    def names(*argv):
        return [c.name for c in select(cli.parser()[0].parse_args(["matrix"] + list(argv)))]

    assert names("--mxnet", "1.5") == [
        "mx151",
        "py313-mxnet151-numpy24",
        "py313-mxnet151-numpylatest",
        "py314-mxnet151-numpy25",
        "py315-mxnet151-numpy25",
    ]
    assert names("--mxnet", "1.5.1.post0", "--numpy", "pinned", "--python", "3.11,3.13") == [
        "mx151",
        "py313-mxnet151-numpy24",
    ]
    assert names("--python", "3.13", "--numpy", "latest") == [
        "py313-mxnet191-numpylatest",
        "py313-mxnet151-numpylatest",
    ]
    assert names("--modern", "--mxnet", "1.3.1") == [
        "py313-mxnet131-numpy21",
        "py314-mxnet131-numpy23",
        "py314-mxnet131-numpylatest",
        "py315-mxnet131-numpy25",
    ]
    assert names("--python", "3.7") == ["mx141", "mx131"]
    # Every release on 3.14 and on 3.15, and the newest NumPy with the newest release.
    for python in ("3.14", "3.15"):
        assert len(names("--python", python, "--numpy", "pinned")) == 7
        assert names("--python", python, "--numpy", "latest")[0] == (
            "py%s-mxnet191-numpylatest" % python.replace(".", "")
        )


@needs_uv
def test_python_314_and_315_rows_say_where_they_run_or_why_not(tmp_path):
    # Where uv finds no such interpreter (pyenv has none before 3.14), the row says so; in
    # .ci/newroot's Debian root, where /usr/bin has both, it names the interpreter.
    proc = run_matrix(["--list", "--python", "3.14,3.15"], str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if not line.startswith(" ")]
    expected = [c for c in versions.COMBINATIONS if c.python in ("3.14", "3.15")]
    assert [r[0] for r in rows] == [c.name for c in expected]
    for row, c in zip(rows, expected):
        found, _ = _envs.find_python(_UV, c.python)
        assert row[1:6] == ["MXNet", c.mxnet, "Python", c.python, c.numpy]
        if found:
            assert row[6] == "Python" and row[7].startswith(c.python + "."), row
        else:
            assert row[6:13] == ["cannot", "run", "here:", "no", "Python", c.python, "interpreter"]


def test_first_failure():
    out = "..F\n____ test_x ____\nE  assert 1 == 2\nFAILED t.py::test_x - assert 1 == 2\n1 failed\n"
    assert runner.first_failure(out) == "FAILED t.py::test_x - assert 1 == 2"
    assert runner.first_failure("Traceback\nValueError: bad\n\n") == "ValueError: bad"
    assert runner.first_failure("") is None


class _Terminal:
    """What the live display writes to, recorded."""

    def __init__(self):
        self.text = ""

    def write(self, text):
        self.text += text

    def flush(self):
        pass

    def isatty(self):
        return True


def test_the_live_display_redraws_one_line_per_env_in_place(monkeypatch):
    from mxcompat._core import versions

    # A line is cut at the terminal's width: a wide one, whatever runs the tests.
    monkeypatch.setenv("COLUMNS", "200")

    envs = [runner.Env(versions.by_name("mx191")), runner.Env(versions.by_name("mx131"))]
    envs[1].result, envs[1].reason = SKIPPED, "no Python 3.7 interpreter found"
    envs[1].first_failure = envs[1].reason
    out = _Terminal()
    display = LiveDisplay(envs, out)
    display.start()
    envs[0].state, envs[0].started = "installing", 0.0
    envs[0].result, envs[0].install_s, envs[0].run_s = PASSED, 2.0, 3.5
    display.update(envs[0])
    display.stop()
    frames = out.text.split("\x1b[2F")
    assert len(frames) >= 3  # drawn, then redrawn in place (two lines up) at least twice
    assert frames[0] == (
        "\x1b[2Kmx191                        waiting       0.0 s\n"
        "\x1b[2Kmx131                        skipped       0.0 s  "
        "no Python 3.7 interpreter found\n"
    )
    assert frames[-1] == (
        "\x1b[2Kmx191                        passed        5.5 s\n"
        "\x1b[2Kmx131                        skipped       0.0 s  "
        "no Python 3.7 interpreter found\n"
    )


def test_the_plain_display_prints_one_line_per_change():
    from mxcompat._core import versions

    env = runner.Env(versions.by_name("mx151"))
    out = _Terminal()
    display = PlainDisplay([env], out)
    env.state = "installing"
    display.update(env)
    env.result, env.started, env.install_s, env.run_s = FAILED, 0.0, 1.0, 2.25
    env.first_failure = "FAILED t.py::test_x"
    display.update(env)
    assert out.text == "mx151: installing\nmx151: failed (3.2 s): FAILED t.py::test_x\n"
