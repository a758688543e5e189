"""The built distributions, installed as a user installs them, never the checkout: each test
makes a fresh venv, installs from the registry (uv's and pip's caches under
$MXCOMPAT_TEST_CACHE keep a second run quick), and runs mxcompat there.

Run by the tox env ``packaging`` (which builds the sdist and wheel first and names their
folder in $MXCOMPAT_DIST); elsewhere the distributions are built here.  Pythons are found as
mxcompat/_envs.py finds them (PATH, pyenv's version folders).  A missing Python 3.7-3.13 fails
where every env is required (root, or MXCOMPAT_CI_REQUIRE_ALL=1, as in .ci/run) and is skipped,
saying so, elsewhere.  The Python 3.14/3.15 installs run where uv finds those (the Debian
unstable root of .ci/newroot: `-k "py314 or py315"` there) and are skipped elsewhere.
"""

import glob
import json
import os
import subprocess

import pytest

import mxcompat
from mxcompat import _envs
from mxcompat._core import settings
from mxcompat.cli import install
from tests.support.repo import ROOT

# Every step is bounded: a hung download fails the test instead of the CI job.
STEP_TIMEOUT = 600
# The Pythons of the one-command installs.
ONE_COMMAND_PYTHONS = ["3.13", "3.14", "3.15"]
OPTIONAL_PYTHONS = {"3.14", "3.15"}
# .ci/run's rule: CI (root) has every Python of the host; a contributor's run is green on the
# Pythons their machine has.
REQUIRE_ALL = os.environ.get("MXCOMPAT_CI_REQUIRE_ALL", "1" if os.geteuid() == 0 else "0") == "1"


def _py(version):
    """The test id of a Python: py314 (what `-k` can name)."""
    return "py" + version.replace(".", "")


def _uv():
    found = _envs.find_uv(required=False)
    if found is None:
        pytest.skip("uv is not installed in this env (the tox env packaging has it)")
    return found


def _env(tmp_path):
    env = settings.environ_without_ours(keep=(settings.TEST_CACHE,))
    for name in [k for k in env if k.startswith(("PYTHON", "VIRTUAL_ENV"))]:
        del env[name]
    cache = settings.path(settings.TEST_CACHE) or str(tmp_path / "cache")
    env["UV_CACHE_DIR"] = os.path.join(cache, "uv")
    env["PIP_CACHE_DIR"] = os.path.join(cache, "pip")
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["_CWD"] = str(tmp_path)
    return env


def _run(argv, env, cwd=None):
    # Never the checkout's folder: `python -c "import mxcompat"` there imports the checkout.
    cwd = cwd or env["_CWD"]
    proc = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT
    )
    assert proc.returncode == 0, "%s\n%s\n%s" % (argv, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The folder with the sdist and the wheel of this checkout."""
    given = os.environ.get("MXCOMPAT_DIST")
    if given:
        return given
    out = str(tmp_path_factory.mktemp("dist"))
    uv = _uv()
    _run([uv, "build", "--out-dir", out, ROOT], dict(os.environ, _CWD=out))
    return out


def _one(dist, pattern):
    (found,) = glob.glob(os.path.join(dist, pattern))
    return found


def _python(uv, version):
    found, why = _envs.find_python(uv, version)
    if found is None and version in OPTIONAL_PYTHONS:
        pytest.skip("no Python %s here (uv finds none; .ci/newroot's Debian root has it)" % version)
    if found is None and not REQUIRE_ALL:
        pytest.skip("%s (MXCOMPAT_CI_REQUIRE_ALL=1 makes this an error)" % why)
    if found is None:
        pytest.fail(why)
    return found


def _proves_mxnet_works(venv, env, numpy_major):
    check = subprocess.run(
        [os.path.join(venv, "bin", "mxcompat"), "check", "--json"],
        env=env,
        cwd=env["_CWD"],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    report = json.loads(check.stdout)
    assert report["versions"]["mxnet"] == "1.9.1"
    probe = _run(
        [
            os.path.join(venv, "bin", "python"),
            "-c",
            "import mxcompat, mxnet as mx, numpy as np; "
            "print(mxcompat.__file__.startswith(%r), mx.__version__, np.__version__, "
            "(mx.nd.ones((2,)) * 3).asnumpy().tolist())" % venv,
        ],
        env,
    )
    ours, mxnet, numpy, values = probe.stdout.split(" ", 3)
    assert ours == "True"  # the installed wheel's mxcompat, not a checkout
    assert (mxnet, numpy.split(".")[0], values.strip()) == ("1.9.1", numpy_major, "[3.0, 3.0]")
    return report


@pytest.mark.parametrize("python_version", ONE_COMMAND_PYTHONS, ids=_py)
def test_pip_one_command_from_the_built_wheel(tmp_path, dist, python_version):
    """The plain-pip route: the wheel, then `mxcompat install mxnet==1.9.1` in a venv made by
    Python's own venv module."""
    env = _env(tmp_path)
    python = _python(_uv(), python_version)
    venv = str(tmp_path / "venv")
    _run([python, "-m", "venv", venv], env)
    _run([os.path.join(venv, "bin", "pip"), "install", _one(dist, "*.whl")], env)
    out = _run([os.path.join(venv, "bin", "mxcompat"), "install", "mxnet==1.9.1"], env).stdout
    numpy = install.choose("mxnet==1.9.1", python_version).numpy
    assert out.splitlines()[0].startswith(
        "mxcompat install: MXNet 1.9.1 with %s on Python %s." % (numpy, python_version)
    )
    assert "`pip check` will say mxnet 1.9.1 requires numpy>1.16.0,<2.0.0" in out
    report = _proves_mxnet_works(venv, env, "2")
    assert report["versions"]["numpy"] == numpy[len("numpy==") :]
    shipped = _run(
        [
            os.path.join(venv, "bin", "python"),
            "-c",
            "import mxcompat.cli.install as i; "
            "print(open(i.shipped_overrides_path('1.9.1')).read())",
        ],
        env,
    )
    assert '%s; python_version == "%s"' % (numpy, python_version) in shipped.stdout
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    with open(os.path.join(ROOT, "docs", "guide", "numpy2.md")) as f:
        install_section = f.read()
    # The README's first command (and the docs' getting started) and the NumPy 2 guide's
    # install section say what this test ran.
    assert ".venv/bin/pip install . && .venv/bin/mxcompat install mxnet==1.9.1 && " in readme
    with open(os.path.join(ROOT, "docs", "getting-started.md")) as f:
        assert ".venv/bin/pip install . && .venv/bin/mxcompat install mxnet==1.9.1 && " in f.read()
    assert "pip install . && mxcompat install mxnet==1.9.1\n" in install_section


@pytest.mark.parametrize("python_version", ONE_COMMAND_PYTHONS, ids=_py)
def test_uv_one_command_as_the_docs_say(tmp_path, dist, python_version):
    """The uv route, the command of the NumPy 2 guide's install section, from the checkout:
    `uv pip install . mxnet==1.9.1 --overrides mxcompat/cli/install/mxnet-1.9.1-overrides.txt`
    (here with the built wheel in place of `.`)."""
    env = _env(tmp_path)
    uv = _uv()
    venv = str(tmp_path / "venv")
    _run([uv, "venv", "--python", _python(uv, python_version), venv], env)
    env["VIRTUAL_ENV"] = venv
    overrides = os.path.join("mxcompat", "cli", "install", install.SHIPPED_OVERRIDES["1.9.1"])
    assert os.path.isfile(os.path.join(ROOT, overrides))
    _run(
        [uv, "pip", "install", _one(dist, "*.whl"), "mxnet==1.9.1", "--overrides", overrides],
        env,
        cwd=ROOT,
    )
    report = _proves_mxnet_works(venv, env, "2")
    # The shipped file's line for this Python, not the wheel's own pin.
    expected = install.choose("mxnet==1.9.1", python_version).numpy
    assert report["versions"]["numpy"] == expected[len("numpy==") :]
    with open(os.path.join(ROOT, "docs", "guide", "numpy2.md")) as f:
        install_section = f.read()
    assert "uv pip install . mxnet==1.9.1 --overrides %s" % overrides in install_section


def test_the_sdist_builds_and_installs_on_python37(tmp_path, dist):
    """The licence declaration and the build backend's pin hold on the oldest Python: uv
    builds the wheel from the sdist there (setuptools 68, the newest for 3.7)."""
    env = _env(tmp_path)
    uv = _uv()
    venv = str(tmp_path / "venv")
    _run([uv, "venv", "--python", _python(uv, "3.7"), venv], env)
    env["VIRTUAL_ENV"] = venv
    _run([uv, "pip", "install", _one(dist, "*.tar.gz")], env)
    out = _run([os.path.join(venv, "bin", "mxcompat"), "--version"], env).stdout
    assert out.strip() == "mxcompat " + mxcompat.__version__
    probe = _run(
        [
            os.path.join(venv, "bin", "python"),
            "-c",
            "import glob, os, sys, mxcompat; here = os.path.dirname(mxcompat.__file__); "
            "meta = glob.glob(os.path.join(here, '..', 'mxcompat-*.dist-info', 'METADATA'))[0]; "
            "print(sys.version_info[:2] == (3, 7), os.path.isfile(os.path.join(here, 'py.typed')),"
            " [l for l in open(meta).read().splitlines() if l.startswith('License:')])",
        ],
        env,
    )
    assert probe.stdout.strip() == "True True ['License: Apache-2.0']"


@pytest.mark.parametrize("python_version", ONE_COMMAND_PYTHONS, ids=_py)
def test_mxcompat_install_uv_in_a_venv_without_pip(tmp_path, dist, python_version):
    """uv's venvs have no pip: `mxcompat install` says so, and `--uv` installs there (here with
    the newest NumPy, the table's unpinned row)."""
    env = _env(tmp_path)
    uv = _uv()
    venv = str(tmp_path / "venv")
    _run([uv, "venv", "--python", _python(uv, python_version), venv], env)
    env["VIRTUAL_ENV"] = venv
    _run([uv, "pip", "install", _one(dist, "*.whl")], env)
    mxcompat_bin = os.path.join(venv, "bin", "mxcompat")
    refused = subprocess.run(
        [mxcompat_bin, "install", "mxnet==1.9.1"],
        env=env,
        cwd=env["_CWD"],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert (refused.returncode, refused.stderr) == (
        2,
        "mxcompat install: this environment has no pip (uv makes venvs without one): "
        "mxcompat install --uv mxnet==1.9.1, or python -m ensurepip first\n",
    )
    out = _run([mxcompat_bin, "install", "--uv", "--numpy", "latest", "mxnet==1.9.1"], env).stdout
    assert out.splitlines()[0].startswith("mxcompat install: MXNet 1.9.1 with numpy>=2 on Python")
    _proves_mxnet_works(venv, env, "2")


@pytest.mark.parametrize("python", ["3.8", "3.9", "3.10", "3.12"])
def test_the_wheel_installs_and_runs_on_every_classified_python(tmp_path, dist, python):
    """The classifiers name Python 3.7-3.15: the Pythons the MXNet tests do not run on (and
    3.12) at least install the wheel, import mxcompat and pick their install lines."""
    env = _env(tmp_path)
    uv = _uv()
    venv = str(tmp_path / "venv")
    _run([uv, "venv", "--python", _python(uv, python), venv], env)
    env["VIRTUAL_ENV"] = venv
    _run([uv, "pip", "install", _one(dist, "*.whl")], env)
    out = _run([os.path.join(venv, "bin", "mxcompat"), "--version"], env).stdout
    assert out.strip() == "mxcompat " + mxcompat.__version__
    plan = _run([os.path.join(venv, "bin", "mxcompat"), "install", "--dry-run"], env).stdout
    expected = install.choose("mxnet", python)
    assert plan.splitlines()[0].startswith(
        "mxcompat install: MXNet %s with %s on Python %s" % (expected.mxnet, expected.numpy, python)
    )
