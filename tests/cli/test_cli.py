"""``mxcompat run`` / ``mxcompat check`` / ``python -m mxcompat``, as real commands."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

import mxcompat
from mxcompat._core import facts, registry, traps
from mxcompat.cli.run import BOOTSTRAP
from tests.support.processes import mxcompat_cmd, subprocess_env, write
from tests.support.repo import ROOT
from tests.support.stack import (
    MX_VERSION,
    ONEDNN_FC,
    ONEDNN_FC_RUNS,
    applicable_patches,
    plain_import_works,
)

EXAMPLES = os.path.join(ROOT, "examples")


def test_run_passes_argv_main_path_and_file(tmpdir):
    script = write(
        tmpdir.join("show.py"),
        """
        import sys, json
        print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0],
                          "file": __file__, "mxcompat": "mxcompat" in sys.modules}))
    """,
    )
    proc = mxcompat_cmd("run", script, "a", "--freeze", "x", cwd=str(tmpdir))
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen == {
        "argv": [script, "a", "--freeze", "x"],
        "name": "__main__",
        "path0": str(tmpdir),
        "file": script,
        "mxcompat": True,
    }


def test_run_exit_codes_and_traceback(tmpdir):
    assert (
        mxcompat_cmd("run", write(tmpdir.join("e3.py"), "import sys; sys.exit(3)\n")).returncode
        == 3
    )
    proc = mxcompat_cmd("run", write(tmpdir.join("emsg.py"), "raise SystemExit('bye')\n"))
    assert (proc.returncode, proc.stderr.strip()) == (1, "bye")
    boom = write(
        tmpdir.join("boom.py"),
        """
        def f():
            raise RuntimeError("user bug")
        f()
    """,
    )
    proc = mxcompat_cmd("run", boom)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "RuntimeError: user bug"
    assert lines[-3].strip() == 'File "%s", line 3, in f' % boom
    assert "mxcompat" not in "".join(lines[:-1]).replace(str(tmpdir), "")


def test_run_stdin_and_stdout_untouched(tmpdir):
    script = write(tmpdir.join("echo.py"), "import sys; sys.stdout.write(sys.stdin.read()[::-1])\n")
    proc = mxcompat_cmd("run", script, input="abc\n")
    assert proc.stdout == "\ncba"


def test_run_module_with_relative_imports(tmpdir):
    pkg = tmpdir.mkdir("pkg")
    write(pkg.join("__init__.py"), "")
    write(pkg.join("helper.py"), "VALUE = 7\n")
    write(
        pkg.join("tool.py"),
        """
        import sys
        from .helper import VALUE
        print(__name__, VALUE, sys.argv[1:], "mxcompat" in sys.modules)
    """,
    )
    proc = mxcompat_cmd("run", "-m", "pkg.tool", "x", "--no-patch", "y", cwd=str(tmpdir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["__main__", "7", "['x',", "'--no-patch',", "'y']", "True"]


def test_missing_script_is_exit_2_with_one_line(tmpdir):
    proc = mxcompat_cmd("run", str(tmpdir.join("nope.py")))
    assert proc.returncode == 2
    assert proc.stderr == "mxcompat run: can't open file %r: no such file\n" % str(
        tmpdir.join("nope.py")
    )


def test_run_a_python_command_from_path(tmpdir):
    # A console script (horovodrun, a launcher) named bare: run by this interpreter, with
    # the bootstrap, as a script given by its path would be; a shell script is not Python.
    bin_dir = tmpdir.mkdir("bin")
    tool = write(
        bin_dir.join("tool"),
        """\
        #!/usr/bin/env python
        import sys
        print("mxcompat" in sys.modules, sys.argv[1:], sys.executable == %r)
        """
        % sys.executable,
    )
    shell = write(bin_dir.join("shelltool"), "#!/bin/sh\necho hi\n")
    for path in (tool, shell):
        os.chmod(path, 0o755)
    env = {"PATH": str(bin_dir) + os.pathsep + os.environ.get("PATH", "")}
    proc = mxcompat_cmd("run", "tool", "a", "--freeze", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "True ['a', '--freeze'] True\n"
    proc = mxcompat_cmd("run", "shelltool", env=env)
    assert proc.returncode == 2
    assert proc.stderr == (
        "mxcompat run: 'shelltool' (%s) is not a Python script; run starts Python programs\n"
        % shell
    )


def test_unknown_no_patch_name_is_exit_2(tmpdir):
    proc = mxcompat_cmd("run", "--no-patch", "nosuch", write(tmpdir.join("a.py"), ""))
    assert proc.returncode == 2
    assert "--no-patch: unknown patch name(s) nosuch" in proc.stderr


def test_help_lists_options_and_environment():
    out = mxcompat_cmd("run", "--help").stdout
    for word in (
        "--freeze",
        "--no-patch",
        "-m MODULE",
        "MXCOMPAT_DISABLE=1",
        "MXCOMPAT_DISABLE_PATCHES",
        "MXCOMPAT_FREEZE",
    ):
        assert word in out
    top = mxcompat_cmd("--help").stdout
    assert "run" in top and "check" in top and "patches" in top and "--version" in top


def test_run_fixes_the_legacy_example_and_no_patch_turns_it_off():
    example = os.path.join(EXAMPLES, "export_then_load.py")
    proc = mxcompat_cmd("run", example)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "max |Module - Gluon| = 0.0"
    proc = mxcompat_cmd("run", "--no-patch", "labels", example)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "KeyError: 'softmax_label'"
    # Without mxcompat at all the example fails the same way (where MXNet imports at all
    # without mxcompat: not 1.6+ on NumPy >= 1.24 or Python >= 3.12).
    if plain_import_works():
        plain = subprocess.run(
            [sys.executable, example], capture_output=True, text=True, timeout=180
        )
        assert plain.stderr.strip().splitlines()[-1] == "KeyError: 'softmax_label'"


def test_child_processes_inherit_the_patches(tmpdir):
    script = write(
        tmpdir.join("mp.py"),
        """
        import multiprocessing as mp
        def probe(_):
            import sys
            import mxnet
            import mxcompat
            return mxcompat.patched()
        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            with ctx.Pool(1) as pool:
                print(pool.map(probe, [0])[0])
            import subprocess, sys
            print(subprocess.check_output([sys.executable, "-c",
                  "import sys; print('mxcompat' in sys.modules)"], universal_newlines=True).strip())
    """,
    )
    proc = mxcompat_cmd("run", "--no-patch", "bare_names", script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = tuple(n for n in applicable_patches() if n != "bare_names")
    assert proc.stdout.split("\n")[:2] == [repr(expected), "True"]


def test_user_sitecustomize_still_runs(tmpdir):
    site = tmpdir.mkdir("site")
    write(site.join("sitecustomize.py"), "import os; os.environ['USER_SITE_RAN'] = '1'\n")
    script = write(
        tmpdir.join("s.py"),
        "import os, sys; print(os.environ.get('USER_SITE_RAN'), 'mxcompat' in sys.modules)\n",
    )
    paths = [str(site)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    proc = mxcompat_cmd("run", script, env={"PYTHONPATH": os.pathsep.join(paths)})
    assert proc.stdout.split() == ["1", "True"]


@pytest.fixture(scope="module")
def check_json():
    """One ``mxcompat check --json`` with every patch on, for the tests that read its report
    (a check run imports MXNet three times: its probes run in their own processes)."""
    return mxcompat_cmd("check", "--json")


def test_check_passes_and_json(check_json):
    proc = mxcompat_cmd("check")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert re.match(r"^\d+ passed, 0 failed, \d+ skipped$", lines[-1]), lines[-1]
    report = json.loads(check_json.stdout)
    assert report["ok"] is True and check_json.returncode == 0
    names = [r["name"] for r in report["results"]]
    assert {"labels", "bare_names"} <= set(names)
    assert all(r["status"] in ("ok", "skipped") for r in report["results"])
    assert all(r["detail"] for r in report["results"] if r["status"] == "skipped")
    import mxnet

    assert report["versions"]["mxnet"] == mxnet.__version__
    by_name = {r["name"]: r for r in report["results"]}
    assert (by_name["onednn_fc_bias"]["status"], by_name["onednn_fc_bias"]["detail"]) == (
        (
            "ok",
            "fc_weight bit for bit, fc_bias trained (plain MXNet with oneDNN: fc_bias stays fixed)",
        )
        if ONEDNN_FC
        else ONEDNN_FC_SKIP
    )
    assert (by_name["int_division"]["status"], by_name["int_division"]["detail"]) == (
        "ok",
        "ZeroDivisionError (plain MXNet: SIGFPE kills the process)",
    )
    assert (by_name["unbound_get_params"]["status"], by_name["unbound_get_params"]["detail"]) == (
        "ok",
        "the loaded parameters before bind; what to call first when there are none",
    )
    assert (by_name["frozen_statistics"]["status"], by_name["frozen_statistics"]["detail"]) == (
        "ok",
        "bn_moving_mean bit for bit, bn_moving_var moved, Module and SymbolBlock "
        "(plain MXNet: both move)",
    )
    assert (by_name["fixed_param_names"]["status"], by_name["fixed_param_names"]["detail"]) == (
        "ok",
        "the module's own names and the registry's",
    )


# Why the onednn_fc_bias check is skipped where the patch does not apply.
ONEDNN_FC_SKIP = (
    "skipped",
    "oneDNN FullyConnected kernels are only in the MKLDNN wheels "
    "from MXNet 1.7; a fixed FC weight does not stop its bias here"
    if MX_VERSION[:2] < (1, 7)
    else "this MXNet build has no MKLDNN (oneDNN); a fixed FC weight does not stop its bias here",
)


# The patches `check` is run without, all in one run (each run imports MXNet three times):
# each one's check fails with its own detail, and no other check does.
PATCHES_OFF = (
    "labels,onednn_fc_bias,int_division,unbound_get_params,frozen_statistics,fixed_param_names"
)


@pytest.fixture(scope="module")
def check_off():
    """``mxcompat check --json`` with the patches PATCHES_OFF off: its exit status and its
    results by check name."""
    proc = mxcompat_cmd("check", "--json", env={"MXCOMPAT_DISABLE_PATCHES": PATCHES_OFF})
    report = json.loads(proc.stdout)
    assert report["ok"] is (proc.returncode == 0), proc.stdout
    return proc.returncode, {r["name"]: r for r in report["results"]}


def test_check_fails_for_each_patch_that_is_off_and_only_there(check_off):
    returncode, by_name = check_off
    failed = {name for name, r in by_name.items() if r["status"] == "failed"}
    # onednn_fc_bias fails only where plain MXNet's oneDNN kernels run (its own test says why).
    expected = set(PATCHES_OFF.split(",")) - (set() if ONEDNN_FC_RUNS else {"onednn_fc_bias"})
    assert (returncode, failed) == (1, expected)
    assert "softmax_label" in by_name["labels"]["detail"]


def test_check_onednn_fc_bias_fails_when_that_patch_is_off(check_off):
    result = check_off[1]["onednn_fc_bias"]
    if ONEDNN_FC_RUNS:
        # Plain MXNet with oneDNN: the bias stayed fixed with the weight.
        assert (result["status"], result["detail"]) == (
            "failed",
            "AssertionError: moved {'fc_weight': False, 'fc_bias': False}, expected only "
            "fc_bias (plain MXNet with oneDNN keeps fc_bias fixed too)",
        )
    elif ONEDNN_FC:
        # MXNET_MKLDNN_ENABLED=0: MXNet's own kernels train the bias.
        assert result["status"] == "ok"
    else:
        assert (result["status"], result["detail"]) == ONEDNN_FC_SKIP


def test_check_int_division_and_get_params_fail_when_their_patches_are_off(check_off):
    by_name = check_off[1]
    # The probe died, not mxcompat check.
    assert (by_name["int_division"]["status"], by_name["int_division"]["detail"]) == (
        "failed",
        "AssertionError: int32 NDArray / 0.5 killed the process (SIGFPE)",
    )
    assert (by_name["unbound_get_params"]["status"], by_name["unbound_get_params"]["detail"]) == (
        "failed",
        "AssertionError: get_params() with no parameters: AssertionError('')"
        if facts.since(facts.UNBOUND_GET_PARAMS)
        else "AssertionError: Module.load(...).get_params() before bind: AssertionError('')",
    )


def test_check_frozen_statistics_and_fixed_param_names_fail_when_their_patches_are_off(
    check_off,
):
    by_name = check_off[1]
    assert (by_name["frozen_statistics"]["status"], by_name["frozen_statistics"]["detail"]) == (
        "failed",
        "AssertionError: Module: moved {'bn_moving_mean': True, 'bn_moving_var': "
        "True}, expected only bn_moving_var",
    )
    assert (by_name["fixed_param_names"]["status"], by_name["fixed_param_names"]["detail"]) == (
        "failed",
        "AssertionError: _fixed_param_names ['fc_bias'], expected ['fc_bias', 'fc_weight']",
    )


def _numpy_fixes_here():
    """The NumPy fixes `mxcompat check` must list on this NumPy (the NumPy release each
    change came in: NEP 50/51 in 2.0, ndarray.tostring and np.dtype(NDArray) in 2.3, int()
    of a 1-element array refused in 2.4)."""
    import numpy

    version = facts.parse_version(numpy.__version__)[:2]
    names = []
    if version >= (2, 0):
        names += ["NEP 51 scalar reprs in operator parameters", "NEP 50 metric sums in float64"]
    if version >= (2, 3):
        names.append("ndarray.tostring in recordio.pack")
    if version >= (2, 4):
        names.append("1-element max_iterations in while_loop")
    names.append("NDArray.__array__ (np.asarray gets the numbers)")
    if version >= (2, 3):
        names.append("astype(other NDArray)")
    return numpy.__version__, names


def test_check_lists_the_numpy_fixes_in_use(check_json):
    result = {r["name"]: r for r in json.loads(check_json.stdout)["results"]}["numpy_fixes"]
    version, names = _numpy_fixes_here()
    assert (result["status"], result["detail"]) == (
        "ok",
        "in use on NumPy %s: %s" % (version, "; ".join(names)),
    )


def test_check_numpy_fixes_fail_with_their_patches_off():
    import numpy

    numpy2 = facts.parse_version(numpy.__version__)[0] >= 2
    # On NumPy 2 the first scenario (NEP 51) needs numpy2; on NumPy 1 only NDArray.__array__
    # applies.
    proc = mxcompat_cmd(
        "check",
        "--json",
        env={"MXCOMPAT_DISABLE_PATCHES": "numpy2" if numpy2 else "ndarray_to_numpy"},
    )
    result = {r["name"]: r for r in json.loads(proc.stdout)["results"]}["numpy_fixes"]
    assert proc.returncode == 1 and result["status"] == "failed"
    if numpy2:
        assert result["detail"].startswith(
            "AssertionError: NEP 51 scalar reprs in operator parameters: MXNetError: "
        )
        assert "value='(np.int64(3), np.int64(2))'" in result["detail"]
    elif facts.parse_version(numpy.__version__)[:2] >= (1, 24):
        # NumPy 1.24 ... 1.26 refuse the opaque sequence as NumPy 2 does.
        assert result["detail"] == (
            "AssertionError: NDArray.__array__ (np.asarray gets the numbers): ValueError: "
            "setting an array element with a sequence. The requested array would exceed the "
            "maximum number of dimension of 32."
        )
    else:  # NumPy 1 up to 1.23 builds an object array of NDArrays
        assert result["detail"] == (
            "AssertionError: NDArray.__array__ (np.asarray gets the "
            "numbers): AssertionError: np.asarray(NDArray) gave dtype "
            "object"
        )


def test_console_script_is_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "mxcompat")
    if not os.path.exists(exe):
        pytest.skip("mxcompat is not pip-installed in this interpreter (run through tox)")
    proc = subprocess.run([exe, "--help"], stdout=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 0 and "run" in proc.stdout


FIT_SCRIPT = """
import numpy as np
import mxnet as mx
data = mx.sym.Variable("data")
kw = mx.sym.Variable("kw", init=mx.init.Uniform(0.5))
conv = mx.sym.Convolution(data, weight=kw, kernel=(3, 3), num_filter=2, no_bias=True)
fc = mx.sym.FullyConnected(mx.sym.flatten(conv), num_hidden=3, name="fc")
sym = mx.sym.SoftmaxOutput(fc, name="softmax")
rs = np.random.RandomState(0)
it = mx.io.NDArrayIter(rs.rand(16, 1, 5, 5).astype("float32"),
                       (np.arange(16) % 3).astype("float32"), batch_size=4)
mod = mx.mod.Module(sym)
mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
mod.init_params()
start = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
mod.fit(it, num_epoch=2, optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01})
end = mod.get_params()[0]
print(" ".join("%s=%s" % (k, np.array_equal(start[k], end[k].asnumpy())) for k in sorted(start)))
"""


def test_run_freeze_keeps_a_weight_fixed_through_fit(tmpdir):
    script = write(tmpdir.join("fit.py"), FIT_SCRIPT)
    proc = mxcompat_cmd("run", "--freeze", "kw", script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["fc_bias=False", "fc_weight=False", "kw=True"]
    # The same script trains kw without --freeze, and MXCOMPAT_FREEZE does what --freeze does.
    assert mxcompat_cmd("run", script).stdout.split() == [
        "fc_bias=False",
        "fc_weight=False",
        "kw=False",
    ]
    proc = mxcompat_cmd("run", script, env={"MXCOMPAT_FREEZE": "fc_*"})
    assert proc.stdout.split() == ["fc_bias=True", "fc_weight=True", "kw=False"]


def test_check_prints_in_a_latin1_locale():
    # ✓/✗ cannot be written to a Latin-1 stdout: plain marks instead of a UnicodeEncodeError.
    proc = mxcompat_cmd("check", env={"PYTHONIOENCODING": "latin-1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    first = proc.stdout.splitlines()[0]
    assert first.startswith("+ labels"), first
    assert re.match(r"^\d+ passed, 0 failed, \d+ skipped$", proc.stdout.strip().splitlines()[-1])


# --- the bootstrap in Pythons that only inherit PYTHONPATH ------------------------------------

# A user's own sitecustomize: counts its runs in this process (builtins outlive the module).
USER_SITE = """
import builtins
builtins.user_site_runs = getattr(builtins, "user_site_runs", 0) + 1
"""

# A third-party sitecustomize that chains on like ddtrace's bootstrap does: it loads the next
# sitecustomize on sys.path, skipping only its own folder.
CHAINING_SITE = """
import builtins, importlib.machinery, importlib.util, os, sys
builtins.chainer_runs = getattr(builtins, "chainer_runs", 0) + 1
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or os.curdir) != _here])
if _spec is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
"""

# What a process reports: its runs of the user's sitecustomize and of the chaining one, and
# whether mxcompat is loaded.
REPORT = (
    "import builtins, json, sys; print(json.dumps([getattr(builtins, 'user_site_runs', 0),"
    " getattr(builtins, 'chainer_runs', 0), 'mxcompat' in sys.modules]))"
)


def test_run_child_python_without_mxcompat_starts_cleanly(tmpdir):
    # Another Python that has neither mxcompat nor wrapt (a fresh venv of this interpreter's
    # version, as another project's venv or pip's build environment would be), started by the
    # script, inherits PYTHONPATH with the bootstrap folder.
    other = str(tmpdir.join("other-venv"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", other], check=True, timeout=120)
    other_python = os.path.join(other, "bin", "python")
    site = tmpdir.mkdir("site")
    write(site.join("sitecustomize.py"), USER_SITE)
    child = (
        "import builtins, importlib.util; print(importlib.util.find_spec('mxcompat') is None,"
        " getattr(builtins, 'user_site_runs', 0))"
    )
    script = write(
        tmpdir.join("spawn.py"),
        """
        import json, subprocess, sys
        proc = subprocess.run([sys.argv[1], "-c", sys.argv[2]], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        print(json.dumps([proc.returncode, proc.stdout, proc.stderr]))
    """,
    )
    proc = mxcompat_cmd(
        "run", script, other_python, child, cwd=str(tmpdir), env={"PYTHONPATH": str(site)}
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr[-3000:]
    # The child ran, has no mxcompat, printed no "Error in sitecustomize", and the user's
    # sitecustomize ran in it once.
    assert json.loads(proc.stdout) == [0, "True 1\n", ""]


def _bootstrap_copy(tmpdir):
    # Another venv's mxcompat bootstrap folder (same layout: .../mxcompat/_bootstrap).
    copy = str(tmpdir.join("venv2-site", "mxcompat", "_bootstrap"))
    shutil.copytree(BOOTSTRAP, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.mark.parametrize(
    "layout",
    [
        "plain",  # mxcompat run, the user's sitecustomize on PYTHONPATH
        "another-bootstrap",  # a second mxcompat's bootstrap after ours (two venvs)
        "another-bootstrap-first",  # ... before ours (the other venv's `mxcompat run` ran last)
        "chaining-site",  # a ddtrace-style chaining sitecustomize after ours
        "chaining-site-first",  # ... before ours (`ddtrace-run` inside `mxcompat run`)
    ],
)
def test_user_sitecustomize_runs_exactly_once(tmpdir, layout):
    site = tmpdir.mkdir("site")
    write(site.join("sitecustomize.py"), USER_SITE)
    chainer = tmpdir.mkdir("chainer")
    write(chainer.join("sitecustomize.py"), CHAINING_SITE)
    extra = (
        []
        if layout == "plain"
        else [str(chainer)]
        if layout.startswith("chaining")
        else [_bootstrap_copy(tmpdir)]
    )
    write(tmpdir.join("report.py"), REPORT + "\n")
    # The script reports for itself, for a plain Python child and for a nested `mxcompat run`.
    script = write(
        tmpdir.join("outer.py"),
        """
        import subprocess, sys
        exec(open("report.py").read())
        for argv in ([sys.executable, "report.py"],
                     [sys.executable, "-m", "mxcompat", "run", "report.py"]):
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True)
            sys.stdout.write(proc.stdout)
            sys.stderr.write(proc.stderr)
    """,
    )
    if layout.endswith("-first"):
        # What the other tool's launcher leaves behind: its folder first, then ours.
        env = {"PYTHONPATH": os.pathsep.join(extra + [BOOTSTRAP, str(site)])}
        proc = subprocess.run(
            [sys.executable, script],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=str(tmpdir),
            env=subprocess_env(env),
        )
    else:
        env = {"PYTHONPATH": os.pathsep.join(extra + [str(site)])}
        proc = mxcompat_cmd("run", script, cwd=str(tmpdir), env=env)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr[-3000:]
    chained = 1 if layout.startswith("chaining") else 0
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [[1, chained, True]] * 3


# --- Python's own options, directory and zip targets ------------------------------------------

FLAGS_SCRIPT = '''"""the script's docstring"""
import json, os, sys, warnings
state = {"argv": sys.argv, "optimize": sys.flags.optimize, "dev_mode": sys.flags.dev_mode,
         "warnoptions": sys.warnoptions, "xoptions": sys._xoptions, "debug": __debug__,
         "doc": __doc__, "mxcompat": "mxcompat" in sys.modules}
try:
    warnings.warn("from the script", UserWarning)
    state["warning"] = "returned"
except UserWarning:
    state["warning"] = "raised"
print(json.dumps(state, sort_keys=True))
sys.stdout.flush()
sys.stdout.write("unbuffered")   # survives os._exit only when stdout is unbuffered (-u)
os._exit(0)
'''


def _plain_python(argv, cwd, env=None):
    return subprocess.run(
        [sys.executable] + argv,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env=subprocess_env(env),
    )


@pytest.mark.parametrize(
    "options",
    [
        ["-u", "-W", "error", "-X", "dev"],
        ["-uWerror", "-Xdev"],
        ["-O", "-B"],
        ["-W", "ignore::UserWarning", "-v"],
    ],
    ids=" ".join,
)
def test_run_takes_python_options_as_python_does(tmpdir, options):
    write(tmpdir.join("flags.py"), FLAGS_SCRIPT)
    # Options after the script are the script's, even ones that look like Python's or ours.
    tail = ["-u", "-O", "--freeze", "kw", "-E"]
    env = {"PYTHONUNBUFFERED": ""}  # empty is unset: only -u may unbuffer stdout here
    proc = mxcompat_cmd("run", *(options + ["flags.py"] + tail), cwd=str(tmpdir), env=env)
    plain = _plain_python(options + ["flags.py"] + tail, str(tmpdir), env)
    assert (proc.returncode, plain.returncode) == (0, 0), proc.stderr[-3000:]
    ours, theirs = proc.stdout.split("\n"), plain.stdout.split("\n")
    assert json.loads(ours[0]) == dict(json.loads(theirs[0]), mxcompat=True)
    assert json.loads(ours[0])["argv"] == ["flags.py"] + tail
    assert ours[1:] == theirs[1:]
    assert ("unbuffered" in ours[1]) == ("-u" in options or "-uWerror" in options)
    assert "Error in sitecustomize" not in proc.stderr
    if "-v" not in options:  # -v logs every import to stderr, ours too
        assert proc.stderr == plain.stderr


def test_run_optimized_applies_the_patches(tmpdir):
    script = write(
        tmpdir.join("opt.py"),
        """
        import sys
        import mxnet, mxcompat
        print(sys.flags.optimize, mxcompat.patched())
    """,
    )
    proc = mxcompat_cmd("run", "-O", script)
    assert (proc.returncode, proc.stdout) == (0, "1 %r\n" % (applicable_patches(),)), proc.stderr[
        -3000:
    ]


def test_run_OO_loads_mxcompat(tmpdir):
    # -OO removes docstrings: nothing in the command, the bootstrap or the patch modules may
    # read one (an AttributeError there shows as "Error in sitecustomize").  MXNet itself
    # under -OO is tests/patches/test_python_oo.py's.
    script = write(
        tmpdir.join("opt.py"),
        """
        \"\"\"the script's docstring\"\"\"
        import sys
        print(sys.flags.optimize, __doc__, "mxcompat" in sys.modules)
        print(sys.modules["mxcompat"].patch_names() == %r)
    """
        % (mxcompat.patch_names(),),
    )
    proc = mxcompat_cmd("run", "-OO", script)
    assert "Error in sitecustomize" not in proc.stderr, proc.stderr[-3000:]
    assert (proc.returncode, proc.stdout) == (0, "2 None True\nTrue\n"), proc.stderr[-3000:]


def test_run_directory_zip_and_dash_named_targets_like_python(tmpdir):
    main = """
        import json, sys
        print(json.dumps([sys.argv, sys.path[0], __name__, "mxcompat" in sys.modules]))
    """
    app = tmpdir.mkdir("app")
    write(app.join("__main__.py"), main)
    with zipfile.ZipFile(str(tmpdir.join("app.zip")), "w") as z:
        z.writestr("__main__.py", textwrap.dedent(main))
    write(tmpdir.join("-dash.py"), main)
    for target in (["app"], ["app.zip"], ["--", "-dash.py"]):
        proc = mxcompat_cmd("run", *(target + ["x", "-u"]), cwd=str(tmpdir))
        plain = _plain_python(target + ["x", "-u"], str(tmpdir))
        assert (proc.returncode, proc.stderr) == (0, ""), (target, proc.stderr[-3000:])
        argv, path0, name, loaded = json.loads(proc.stdout)
        assert [argv, path0, name, loaded] == json.loads(plain.stdout)[:3] + [True]
        assert (argv, name) == ([target[-1], "x", "-u"], "__main__")


@pytest.mark.parametrize(
    "options, message",
    [
        (
            ["-E"],
            "-E makes Python ignore PYTHONPATH, so mxcompat could not be loaded into the "
            "script; run it without -E",
        ),
        (
            ["-uI"],
            "-I (isolated mode) makes Python ignore PYTHONPATH, so mxcompat could not be "
            "loaded into the script; run it without -I",
        ),
        (
            ["-S"],
            "-S makes Python skip the site module, which runs sitecustomize, so mxcompat "
            "could not be loaded into the script; run it without -S",
        ),
        (
            ["-c", "print(1)"],
            "unknown option -c (Python options run takes: -b, -B, -d, -i, -O, "
            "-P, -q, -s, -u, -v, -x, -W arg, -X opt, -m module)",
        ),
        (["--verbose"], "unknown option --verbose"),
        (["-u", "-W"], "-W needs an argument"),
        (["-u"], "name a script, a directory or zip file with __main__.py, or -m module to run"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_run_refuses_options_it_cannot_honour(tmpdir, options, message):
    script = write(tmpdir.join("a.py"), "print('ran')\n")
    argv = options + ([script] if options not in (["-u", "-W"], ["-u"]) else [])
    proc = mxcompat_cmd("run", *argv)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines()[-1] == "mxcompat run: error: " + message


# --- --version and patches ------------------------------------------------------------------


def test_version():
    proc = mxcompat_cmd("--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0,
        "mxcompat %s\n" % mxcompat.__version__,
        "",
    )


def _expected_patches(active):
    import mxnet
    import numpy

    assert mxcompat.patched() == applicable_patches()  # the test process: everything on
    rows = [
        {
            "name": n,
            "fixes": " ".join(registry.get(n).doc.split()),
            "applies": n in applicable_patches(),
            "active": n in active,
            "traps": [t.symptom for t in traps.TRAPS if t.patch == n],
        }
        for n in mxcompat.patch_names()
    ]
    versions = {
        "mxcompat": mxcompat.__version__,
        "mxnet": mxnet.__version__,
        "python": "%d.%d.%d" % sys.version_info[:3],
        "numpy": numpy.__version__,
    }
    return {
        "patches": rows,
        "versions": versions,
        "error": None,
        "documented": [t.symptom for t in traps.TRAPS if t.patch is None],
    }


@pytest.mark.parametrize("disabled", ["", "labels,freeze"])
def test_patches_lists_every_patch(disabled):
    expected = _expected_patches([n for n in mxcompat.patched() if n not in disabled.split(",")])
    env = {"MXCOMPAT_DISABLE_PATCHES": disabled}
    proc = mxcompat_cmd("patches", "--json", env=env)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr[-3000:]
    assert json.loads(proc.stdout) == expected

    proc = mxcompat_cmd("patches", env=env)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    yes_no = {True: "yes", False: "no"}
    assert lines[0].split() == ["patch", "applies", "active", "traps", "fixes"]
    assert [line.split(None, 4) for line in lines[1:-1]] == [
        [r["name"], yes_no[r["applies"]], yes_no[r["active"]], str(len(r["traps"])), r["fixes"]]
        for r in expected["patches"]
    ]
    # One column per field: every row's description starts where the header's "fixes" does.
    assert {line.index(r["fixes"]) for line, r in zip(lines[1:-1], expected["patches"])} == {
        lines[0].index("fixes")
    }
    v = expected["versions"]
    assert lines[-1] == "mxnet %s, Python %s, NumPy %s, mxcompat %s" % (
        v["mxnet"],
        v["python"],
        v["numpy"],
        v["mxcompat"],
    )


def test_patches_without_an_importable_mxnet():
    # A process where `import mxnet` fails: nothing applies, and the command says why.
    code = (
        "import sys; sys.modules['mxnet'] = None\n"
        "from mxcompat.cli import main; sys.exit(main(['patches', '--json']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        env=subprocess_env(),
    )
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert [(r["name"], r["applies"], r["active"]) for r in report["patches"]] == [
        (n, False, False) for n in mxcompat.patch_names()
    ]
    assert report["versions"]["mxnet"] is None
    assert report["error"] == (
        "cannot import mxnet: ModuleNotFoundError: import of mxnet halted; None in sys.modules"
    )
    assert proc.stderr == "mxcompat patches: %s, so no patch applies\n" % report["error"]
