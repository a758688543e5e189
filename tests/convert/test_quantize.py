"""Quantizing a Gluon model through the Module API, in fresh interpreters.

MXNet's quantized CPU paths can kill the interpreter (1.3-1.5 segfault at bind, 1.7 aborts
on int8), so every quantization runs in a subprocess.  Quantized CPU graphs only run in the
MKLDNN builds, and are tested from 1.8 (``facts.QUANTIZED_CPU``): whether 1.7's oneDNN runs
them depends on the CPU ("x2APIC is not supported" on AMD EPYC VMs, int8 aborts elsewhere).
"""

import mxnet as mx  # noqa: E402
import pytest

import mxcompat

QUANTIZED_CPU = (
    "quantized CPU graphs need MXNet >= 1.8 (1.3-1.5 have no CPU kernel for "
    "quantized convolution, 1.6 is built without MKLDNN, 1.7's oneDNN fails on "
    "some CPUs)"
)

# A small CNN (conv + BN + relu + pool + conv + relu + global pool + dense), trained a few
# steps (weights and BatchNorm statistics off their initial values), and a synthetic batch.
SETUP = """
import numpy as np
import mxcompat
import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn

rng = np.random.RandomState(0)
mx.random.seed(0)
x = mx.nd.array(rng.uniform(0, 1, size=(64, 3, 16, 16)).astype("float32"))
y = mx.nd.array(x.asnumpy().mean(axis=(2, 3)).argmax(axis=1))   # the brightest channel
net = nn.HybridSequential()
with net.name_scope():
    net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(2), nn.Conv2D(16, 3, padding=1), nn.Activation("relu"),
            nn.GlobalAvgPool2D(), nn.Dense(3))
net.initialize(mx.init.Xavier())
net.hybridize()
trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
for _ in range(10):
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y)
    loss.backward()
    trainer.step(x.shape[0])
float_top1 = net(x).asnumpy().argmax(axis=1)
calib = mx.io.NDArrayIter(x[:16], batch_size=8)

def agreement(qmod):
    out = qmod.predict(mx.io.NDArrayIter(x, batch_size=x.shape[0])).asnumpy()
    return float((out.argmax(axis=1) == float_top1).mean())
"""


def run_quantized(python, body):
    proc = python(SETUP + body, check=False, timeout=150)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail("quantization subprocess failed (%d):\n%s" % (proc.returncode, output[-4000:]))
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)


@pytest.mark.mxnet(">=1.8", reason=QUANTIZED_CPU)
def test_quantize_gluon_model_uint8_naive(python):
    result = run_quantized(
        python,
        """
before = {k: p.data().asnumpy().copy() for k, p in net.collect_params().items()}
qmod = mxcompat.quantize(net, calib_data=calib, calib_mode="naive", quantized_dtype="uint8",
                         num_calib_examples=16, data_shapes=[("data", x.shape)])
print("AGREE", agreement(qmod))
print("QUANTIZED", any(a.dtype != np.float32 for a in qmod.get_params()[0].values()))
same = all(np.array_equal(before[k], p.data().asnumpy())
           for k, p in net.collect_params().items())
print("SOURCE_UNCHANGED", same)
""",
    )
    assert float(result["AGREE"]) >= 0.9
    assert result["QUANTIZED"] == "True"
    assert result["SOURCE_UNCHANGED"] == "True"


@pytest.mark.mxnet(">=1.8", reason=QUANTIZED_CPU)
def test_issue_flow_to_module_then_mxnet_quantize_model(python):
    # What the issue asks to work by hand: net.to_module() -> contrib.quantization (the MKLDNN
    # variant on CPU: plain quantize_model's graph fails at forward there) -> a Module.
    result = run_quantized(
        python,
        """
mod = net.to_module(copy=False)
arg_params, aux_params = mod.get_params()
qsym, qargs, qauxs = mx.contrib.quantization.quantize_model_mkldnn(
    mod.symbol, arg_params, aux_params, data_names=("data",), label_names=(),
    ctx=mx.cpu(), calib_mode="naive", calib_data=calib, num_calib_examples=16,
    quantized_dtype="uint8")
qmod = mx.mod.Module(qsym, label_names=None)
qmod.bind(data_shapes=[("data", x.shape)], for_training=False)
qmod.set_params(qargs, qauxs, allow_extra=True)
print("AGREE", agreement(qmod))
""",
    )
    assert float(result["AGREE"]) >= 0.9


@pytest.mark.mxnet(">=1.8", reason=QUANTIZED_CPU)
def test_quantize_module_with_softmax_head_and_tuple(python):
    # A Module-era model (SoftmaxOutput head: replaced by softmax, no label needed), given as
    # a Module, and as MXNet's own (sym, arg_params, aux_params).
    result = run_quantized(
        python,
        """
mod = net.to_module(loss="softmax", data_shapes=[("data", x.shape)])
q1 = mxcompat.quantize(mod, calib_data=x[:16], num_calib_examples=16)
q1.bind(data_shapes=[("data", x.shape)], for_training=False)
print("MODULE", agreement(q1))
print("LABELS", q1.label_names)
args, auxs = mod.get_params()
q2 = mxcompat.quantize((mod.symbol, args, auxs), calib_data=calib, num_calib_examples=16,
                       data_shapes=[("data", x.shape)])
print("TUPLE", agreement(q2))
""",
    )
    assert float(result["MODULE"]) >= 0.9
    assert float(result["TUPLE"]) >= 0.9
    assert result["LABELS"] == "[]"


@pytest.mark.mxnet("<1.7", reason="the pip wheels from 1.7 are MKLDNN builds")
def test_quantize_refuses_cpu_without_mkldnn():
    # Refused before anything is quantized, so this one can run in-process.
    from mxnet import gluon

    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    with pytest.raises(RuntimeError, match="MKLDNN") as err:
        mxcompat.quantize(net, calib_data=mx.nd.ones((4, 3)))
    assert mx.__version__ in str(err.value)
