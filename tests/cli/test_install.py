"""``mxcompat install``: which install lines it picks for an interpreter, its refusals, and the
overrides file shipped for ``uv pip install --overrides``.  The real installs (fresh venvs on
Python 3.13, and 3.14/3.15 where they exist, from the registry) are
tests/packaging/test_install.py's."""

import os
import shlex
import sys

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

from mxcompat._core import versions
from mxcompat.cli import install
from tests.support.processes import mxcompat_cmd


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
    assert [s.split(" install --disable-pip-version-check ")[1] for s in steps[:-1]] == [
        " ".join(shlex.quote(a) for a in step) for step in expected
    ]
    assert steps[-1] == "+ then the nvidia-*-cu11 packages its libmxnet.so needs (DT_NEEDED)"


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
