"""The patch ``dataloader_spawn``: DataLoader workers started with spawn or forkserver import
mxcompat before MXNet and get NDArray datasets whose shared memory is still there (every
release, every Python, Linux).

Each start method runs in a fresh interpreter with ``python -c`` (the main module has no
file, so a spawned worker re-imports nothing of the script: only the patch brings mxcompat
there, as under pytest) and a hard timeout; batches are compared with ``num_workers=0``.
"""

import sys

import mxnet as mx
import pytest

import mxcompat
from mxcompat._core import facts
from tests.support import dataloader_kinds
from tests.support.processes import run_python
from tests.support.stack import glibc_refuses_exec_stack

LINUX = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="MXNet hands shared memory to workers as file descriptors on Linux only",
)
LAMBDA = "Can't pickle <function <lambda>"


def _run(method, env=None, v1=True):
    # The start method is set after `import mxnet`, as a script choosing one does: where the
    # default is not fork (3.14+), mxcompat then knows it was chosen.
    head = "import mxcompat, mxnet\nimport multiprocessing\nmultiprocessing.set_start_method(%r)\n"
    proc = run_python(dataloader_kinds.script(head % method, v1=v1), env=env, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dataloader_kinds.parse(proc.stdout)


def _expected_kinds(copies):
    kinds = {"mixed": "same copies %d" % copies}
    if facts.since(facts.DATALOADER_WORKER_POOL):
        kinds["threads"] = "same copies 0"
    return kinds


@LINUX
def test_forked_workers_read_every_kind_as_before():
    got = _run("fork")
    # Nothing is pickled for a forked worker: the lambda works, no copy is kept.
    expected = dict(_expected_kinds(copies=0), **{"lambda": "same copies 0", "kept": "0"})
    if "v1" in got:
        expected["v1"] = "same copies 0"
    assert {k: got.get(k) for k in expected} == expected
    assert got["start method"] == "fork"


@LINUX
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawned_workers_read_every_kind_and_a_lambda_fails_in_the_parent(method):
    # DataLoaderV1's process-per-worker path is read under spawn only: under forkserver it is
    # the same code as the Pool's, and every spawned worker costs an `import mxnet`.
    got = _run(method, v1=method == "spawn")
    # One copy kept per spawned worker (two), none left once the workers have started.
    expected = dict(_expected_kinds(copies=2), kept="0")
    if method == "spawn" and facts.since(facts.DATALOADER_WORKER_POOL):
        expected["v1"] = "same copies 2"
    assert {k: got.get(k) for k in expected} == expected
    # pickle's own error, raised in the parent before any worker starts: not a hang.
    assert got["lambda"].startswith("error PicklingError ") and LAMBDA in got["lambda"], got
    assert got["start method"] == method


def _unpatched_spawn(dataset):
    """A spawned two-worker epoch of ``dataset`` (code making it from ``a``) without the
    patch, bounded in the child (MXNet's own timeout from 1.6, faulthandler's before)."""
    timeout = ", timeout=10" if facts.since(facts.DATALOADER_TIMEOUT) else ""
    return run_python(
        """
        import faulthandler
        faulthandler.dump_traceback_later(30, exit=True)
        import mxcompat, mxnet as mx, numpy as np
        import multiprocessing
        multiprocessing.set_start_method("spawn")
        mxcompat.unpatch("dataloader_spawn")
        a = np.arange(24, dtype="float32").reshape(6, 4)
        data = %s
        loader = mx.gluon.data.DataLoader(data, batch_size=3, num_workers=2%s)
        print([[x.asnumpy().tolist() for x in b] for b in loader])
        """
        % (dataset, timeout),
        timeout=300,
    )


@LINUX
def test_without_the_patch_the_ndarray_datasets_memory_is_gone_before_the_worker_starts():
    proc = _unpatched_spawn("mx.gluon.data.ArrayDataset(mx.nd.array(a), mx.nd.array(a + 100))")
    # Both copies' descriptors are closed when the Popen passes them to the child.
    assert proc.returncode != 0, proc.stdout
    assert "ValueError: bad value(s) in fds_to_keep" in proc.stderr, proc.stderr[-3000:]


@LINUX
@pytest.mark.skipif(not facts.numpy_since(facts.NUMPY_2), reason="needs NumPy 2")
@pytest.mark.mxnet(">=1.6", reason="before 1.6 a dead worker's batch is awaited forever")
def test_without_the_patch_a_spawned_worker_dies_importing_mxnet_on_numpy_2():
    proc = _unpatched_spawn("mx.gluon.data.ArrayDataset(a)")
    assert proc.returncode != 0, proc.stdout
    assert "multiprocessing.context.TimeoutError" in proc.stderr, proc.stderr[-3000:]
    # The worker's plain `import mxnet` dies at its first trap: where glibc refuses the
    # executable stack this release's library asks for, before it reaches NumPy.
    if glibc_refuses_exec_stack() and not facts.since(facts.LIBMXNET_STACK_NOT_EXECUTABLE):
        first = "cannot enable executable stack"
    else:
        first = "was removed in the NumPy 2.0 release"
    assert first in proc.stderr, proc.stderr[-3000:]


@LINUX
def test_the_patch_applies_on_linux_to_every_release():
    assert "dataloader_spawn" in mxcompat.patched()


@LINUX
def test_unpatch_leaves_mxnets_own_module_and_reducers(unpatched):
    import multiprocessing
    from multiprocessing.reduction import ForkingPickler

    from mxcompat.patches import dataloader_spawn

    loader_module = mx.gluon.data.dataloader
    table = ForkingPickler._extra_reducers
    assert loader_module.multiprocessing is multiprocessing
    assert table[mx.nd.NDArray] is loader_module.reduce_ndarray
    if hasattr(loader_module, "reduce_np_ndarray"):
        assert table[mx.np.ndarray] is loader_module.reduce_np_ndarray
    mxcompat.patch("dataloader_spawn")
    assert isinstance(loader_module.multiprocessing, dataloader_spawn.SpawnReady)
    assert isinstance(table[mx.nd.NDArray], dataloader_spawn.KeepShared)
    assert table[mx.nd.NDArray].__wrapped__ is loader_module.reduce_ndarray
    mxcompat.unpatch("dataloader_spawn")
    assert loader_module.multiprocessing is multiprocessing
    assert table[mx.nd.NDArray] is loader_module.reduce_ndarray


@LINUX
def test_a_reducer_someone_else_registered_is_left_alone(unpatched):
    from multiprocessing.reduction import ForkingPickler

    loader_module = mx.gluon.data.dataloader

    def theirs(data):
        return loader_module.reduce_ndarray(data)

    ForkingPickler.register(mx.nd.NDArray, theirs)
    try:
        mxcompat.patch("dataloader_spawn")
        assert ForkingPickler._extra_reducers[mx.nd.NDArray] is theirs
        mxcompat.unpatch("dataloader_spawn")
        assert ForkingPickler._extra_reducers[mx.nd.NDArray] is theirs
    finally:
        ForkingPickler.register(mx.nd.NDArray, loader_module.reduce_ndarray)
