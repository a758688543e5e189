"""Frozen BatchNorm statistics hold still: a registry pattern that matches a running mean or
variance keeps it bit for bit through training, on Module and Gluon.

``mxcompat.freeze("stage1_*")`` keeps stage 1's weights out of every update, but its
BatchNorm statistics (a Module's aux states ``*_moving_mean``/``*_moving_var``, a Gluon
block's ``running_mean``/``running_var`` parameters) are not updated by an optimizer: the
BatchNorm operator itself moves them, during the *backward* of a training step, on every
1.x release (``facts.BATCHNORM_STATS_MOVE_IN_BACKWARD``; the training forward leaves them,
the tests check both).  So this patch works around the backward only:

- ``Executor.backward`` (every Module, BucketingModule, SequentialModule and FeedForward
  step goes through it): the executor's aux states that the registry matches are copied
  before the backward and written back after it;
- ``NDArray.backward``, ``autograd.backward`` and ``autograd.grad`` (Gluon, hybridized or
  not; ``mx.np`` arrays too): the same for every live Gluon ``Parameter`` that is not
  differentiable (a statistic) and matched by the registry.

The forward's math is untouched: a training forward still normalises with the batch's
statistics, and gradients are the same bit for bit; only the running averages stay where they
were.  Unfrozen, a statistic moves again from the next backward.  An empty registry costs one
check per backward.  Copies are made only of frozen statistics (vectors, one per BatchNorm
channel); the copy is waited for before the backward starts, because MXNet up to 1.7 does not
order a read of the statistics before the backward that writes them
(``facts.GLUON_AUX_WRITES_ORDERED``).

A Gluon statistic is a Parameter built ``differentiable=False`` (``nn.BatchNorm``'s) or an
auxiliary state of a ``SymbolBlock``'s graph (``SymbolBlock.imports``, ``to_gluon``), which
SymbolBlock builds ``grad_req='null'`` but differentiable, like a weight the user fixed.  Both
are known from their construction (``Parameter.__init__``, ``SymbolBlock.__init__``, kept
weakly), so one built while this patch was off is not held.  A statistic whose deferred
initialisation has not happened yet (before the first forward) has nothing to hold.
Patch name ``frozen_statistics``, declared in ``mxcompat/patches/frozen_statistics.py`` with
these wrappers.
"""

import functools
import threading
import weakref

from . import registry


class _State:
    """What the wrappers remember between backwards (one instance; tests may ``reset()``)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.params = weakref.WeakSet()  # every statistic Parameter built while the patch is on
        self.symbol_blocks = weakref.WeakSet()  # every SymbolBlock built so
        self.reset()

    def reset(self):
        # Bumped when a statistic Parameter or a SymbolBlock is built: keys the Gluon cache.
        self.generation = 0
        # ((registry version, generation), weak refs to the frozen Gluon statistics then),
        # one tuple so a reader never pairs a key with another key's statistics.
        self.gluon = (None, ())
        self.executors = weakref.WeakKeyDictionary()  # Executor -> (version, [aux arrays])
        self.settled = None  # the version at which the engine was last drained (_hold)


_state = _State()


def tracking_parameters(original):
    """``Parameter.__init__``, then a statistic (built ``differentiable=False``) is known.  A
    plain function naming the original in ``__wrapped__``: Gluon builds one Parameter per
    weight and statistic (a ResNet-50: 320), and a wrapt wrapper plus a weak reference to each
    made building a ResNet-50 SymbolBlock 7-9% slower (measured on MXNet 1.9.1)."""

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if not self._differentiable:
            _track(_state.params, self)

    return __init__


def track_symbol_block(wrapped, instance, args, kwargs):
    result = wrapped(*args, **kwargs)
    _track(_state.symbol_blocks, instance)
    return result


def _track(known, obj):
    """``obj`` joins ``known`` (a WeakSet of ``_state``); the Gluon cache is stale."""
    with _state.lock:
        known.add(obj)
        _state.generation += 1


def symbol_block_statistics(blocks=()):
    """The auxiliary-state Parameters of ``blocks`` (and of the SymbolBlocks inside them)
    and of every live SymbolBlock built while this patch was on."""
    import mxnet as mx

    with _state.lock:
        found = list(_state.symbol_blocks)
    for block in blocks:
        block.apply(lambda b: found.append(b) if isinstance(b, mx.gluon.SymbolBlock) else None)
    statistics = {}
    for block in found:
        graph = getattr(block, "_cached_graph", ())
        if graph:
            params = dict(block.params.items())
            statistics.update(
                (id(params[n]), params[n]) for n in graph[1].list_auxiliary_states() if n in params
            )
    return list(statistics.values())


def _frozen_gluon_statistics(version):
    key = (version, _state.generation)
    cached_key, cached = _state.gluon
    if cached_key == key:
        return cached
    with _state.lock:
        params = list(_state.params)
    known = set(map(id, params))
    params.extend(p for p in symbol_block_statistics() if id(p) not in known)
    found = registry.matches(tuple(p.name for p in params))
    # Weak: the cache must not keep a deleted net's parameters (and their arrays) alive.
    held = () if found is None else tuple(weakref.ref(p) for p, m in zip(params, found[0]) if m)
    _state.gluon = (key, held)
    return held


def _frozen_aux(executor, version):
    cached = _state.executors.get(executor)
    if cached is not None and cached[0] == version:
        return cached[1]
    aux = executor.aux_dict
    names = tuple(aux)
    found = registry.matches(names)
    arrays = [] if found is None else [aux[n] for n, m in zip(names, found[0]) if m]
    _state.executors[executor] = (version, arrays)
    return arrays


def _hold(arrays, version, run):
    """Run ``run()`` (a backward) and give ``arrays`` their values from before it back."""
    if not arrays:
        return run()
    import mxnet as mx

    if _state.settled != version:
        # The first backward after a registry change: a backward of the step before (when
        # these were not frozen yet) may still be writing them unseen by the engine.
        mx.nd.waitall()
        _state.settled = version
    saved = [a.copy() for a in arrays]
    for s in saved:
        s.wait_to_read()
    try:
        return run()
    finally:
        with mx.autograd.pause():
            for s, a in zip(saved, arrays):
                s.copyto(a)


def wrap_executor_backward(wrapped, instance, args, kwargs):
    if not registry.state.patterns:
        return wrapped(*args, **kwargs)
    version = registry.state.version
    return _hold(_frozen_aux(instance, version), version, lambda: wrapped(*args, **kwargs))


def wrap_autograd_backward(wrapped, instance, args, kwargs):
    if not registry.state.patterns:
        return wrapped(*args, **kwargs)
    version = registry.state.version
    arrays = []
    for ref in _frozen_gluon_statistics(version):
        p = ref()
        data = p._data if p is not None else None
        if data is not None:  # None: deferred initialisation not done yet
            arrays.extend(data)
    return _hold(arrays, version, lambda: wrapped(*args, **kwargs))
