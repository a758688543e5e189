"""Many threads at once, as serving and data-parallel code calls MXNet: each thread builds its own
model, freezes its own patterns, trains, converts it both ways and exports it to ONNX, while
another thread keeps changing the registry with unrelated patterns.  Bounded in time: a hung
thread fails the test.  And a Module its own thread lets go dies in that thread, whatever the
others do meanwhile."""

import threading

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from tests.support.models import dense_net
from tests.support.processes import run_python, run_threads

THREADS = 8
STEPS = 25


def _onnx_here():
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def _net(prefix, seed):
    """A thread's own net (its ``prefix``), with weights of its own (``seed``)."""
    net = dense_net((4, 6, 3), "relu", prefix=prefix, init=mx.init.Uniform(0.5), ctx=mx.cpu())
    rng = np.random.RandomState(seed)
    for p in net.collect_params().values():
        p.set_data(mx.nd.array(rng.uniform(-1, 1, p.shape)))
    return net


def _values(params):
    return {name: p.data().asnumpy().copy() for name, p in params.items()}


def _worker(index, errors, results):
    try:
        prefix = "thread%d_" % index
        x = mx.nd.array(np.random.RandomState(index).uniform(-1, 1, (2, 4)))
        y = mx.nd.array([[0.5, -0.5, 1.0], [1.0, 0.0, -1.0]])
        net = _net(prefix, index)
        params = net.collect_params()
        frozen = [n for n in params if n.startswith(prefix + "dense0_")]
        mxcompat.freeze(prefix + "dense0_*")
        before = _values(params)
        trainer = mx.gluon.Trainer(
            params, "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}
        )
        loss = mx.gluon.loss.L2Loss()
        for _ in range(STEPS):
            with mx.autograd.record():
                out = loss(net(x), y)
            out.backward()
            trainer.step(2)
        after = _values(params)
        # Gluon -> Module: the frozen kernel stays there too, through Module.update().
        mod = net.to_module(data_shapes=[("data", (2, 4))], label_names=None, for_training=True)
        mod.init_optimizer(
            optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9}
        )
        batch = mx.io.DataBatch([x], [])
        for _ in range(STEPS):
            mod.forward(batch, is_train=True)
            mod.backward([mx.nd.ones((2, 3))])
            mod.update()
        arg, _ = mod.get_params()
        # Module -> Gluon: the same function as the module's.
        back = mod.to_gluon()
        same = np.abs(
            back(x).asnumpy() - mod.predict(mx.io.NDArrayIter(x, batch_size=2)).asnumpy()
        ).max()
        onnx_ok = None
        if _onnx_here():
            onnx_ok = mxcompat.to_onnx(net, [(2, 4)]) is not None
        mxcompat.unfreeze(prefix + "dense0_*")
        results[index] = (frozen, before, after, {n: arg[n].asnumpy() for n in arg}, same, onnx_ok)
    except Exception as exc:
        errors.append((index, exc))


@pytest.mark.filterwarnings("ignore:mxcompat.freeze pattern:mxcompat.MXCompatWarning")
def test_eight_threads_freeze_train_convert_and_export_their_own_models():
    errors, results = [], {}
    counter = iter(range(THREADS))
    lock = threading.Lock()
    stop = threading.Event()

    def churn():
        # Unrelated patterns, frozen and unfrozen all the time: every worker's caches keyed on
        # the registry's version go stale over and over.
        i = 0
        while not stop.is_set():
            mxcompat.freeze("unrelated%d_*" % (i % 5))
            mxcompat.unfreeze("unrelated%d_*" % ((i + 2) % 5))
            i += 1

    def work():
        with lock:
            index = next(counter)
        _worker(index, errors, results)

    churner = threading.Thread(target=churn, daemon=True)
    churner.start()
    try:
        hung = run_threads(work, THREADS, 300)
    finally:
        stop.set()
        churner.join(60)
    assert hung == [] and not churner.is_alive(), "a thread hung"
    assert errors == []
    assert sorted(results) == list(range(THREADS))
    for index, (frozen, before, after, arg, same, onnx_ok) in sorted(results.items()):
        prefix = "thread%d_" % index
        assert frozen == [prefix + "dense0_weight", prefix + "dense0_bias"]
        for name in before:
            if name in frozen:
                # Bit for bit, through Trainer.step() and through Module.update().
                assert np.array_equal(after[name], before[name]), name
                assert np.array_equal(arg[name], before[name]), name
            else:
                assert not np.array_equal(after[name], before[name]), name
                assert not np.array_equal(arg[name], after[name]), name
        assert same < 1e-6
        assert onnx_ok in ((True,) if _onnx_here() else (None,))
    # Every worker unfroze what it froze; the churn's patterns are the only ones left.
    assert all(p.startswith("unrelated") for p in mxcompat.frozen_patterns())


# The owner thread lets its Module go while the main thread's forward compares every bound
# Module with the registry (inside registry.matches), and ends.  If that comparison held the
# Module, it would die in the main thread after its own thread ended: up to MXNet 1.5 the
# engine then never finishes (facts.EXECUTOR_OUTLIVES_ITS_THREAD), so the script stops itself.
_LET_GO = """
import faulthandler, importlib, threading, weakref
faulthandler.dump_traceback_later(60, exit=True)
import mxcompat
import mxnet as mx
registry = importlib.import_module("mxcompat.freeze.registry")

def trained(prefix):
    data = mx.sym.var("data")
    # Temporary space in the executor: FullyConnected's from 1.5, relu's and the add's before.
    hidden = mx.sym.relu(mx.sym.FullyConnected(data, num_hidden=6, name=prefix + "fc1"))
    out = mx.sym.FullyConnected(hidden + hidden, num_hidden=3, name=prefix + "fc2")
    mod = mx.mod.Module(out, label_names=None)
    mod.bind([("data", (2, 4))], for_training=True)
    mod.init_params()
    mod.init_optimizer()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 4))], []), is_train=True)
    mod.backward([mx.nd.ones((2, 3))])
    mod.update()
    mx.nd.waitall()
    return mod

ready, go, died_in = threading.Event(), threading.Event(), []

def owner():
    mod = trained("a_")
    weakref.finalize(mod, lambda: died_in.append(threading.current_thread().name))
    ready.set()
    go.wait()
    del mod

thread = threading.Thread(target=owner, name="owner")
thread.start()
ready.wait()
mine = trained("b_")
matches = registry.matches

def matches_while_the_owner_lets_go(names):
    if not go.is_set():
        go.set()
        thread.join()
    return matches(names)

registry.matches = matches_while_the_owner_lets_go
mxcompat.freeze("unrelated_*")
mine.forward(mx.io.DataBatch([mx.nd.ones((2, 4))], []), is_train=True)
registry.matches = matches
print("died in", died_in)
mx.nd.waitall()
print("done")
"""


def test_a_module_let_go_by_its_thread_dies_there_not_in_another_threads_forward():
    proc = run_python(_LET_GO, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["died in ['owner']", "done"], proc.stdout
