"""``mxcompat install``: which install lines it picks for an interpreter, its refusals, and the
overrides file shipped for ``uv pip install --overrides``.  The real installs of the CPU wheel
(fresh venvs on Python 3.13, and 3.14/3.15 where they exist, from the registry) are
tests/packaging/test_install.py's; those of a CUDA wheel, into fresh venvs on Python 3.11 and
3.13, and what a plain ``import mxnet`` does after them, are here (the gpu-* env).  The .pth's
own behaviour is tests/cuda/test_plain_import.py's."""

import os
import shlex
import subprocess
import sys

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

from mxcompat import _envs
from mxcompat._core import settings, versions
from mxcompat.cli import install
from mxcompat.cuda import plain_import
from tests.support.processes import mxcompat_cmd
from tests.support.repo import ROOT
from tests.support.stack import CUDA_BUILD


def test_it_picks_the_table_row_of_the_python():
    assert install.choose("mxnet==1.9.1", "3.13").name == "py313-mxnet191-numpy24"
    assert install.choose("1.9.1", "3.13", latest=True).name == "py313-mxnet191-numpylatest"
    assert install.choose("mxnet==1.9.1", "3.12").name == "py312-mxnet191-numpy126"
    assert install.choose("mxnet", "3.11").name == "mx191"  # the newest release there
    assert install.choose("1.5.1", "3.13").mxnet == "1.5.1.post0"
    assert install.choose("mxnet==1.3.1", "3.7").name == "mx131"
    assert install.choose("mxnet==1.9.1", "3.14").name == "py314-mxnet191-numpy25"
    assert install.choose("1.9.1", "3.14", latest=True).name == "py314-mxnet191-numpylatest"
    assert install.choose("mxnet==1.3.1", "3.14").numpy == "numpy==2.3.2"  # the first cp314
    assert install.choose("mxnet==1.6.0", "3.15").name == "py315-mxnet160-numpy25"
    assert install.choose("mxnet", "3.15").name == "py315-mxnet191-numpy25"


@pytest.mark.parametrize("python", ["3.14", "3.15"])
def test_every_release_installs_on_python_314_and_315(python):
    releases = sorted(set(c.mxnet for c in versions.COMBINATIONS))
    for mxnet in releases:
        c = install.choose("mxnet==" + mxnet, python)
        # No NumPy < 2 has wheels there: always --no-deps beside a NumPy 2 that has.
        assert (c.mxnet, c.python, c.no_deps, c.numpy[:8]) == (mxnet, python, True, "numpy==2")


@pytest.mark.parametrize(
    "spec, python, message",
    [
        (
            "mxnet==1.9.1",
            "3.16",
            "no tested install on Python 3.16; mxcompat's table has it on Python 3.11, 3.12, 3.13, "
            "3.14, 3.15$",
        ),
        ("mxnet==2.0.0", "3.13", "no MXNet 2.0.0 in mxcompat's table"),
        ("mxnet>=1.9", "3.13", "name one release, as mxnet==1.9.1"),
        # Newer than every row on MXNet's own pins: numpy<2 (or <1.15) has no wheel there.
        ("mxnet==1.6.0", "3.13", "has it on Python 3.11, 3.14, 3.15$"),
        ("mxnet==1.4.1", "3.8", "has it on Python 3.7, 3.13, 3.14, 3.15$"),
    ],
)
def test_what_the_table_lacks_is_refused(spec, python, message):
    with pytest.raises(install.UsageError, match=message.replace("(", r"\(")):
        install.choose(spec, python)


def test_between_the_tables_pythons_mxnets_own_requirements():
    c = install.choose("mxnet==1.9.1", "3.10")
    assert (c.name, c.install_steps()) == (None, [["mxnet==1.9.1", "numpy>1.16.0,<2.0.0"]])
    assert install.choose("mxnet", "3.9").mxnet == "1.9.1"


def test_latest_numpy_only_where_tested():
    with pytest.raises(install.UsageError, match="tested with numpy==1.26.4 only"):
        install.choose("mxnet==1.9.1", "3.12", latest=True)


def test_the_commands_are_the_table_lines():
    c = versions.by_name("py313-mxnet191-numpy24")
    pip = ["py", "-m", "pip", "install", "--disable-pip-version-check"]
    assert install.commands(c, "py", None, "o.txt") == [
        pip + ["--no-deps", "mxnet==1.9.1"],
        pip + ["numpy==2.4.6", "requests<3", "graphviz==0.8.4"],
    ]
    assert install.commands(c, "py", "uv", "o.txt") == [
        ["uv", "pip", "install", "--python", "py", "mxnet==1.9.1", "--overrides", "o.txt"]
    ]


def test_dry_run_prints_the_commands_for_this_interpreter():
    here = "%d.%d" % __import__("sys").version_info[:2]
    proc = mxcompat_cmd("install", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    newest = install.choose("mxnet", here)
    assert lines[0].startswith("mxcompat install: MXNet %s with %s" % (newest.mxnet, newest.numpy))
    assert [
        line.split(" -m pip install --disable-pip-version-check ")[1] for line in lines[1:]
    ] == [
        " ".join("'%s'" % a if "<" in a or ">" in a else a for a in step)
        for step in newest.install_steps()
    ]


def test_a_usage_error_is_one_line_and_exit_2():
    proc = mxcompat_cmd("install", "--dry-run", "mxnet==0.9")
    assert proc.returncode == 2
    assert proc.stderr.startswith("mxcompat install: no MXNet 0.9 in mxcompat's table")
    assert len(proc.stderr.splitlines()) == 1


def test_the_shipped_overrides_file_is_the_table():
    for mxnet in install.SHIPPED_OVERRIDES:
        with open(install.shipped_overrides_path(mxnet)) as f:
            assert f.read() == install.overrides_text(mxnet)


@pytest.mark.parametrize("mxnet", sorted(set(c.mxnet for c in versions.COMBINATIONS)))
def test_overrides_give_every_python_exactly_one_numpy(mxnet):
    # uv drops a requirement whose override's marker is false: no Python may be left without.
    requirements = [Requirement(line) for line in versions.overrides(mxnet)]
    assert {r.name for r in requirements} == {"numpy"}
    for minor in range(6, 17):
        env = dict(default_environment(), python_version="3.%d" % minor)
        chosen = [str(r.specifier) for r in requirements if r.marker.evaluate(env)]
        assert len(chosen) == 1, (mxnet, minor, chosen)
        rows = [c for c in versions.COMBINATIONS if c.mxnet == mxnet and c.python == "3.%d" % minor]
        pinned = [c.numpy for c in rows if not c.latest]
        expected = pinned[0] if pinned else versions.wheel_numpy(mxnet)
        assert str(Requirement(expected).specifier) == chosen[0], (mxnet, minor)


def test_the_overrides_file_ships_in_the_package():
    assert os.path.isfile(install.shipped_overrides_path("1.9.1"))


def test_a_cuda_wheel_is_installed_on_the_table_lines_then_its_libraries():
    c = install.choose("mxnet==1.9.1", "%d.%d" % sys.version_info[:2])
    proc = mxcompat_cmd("install", "--dry-run", "mxnet-cu117==1.9.1")
    assert proc.returncode == 0, proc.stderr
    steps = [s for s in proc.stdout.splitlines() if s.startswith("+ ")]
    expected = [
        ["mxnet-cu117==1.9.1" if a == "mxnet==1.9.1" else a for a in step]
        for step in c.install_steps()
    ]
    assert [s.split(" install --disable-pip-version-check ")[1] for s in steps[:-2]] == [
        " ".join(shlex.quote(a) for a in step) for step in expected
    ]
    assert steps[-2:] == [
        "+ then the nvidia-*-cu11 packages its libmxnet.so needs (DT_NEEDED)",
        "+ then %s beside mxnet: a plain `import mxnet` loads them too" % plain_import.NAME,
    ]


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "mxnet-cu102==1.9.1",
            "mxnet-cu102 is built for CUDA 10.2, whose libraries NVIDIA publishes as no pip "
            "package (only CUDA 11's: nvidia-*-cu11), and today's hosts do not have it; the "
            "nearest CUDA 11 wheel of 1.9.1 is mxnet-cu110==1.9.1",
        ),
        (
            "mxnet-cu92==1.9.1",
            "mxnet-cu92 is built for CUDA 9.2, whose libraries NVIDIA publishes as no pip "
            "package (only CUDA 11's: nvidia-*-cu11), and today's hosts do not have it; the "
            "nearest CUDA 11 wheel of 1.9.1 is mxnet-cu110==1.9.1",
        ),
        (
            "mxnet-mkl==1.6.0",
            "'mxnet-mkl': mxcompat installs mxnet or a CUDA wheel mxnet-cuXYZ (mxnet-cu117==1.9.1)",
        ),
    ],
)
def test_cuda_9_and_10_wheels_are_refused_naming_the_nearest_cuda_11_wheel(spec, message):
    proc = mxcompat_cmd("install", "--dry-run", spec)
    assert proc.returncode == 2
    assert proc.stderr == "mxcompat install: %s\n" % message


def test_a_release_without_cuda_11_wheels_is_refused_naming_the_newest():
    with pytest.raises(install.UsageError) as raised:
        install.cuda.refuse_old_cuda("mxnet-cu101", (10, 1), "1.5.1.post0")
    assert str(raised.value).endswith(
        "no release before 1.8 has a CUDA 11 wheel; the newest is mxnet-cu117==1.9.1"
    )


# --- mxnet-cu117 into fresh venvs, as a user installs it (the gpu-* env: uv keeps the 2.4 GB of
# downloads in its cache; the venvs link to it) -------------------------------------------------

_PLAIN = """
import sys
try:
    import mxnet as mx
    print((mx.nd.ones((2, 3)) * 2).asnumpy().tolist(), mx.context.num_gpus())
except Exception as exc:
    print("%s: %s" % (type(exc).__name__, exc))
print(sorted(m for m in sys.modules if m.split(".")[0] in ("mxcompat", "wrapt")))
with open("/proc/self/maps") as f:
    print("nvidia/cudnn/lib/libcudnn.so.8" in f.read())
"""


@pytest.fixture(scope="module")
def mxcompat_wheel(tmp_path_factory):
    """This checkout's wheel, built once."""
    uv = _envs.find_uv(required=False)
    if uv is None:
        pytest.fail("the gpu env installs uv")
    out = str(tmp_path_factory.mktemp("wheel"))
    built = subprocess.run(
        [uv, "build", "--wheel", "--out-dir", out, ROOT], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = [os.path.join(out, n) for n in os.listdir(out) if n.endswith(".whl")]
    return uv, wheel


def _fresh_cuda_venv(tmp_path, uv, wheel, python_version):
    """A venv of Python ``python_version`` with this checkout's wheel, then only
    ``mxcompat install --uv mxnet-cu117==1.9.1``: its Python, that command's output, the env."""
    python, why = _envs.find_python(uv, python_version)
    if python is None:
        pytest.fail(why)
    env = settings.environ_without_ours()
    for name in [k for k in env if k.startswith(("PYTHON", "VIRTUAL_ENV"))]:
        del env[name]
    env.update(UV_PYTHON_DOWNLOADS="never", PYTHON_COLORS="0", OMP_NUM_THREADS="1")
    env["PATH"] = os.path.dirname(uv) + os.pathsep + env.get("PATH", "")
    venv = str(tmp_path / "venv")

    def run(*argv):
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=900
        )
        assert done.returncode == 0, "%s\n%s%s" % (argv, done.stdout, done.stderr)
        return done

    run(uv, "venv", "--python", python, venv)
    venv_python = os.path.join(venv, "bin", "python")
    run(uv, "pip", "install", "--python", venv_python, wheel)
    out = run(os.path.join(venv, "bin", "mxcompat"), "install", "--uv", "mxnet-cu117==1.9.1")
    return venv_python, out.stdout, env


def _site(python, env):
    return subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.strip()


@pytest.mark.skipif(
    not CUDA_BUILD, reason="installs mxnet-cu117 (2.4 GB from uv's cache): the gpu-* env only"
)
@pytest.mark.parametrize(
    "python_version", ["3.11", "3.13"], ids=lambda v: "py" + v.replace(".", "")
)
def test_a_plain_import_mxnet_after_installing_a_cuda_wheel(
    tmp_path, mxcompat_wheel, python_version
):
    uv, wheel = mxcompat_wheel
    python, said, env = _fresh_cuda_venv(tmp_path, uv, wheel, python_version)
    pth = os.path.join(_site(python, env), plain_import.NAME)
    with open(pth) as f:
        assert f.read() == plain_import.TEXT
    # The file is named in the last lines (before the one that says what next).
    lines = said.splitlines()
    assert lines[-1] == "Now: mxcompat check (and `import mxcompat` before `import mxnet`)"
    named = (
        "A plain `import mxnet` here loads the CUDA libraries from the nvidia-*-cu11 packages "
        "too (and on a Python or NumPy newer than MXNet's, the NumPy names and distutils it "
        "imports; nothing else of mxcompat), by one file: %s (delete it to undo)" % pth
    )

    def plain():
        done = subprocess.run(
            [python, "-c", _PLAIN], capture_output=True, text=True, env=env, cwd=str(tmp_path)
        )
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return done.stdout.splitlines()

    # No CUDA here: the libraries come from the venv's nvidia-*-cu11 packages, and nothing else
    # of mxcompat is loaded.
    outcome, modules, from_pip = plain()
    assert (modules, from_pip) == ("[]", "True")
    # Python 3.11 is MXNet's own stack (NumPy 1.23.5); on 3.13 NumPy 2 removed names MXNet's
    # import reads and distutils is gone: the file brings those too, so MXNet computes on
    # mx.cpu() in both.
    assert lines[-2] == named + "."
    assert outcome == "[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]] 0"

    # Removed as the GPU guide says: a plain import is MXNet's own again, the linker's error.
    os.rename(pth, pth + ".removed")
    outcome, modules, from_pip = plain()
    assert outcome.startswith("OSError: lib") and "cannot open shared object file" in outcome
    assert from_pip == "False"
    # mxcompat uninstalled, the file left behind: it does nothing and says nothing.
    os.rename(pth + ".removed", pth)
    subprocess.run(
        [uv, "pip", "uninstall", "--python", python, "mxcompat"],
        capture_output=True,
        env=env,
        check=True,
    )
    outcome, modules, from_pip = plain()
    assert outcome.startswith("OSError: lib") and "cannot open shared object file" in outcome
    assert os.path.isfile(pth)
