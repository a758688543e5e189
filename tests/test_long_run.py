"""Long runs: mxcompat's own memory does not grow with training steps, registry changes or
models built and dropped, and dropped models are collected, frozen or not.

Bounded versions of ``python -m benchmarks --only longrun`` (a few hundred steps), on its
models (``benchmarks/long_run.py``: an MLP with BatchNorm, a Module and a Gluon net).  mxcompat's
footprint is what ``tracemalloc`` traces to lines in the mxcompat package (the frame that
allocated), read after ``gc.collect()`` every ten steps with the registry in the same state.
A read can be off by a few blocks: an object mxcompat makes may reuse a block another file
allocated (CPython's free lists; tracemalloc keeps the block's first owner), or the other way
round (seen: up to 336 bytes, one 2-tuple flipping between two reads).  So the median of the
ten reads in the last hundred steps may exceed the median of the ten in the second hundred by
``MARGIN`` bytes at most: less than one object (>= 32 bytes) kept per step, per registry
change (60 between the windows) or per model (30 cycles between them) would add.

With wrapt < 1.15 tracemalloc cannot tell: its C extension builds the argument tuples of
stacked wrappers itself, so CPython's tuple free lists fill up with blocks traced to the
mxcompat line that called (tens of KB, bounded: it levels off after some hundred calls of
``Module.bind``, while the process holds no more objects).  There the test counts the
objects the garbage collector tracks instead, with ``OBJECT_MARGIN``.
"""

import gc
import os
import tracemalloc
import warnings
import weakref

import mxnet as mx
import numpy as np
import pytest
import wrapt
from mxnet import autograd, gluon

import mxcompat
from benchmarks import long_run
from benchmarks.long_run import BATCH
from mxcompat._core import facts

STEPS = 500
CHANGE_EVERY = 5  # the registry changes every 5 steps: freeze, then unfreeze
UNMATCHED = "nothing_matches_this"  # warns once per model, then is checked at every step

_PACKAGE = os.path.dirname(os.path.abspath(mxcompat.__file__))
_WRAPT = facts.parse_version(wrapt.__version__)[:2]


@pytest.fixture
def traced():
    """tracemalloc on (one frame per trace: the allocating line decides whose it is), and
    counters past the integers Python shares (0 ... 256): the registry's version and the
    statistics' generation then stay allocated ints of one size, and a counter crossing
    256 mid-run is not read as growth."""
    for _ in range(130):
        mxcompat.freeze(UNMATCHED)
        mxcompat.unfreeze()
    for _ in range(260):
        gluon.Parameter("counter_warmup", differentiable=False)
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mxcompat.MXCompatWarning)  # the unmatched pattern
        yield
    if not was_tracing:
        tracemalloc.stop()


def _footprint():
    gc.collect()
    if _WRAPT < (1, 15):
        return len(gc.get_objects()), None
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(True, os.path.join(_PACKAGE, "*"))]
    )
    return sum(stat.size for stat in snapshot.statistics("filename")), snapshot


MARGIN = 512  # bytes
OBJECT_MARGIN = 8  # objects, with wrapt < 1.15


def _median_read(reads, window):
    ordered = sorted((reads[i] for i in window), key=lambda read: read[0])
    return ordered[len(ordered) // 2]


def _assert_no_growth(reads, second, last, what):
    """``reads``: step (or cycle) -> ``_footprint()``."""
    (size_a, snap_a), (size_b, snap_b) = _median_read(reads, second), _median_read(reads, last)
    if snap_a is None:
        assert size_b <= size_a + OBJECT_MARGIN, (
            "%s: objects tracked by the garbage collector grew, median %d -> %d (reads %s)"
            % (what, size_a, size_b, [reads[i][0] for i in sorted(reads)])
        )
        return
    grown = [str(d) for d in snap_b.compare_to(snap_a, "lineno") if d.size_diff][:8]
    assert size_b <= size_a + MARGIN, (
        "%s: mxcompat's footprint grew, median %d -> %d bytes "
        "(reads %s):\n%s"
        % (what, size_a, size_b, [reads[i][0] for i in sorted(reads)], "\n".join(grown))
    )


# Where the footprint is read: every ten steps of the second hundred and of the last.
SECOND = range(110, 201, 10)
LAST = range(STEPS - 90, STEPS + 1, 10)


def _registry_step(i, patterns):
    # Frozen for CHANGE_EVERY steps, then unfrozen for as many (after the model was bound:
    # the update skip and the frozen statistics do the work at every step).
    if i % CHANGE_EVERY == 0:
        if i % (2 * CHANGE_EVERY) == 0:
            mxcompat.freeze(*patterns)
        else:
            mxcompat.unfreeze(*patterns)


def _batch():
    x, y = long_run.mlp_data()
    return mx.io.DataBatch([x], [y])


_LOSS = gluon.loss.SoftmaxCrossEntropyLoss()


def _gluon_step(net, trainer, x, y, loss=_LOSS):
    with autograd.record():
        out = loss(net(x), y)
    out.backward()
    trainer.step(BATCH)


def test_module_update_footprint_flat_while_the_registry_changes(traced):
    mod, batch = long_run.mlp_module(), _batch()
    patterns = ("fc1_*", "bn1_*", UNMATCHED)

    def weight():
        # Read each time: a registry change rebinds the Module at its next forward (new
        # executors, the values carried over).
        return mod._exec_group.execs[0].arg_dict["fc1_weight"].asnumpy()

    held, trained = [], []
    reads = {}
    for i in range(STEPS):
        _registry_step(i, patterns)
        before = weight() if i % CHANGE_EVERY == 1 else None
        mod.forward_backward(batch)
        mod.update()
        if before is not None:
            frozen = i % (2 * CHANGE_EVERY) == 1
            (held if frozen else trained).append(np.array_equal(before, weight()))
        if i + 1 in SECOND or i + 1 in LAST:
            mx.nd.waitall()
            reads[i + 1] = _footprint()
    _assert_no_growth(reads, SECOND, LAST, "Module.update")
    # The registry was at work: fc1 held in every frozen stretch, trained in the others.
    assert held and all(held) and trained and not any(trained)


def test_trainer_step_footprint_flat_while_the_registry_changes(traced):
    net = long_run.mlp_net(prefix="net_")
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    x, y = long_run.mlp_data()
    patterns = ("net_fc1_*", "net_bn1_*", UNMATCHED)
    weight = net.collect_params()["net_fc1_weight"]
    held, trained = [], []
    reads = {}
    for i in range(STEPS):
        _registry_step(i, patterns)
        before = weight.data().asnumpy() if i % CHANGE_EVERY == 1 else None
        _gluon_step(net, trainer, x, y)
        if before is not None:
            frozen = i % (2 * CHANGE_EVERY) == 1
            (held if frozen else trained).append(np.array_equal(before, weight.data().asnumpy()))
        if i + 1 in SECOND or i + 1 in LAST:
            mx.nd.waitall()
            reads[i + 1] = _footprint()
    _assert_no_growth(reads, SECOND, LAST, "Trainer.step")
    assert held and all(held) and trained and not any(trained)


CYCLES = 50
CYCLE_SECOND, CYCLE_LAST = range(11, 21), range(CYCLES - 9, CYCLES + 1)


def _cycle(i, x, y):
    """Build, freeze, train one step, convert both ways; weak references to what was built
    (the registry still frozen when they are dropped)."""
    mxcompat.freeze("*fc1_weight", "*bn1_*", UNMATCHED)
    mod = long_run.mlp_module()
    mod.forward_backward(_batch())
    mod.update()
    block = mod.to_gluon(copy=bool(i % 2))
    block(x)
    # Auto prefixes: every net's parameter names are new (hybridsequential3_fc1_weight ...).
    net = long_run.mlp_net()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    _gluon_step(net, trainer, x, y)
    converted = net.to_module(data_shapes=[("data", x.shape)], copy=bool(i % 2))
    converted.predict(mx.io.NDArrayIter(x.asnumpy(), batch_size=BATCH))
    mx.nd.waitall()
    return {
        "Module": weakref.ref(mod),
        "Module.to_gluon()": weakref.ref(block),
        "Gluon net": weakref.ref(net),
        "Trainer": weakref.ref(trainer),
        "HybridBlock.to_module()": weakref.ref(converted),
    }


def test_dropped_models_are_collected_and_footprint_flat(traced):
    x, y = long_run.mlp_data()
    reads = {}
    for i in range(CYCLES):
        refs = _cycle(i, x, y)
        gc.collect()
        alive = sorted(name for name, ref in refs.items() if ref() is not None)
        assert alive == [], "cycle %d, registry frozen: still alive: %s" % (i, alive)
        mxcompat.unfreeze()
        if i + 1 in CYCLE_SECOND or i + 1 in CYCLE_LAST:
            reads[i + 1] = _footprint()
    _assert_no_growth(reads, CYCLE_SECOND, CYCLE_LAST, "build/freeze/train/convert/drop")


def test_dropped_models_are_collected_unfrozen():
    x, y = long_run.mlp_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mxcompat.MXCompatWarning)
        refs = _cycle(1, x, y)
    mxcompat.unfreeze()
    gc.collect()
    assert sorted(name for name, ref in refs.items() if ref() is not None) == []
