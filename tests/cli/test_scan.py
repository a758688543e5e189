"""``mxcompat scan``: each rule on code that triggers it, code that must not, and, where its fix
is certain, the exact rewritten text; ``--fix`` idempotent and keeping formatting and comments;
exit codes, ``--select``/``--ignore``, ``--json``, ``--diff``, files that do not parse."""

import json
import subprocess
import sys
import textwrap

import pytest

libcst = pytest.importorskip("libcst", reason="mxcompat scan needs libcst (extra 'scan')")

from mxcompat import cli  # noqa: E402
from mxcompat._core import traps  # noqa: E402
from mxcompat.cli.scan import rules  # noqa: E402

# code -> (triggers, (line, column) of each finding, must not trigger, fixed text or None)
CASES = {
    "MXC001": (
        """\
        mod = mx.mod.Module(sym, data_names=('data'),   # the data
                            fixed_param_names="kw")
        """,
        [(1, 38), (2, 39)],
        """\
        mod = mx.mod.Module(sym, data_names=('data',), fixed_param_names=["kw"])
        names = ('data')
        f(label_names=None)
        """,
        """\
        mod = mx.mod.Module(sym, data_names=('data',),   # the data
                            fixed_param_names=["kw"])
        """,
    ),
    "MXC002": (
        """\
        net.export("model")
        mod = mx.mod.Module.load("model", 0)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        """,
        [(3, 1)],
        """\
        net.export("model")
        mod = mx.mod.Module.load("model", 0, label_names=None)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        ckpt = mx.mod.Module.load("trained", 3)
        ckpt.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        mod2 = mx.mod.Module.load("model", 0)
        mod2.bind(data_shapes=it.provide_data, label_shapes=None)
        """,
        None,
    ),
    "MXC003": (
        """\
        net.dense0.weight.grad_req = 'null'
        params["fc1_weight"].grad_req = "null"
        """,
        [(1, 1), (2, 1)],
        """\
        net.dense0.bias.grad_req = 'null'
        net.dense0.weight.grad_req = 'write'
        p.grad_req = 'null'
        """,
        None,
    ),
    "MXC010": (
        """\
        mod = mx.mod.Module(sym, fixed_param_names=["fc1_weight", "fc1_bias"])
        """,
        [(1, 45)],
        """\
        mod = mx.mod.Module(sym, fixed_param_names=["fc1_bias"])
        mod = mx.mod.Module(sym, fixed_param_names=names)
        """,
        None,
    ),
    "MXC004": (
        """\
        net.fc.weight.grad()[:] = 0
        exe.grad_dict["fc1_weight"][:] = 0.0
        """,
        [(1, 1), (2, 1)],
        """\
        net.fc.weight.grad()[:] = 1
        x[:] = 0
        p.zero_grad()
        """,
        None,
    ),
    "MXC005": (
        """\
        net = gluon.nn.HybridSequential()
        net.save_params("net.params")  # old API
        block.load_params("b.params", ctx=ctx)
        """,
        [(2, 1), (3, 1)],
        """\
        mod = mx.mod.Module(sym)
        mod.save_params("m.params")
        loaded = mx.mod.Module.load("p", 1)
        loaded.load_params("m.params")
        net.save_parameters("n.params")
        """,
        """\
        net = gluon.nn.HybridSequential()
        net.save_parameters("net.params")  # old API
        block.load_params("b.params", ctx=ctx)
        """,
    ),
    "MXC006": (
        """\
        from distutils.version import LooseVersion
        import distutils.version
        from distutils import version
        """,
        [(1, 1), (2, 1), (3, 1)],
        """\
        from looseversion import LooseVersion
        from distutils import log
        import distutils
        """,
        None,
    ),
    "MXC007": (
        """\
        x = mx.nd.array([1, 2], dtype='int32')
        y = x / 0.5
        x /= -0.3
        z = mx.nd.ones((2,)).astype("int8") / 0
        """,
        [(2, 5), (3, 1), (4, 5)],
        """\
        x = mx.nd.array([1, 2], dtype='int32')
        y = x / 2.0
        f = x.astype('float32') / 0.5
        g = mx.nd.array([1, 2]) / 0.5
        n = np.array([1, 2], dtype='int32') / 0.5
        """,
        None,
    ),
    "MXC008": (
        """\
        acc = float(metric.asnumpy())
        n = int( loss.sum().asnumpy() )  # spacing kept
        """,
        [(1, 7), (2, 5)],
        """\
        acc = float(metric.asscalar())
        n = int(x.asnumpy()[0])
        v = float(x.asnumpy(), 1)
        """,
        """\
        acc = float(metric.asnumpy().item())
        n = int( loss.sum().asnumpy().item() )  # spacing kept
        """,
    ),
    "MXC009": (
        """\
        import numpy as onp
        a = np.float(3)
        b = onp.asscalar(a)
        """,
        [(2, 5), (3, 5)],
        """\
        a = np.float32(3)
        b = mx.nd.float
        c = float(3)
        """,
        None,
    ),
    "MXC011": (
        """\
        import tarfile
        with tarfile.open("cifar.tar.gz") as tar:
            tar.extractall("data")
        tarfile.open("a.tar").extractall()
        t = tarfile.open("b.tar")
        t.extract("x", path="out")
        """,
        [(3, 5), (4, 1), (6, 1)],
        """\
        import tarfile, zipfile
        with tarfile.open("cifar.tar.gz") as tar:
            tar.extractall("data", filter="data")
        with zipfile.ZipFile("m.zip") as zf:
            zf.extractall("models")
        archive.extractall("x")
        """,
        None,
    ),
    "MXC012": (
        """\
        import threading
        from concurrent.futures import ThreadPoolExecutor
        import gluonnlp as nlp
        from mxnet import autograd

        def step(net, x):
            with autograd.record():
                loss = net(x)
            loss.backward()

        def worker(net, x):
            step(net, x)

        class Shard(nlp.utils.Parallelizable):
            def forward_backward(self, x):
                with autograd.record():
                    pass

        threading.Thread(target=worker, args=(net, x)).start()
        with ThreadPoolExecutor(2) as pool:
            pool.map(lambda b: train(b), batches)

        def train(b):
            with mx.autograd.record():
                pass
        """,
        [(7, 10), (16, 14), (24, 10)],
        """\
        import threading
        from concurrent.futures import ProcessPoolExecutor
        from mxnet import autograd

        def step(net, x):
            with autograd.record():
                pass

        def log(message):
            print(message)

        class Worker(threading.Thread):
            def run(self):
                log("no recording here")

        threading.Thread(target=log, args=("x",)).start()
        with ProcessPoolExecutor(2) as pool:
            pool.map(step, batches)
        results = map(step, batches)
        step(net, x)
        """,
        None,
    ),
}


def _write(tmpdir, name, text):
    path = tmpdir.join(name)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def _scan(capsys, *argv):
    code = cli.main(["scan"] + list(argv))
    return code, capsys.readouterr().out


def test_every_rule_has_cases_and_the_cases_every_rule():
    assert sorted(CASES) == sorted(r.code for r in rules.RULES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_finds_exactly_its_cases(tmpdir, capsys, code):
    bad, where, good, _ = CASES[code]
    path = _write(tmpdir, "bad.py", bad)
    status, out = _scan(capsys, "--select", code, "--json", path)
    found = json.loads(out)["findings"]
    assert status == 1
    assert [(f["code"], f["line"], f["column"]) for f in found] == [
        (code, line, column) for line, column in where
    ]
    path = _write(tmpdir, "good.py", good)
    status, out = _scan(capsys, "--select", code, path)
    assert (status, out) == (0, "0 finding(s) in 0 of 1 file(s)\n")


@pytest.mark.parametrize("code", sorted(c for c in CASES if CASES[c][3] is not None))
def test_fix_rewrites_exactly_and_a_second_run_changes_nothing(tmpdir, capsys, code):
    bad, _, _, fixed = CASES[code]
    path = _write(tmpdir, "bad.py", bad)
    _scan(capsys, "--select", code, "--fix", path)
    assert tmpdir.join("bad.py").read_text(encoding="utf-8") == textwrap.dedent(fixed)
    _scan(capsys, "--select", code, "--fix", path)
    assert tmpdir.join("bad.py").read_text(encoding="utf-8") == textwrap.dedent(fixed)


def test_rules_flagged_fixable_are_those_with_a_fix_case():
    assert {r.code for r in rules.RULES if r.fixable} == {
        c for c in CASES if CASES[c][3] is not None
    }


def test_each_rule_names_one_trap_and_every_trap_seen_in_source_has_a_rule():
    named = [rules.find_trap(r.trap) for r in rules.RULES if r.trap is not None]
    runtime = [rules.find_trap(key) for key in rules.RUNTIME_ONLY]
    assert len(set(named)) == len(named)
    # Every trap of the one list is either found in source by a rule or needs a run to show.
    assert sorted(map(traps.TRAPS.index, named + runtime)) == list(range(len(traps.TRAPS)))


def test_fix_keeps_every_other_byte_and_the_encoding(tmpdir, capsys):
    text = (
        "# -*- coding: latin-1 -*-\n"
        "caf\xe9 = 1   # \xe9t\xe9\n"
        "m = Module(s,\n"
        "           label_names = 'softmax_label' ,  # keep\n"
        ")\r\n"
    )
    path = tmpdir.join("latin.py")
    path.write_binary(text.encode("latin-1"))
    status, out = _scan(capsys, "--fix", str(path))
    assert status == 0, out
    assert path.read_binary() == text.replace("'softmax_label' ,", "['softmax_label'] ,").encode(
        "latin-1"
    )


def test_diff_previews_and_writes_nothing(tmpdir, capsys):
    path = _write(tmpdir, "a.py", "v = float(x.asnumpy())\n")
    status, out = _scan(capsys, "--diff", path)
    assert status == 1
    assert "-v = float(x.asnumpy())\n+v = float(x.asnumpy().item())\n" in out
    assert tmpdir.join("a.py").read_text(encoding="utf-8") == "v = float(x.asnumpy())\n"


def test_report_lines_summary_select_and_ignore(tmpdir, capsys):
    _write(tmpdir, "a.py", "from distutils.version import LooseVersion\nv = float(x.asnumpy())\n")
    _write(tmpdir, "b.py", "import os\n")
    status, out = _scan(capsys, str(tmpdir))
    lines = out.splitlines()
    assert status == 1
    assert lines[0].startswith("%s:1:1: MXC006 distutils is gone" % tmpdir.join("a.py"))
    assert lines[1].startswith("%s:2:5: MXC008 float(x.asnumpy())" % tmpdir.join("a.py"))
    assert lines[2:] == [
        "",
        "per rule:",
        "  MXC006     1",
        "  MXC008     1",
        "per file:",
        "     2  %s" % tmpdir.join("a.py"),
        "2 finding(s) in 1 of 2 file(s); 1 fixable with --fix",
    ]
    assert _scan(capsys, "--ignore", "MXC006,mxc008", str(tmpdir))[0] == 0
    status, out = _scan(capsys, "--select", "MXC006", str(tmpdir))
    assert (status, out.splitlines()[-1]) == (1, "1 finding(s) in 1 of 2 file(s)")


def test_unparsable_files_are_reported_and_the_scan_goes_on(tmpdir, capsys):
    _write(tmpdir, "broken.py", "def f(:\n")
    _write(tmpdir, "ok.py", "v = int(y.asnumpy())\n")
    status, out = _scan(capsys, "--json", str(tmpdir))
    report = json.loads(out)
    assert status == 1
    assert [e["path"] for e in report["errors"]] == [str(tmpdir.join("broken.py"))]
    assert report["errors"][0]["message"].startswith("syntax error")
    assert [f["code"] for f in report["findings"]] == ["MXC008"]
    assert report["files"] == 2


def test_excluded_folders_are_skipped_unless_named(tmpdir, capsys):
    for folder in (".git", ".tox", "build", "venv", "__pycache__", "myenv"):
        _write(tmpdir.mkdir(folder), "x.py", "v = float(x.asnumpy())\n")
    tmpdir.join("myenv", "pyvenv.cfg").write("home = /usr\n")
    _write(tmpdir.mkdir("src"), "x.py", "v = float(x.asnumpy())\n")
    status, out = _scan(capsys, "--json", str(tmpdir))
    assert [f["path"] for f in json.loads(out)["findings"]] == [str(tmpdir.join("src", "x.py"))]
    status, out = _scan(capsys, "--json", str(tmpdir.join("build", "x.py")))
    assert len(json.loads(out)["findings"]) == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--select", "MXC999"], "unknown rule code(s) MXC999"),
        (["no/such/path"], "no such file or folder: no/such/path"),
        (["--fix", "--diff"], "--fix and --diff: choose one"),
    ],
)
def test_usage_errors_exit_2_with_one_message(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["scan"] + argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.splitlines()[-1].startswith("mxcompat scan: error: ")
    assert message in err.splitlines()[-1]


def test_rules_lists_every_rule(capsys):
    status, out = _scan(capsys, "--rules")
    assert status == 0
    assert [line.split()[0] for line in out.splitlines()] == [r.code for r in rules.RULES]


def test_the_docs_page_renders_the_rules_table():
    # The page holds no copy: the docs build renders rules.markdown() where the directive is
    # (docs/_ext/mxcompat_docs.py); docs/test_built.py checks every rule in the built page.
    from tests.support.repo import reference_directives

    assert reference_directives("scan.md") == ["scan-rules"]


def test_the_rules_table_has_a_row_per_rule():
    lines = rules.markdown().splitlines()
    assert [line.split(" | ")[0].lstrip("| ") for line in lines[2:]] == [
        r.code for r in rules.RULES
    ]


def test_the_command_runs_from_the_cli_and_says_when_libcst_is_missing(tmpdir):
    from tests.support.processes import run_python

    path = _write(tmpdir, "a.py", "v = float(x.asnumpy())\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mxcompat", "scan", path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stdout.splitlines()[0].split(": ")[1].split()[0]) == (
        1,
        "MXC008",
    ), proc.stderr
    proc = run_python("""
        import sys
        sys.modules["libcst"] = None      # as where libcst is not installed
        from mxcompat import cli
        sys.exit(cli.main(["scan", "."]))
    """)
    assert (proc.returncode, proc.stderr) == (
        2,
        "mxcompat scan: needs libcst: pip install 'mxcompat[scan]' (or pip install libcst)\n",
    )
