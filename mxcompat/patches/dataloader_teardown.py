"""A dropped multi-worker ``gluon.data.DataLoader`` never hangs the process.

From 1.4 (``facts.DATALOADER_WORKER_POOL``) a ``DataLoader`` with ``num_workers > 0`` runs its
workers as a ``multiprocessing.Pool``, and its ``__del__`` calls the pool's ``terminate()``.
``terminate()`` kills the workers wherever they are; one killed while it was sending a batch
back still holds the lock of the pool's result queue, and the pool's task-handler thread then
waits for that lock forever while ``terminate()`` waits for the thread: the training job just
stops (a finalizer's exception is ignored, so no per-test timeout can end it).  Measured here:
once in a few hundred to a few thousand create/iterate/drop cycles, on 1.4.1 and 1.9.1, on
Python 3.11, 3.12 and 3.13 alike (the race is the standard library's, not a release's).

With this patch a dropped ``DataLoader`` retires its pool as ``close()`` + ``join()`` would:
no new task, the workers finish the batches already asked for (at most ``prefetch``, those of
an epoch left early) and exit by themselves, so none dies holding a lock.  Only if a worker is
still running after ``TIMEOUT`` seconds (a transform that never returns) does MXNet's own
``terminate()`` run, as before.  Patch name ``dataloader_teardown``; every Python (the race is
there from 3.11 on at least).

The other places where MXNet's Python layer (1.3.1 … 1.9.1, read in full: only
``gluon/data/dataloader.py`` uses ``multiprocessing`` pools or worker processes, besides the
``tools/im2rec.py`` script) stops workers, and why they are left as they are:

* 1.3.1's ``_MultiWorkerIter`` and ``DataLoaderV1``'s ``_MultiWorkerIterV1`` (1.4+) run
  their own ``multiprocessing.Process`` workers.  Their ``__del__`` (``shutdown``) puts stop
  marks in the queues, joins only the fetcher *thread* (which reads the marks the main process
  has just written) and, from 1.4, ``Process.terminate()``s the workers still alive: a
  signal, never waited on.  Nothing reads or writes those queues afterwards, so a worker
  killed holding a queue's lock blocks no one: they cannot hang.
* ``DataLoader(thread_pool=True)`` (1.4+): ``__del__`` terminates a ``ThreadPool``.  Threads
  are not killed, so no lock is left held, and its queues are in-process; ``terminate()`` only
  joins the pool's handler threads, which finish.  Left to MXNet (this patch skips it).
* ``_MultiWorkerIter.__next__`` (1.6+) ``terminate()``s the process pool when a batch raised
  in a worker, then re-raises.  It is the same race, but once per failed batch and in the
  caller's thread, not in a finalizer: there a hang can be interrupted (Ctrl-C, a timeout's
  signal) and the error propagates, where an exception in ``__del__`` is swallowed.  Not
  covered.
"""

import sys
import time

from .._core import facts
from .._core.registry import Patch, Target, record, register

PATCH = "dataloader_teardown"
DOC = (
    "A dropped multi-worker DataLoader lets its workers finish and exit instead of killing "
    "them, which can hang the process."
)
# How long a dropped DataLoader waits for its workers' batches in flight before it kills them.
TIMEOUT = 60.0


def _workers_exited(pool, timeout):
    deadline = time.monotonic() + timeout
    while True:
        # The pool replaces a worker that exits while results are owed, so read the list anew.
        alive = [p for p in getattr(pool, "_pool", ()) if p.is_alive()]
        left = deadline - time.monotonic()
        if not alive or left <= 0:
            return not alive
        alive[0].join(min(left, 0.1))


def retire(pool, timeout=TIMEOUT):
    """Close ``pool``, let its workers finish and exit, then join it; ``terminate()`` it only
    when a worker outlives ``timeout`` seconds.  Returns whether it closed gracefully."""
    pool.close()
    if _workers_exited(pool, timeout):
        pool.join()
        return True
    pool.terminate()
    return False


def _wrap_del(wrapped, instance, args, kwargs):
    import multiprocessing.pool

    pool = getattr(instance, "_worker_pool", None)
    # A ThreadPool's threads hold no lock a kill could leave behind; MXNet only terminates
    # process pools here (its own assert), and so does this.
    if (
        type(pool) is not multiprocessing.pool.Pool
        or sys.is_finalizing()
        or getattr(pool, "_state", None) != multiprocessing.pool.RUN
    ):
        return wrapped(*args, **kwargs)
    try:
        retire(pool)
    except Exception:
        # Never worse than MXNet: whatever went wrong, its own teardown still runs.
        return wrapped(*args, **kwargs)
    record(PATCH)
    instance._worker_pool = None
    return None


register(
    Patch(
        PATCH,
        DOC,
        since=facts.DATALOADER_WORKER_POOL,
        targets=[Target("mxnet.gluon.data.dataloader", "DataLoader.__del__", _wrap_del)],
    )
)
