"""MXNet under ``python -OO``: the ``python_oo`` patch, in fresh interpreters."""

import subprocess
import sys
import textwrap

import mxcompat
from tests.support.processes import subprocess_env
from tests.support.stack import applicable_patches

PROGRAM = textwrap.dedent("""
    import mxcompat, mxnet as mx
    print(mxcompat.patched())
    data = mx.sym.var("data")
    mod = mx.mod.Module(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), label_names=None)
    mod.bind(data_shapes=[("data", (1, 3))], for_training=False)
    mod.init_params(mx.init.One())
    mod.forward(mx.io.DataBatch([mx.nd.ones((1, 3))]), is_train=False)
    print(mod.get_outputs()[0].asnumpy().tolist(), mx.nd.ones((2, 2)).sum().asscalar())
""")


def run(flags, env=None):
    return subprocess.run(
        [sys.executable] + flags + ["-c", PROGRAM],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=180,
    )


def test_mxnet_imports_and_runs_under_OO():
    proc = run(["-OO"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    active, result = proc.stdout.splitlines()
    # Every patch that applies here, and python_oo last (its place in the registry).
    assert active == repr(applicable_patches() + ("python_oo",))
    assert result == "[[3.0, 3.0]] 4.0"


def test_without_the_patch_mxnet_fails_under_OO_as_it_ships():
    proc = run(["-OO"], env={"MXCOMPAT_DISABLE_PATCHES": "python_oo"})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "TypeError: sequence item 0: expected str instance, NoneType found"
    )
    assert "ndarray_doc.py" in proc.stderr


def test_not_applied_without_OO():
    for flags in ([], ["-O"]):
        proc = run(flags)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.splitlines()[0] == repr(applicable_patches())
    assert "python_oo" in mxcompat.patch_names() and "python_oo" not in mxcompat.patched()
