"""The small models the tests build, one builder per kind, parametrised where tests differ.

Every builder names its parameters the same way on every call (``fc1_weight``, ``fc2_bias``;
Gluon's under the block's ``prefix``), since the tests freeze and compare them by name.  Also
imported by ``numpy_reference`` in the reference environment, which never imports mxcompat:
nothing here does either.
"""

import mxnet as mx
import numpy as np


def mlp_symbol(hidden=5, outputs=3, activation="tanh", head="regression", activation_name=None):
    """``data`` -> ``fc1`` (``hidden`` units) -> ``activation`` -> ``fc2`` (``outputs``) -> the
    head: ``"regression"`` (``LinearRegressionOutput`` ``lro``, label ``lro_label``),
    ``"softmax"`` (``SoftmaxOutput`` ``softmax``, label ``softmax_label``) or ``"loss"``
    (``MakeLoss`` of the sum of squares: no label)."""
    data = mx.sym.var("data")
    hidden = mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1"),
        act_type=activation,
        name=activation_name,
    )
    out = mx.sym.FullyConnected(hidden, num_hidden=outputs, name="fc2")
    if head == "regression":
        return mx.sym.LinearRegressionOutput(out, name="lro")
    if head == "softmax":
        return mx.sym.SoftmaxOutput(out, name="softmax")
    if head == "loss":
        return mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(out)))
    raise ValueError("head: regression, softmax or loss, not %r" % (head,))


def regression_module(symbol=None, **kwargs):
    """A Module over ``symbol`` (``mlp_symbol()`` by default) with its regression head's label
    ``lro_label``; ``kwargs`` go to ``Module``."""
    return mx.mod.Module(
        mlp_symbol() if symbol is None else symbol, label_names=("lro_label",), **kwargs
    )


def dense_net(
    units,
    activation=None,
    prefix=None,
    layer_names=False,
    init=None,
    seed=None,
    ctx=None,
    hybridize=False,
):
    """A ``HybridSequential`` of two ``Dense`` layers, ``units`` = (inputs, hidden, outputs),
    ``activation`` on the first; its layers named ``fc1_``/``fc2_`` with ``layer_names``
    (else Gluon's ``dense0_``/``dense1_``), initialised with ``init`` (Gluon's default
    without), after ``mx.random.seed(seed)`` if given, on ``ctx``."""
    inputs, hidden, outputs = units
    net = mx.gluon.nn.HybridSequential(prefix=prefix)
    names = ("fc1_", "fc2_") if layer_names else (None, None)
    with net.name_scope():
        net.add(
            mx.gluon.nn.Dense(hidden, in_units=inputs, activation=activation, prefix=names[0]),
            mx.gluon.nn.Dense(outputs, in_units=hidden, prefix=names[1]),
        )
    if seed is not None:
        mx.random.seed(seed)
    if init is None:
        net.initialize(ctx=ctx)
    else:
        net.initialize(init, ctx=ctx)
    if hybridize:
        net.hybridize()
    return net


# The language model of the torch converter's tests: embedding, a 2-layer bidirectional LSTM
# or GRU (MXNet's fused RNN operator), a Dense over every step.
VOCAB, EMBED, HIDDEN, STEPS, BATCH = 30, 8, 6, 5, 3


class LanguageModel(mx.gluon.HybridBlock):
    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = mx.gluon.nn.Embedding(VOCAB, EMBED)
            layer = mx.gluon.rnn.LSTM if cell == "lstm" else mx.gluon.rnn.GRU
            self.rnn = layer(HIDDEN, num_layers=2, bidirectional=True, input_size=EMBED)
            self.out = mx.gluon.nn.Dense(VOCAB, flatten=False, in_units=2 * HIDDEN)

    def hybrid_forward(self, F, x):
        return self.out(self.rnn(self.embed(x)))


def language_model(cell, seed=0):
    mx.random.seed(seed)
    net = LanguageModel(cell)
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    tokens = mx.nd.array(np.random.RandomState(seed).randint(0, VOCAB, (STEPS, BATCH)))
    net(tokens)
    return net, tokens


def sequential_regression_module():
    """``mlp_symbol()`` as a ``SequentialModule`` of two Modules: ``fc1`` and its tanh (no label),
    then ``fc2`` and the regression head (label ``lro_label``, taken from the batch), wired
    automatically."""
    data = mx.sym.Variable("data")
    first = mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=5, name="fc1"), act_type="tanh"
    )
    second = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(data, num_hidden=3, name="fc2"), name="lro"
    )
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(first, data_names=("data",), label_names=None))
    seq.add(
        mx.mod.Module(second, data_names=("data",), label_names=("lro_label",)),
        take_labels=True,
        auto_wiring=True,
    )
    return seq


def gluon_regression_steps(net, trainer, contexts, steps, seed=0, batch=4, clip=None, split=False):
    """``steps`` training steps of a Gluon ``net`` (4 inputs, 3 outputs) on the summed squared
    error of seeded uniform batches, one ``batch`` a context of ``contexts``.  ``clip``: the
    global norm every gradient is clipped to first (frozen ones included, as user code often
    writes it); ``split``: ``allreduce_grads`` then ``update`` instead of ``step``."""
    from mxnet import autograd, gluon

    rng = np.random.RandomState(seed)
    for _ in range(steps):
        x = rng.uniform(-1, 1, (batch, 4))
        y = rng.uniform(-1, 1, (batch, 3))
        with autograd.record():
            losses = [
                ((net(mx.nd.array(x, ctx=c)) - mx.nd.array(y, ctx=c)) ** 2).sum() for c in contexts
            ]
        autograd.backward(losses)
        if clip is not None:
            grads = [g for p in net.collect_params().values() if p._grad for g in p.list_grad()]
            gluon.utils.clip_global_norm(grads, clip)
        if split:
            trainer.allreduce_grads()
            trainer.update(batch * len(contexts))
        else:
            trainer.step(batch * len(contexts))
    mx.nd.waitall()


def regression_batches(n=3, seed=0, batch=4):
    """``n`` seeded batches for ``regression_module``: ``data`` (batch, 4), ``lro_label``
    (batch, 3), uniform in [-1, 1)."""
    rng = np.random.RandomState(seed)
    return [
        mx.io.DataBatch(
            [mx.nd.array(rng.uniform(-1, 1, (batch, 4)))],
            [mx.nd.array(rng.uniform(-1, 1, (batch, 3)))],
        )
        for _ in range(n)
    ]


def bind_regression(mod, batch=4, **kwargs):
    """Bind ``regression_module``'s ``mod`` for ``regression_batches`` and initialise it the
    same way every time (seeded ``Uniform(0.5)``)."""
    mod.bind(data_shapes=[("data", (batch, 4))], label_shapes=[("lro_label", (batch, 3))], **kwargs)
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))


def flat_state(state):
    """An optimizer state (an NDArray, None, or nested tuples of them) as a flat list of
    NumPy copies, to compare two runs' states exactly."""
    if state is None:
        return []
    if isinstance(state, (list, tuple)):
        return [a for s in state for a in flat_state(s)]
    return [state.asnumpy().copy()]


def bucket_sym_gen(key):
    """A BucketingModule's ``sym_gen``: ``data`` (batch, ``key``, 4) through ``fc1`` (per step)
    and a mean over the steps to ``fc2`` and the regression head; the same parameters for every
    ``key``."""
    data = mx.sym.Variable("data")
    hidden = mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=5, flatten=False, name="fc1"), act_type="tanh"
    )
    out = mx.sym.FullyConnected(mx.sym.mean(hidden, axis=1), num_hidden=3, name="fc2")
    return mx.sym.LinearRegressionOutput(out, name="lro"), ("data",), ("lro_label",)


def bucket_batch(rng, key, batch=4):
    """A batch of bucket ``key`` for ``bucket_sym_gen``, drawn from ``rng``."""
    return mx.io.DataBatch(
        [mx.nd.array(rng.uniform(-1, 1, (batch, key, 4)))],
        [mx.nd.array(rng.uniform(-1, 1, (batch, 3)))],
        bucket_key=key,
        provide_data=[mx.io.DataDesc("data", (batch, key, 4))],
        provide_label=[mx.io.DataDesc("lro_label", (batch, 3))],
    )
