"""Checkpoints written by real MXNet releases, for the tests that convert them without MXNet.

``writer_python(row)`` is a cached virtualenv with that row of mxcompat's versions table (its
MXNet on its own Python and NumPy pins), built by mxcompat's environment builder as the
reference environments are (tests/support/reference_env.py), under ``MXCOMPAT_TEST_CACHE``.
Run there as ``python -m tests.support.checkpoint_writer DIR`` (without mxcompat: the release
as it was), it writes each model family as ``DIR/FAMILY-symbol.json`` and ``DIR/FAMILY-0000.params``
with a seeded input and MXNet's own output beside it (``DIR/FAMILY-io.npz``: ``data``, ``out``).
"""

import os
import subprocess
import sys

# Small inputs: the families' structure is what the formats carry; size only costs time.
FAMILIES = {
    "resnet": (1, 3, 32, 32),
    "mobilenet": (1, 3, 32, 32),
    "densenet": (1, 3, 56, 56),  # its last pooling is 7x7, after an 8-fold reduction
    "lstm_lm": (5, 2),
    "transformer": (2, 6, 16),
}
LSTM_VOCAB = 50


def writer_python(row):
    """The Python of the cached env of the versions-table row ``row`` (e.g. ``"mx131"``)."""
    # Not through reference_env, which imports mxnet: this runs where there is none.
    from mxcompat import _envs
    from mxcompat._core import settings, versions

    combo = versions.by_name(row)
    name = "mxnet-%s-py%s-numpy-%s" % (combo.mxnet, combo.python, combo.numpy_version)

    def distutils(root):
        if _envs.lacks_distutils(root):  # MXNet 1.6+ imports distutils (setuptools has it)
            with open(root + ".log", "a") as logf:
                _envs.pip_install(_envs.find_uv(required=False), root, ["setuptools"], logf)

    steps = [
        ["--no-deps", "mxnet==" + combo.mxnet],
        [combo.numpy] + list(versions.MXNET_EXTRAS),
    ]
    root = settings.cache_folder("tests", settings.TEST_CACHE)
    os.makedirs(root, exist_ok=True)
    try:
        return _envs.cached(root, name, combo.python, steps, after=distutils)
    except _envs.EnvError as e:
        raise RuntimeError("cannot build MXNet %s's env: %s" % (combo.mxnet, e)) from None


def write(python, directory):
    """Run this module in ``python`` (a release's env, without mxcompat) into ``directory``."""
    from .processes import run_plain

    run_plain(python, "tests.support.checkpoint_writer", [directory], what="the writer")


# --- what runs in the release's env (MXNet and NumPy only) ----------------------------------------


def _transformer(mx):
    """One encoder block of MXNet operators: attention by batch_dot and softmax, LayerNorm,
    FullyConnected with flatten=False."""
    units, heads = 16, 2
    x = mx.sym.var("data")
    q = mx.sym.FullyConnected(x, num_hidden=units, flatten=False, name="q")
    k = mx.sym.FullyConnected(x, num_hidden=units, flatten=False, name="k")
    v = mx.sym.FullyConnected(x, num_hidden=units, flatten=False, name="v")

    def split(t):  # (B, T, U) -> (B * H, T, U / H)
        t = mx.sym.reshape(t, shape=(0, 0, heads, -1))
        t = mx.sym.transpose(t, axes=(0, 2, 1, 3))
        return mx.sym.reshape(t, shape=(-3, -2))

    score = mx.sym.batch_dot(split(q), split(k), transpose_b=True) / (units / heads) ** 0.5
    att = mx.sym.batch_dot(mx.sym.softmax(score, axis=-1), split(v))
    att = mx.sym.reshape(att, shape=(-4, -1, heads, 0, 0))
    att = mx.sym.reshape(mx.sym.transpose(att, axes=(0, 2, 1, 3)), shape=(0, 0, -1))
    h = mx.sym.LayerNorm(x + mx.sym.FullyConnected(att, num_hidden=units, flatten=False, name="o"))
    ff = mx.sym.Activation(
        mx.sym.FullyConnected(h, num_hidden=32, flatten=False, name="ff1"), act_type="relu"
    )
    return mx.sym.LayerNorm(
        h + mx.sym.FullyConnected(ff, num_hidden=units, flatten=False, name="ff2")
    )


def _lstm_lm(mx):
    """The language model of the to_torch tests (tests/support/models.py): an embedding, a
    2-layer bidirectional LSTM (MXNet's fused RNN operator), a Dense over every step."""

    class LanguageModel(mx.gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.embed = mx.gluon.nn.Embedding(LSTM_VOCAB, 8)
                self.rnn = mx.gluon.rnn.LSTM(6, num_layers=2, bidirectional=True, input_size=8)
                self.out = mx.gluon.nn.Dense(LSTM_VOCAB, flatten=False, in_units=12)

        def hybrid_forward(self, F, x):
            return self.out(self.rnn(self.embed(x)))

    return LanguageModel()


def _gluon(mx, family):
    from mxnet.gluon.model_zoo import vision

    if family == "lstm_lm":
        net = _lstm_lm(mx)
        net.initialize(mx.init.Uniform(0.5))
        return net
    net = {
        "resnet": lambda: vision.resnet18_v1(classes=10),
        "mobilenet": lambda: vision.mobilenet0_25(classes=10),
        "densenet": lambda: vision.DenseNet(8, 4, [2, 2], classes=10),
    }[family]()
    net.initialize(mx.init.Xavier(magnitude=2.5))
    return net


def _randomise_stats(mx, params, rng):
    """Non-trivial BatchNorm statistics, so that a mixed-up mean and variance would show
    (set_data: 1.7's oneDNN arrays refuse a copy into them once a forward has run)."""
    for name, param in params.items():
        shape = param.shape
        if name.endswith(("running_mean", "moving_mean")):
            param.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, shape)))
        elif name.endswith(("running_var", "moving_var")):
            param.set_data(mx.nd.array(rng.uniform(0.5, 1.5, shape)))


def main(directory, families=tuple(FAMILIES)):
    try:
        from importlib import metadata

        release = metadata.version("mxnet")
    except ImportError:  # Python 3.7: MXNet 1.3.1 or 1.4.1
        release = ""
    if release.startswith(("1.7.", "1.8.")) and "densenet" in families and len(families) > 1:
        # 1.7 and 1.8: oneDNN concat gives a DenseNet block's output a wrong memory layout (an
        # MXNetError in the forward): its native CPU kernels compute that reference, in a
        # process of its own (without oneDNN, 1.7's RNN refuses the LSTM's inputs).
        env = dict(os.environ, MXNET_MKLDNN_ENABLED="0")
        subprocess.check_call([sys.executable, "-m", __spec__.name, directory, "densenet"], env=env)
        families = [f for f in families if f != "densenet"]
    import mxnet as mx
    import numpy as np

    os.makedirs(directory, exist_ok=True)
    for family in families:
        shape = FAMILIES[family]
        mx.random.seed(0)
        rng = np.random.RandomState(0)
        if family == "lstm_lm":
            data = rng.randint(0, LSTM_VOCAB, shape).astype(np.float32)
        else:
            data = rng.uniform(-1, 1, shape).astype(np.float32)
        prefix = os.path.join(directory, family)
        if family == "transformer":
            sym = _transformer(mx)
            mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
            mod.bind(data_shapes=[("data", shape)], for_training=False)
            mod.init_params(mx.init.Uniform(0.3))
            args, auxs = mod.get_params()
            mx.model.save_checkpoint(prefix, 0, sym, args, auxs)
            mod.forward(mx.io.DataBatch([mx.nd.array(data)]), is_train=False)
            out = mod.get_outputs()[0].asnumpy()
        else:
            net = _gluon(mx, family)
            # Hybridized before the first forward: on 1.7 a forward's oneDNN weight layout, kept
            # from an imperative forward, breaks the next one.
            net.hybridize()
            net(mx.nd.array(data))  # shapes: deferred initialisation
            _randomise_stats(mx, net.collect_params(), rng)
            out = net(mx.nd.array(data)).asnumpy()
            net.export(prefix, 0)
        np.savez(prefix + "-io.npz", data=data, out=out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or tuple(FAMILIES))
