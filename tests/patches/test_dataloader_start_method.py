"""The patch ``dataloader_start_method``: where multiprocessing's default start method is no
longer fork (Python 3.14+ on Linux), MXNet's DataLoader workers fork unless the script chose a
start method, so a legacy script behaves as on 3.13.

The legacy scripts (no ``if __name__ == "__main__":`` guard, a ``transform`` lambda) run in
every env, as ``python script.py`` with ``import mxcompat`` at the top and under ``mxcompat
run`` without it: on older Pythons fork is the default anyway, which is what they check
there.  Each runs in a fresh interpreter with a hard timeout.
"""

import subprocess
import sys

import mxnet as mx
import pytest

import mxcompat
from mxcompat._core import facts
from tests.support import dataloader_kinds
from tests.support.processes import mxcompat_cmd, run_python, subprocess_env, write

CHANGED = sys.platform.startswith("linux") and facts.python_since(facts.PYTHON_FORKSERVER_DEFAULT)
NOT_FORK_DEFAULT = pytest.mark.skipif(
    not CHANGED,
    reason="multiprocessing's default start method is fork here (Linux before Python 3.14)",
)


def _python_script(path, env=None, timeout=300):
    """``python path`` in this env, as a user runs a script (CompletedProcess)."""
    return subprocess.run(
        [sys.executable, path],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=timeout,
    )


def _legacy_epoch(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = dataloader_kinds.parse(proc.stdout)
    expected = {"mixed": "same copies 0", "lambda": "same copies 0", "kept": "0"}
    if facts.since(facts.DATALOADER_WORKER_POOL):
        expected.update(v1="same copies 0", threads="same copies 0")
    assert {k: got.get(k) for k in expected} == expected
    # mxcompat forks MXNet's workers without fixing the default context (3.14+); before 3.14
    # MXNet's own pool uses the default, fork.
    assert got["start method"] == ("None" if CHANGED else "fork")


def test_an_unguarded_script_importing_mxcompat_reads_every_kind(tmpdir):
    script = write(tmpdir.join("train.py"), dataloader_kinds.script("import mxcompat\n"))
    _legacy_epoch(_python_script(script))


def test_an_unguarded_script_under_mxcompat_run_reads_every_kind(tmpdir):
    script = write(tmpdir.join("train.py"), dataloader_kinds.script())
    _legacy_epoch(mxcompat_cmd("run", script, cwd=str(tmpdir), timeout=300))


@NOT_FORK_DEFAULT
def test_the_patch_applies_where_fork_is_not_the_default():
    assert "dataloader_start_method" in mxcompat.patched()


@pytest.mark.skipif(CHANGED, reason="here the default start method is not fork")
def test_the_patch_does_not_apply_where_fork_is_the_default():
    assert "dataloader_start_method" not in mxcompat.patched()


@NOT_FORK_DEFAULT
def test_without_the_patch_an_unguarded_script_fails(tmpdir):
    # The trap: every worker re-runs the script, which starts workers while it bootstraps.
    script = write(
        tmpdir.join("train.py"),
        """
        import mxcompat, mxnet as mx, numpy as np
        data = mx.gluon.data.ArrayDataset(np.arange(24, dtype="float32").reshape(6, 4))
        loader = mx.gluon.data.DataLoader(data, batch_size=2, num_workers=2%s)
        print([b.asnumpy().tolist() for b in loader])
        """
        # MXNet's own bound on a batch, where it has one; the subprocess is bounded anyway.
        % (", timeout=20" if facts.since(facts.DATALOADER_TIMEOUT) else ""),
    )
    try:
        proc = _python_script(
            script, env={"MXCOMPAT_DISABLE_PATCHES": "dataloader_start_method"}, timeout=90
        )
        code, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as hung:
        # Before DataLoader(timeout=) (1.6) a parent whose workers died waits for them for
        # ever where the interpreter does not end it (3.15): the trap is that hang.
        if facts.since(facts.DATALOADER_TIMEOUT):
            raise
        err = hung.stderr.decode() if isinstance(hung.stderr, bytes) else hung.stderr or ""
        code = None
    assert code != 0
    assert "bootstrapping phase" in err, err[-3000:]


# Which kind of process MXNet started is read off its Pool (1.4+); 1.3's iterator starts its
# workers in a local list it keeps no handle on (its runs are judged by the epochs above).
POOL = pytest.mark.mxnet(
    ">=1.4", reason="from 1.4 the DataLoader's workers are a Pool whose processes can be read"
)


@NOT_FORK_DEFAULT
@POOL
def test_a_chosen_start_method_is_respected_and_nobodys_choice_forks():
    proc = run_python(
        """
        import multiprocessing as mp
        import mxcompat, mxnet as mx, numpy as np
        from mxnet.gluon.data import ArrayDataset, DataLoader

        data = ArrayDataset(np.arange(8, dtype="float32").reshape(4, 2))

        def workers():
            loader = DataLoader(data, batch_size=2, num_workers=1)
            kind = type(loader._worker_pool._pool[0]).__name__
            assert [b.asnumpy().tolist() for b in loader] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
            return kind

        print("nobody", workers(), mp.get_start_method(allow_none=True))
        mp.Queue()  # the script's own use of the default context fixes it, choosing nothing
        print("used", workers(), mp.get_start_method(allow_none=True))
        print("own", mp.get_context().Process.__name__)
        mp.set_start_method("forkserver", force=True)
        print("forkserver", workers())
        mp.set_start_method("spawn", force=True)
        print("spawn", workers())
        mp.set_start_method(None, force=True)
        print("reset", workers())
        mp.context._default_context.set_start_method("forkserver", force=True)
        print("context", workers())
        mxcompat.unpatch("dataloader_start_method")
        mp.set_start_method(None, force=True)
        print("unpatched", workers())
        """,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    default = mp_default()
    assert proc.stdout.splitlines() == [
        "nobody ForkProcess None",
        "used ForkProcess %s" % default,
        "own %s" % _process_class(default),
        "forkserver ForkServerProcess",
        "spawn SpawnProcess",
        "reset ForkProcess",
        "context ForkServerProcess",
        "unpatched %s" % _process_class(default),
    ]


@NOT_FORK_DEFAULT
@POOL
def test_forkserver_chosen_before_import_mxnet_cannot_be_told_from_the_default():
    # The documented limit: before the patch records choices, choosing the default method
    # leaves the same state as using it.  Another method chosen then is respected.
    proc = run_python(
        """
        import multiprocessing as mp
        mp.set_start_method(mp.get_all_start_methods()[0])
        import mxcompat, mxnet as mx, numpy as np
        data = mx.gluon.data.ArrayDataset(np.arange(8, dtype="float32").reshape(4, 2))
        loader = mx.gluon.data.DataLoader(data, batch_size=2, num_workers=1)
        print(type(loader._worker_pool._pool[0]).__name__)
        """,
        timeout=300,
    )
    assert (proc.returncode, proc.stdout) == (0, "ForkProcess\n"), proc.stderr[-3000:]


def mp_default():
    import multiprocessing

    return multiprocessing.get_all_start_methods()[0]


def _process_class(method):
    return {"fork": "ForkProcess", "spawn": "SpawnProcess", "forkserver": "ForkServerProcess"}[
        method
    ]


@NOT_FORK_DEFAULT
def test_unpatch_leaves_the_module_and_set_start_method_as_they_were(unpatched):
    import multiprocessing
    import multiprocessing.context

    from mxcompat.patches import dataloader_start_method

    set_method = multiprocessing.set_start_method
    class_method = multiprocessing.context.DefaultContext.__dict__["set_start_method"]
    loader_module = mx.gluon.data.dataloader
    assert loader_module.multiprocessing is multiprocessing
    mxcompat.patch("dataloader_start_method")
    assert isinstance(loader_module.multiprocessing, dataloader_start_method.ForkUnlessChosen)
    assert multiprocessing.set_start_method is not set_method
    mxcompat.unpatch("dataloader_start_method")
    assert loader_module.multiprocessing is multiprocessing
    assert multiprocessing.set_start_method is set_method
    assert multiprocessing.context.DefaultContext.__dict__["set_start_method"] is class_method
