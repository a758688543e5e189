"""Training goes on in PyTorch where MXNet stopped, for a detector (SSD), a segmenter (FCN) and
BERT from the zoo.  In float64 where MXNet can (float32 training is chaotic: one ulp apart
parts by percents in a few steps), MXNet's Gluon Trainer takes N steps of SGD with momentum
and weight decay, then exports the model and saves its states; ``mxcompat torch --states``
converts both; K more steps then run in MXNet and in the written model.py with the written
optimizer (torch alone): every parameter agrees.

The steps train as MXNet trains (``autograd.record()``, ``model.train()``: BatchNorm on the
batch's statistics, moving its running ones) with dropout at rate 0, the one random draw both
sides cannot share.  The loss: each output it takes (``MODELS``) times a fixed random array,
averaged, summed over the outputs."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support import zoo
from tests.support.processes import subprocess_env

pytestmark = [zoo.NEEDS_ZOO, zoo.NEEDS_TORCH]

N, K = 2, 2
# model -> (the type it trains in, the largest difference allowed, relative to each array's
# largest value, the outputs the loss takes; None: every floating one).  MXNet trains BERT in
# float32 only (its interleaved attention's backward takes float32 alone on a CPU: "Only FP32
# is supported"); over K steps float32's rounding (the two sides sum in other orders) stays far
# under the steps' moves.  The detector trains
# as GluonCV's train_ssd.py trains it: hybridized and first called while recording, its graph
# is the training one (class and box predictions and the anchors, neither decoder nor
# box_nms), the one MXNet trains and exports; the anchors are constants, out of the loss.  Its
# last feature maps are 1x1: BatchNorm there normalizes two values a channel (a batch of two),
# whose difference cancels, and float64's rounding grows to 5e-11 in one forward (the loss
# agrees to 6e-15), 1.4e-9 after the steps (measured).
MODELS = {
    "ssd_512_resnet50_v1_voc": ("float64", 1e-8, [0, 1]),
    "fcn_resnet50_voc": ("float64", 1e-9, None),
    "bert_12_768_12": ("float32", 1e-5, None),
}

# MXNet's side, in an interpreter where torch cannot be imported (GluonCV refuses torch >= 2).
_MXNET = """import sys
sys.modules["torch"] = None
import importlib.util, json, os
spec = importlib.util.spec_from_file_location("zoo_builder", sys.argv[1])
zoo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zoo)
import numpy as np
import mxcompat
import mxnet as mx
from mxnet import autograd, gluon

name, out, n, k, dtype = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
used = json.loads(sys.argv[7])
mx.random.seed(zoo.SEED)
net, inputs = zoo._make(name, zoo.SPECS[name][1], mx)
if zoo.KIND[name] != "nlp":  # a batch of two: BatchNorm's statistics of a training step
    inputs = [np.concatenate([a, a[:, :, ::-1]]) for a in inputs]

# Dropout off (rate 0): the one draw both sides cannot share.
for block in zoo._blocks(net):
    if isinstance(block, gluon.nn.Dropout):
        block._rate = 0.0
zoo._initialize(net, [mx.nd.array(a) for a in inputs], mx)
net.cast(dtype)
arrays = [mx.nd.array(a, dtype=dtype) for a in inputs]
net.hybridize()

with autograd.record(zoo.KIND[name] == "detector"):  # the graph of the first call stays
    outs = zoo._flat(net(*arrays))
if used is None:
    used = list(range(len(outs)))  # the outputs the loss takes
rng = np.random.RandomState(zoo.SEED + 2)
heads = {i: rng.uniform(-1, 1, outs[i].shape).astype(dtype) for i in used}
params = {p.name: p for p in net.collect_params().values()}
# GluonCV's heads learn at lr_mult 10, set by the model's code: a checkpoint and a Trainer's
# states file hold no multiplier (MXNet's own Trainer.load_states takes them from the
# Parameters), so resuming from files alone is at 1.  The test trains at 1 on both sides.
for p in params.values():
    p.lr_mult = p.wd_mult = 1.0
trainer = gluon.Trainer(
    params, "sgd", {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
)

def step():
    with autograd.record():
        got = zoo._flat(net(*arrays))
        loss = sum((got[i] * mx.nd.array(heads[i], dtype=dtype)).mean() for i in used)
    loss.backward()
    trainer.step(1)

for _ in range(n):
    step()
prefix = os.path.join(out, "model")
net.export(prefix, epoch=0)
trainer.save_states(prefix + ".states")
for _ in range(k):
    step()
np.savez(os.path.join(out, "after.npz"), **{k: p.data().asnumpy() for k, p in params.items()})
for i, a in enumerate(inputs):
    np.save(os.path.join(out, "input_%d.npy" % i), a.astype(dtype))
np.savez(os.path.join(out, "heads.npz"), **{str(i): h for i, h in heads.items()})
with open(os.path.join(out, "meta.json"), "w") as f:
    json.dump({"inputs": len(inputs), "used": used, "dtype": dtype}, f)
"""

# The torch side: model.py, its weights and the written optimizer, with torch alone.
_TORCH = """import sys
sys.modules["mxnet"] = None
sys.modules["mxcompat"] = None
import json, os
import numpy as np
import safetensors.torch
import torch

directory, work, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, directory)
import model
import mxnet_optim

with open(os.path.join(work, "meta.json")) as f:
    meta = json.load(f)
net = model.MXNetModel().to(getattr(torch, meta["dtype"]))
net.load_state_dict(safetensors.torch.load_file(os.path.join(directory, "weights.safetensors")))
net.train()
opt = mxnet_optim.load(net, os.path.join(directory, "optimizer.pt"))
inputs = [
    torch.from_numpy(np.load(os.path.join(work, "input_%d.npy" % i)))
    for i in range(meta["inputs"])
]
heads = {int(i): torch.from_numpy(h) for i, h in np.load(os.path.join(work, "heads.npz")).items()}
for _ in range(k):
    got = net(*inputs)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    loss = sum((got[i] * heads[i]).mean() for i in meta["used"])
    opt.zero_grad()
    loss.backward()
    opt.step()
with open(os.path.join(directory, "mxnet_names.json")) as f:
    names = json.load(f)
state = net.state_dict()
np.savez(os.path.join(work, "torch_after.npz"), **{names[key]: state[key].numpy() for key in names})
"""


def _run(argv, cwd, **env):
    done = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=subprocess_env(dict(env, OMP_NUM_THREADS="1")),
        timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done


@pytest.mark.parametrize("name", list(MODELS))
def test_training_resumes_in_torch_where_mxnet_stopped(name, tmp_path):
    work = str(tmp_path)
    dtype, tolerance, used = MODELS[name]
    argv = [sys.executable, "-c", _MXNET, zoo.__file__, name, work, str(N), str(K), dtype]
    _run(argv + [json.dumps(used)], work)
    with open(os.path.join(work, "meta.json")) as f:
        meta = json.load(f)
    shapes = [np.load(os.path.join(work, "input_%d.npy" % i)).shape for i in range(meta["inputs"])]
    argv = [sys.executable, "-m", "mxcompat", "torch", "model", "0", "-o", "out"]
    for shape in shapes:
        argv += ["--input-shape", ",".join(map(str, shape))]
    _run(argv + ["--states", "model.states"], work)
    _run([sys.executable, "-c", _TORCH, os.path.join(work, "out"), work, str(K)], work)
    expected = dict(np.load(os.path.join(work, "after.npz")))
    got = dict(np.load(os.path.join(work, "torch_after.npz")))
    trained = list(expected)  # the statistics too: the steps move them
    assert set(trained) <= set(got)
    # Relative to each array's largest value, at least 1e-3: a bias whose gradient is 0 in
    # exact arithmetic (attention keys', a convolution's before BatchNorm) stays at rounding
    # noise, where a relative figure means nothing.
    worst = max(
        np.abs(got[n] - expected[n]).max() / max(np.abs(expected[n]).max(), 1e-3) for n in trained
    )
    assert worst <= tolerance, worst
    # The K steps moved the weights: the comparison is of training, not of the export.
    from mxcompat.formats.checkpoint import Checkpoint

    at_n = Checkpoint(os.path.join(work, "model"), 0).params
    moved = max(np.abs(expected[n] - np.asarray(at_n[n])).max() for n in trained)
    assert moved > 1e3 * worst * max(np.abs(expected[n]).max() for n in trained), moved
