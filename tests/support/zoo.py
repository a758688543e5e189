"""The models MXNet users trained from GluonCV 0.10 and GluonNLP 0.10, as the checkpoints their
``export`` wrote: the way-out tests (``tests/zoo``) convert them and compare with MXNet.

API (for every test of tests/zoo; the ``zoo_model`` fixture of tests/zoo/conftest.py wraps it):

- ``MODELS``: the names, in order (GluonCV's ``model_zoo`` names, its VOC DeepLab and PSPNet
  on ResNet-101 as GluonCV has them; GluonNLP's ``get_model`` names; ``transformer_encoder``:
  GluonNLP's ``TransformerEncoder``, small).
- ``KIND[name]``: ``"classifier"``, ``"pose"``, ``"detector"``, ``"segmentation"``,
  ``"nlp"``: what the outputs are (a detector's are ids, scores and boxes, -1 where nothing
  was kept).
- ``build(name, directory)`` -> ``Built(prefix, epoch, input_shapes, inputs, outputs)``: the
  model with random weights (seeded: the same on every run), hybridized, run once on a seeded
  input, exported as ``PREFIX-symbol.json`` / ``PREFIX-0000.params`` under ``directory``
  (``directory/NAME/model``).  ``input_shapes`` is ``{input name: shape}`` in the graph's
  order (``data``, or ``data0``, ``data1``... for several inputs), ``inputs`` the arrays
  (NumPy, as fed: float32 images, float32 token ids as MXNet's export takes them) and
  ``outputs`` the list of MXNet's output arrays, as ``export``'s symbol orders them.  The input
  and the outputs are also on disk as ``directory/NAME/input_<i>.npy`` and
  ``directory/NAME/output_<i>.npy``.  A model is built once per ``directory`` (kept on disk,
  and a second call, from any process, reads it back); two processes building it at once
  both finish, one copy wins.

Building runs in a fresh interpreter where torch cannot be imported: GluonCV 0.10 imports torch
whenever it is installed and refuses a torch >= 2.0 beside MXNet (``RuntimeError``).  Nothing is
downloaded: every model is built with ``pretrained=False`` (and ``pretrained_base=False``), and
the NLP models' vocabularies are made up here.
"""

import collections
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

# The builder's interpreter: torch made unimportable first (GluonCV 0.10 imports torch whenever
# it is installed and raises on torch >= 2), then this file loaded by its path (tests/support on
# sys.path would shadow other packages' modules: models, stack, repo).
_BUILDER = """import sys
sys.modules["torch"] = None
import importlib.util
spec = importlib.util.spec_from_file_location("zoo_builder", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module._main(sys.argv[2], sys.argv[3])
"""

Built = collections.namedtuple("Built", "prefix epoch input_shapes inputs outputs")


def installed(name):
    """Whether package ``name`` can be imported here (a real one, not a namespace folder)."""
    try:
        spec = importlib.util.find_spec(name)
    except ValueError:  # blocked in this process (the builder's sys.modules["torch"] = None)
        return False
    return spec is not None and spec.origin is not None


# What the zoo's tests need: the model zoos, and torch for the way to PyTorch.
NEEDS_ZOO = pytest.mark.skipif(
    not (installed("gluoncv") and installed("gluonnlp")),
    reason="needs GluonCV and GluonNLP (the zoo-mx191 env)",
)
NEEDS_TORCH = pytest.mark.skipif(not installed("torch"), reason="needs torch (the torch extra)")

# name -> (kind, builder arguments).  Small inputs: CI builds, converts and runs every one.
_IMAGE = (1, 3, 128, 128)
SPECS = collections.OrderedDict(
    [
        ("resnet18_v1", ("classifier", {"shape": _IMAGE})),
        ("resnet50_v1b", ("classifier", {"shape": _IMAGE})),
        ("mobilenet1.0", ("classifier", {"shape": _IMAGE})),
        ("mobilenetv2_1.0", ("classifier", {"shape": _IMAGE})),
        ("mobilenetv3_large", ("classifier", {"shape": _IMAGE})),
        ("squeezenet1.1", ("classifier", {"shape": (1, 3, 224, 224)})),
        # Squeezenet and DenseNet end in a fixed 13x13 and 7x7 pooling: 224x224 images.
        # VGG's first dense layer takes 512 * (H/32) * (W/32) inputs: 64x64 keeps it small.
        ("vgg16", ("classifier", {"shape": (1, 3, 64, 64)})),
        ("densenet121", ("classifier", {"shape": (1, 3, 224, 224)})),
        ("resnext50_32x4d", ("classifier", {"shape": _IMAGE})),
        ("se_resnext50_32x4d", ("classifier", {"shape": _IMAGE})),
        ("resnest50", ("classifier", {"shape": _IMAGE})),
        ("simple_pose_resnet18_v1b", ("pose", {"shape": (1, 3, 128, 96)})),
        ("ssd_512_resnet50_v1_voc", ("detector", {"shape": (1, 3, 256, 256)})),
        ("yolo3_darknet53_voc", ("detector", {"shape": _IMAGE})),
        ("yolo3_mobilenet1.0_voc", ("detector", {"shape": _IMAGE})),
        # Calibrated: random BatchNorm statistics saturate these two's scores (``_calibrate``).
        ("faster_rcnn_resnet50_v1b_voc", ("detector", {"shape": (1, 3, 256, 256), "calibrate": 1})),
        ("center_net_resnet18_v1b_voc", ("detector", {"shape": _IMAGE, "calibrate": 1})),
        ("fcn_resnet50_voc", ("segmentation", {"shape": _IMAGE})),
        ("deeplab_resnet101_voc", ("segmentation", {"shape": _IMAGE})),
        ("psp_resnet101_voc", ("segmentation", {"shape": _IMAGE})),
        ("transformer_encoder", ("nlp", {"length": 8, "units": 32})),
        ("bert_12_768_12", ("nlp", {"length": 8})),
        ("awd_lstm_lm_1150", ("nlp", {"length": 6})),
        ("standard_lstm_lm_200", ("nlp", {"length": 6})),
    ]
)
MODELS = list(SPECS)
KIND = {name: spec[0] for name, spec in SPECS.items()}

SEED = 20201130  # GluonCV 0.10's release month: any fixed number does
VOCAB_WORDS = ["w%d" % i for i in range(40)]  # the NLP models' made-up vocabulary


def build(name, directory):
    """The checkpoint of model ``name`` under ``directory`` (see the module's docstring)."""
    if name not in SPECS:
        raise KeyError("no zoo model %r (MODELS lists them)" % (name,))
    home = os.path.join(str(directory), name)
    if not os.path.isfile(os.path.join(home, "built.json")):
        os.makedirs(str(directory), exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=name + ".", dir=str(directory))
        proc = subprocess.run(
            [sys.executable, "-c", _BUILDER, os.path.abspath(__file__), name, scratch],
            cwd=scratch,
            capture_output=True,
            text=True,
            env=dict(os.environ, OMP_NUM_THREADS="1"),
            timeout=900,
        )
        if proc.returncode != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            raise RuntimeError(
                "building %s failed (%d):\n%s" % (name, proc.returncode, proc.stderr[-4000:])
            )
        try:
            os.rename(scratch, home)
        except OSError:  # another process's copy is there (the same model, the same seed)
            shutil.rmtree(scratch, ignore_errors=True)
    with open(os.path.join(home, "built.json")) as f:
        meta = json.load(f)
    inputs = [np.load(os.path.join(home, "input_%d.npy" % i)) for i in range(meta["inputs"])]
    outputs = [np.load(os.path.join(home, "output_%d.npy" % i)) for i in range(meta["outputs"])]
    shapes = collections.OrderedDict((k, tuple(v)) for k, v in meta["input_shapes"])
    return Built(os.path.join(home, "model"), 0, shapes, inputs, outputs)


# ---- what runs in the builder's interpreter (no torch) -------------------------------------


def _randomize(net, mx):
    """Random weights and BatchNorm statistics, seeded: a model whose every layer matters
    (Gluon's zero running means and unit variances would leave BatchNorm an identity)."""
    rng = np.random.RandomState(SEED)
    for pname, param in sorted(net.collect_params().items()):
        shape = param.shape
        if pname.endswith(("running_var", "moving_var")):
            value = rng.uniform(0.5, 1.5, shape)
        elif pname.endswith(("running_mean", "moving_mean", "beta")):
            value = rng.uniform(-0.1, 0.1, shape)
        elif pname.endswith("gamma"):
            value = rng.uniform(0.5, 1.5, shape)
        else:
            continue
        param.set_data(mx.nd.array(value.astype(np.float32)))


def _vision(name, mx, **kwargs):
    from gluoncv import model_zoo

    kwargs.setdefault("pretrained", False)
    if KIND[name] in ("detector", "segmentation", "pose") or name.startswith("resnest"):
        kwargs.setdefault("pretrained_base", False)
    try:
        return model_zoo.get_model(name, **kwargs)
    except TypeError:  # a classifier that takes no pretrained_base
        kwargs.pop("pretrained_base", None)
        return model_zoo.get_model(name, **kwargs)


def _vocab():
    import gluonnlp

    return gluonnlp.Vocab(gluonnlp.data.count_tokens(VOCAB_WORDS))


def _bert_vocab():
    import gluonnlp

    return gluonnlp.vocab.BERTVocab(gluonnlp.data.count_tokens(VOCAB_WORDS))


def _make(name, spec, mx):
    """The block and the inputs (NumPy arrays) it runs on."""
    rng = np.random.RandomState(SEED + 1)
    kind = KIND[name]
    if kind != "nlp":
        kwargs = {}
        if kind == "segmentation":
            # The segmentation heads resize to their crop; a small crop for a small image.
            kwargs = {"crop_size": spec["shape"][2], "base_size": spec["shape"][2]}
        net = _vision(name, mx, **kwargs)
        return net, [rng.uniform(-1, 1, spec["shape"]).astype(np.float32)]
    import gluonnlp

    length = spec["length"]
    if name == "transformer_encoder":
        from gluonnlp.model.transformer import TransformerEncoder

        units = spec["units"]
        net = TransformerEncoder(
            num_layers=2,
            units=units,
            hidden_size=2 * units,
            max_length=64,
            num_heads=4,
            dropout=0.1,
            prefix="encoder_",
        )
        data = rng.normal(0, 1, (2, length, units)).astype(np.float32)
        valid = np.array([length, length - 3], np.float32)
        return net, [data, valid]
    if name == "bert_12_768_12":
        vocab = _bert_vocab()
        net, _ = gluonnlp.model.get_model(
            name,
            dataset_name=None,
            vocab=vocab,
            pretrained=False,
            use_pooler=True,
            use_decoder=False,
            use_classifier=False,
        )
        tokens = rng.randint(0, len(vocab), (2, length)).astype(np.float32)
        types = np.zeros((2, length), np.float32)
        types[:, length // 2 :] = 1
        valid = np.array([length, length - 3], np.float32)
        return net, [tokens, types, valid]
    vocab = _vocab()
    kwargs = {}
    if name.startswith("standard_lstm"):
        # StandardRNN's output dropout is nd.Dropout, which hybridize cannot trace: exporting
        # it takes dropout=0 (the same model at inference).
        kwargs["dropout"] = 0
    net, _ = gluonnlp.model.get_model(
        name, vocab=vocab, dataset_name=None, pretrained=False, **kwargs
    )
    tokens = rng.randint(0, len(vocab), (length, 2)).astype(np.float32)  # TN, as the LMs take
    return net, [tokens]


def _initialize(net, arrays, mx, calibrate=False):
    """Random weights for ``net`` (seeded), as the zoo's checkpoints have them: Xavier, then
    ``_randomize``; ``arrays`` give the deferred shapes.  ``calibrate``: the BatchNorm
    statistics then ``_calibrate``d."""
    # Vectors by their role: some SymbolBlocks (GluonCV's feature expanders, built without
    # their pretrained base) give their BatchNorm's gamma the convolution's Xavier, which
    # refuses a vector.  _randomize then makes them random.
    for pname, param in net.collect_params().items():
        if pname.endswith(("gamma", "running_var", "moving_var")):
            param.init = mx.init.One()
        elif pname.endswith(("beta", "running_mean", "moving_mean", "bias")):
            param.init = mx.init.Zero()
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net(*arrays)  # the deferred shapes
    _randomize(net, mx)
    if calibrate:
        _calibrate(net, arrays, mx)


def _calibrate(net, arrays, mx):
    """Each Gluon BatchNorm's running statistics made those of what reaches it on ``arrays``,
    in one forward (each sets its own before it computes), as a trained network's normalize.
    For the detectors whose scores random statistics saturate (their activations grow layer
    by layer until every score is 1.0): exact ties, which no two implementations rank alike."""

    def measure(block, inputs):
        x = inputs[0].astype("float64")
        axis = block._kwargs["axis"] % x.ndim
        others = tuple(a for a in range(x.ndim) if a != axis)
        mean = x.mean(axis=others)
        shape = [1] * x.ndim
        shape[axis] = -1
        var = ((x - mean.reshape(shape)) ** 2).mean(axis=others)
        block.running_mean.set_data(mean.astype(block.running_mean.dtype))
        block.running_var.set_data(var.astype(block.running_var.dtype))

    handles = []
    for block in _blocks(net):
        if isinstance(block, mx.gluon.nn.BatchNorm):
            handles.append(block.register_forward_pre_hook(measure))
    net(*arrays)
    for handle in handles:
        handle.detach()


def _blocks(block):
    """``block`` and every block under it."""
    yield block
    for child in block._children.values():
        yield from _blocks(child)


def _flat(value):
    """A block's outputs (nested lists and tuples) as one list, in order."""
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flat(item)]
    return [value]


def _main(name, out):
    """Build ``name`` and write it, its input and its outputs into ``out``."""
    import warnings

    warnings.simplefilter("ignore")
    import mxcompat  # noqa: F401, I001  (first: legacy MXNet on today's NumPy and Python)
    import mxnet as mx

    mx.random.seed(SEED)
    np.random.seed(SEED)
    net, inputs = _make(name, SPECS[name][1], mx)
    arrays = [mx.nd.array(a) for a in inputs]
    if name == "transformer_encoder":
        # TransformerEncoder(inputs, states, valid_length): no states, the lengths.
        arrays.insert(1, None)
    _initialize(net, arrays, mx, SPECS[name][1].get("calibrate", False))
    net.hybridize()
    out_nd = net(*arrays)
    flat = _flat(out_nd)
    prefix = os.path.join(out, "model")
    net.export(prefix, epoch=0)
    names = ["data"] if len(inputs) == 1 else ["data%d" % i for i in range(len(inputs))]
    sym = mx.sym.load(prefix + "-symbol.json")
    assert [n for n in sym.list_inputs() if n.startswith("data")] == names, sym.list_inputs()
    assert len(sym.list_outputs()) == len(flat), (sym.list_outputs(), len(flat))
    for i, a in enumerate(inputs):
        np.save(os.path.join(out, "input_%d.npy" % i), a)
    for i, o in enumerate(flat):
        np.save(os.path.join(out, "output_%d.npy" % i), o.asnumpy())
    meta = {
        "inputs": len(inputs),
        "outputs": len(flat),
        "input_shapes": [[n, list(a.shape)] for n, a in zip(names, inputs)],
    }
    with open(os.path.join(out, "built.json"), "w") as f:
        json.dump(meta, f)
