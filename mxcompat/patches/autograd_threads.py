"""One warning when two threads record autograd at once: a race that MXNet does not prevent.

MXNet keeps autograd's recording flag per thread, so nothing stops several threads from
recording at the same time, and code does: GluonNLP's ``Parallel`` runs each
``Parallelizable.forward_backward`` in a thread of its own, and user code hands a training
step to a thread pool.  But recording an operator reads and writes the autograd entries of
the arrays it reads, without a lock, so threads recording on arrays they share (one model's
parameters, a common input) race (``facts.AUTOGRAD_THREADS_RACE``).  Measured without
mxcompat, 4 threads x 200 steps of record/backward on one 2-layer Dense net: 10 of 10 runs
failed on each of 1.3.1, 1.5.1, 1.7.0.post2 and 1.9.1 (``Check failed: type_ != nullptr The
any container is empty requested=...AGInfo``, a storage-type check, ``free(): invalid next
size``, segmentation faults); each thread on its own net and input, 0 of 4 runs on 1.3.1 and
0 of 6 on 1.9.1; one net with a parameter copy per context (``cpu(0)`` ... ``cpu(3)``), each
thread on its own copy, 0 of 6 on 1.9.1.  Nothing outside libmxnet can order those writes
without serializing the user's threads, which would change when what runs.

So mxcompat only says so: it counts the threads inside an ``autograd.record()`` scope
(``_RecordingStateScope.__enter__``/``__exit__``; ``pause()``, ``train_mode()`` and
``predict_mode()`` are not counted), and the first time a thread enters one while another
thread is inside its own, it issues one ``MXCompatWarning`` naming the race and the two ways
on: record in one thread, or use processes.  Threads that each record on arrays of their own
(a model's copies on separate contexts, measured above) do not race, but nothing cheap tells
them apart at ``record()``: the warning says so.  Nothing MXNet computes, nor when, is
changed.  Cost: two plain functions and a lock per ``record()`` scope, about 1.5 us on top
of MXNet's own 4.5 us (MXNet 1.9.1, Python 3.11), next to a step's forward and backward.
``mxcompat scan`` finds the same in source (rule MXC012: ``autograd.record()`` in a function
handed to threads).  Patch name ``autograd_threads``.
"""

from __future__ import annotations

import threading

from .._core.log import warn_once
from .._core.registry import Patch, Target, record, register

PATCH = "autograd_threads"

MESSAGE = (
    "autograd.record() entered in thread {me!r} while thread {other!r} records: MXNet's "
    "autograd is not thread-safe when several threads' recordings read the same arrays (one "
    "model's parameters, a common input), and such runs fail at random on every MXNet 1.x "
    "release: 'Check failed: type_ != nullptr The any container is empty "
    "requested=...AGInfo', heap corruption ('free(): invalid next size'), segmentation "
    "faults. Record in one thread (one forward and backward after another: MXNet's engine "
    "runs their operators asynchronously all the same), or use processes (multiprocessing "
    "or a distributed kvstore, one copy of the model each). Threads that each record on "
    "arrays of their own (a model's copies on separate devices) do not race: "
    "MXCOMPAT_DISABLE_PATCHES=autograd_threads silences this. mxcompat only warns: it "
    "changes nothing here."
)

_lock = threading.Lock()
_recording: dict[int, int] = {}  # thread ident -> record() scopes it is inside


def recording_threads():
    """The idents of the threads inside an ``autograd.record()`` scope now."""
    with _lock:
        return tuple(_recording)


def _thread_name(ident):
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return "ident %d" % ident


def _entered():
    me = threading.get_ident()
    with _lock:
        _recording[me] = _recording.get(me, 0) + 1
        other = next((ident for ident in _recording if ident != me), None)
    if other is not None:
        record(PATCH)
        try:
            warn_once(
                PATCH,
                lambda: MESSAGE.format(
                    me=threading.current_thread().name, other=_thread_name(other)
                ),
            )
        except BaseException:  # the warning made an error (-W error): the scope is not entered
            _left()
            raise


def _left():
    me = threading.get_ident()
    with _lock:
        depth = _recording.get(me)
        if depth is None:
            return  # entered before the patch was applied
        if depth > 1:
            _recording[me] = depth - 1
        else:
            del _recording[me]


def _enter_proxy(original):
    # Plain functions, not wrapt wrappers: they run at every training step's record().
    def __enter__(self):
        if not self._enter_is_record:  # pause(), train_mode(), predict_mode()
            return original(self)
        _entered()
        try:
            return original(self)
        except BaseException:
            _left()
            raise

    __enter__.__wrapped__ = original
    return __enter__


def _exit_proxy(original):
    def __exit__(self, ptype, value, trace):
        try:
            return original(self, ptype, value, trace)
        finally:
            if self._enter_is_record:
                _left()

    __exit__.__wrapped__ = original
    return __exit__


def _forget():
    # Unpatched, no exit is counted any more: a scope still open must not stay counted.
    with _lock:
        _recording.clear()


register(
    Patch(
        PATCH,
        "One warning when a thread enters autograd.record() while another thread records "
        "(a race on shared parameters MXNet does not prevent); nothing changed.",
        targets=[
            Target("mxnet.autograd", "_RecordingStateScope.__enter__", proxy=_enter_proxy),
            Target("mxnet.autograd", "_RecordingStateScope.__exit__", proxy=_exit_proxy),
        ],
        on_remove=_forget,
    )
)
