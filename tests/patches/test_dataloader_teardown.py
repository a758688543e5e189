"""The patch ``dataloader_teardown``: a dropped multi-worker DataLoader lets its workers finish
and exit (MXNet 1.4+), where MXNet's own ``__del__`` kills them with ``terminate()`` and can
hang the process."""

import contextlib
import gc
import os
import signal
import time

import mxnet as mx
import pytest

import mxcompat
from tests.support.processes import run_python

POOL = pytest.mark.mxnet(
    ">=1.4", reason="1.3's DataLoader runs its own worker processes, not a multiprocessing.Pool"
)


def _slow(x):
    # Each worker is still busy with a batch when the loader is dropped.
    time.sleep(0.05)
    return x


def _dropped_workers():
    """The exit codes of a two-worker DataLoader's processes after one batch and a drop (the
    other batches of the epoch still in flight)."""
    import numpy as np

    data = mx.gluon.data.ArrayDataset(np.arange(64, dtype="float32").reshape(16, 4)).transform(
        _slow
    )
    loader = mx.gluon.data.DataLoader(data, batch_size=2, num_workers=2)
    workers = list(loader._worker_pool._pool)
    batch = next(iter(loader))
    assert batch.shape == (2, 4)
    del loader, batch
    gc.collect()
    for p in workers:
        p.join(60)
    return [p.exitcode for p in workers]


@contextlib.contextmanager
def _forking():
    # Python 3.14+ defaults to forkserver, where only mxcompat (dataloader_start_method)
    # makes MXNet's workers fork; unpatched, the test chooses fork itself, as every Python
    # MXNet was released for did, and gives the choice back after.
    import multiprocessing

    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("fork", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(before, force=True)


@POOL
def test_mxnet_kills_the_workers_of_a_dropped_loader(unpatched):
    # MXNet's own teardown: terminate(), a SIGTERM wherever each worker is (the race).
    with _forking():
        assert _dropped_workers() == [-signal.SIGTERM] * 2


@POOL
def test_the_patch_applies_where_the_loader_has_a_pool():
    assert "dataloader_teardown" in mxcompat.patched()


@pytest.mark.mxnet("<1.4", reason="from 1.4 the DataLoader's workers are a Pool")
def test_the_patch_does_not_apply_before_the_pool():
    assert "dataloader_teardown" not in mxcompat.patched()


@POOL
def test_with_the_patch_the_workers_finish_and_exit_by_themselves():
    assert _dropped_workers() == [0, 0]


@POOL
def test_a_worker_that_never_returns_is_still_terminated_after_the_timeout():
    import multiprocessing

    from mxcompat.patches import dataloader_teardown

    pool = multiprocessing.Pool(1)
    pool.apply_async(time.sleep, (600,))
    time.sleep(0.5)
    worker = pool._pool[0]
    start = time.monotonic()
    assert dataloader_teardown.retire(pool, timeout=1.0) is False
    assert time.monotonic() - start < 30
    worker.join(30)
    assert worker.exitcode == -signal.SIGTERM


# The soak's length: 400 cycles (about a minute) where tox sets TEST_SOAK=1 (one env per start
# method MXNet's workers meet: 3.11 fork, 3.14 forkserver), 100 elsewhere.
CYCLES = 400 if os.environ.get("TEST_SOAK") == "1" else 100


@POOL
def test_hundreds_of_loaders_created_iterated_and_dropped_never_hang():
    # Without the patch such a loop hung here once in 300-3000 cycles (all workers gone,
    # the task handler waiting for the result queue's lock a killed worker held).  Bounded:
    # faulthandler ends the process (exit 1, with every thread's stack) if a cycle hangs.
    proc = run_python(
        """
        import faulthandler, gc, multiprocessing
        import mxcompat, mxnet as mx, numpy as np
        data = mx.gluon.data.ArrayDataset(np.arange(64, dtype="float32").reshape(16, 4))
        for i in range(%d):
            faulthandler.dump_traceback_later(60, exit=True)
            loader = mx.gluon.data.DataLoader(data, batch_size=4, num_workers=2)
            for batch in loader:
                break
            del loader, batch
        faulthandler.cancel_dump_traceback_later()
        gc.collect()
        print("cycles", i + 1, "children", len(multiprocessing.active_children()))
    """
        % CYCLES,
        timeout=600,
    )
    expected = "cycles %d children 0\n" % CYCLES
    assert (proc.returncode, proc.stdout) == (0, expected), proc.stderr[-3000:]
