"""The supported-combinations table (mxcompat/_core/versions.py) against what tox.ini runs and
what the docs' "Supported versions" page shows (rendered from it at build time, so it can only
drift through the renderer, which is checked here; docs/test_built.py reads the built page)."""

import configparser
import os
import re

import pytest

from mxcompat._core import versions
from tests.support.repo import ROOT

TOX_INI = os.path.join(ROOT, "tox.ini")
README = os.path.join(ROOT, "README.md")
PYPROJECT = os.path.join(ROOT, "pyproject.toml")

# What tox adds to a combination for mxcompat's own tests, beside the `test` extra: OpenCV
# (mx.recordio.pack_img), pip (the --no-deps install), uv (test_matrix), onnx and onnxruntime
# (mxcompat's onnx extra), SciPy (the scipy_chisquare patch's tests).
TEST_ONLY = {
    "opencv-python-headless",
    "pip",
    "uv",
    "onnx",
    "onnxruntime",
    # mx.test_utils' chi-square checks (tests/patches/test_scipy_chisquare.py).
    "scipy==1.5.4",
    "scipy==1.14.1",
    "scipy",
}
# tox envs that are a combination plus one factor testing mxcompat itself (the wrapt floor,
# SciPy beside MXNet); such an env tests its combination, which then needs no env of its own.
VARIANT_FACTORS = {"wrapt114": {"wrapt==1.14.1"}, "scipy": {"scipy"}}
NOT_COMBINATIONS = {
    "bench",
    "packaging",
    "typing",
    "docs",
    "docs-py313",
    "gpu-py313-mxnet191-cu117",
    "py311-nomx",
}
# Envs that run one file on a combination, in a section of their own (Horovod): hvd-<combination>.
# (Horovod, hvd-; the torch extra, torch-<mxNN> on the mxNN combination; the model zoos, zoo-.)
ON_A_COMBINATION = ("hvd-", "torch-", "zoo-")
# No host interpreter for these: their combinations run in the Debian unstable root of
# .ci/newroot (tests/packaging/test_install.py there), and need no tox env; those tox.ini has
# are checked like any other, and are the label `root` that .ci/run runs there.
OUTSIDE_TOX_PYTHONS = {"3.14", "3.15"}

needs_checkout = pytest.mark.skipif(
    not os.path.exists(TOX_INI), reason="needs the source checkout (tox.ini)"
)


def _factor_lines(text, env, substitute=True):
    """The lines of a tox setting that apply to ``env``, with tox's factor conditions
    (``a,b: x`` when the env has factor a or b; ``a-b: x`` when it has both; ``a-!b: x`` when
    it has a and not b), and the env's own set_env values put in for ``{env:NAME}`` (unless
    ``substitute`` is false)."""
    factors = set(env.split("-"))
    lines = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.match(r"^([\w,\-!]+):\s+(.*)$", line)
        if match is None:
            lines.append(line)
            continue
        condition, value = match.groups()
        if any(
            all(
                (f[1:] not in factors) if f[0] == "!" else (f in factors)
                for f in alternative.split("-")
            )
            for alternative in condition.split(",")
        ):
            lines.append(value)
    if not substitute:
        return lines
    values = _set_env(env)
    return [re.sub(r"\{env:(\w+)\}", lambda m: values[m.group(1)], line) for line in lines]


def _set_env(env):
    """The ``set_env`` of ``env``: one block in [testenv], which every env inherits."""
    lines = _factor_lines(_tox()["testenv"]["set_env"], env, substitute=False)
    return dict((k.strip(), v.strip()) for k, v in (line.split("=", 1) for line in lines))


def _tox():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(TOX_INI)
    return parser


def _split(text):
    return [e.strip() for e in re.split(r"[,\s]+", text) if e.strip()]


def _tox_envs(tox):
    """Every env of tox.ini: its labels list each once (there is no env_list)."""
    return [
        e
        for line in tox["tox"]["labels"].strip().splitlines()
        for e in _split(line.split("=", 1)[1])
    ]


def _base_python(env):
    """The env's interpreter: [testenv]'s base_python by factor, else tox's own pyXY rule."""
    found = _factor_lines(_tox()["testenv"]["base_python"], env)
    if found:
        (python,) = found
        return python
    (factor,) = [f for f in env.split("-") if re.match(r"^py3\d+$", f)]
    return "python3." + factor[3:]


def _combination_of(env):
    factors = env.split("-")
    variant = set()
    for factor, deps in VARIANT_FACTORS.items():
        if factor in factors:
            factors.remove(factor)
            variant |= deps
    return versions.by_name("-".join(factors)), variant


@needs_checkout
def test_every_combination_is_a_tox_env_and_every_tox_env_a_combination():
    envs = _tox_envs(_tox())
    names = [c.name for c in versions.COMBINATIONS]
    assert sorted(set(names)) == sorted(names)  # no name twice
    tested = set()
    for env in envs:
        if env.startswith(ON_A_COMBINATION):
            _combination_of(env.split("-", 1)[1])
        elif env not in NOT_COMBINATIONS:
            tested.add(_combination_of(env)[0].name)  # KeyError: a tox env the table lacks
    missing = [
        c.name
        for c in versions.COMBINATIONS
        if c.name not in tested and c.python not in OUTSIDE_TOX_PYTHONS
    ]
    assert missing == []


@needs_checkout
def test_every_tox_env_is_in_one_label_and_the_root_label_holds_the_root_pythons():
    tox = _tox()
    labels = {}
    for line in tox["tox"]["labels"].strip().splitlines():
        name, envs = line.split("=", 1)
        labels[name.strip()] = _split(envs)
    listed = [e for envs in labels.values() for e in envs]
    assert sorted(listed) == sorted(set(listed))  # no env in two labels
    assert set(_tox_envs(tox)) <= set(listed)
    assert sorted(labels["root"]) == sorted(
        e
        for e in listed
        if e not in NOT_COMBINATIONS
        and not e.startswith(ON_A_COMBINATION)
        and not e.startswith("docs")
        and _combination_of(e)[0].python in OUTSIDE_TOX_PYTHONS
    )


@needs_checkout
def test_ci_runs_every_label():
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        (line,) = re.findall(r"^ +read -r -a envs <<<\"(\$\(label_envs .*)\"$", f.read(), re.M)
    assert " bench " in line  # the benchmarks run too, between the labels
    run = " ".join(re.findall(r"\$\(label_envs ([\w ]+)\)", line))
    labels = [line.split("=", 1)[0].strip() for line in _tox()["tox"]["labels"].splitlines()]
    assert sorted(run.split()) == sorted(label for label in labels if label)


@needs_checkout
def test_the_envs_install_the_test_extra_and_pytest_options_live_in_pyproject():
    tox = _tox()
    assert tox["testenv"]["extras"].strip() == "test"
    with open(PYPROJECT) as f:
        pyproject = f.read()
    assert re.search(r'^addopts = \[[^\]]*"-rfEs"', pyproject, re.M)
    for name in tox.sections():
        commands = tox[name].get("commands", "")
        assert "-rfEs" not in commands and "cacheprovider" not in commands, name


@needs_checkout
@pytest.mark.parametrize(
    "env",
    [
        e
        for e in _tox_envs(_tox())
        if e not in NOT_COMBINATIONS and not e.startswith(ON_A_COMBINATION)
    ]
    if os.path.exists(TOX_INI)
    else [],
)
def test_tox_installs_each_combination_as_the_table_says(env):
    tox = _tox()["testenv"]
    combination, variant = _combination_of(env)
    assert _base_python(env) == "python" + combination.python
    deps = set(_factor_lines(tox["deps"], env)) - (TEST_ONLY - variant)
    pre = _factor_lines(tox.get("commands_pre", ""), env)
    installed = set(deps - variant)
    steps = combination.install_steps()
    if combination.no_deps:
        # tox installs deps first, then MXNet without its pins (commands_pre).
        assert pre == [_no_deps_line(steps)]
        assert installed == set(steps[1])
    else:
        assert pre == []
        assert installed == set(steps[0])
    assert variant <= deps


@needs_checkout
@pytest.mark.parametrize(
    "env",
    [e for e in _tox_envs(_tox()) if e.startswith(ON_A_COMBINATION)]
    if os.path.exists(TOX_INI)
    else [],
)
def test_an_env_on_a_combination_installs_it_as_the_table_says(env):
    tox = _tox()
    section = tox["testenv:" + env]
    combination, variant = _combination_of(env.split("-", 1)[1])
    assert variant == set()
    assert "base_python" not in section  # [testenv]'s, by the combination's factors
    assert _base_python(env) == "python" + combination.python
    deps = set(_factor_lines(section["deps"], env))
    pre = _factor_lines(tox["testenv"].get("commands_pre", ""), env)
    steps = combination.install_steps()
    if combination.no_deps:
        assert pre[0] == _no_deps_line(steps)
        assert set(steps[1]) <= deps
    else:
        assert set(steps[0]) <= deps


def _no_deps_line(steps):
    """The commands_pre line that installs MXNet without its pins (the first install step)."""
    return "python -m pip install -q --disable-pip-version-check " + " ".join(steps[0])


def _table_rows():
    rows = []
    for line in versions.markdown().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and "`" in cells[4]:
            rows.append(cells)
    return rows


def test_the_supported_versions_table_shows_every_combination_as_the_table_says():
    seen = set()
    for mxnet, python, numpy, install, envs in _table_rows():
        for env in re.findall(r"`([^`]+)`", envs):
            combination, variant = _combination_of(env)
            seen.add(combination.name)
            assert combination.mxnet in [v.strip() for v in mxnet.split(",")], env
            assert python == combination.python, env
            if combination.latest:
                assert "`%s`" % combination.numpy in numpy and "unpinned" in numpy, env
            else:
                assert numpy.split(",")[0] == combination.numpy_version, env
            if combination.no_deps:
                lines = combination.install_lines()
                assert install == "`%s` then `%s mxcompat`" % tuple(lines), env
                assert "--no-deps" in lines[0], env
            elif not variant:
                assert install == "`pip install %s %s mxcompat`" % tuple(
                    combination.install_steps()[0]
                ), env
    assert seen == set(c.name for c in versions.COMBINATIONS)


@needs_checkout
def test_the_supported_versions_page_renders_the_table():
    from tests.support.repo import reference_directives

    assert reference_directives("supported-versions.md") == ["supported", "versions"]


def test_install_steps():
    assert versions.by_name("mx191").install_lines() == ["pip install mxnet==1.9.1 numpy==1.23.5"]
    assert versions.by_name("py313-mxnet191-numpylatest").install_lines() == [
        "pip install --no-deps mxnet==1.9.1",
        'pip install "numpy>=2" "requests<3" graphviz==0.8.4',
    ]
    assert [c.name for c in versions.COMBINATIONS if c.modern][:2] == [
        "py312-mxnet191-numpy126",
        "py313-mxnet191-numpy24",
    ]
    with pytest.raises(KeyError):
        versions.by_name("mx100")


def test_the_readme_states_the_supported_range_declared_in_facts():
    from mxcompat._core import facts

    with open(README) as f:
        text = f.read()
    assert facts.SUPPORTED == ">=1.3, <2"
    assert "mxcompat supports `mxnet %s`" % facts.SUPPORTED in text
