"""autograd_threads on real MXNet: one warning when a thread enters ``autograd.record()`` while
another thread records, and nothing else changed.

Threads that really record at once on shared parameters crash MXNet at random
(``facts.AUTOGRAD_THREADS_RACE``), so no test here lets two recordings run together: the
holding thread enters ``record()`` and waits on an event without computing anything, the
other thread enters and leaves its own scope (computing nothing either), and only then is the
holder let go.  Gradients are computed only where one thread records at a time.
"""

import subprocess
import sys
import threading
import warnings

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

import mxcompat
from mxcompat._core.log import MXCompatWarning
from mxcompat.patches import autograd_threads
from tests.support.processes import subprocess_env

MESSAGE = (
    "autograd.record() entered in thread 'MainThread' while thread 'holder' records: MXNet's "
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


class Holder:
    """A thread inside ``autograd.record()`` (computing nothing) until ``release()``."""

    def __init__(self, scope=autograd.record):
        self.inside = threading.Event()
        self._go = threading.Event()
        self.seen = None
        self.thread = threading.Thread(target=self._hold, args=(scope,), name="holder")

    def _hold(self, scope):
        with scope():
            self.seen = autograd.is_recording()
            self.inside.set()
            self._go.wait(60)

    def __enter__(self):
        self.thread.start()
        assert self.inside.wait(60)
        return self

    def __exit__(self, *exc):
        self._go.set()
        self.thread.join(60)
        assert not self.thread.is_alive()


def mxcompat_warnings(caught):
    return [str(w.message) for w in caught if issubclass(w.category, MXCompatWarning)]


def test_a_thread_entering_record_while_another_records_gets_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Holder() as holder:
            assert autograd_threads.recording_threads() == (holder.thread.ident,)
            with autograd.record():
                assert autograd.is_recording()  # MXNet's own scope, entered as ever
            with autograd.record(train_mode=False):  # a second time: warned already
                assert autograd.is_recording() and not autograd.is_training()
        assert autograd_threads.recording_threads() == ()
    assert holder.seen is True
    assert mxcompat_warnings(caught) == [MESSAGE]
    # It points at the line of the code that entered record(), not at mxcompat or MXNet.
    ours = [w for w in caught if issubclass(w.category, MXCompatWarning)][0]
    assert ours.filename == __file__


@pytest.mark.parametrize(
    "holder_scope, second_scope",
    [
        (autograd.record, autograd.pause),  # pause(), train_mode(), predict_mode(): no recording
        (autograd.record, autograd.train_mode),
        (autograd.record, autograd.predict_mode),
        (autograd.pause, autograd.record),
        (autograd.train_mode, autograd.record),
    ],
)
def test_scopes_that_do_not_record_are_not_counted(holder_scope, second_scope):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MXCompatWarning)
        with Holder(holder_scope):
            with second_scope():
                pass


def test_nested_and_one_after_another_is_no_race():
    with warnings.catch_warnings():
        warnings.simplefilter("error", MXCompatWarning)
        with autograd.record():
            with autograd.record():
                assert autograd_threads.recording_threads() == (threading.get_ident(),)
            assert autograd_threads.recording_threads() == (threading.get_ident(),)
        # A thread records, ends its scope, and then another thread records.
        with Holder():
            pass
        with autograd.record():
            pass
    assert autograd_threads.recording_threads() == ()


def test_an_error_inside_the_scope_leaves_it_and_propagates():
    with pytest.raises(ValueError, match="inside"):
        with autograd.record():
            raise ValueError("inside")
    assert autograd_threads.recording_threads() == ()
    assert not autograd.is_recording()


def test_the_warning_made_an_error_leaves_the_scope_unentered():
    with warnings.catch_warnings():
        warnings.simplefilter("error", MXCompatWarning)
        with Holder() as holder:
            with pytest.raises(MXCompatWarning, match="while thread 'holder' records"):
                with autograd.record():
                    pass  # never reached: the error comes from entering the scope
            assert not autograd.is_recording()
            assert autograd_threads.recording_threads() == (holder.thread.ident,)
    assert autograd_threads.recording_threads() == ()


def _gradients():
    """One record/backward on a small net, then the same in a worker thread (one thread
    recording at a time): the loss and the weight's gradient each time."""
    mx.random.seed(3)
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.arange(8, dtype="float32").reshape((2, 4)) / 8)
    out = []

    def step():
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        out.append((loss.asnumpy().tolist(), net.weight.grad().asnumpy().tolist()))

    step()
    worker = threading.Thread(target=step)
    worker.start()
    worker.join()
    return out


def test_what_mxnet_computes_is_unchanged(unpatched):
    plain = _gradients()
    mxcompat.patch()
    assert _gradients() == plain
    assert plain[0] == plain[1]


def test_unpatch_leaves_mxnets_own_methods():
    scope = mx.autograd._RecordingStateScope
    patched = vars(scope)["__enter__"], vars(scope)["__exit__"]
    mxcompat.unpatch("autograd_threads")
    try:
        plain = vars(scope)["__enter__"], vars(scope)["__exit__"]
        assert [p.__wrapped__ for p in patched] == list(plain)
        assert all(p.__module__ == "mxnet.autograd" for p in plain)
        with warnings.catch_warnings():
            warnings.simplefilter("error", MXCompatWarning)
            with Holder(), autograd.record():
                pass
        assert "autograd_threads" not in mxcompat.patched()
    finally:
        mxcompat.patch()
    assert vars(scope)["__enter__"] is not plain[0]


def test_applied_on_every_release():
    assert "autograd_threads" in mxcompat.patched()


PROGRAM = r"""
import threading, warnings
warnings.simplefilter("always")
import mxcompat, mxnet as mx
from mxnet import autograd

inside, go = threading.Event(), threading.Event()

def hold():
    with autograd.record():
        inside.set()
        go.wait(60)

t = threading.Thread(target=hold)
t.start()
inside.wait(60)
for _ in range(3):
    with autograd.record():
        pass
go.set()
t.join()
print("done")
"""


@pytest.mark.parametrize("disabled", [False, True])
def test_a_fresh_program_sees_one_warning_and_none_with_the_patch_off(disabled):
    env = {"MXCOMPAT_DISABLE_PATCHES": "autograd_threads"} if disabled else {}
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=180,
    )
    assert (proc.returncode, proc.stdout) == (0, "done\n"), proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if "MXCompatWarning" in line]
    if disabled:
        assert lines == []
    else:
        assert len(lines) == 1 and "while thread 'Thread-1" in lines[0], proc.stderr[-3000:]
