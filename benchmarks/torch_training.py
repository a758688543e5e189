"""Section ``torchtrain``: training with ``to_torch``'s module against the same network written
in ``torch.nn`` layers (its twin), side by side in one run: a ResNet-18/50 (Gluon model zoo)
and a 2-layer LSTM language model, one SGD-with-momentum step each, in float32, in bfloat16
autocast with channels_last, and under ``torch.compile`` (full mode only: compiling takes
minutes), on CPU and on CUDA when present.  Per operator: BatchNorm's training forward and
backward (``mxops.batch_norm`` against ``F.batch_norm`` with running statistics) at 1 and 2
threads, and the fused RNN (a converted Gluon ``rnn.LSTM``) against ``nn.LSTM``.  The twins
have the same shapes, not the same weights: the ratio is speed only (parity is held by
tests/to_torch).  Skipped (one line) without torch."""

import os
import time

import mxnet as mx

import mxcompat

from ._harness import interleave
from .models import gluon_net

# (model, side, batch) for the training steps; --quick: the first, float32 only.
STEPS = [("resnet18_v1", 32, 8), ("resnet50_v1", 32, 4)]
QUICK_STEP = ("resnet18_v1", 32, 2)
LM = dict(vocab=1000, embed=200, hidden=200, layers=2, steps=35, batch=32)


def _twin_resnet(torch, name, classes=10):
    """Gluon's ResNet v1 (basic blocks for 18, bottlenecks with the stride on the first 1x1
    for 50) in torch.nn layers, BatchNorm eps 1e-5 as Gluon's."""
    nn = torch.nn
    deep = name == "resnet50_v1"
    layers = [3, 4, 6, 3] if deep else [2, 2, 2, 2]
    widths = [256, 512, 1024, 2048] if deep else [64, 128, 256, 512]

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            if deep:
                mid = cout // 4
                self.body = nn.Sequential(
                    nn.Conv2d(cin, mid, 1, stride, bias=False),
                    nn.BatchNorm2d(mid),
                    nn.ReLU(),
                    nn.Conv2d(mid, mid, 3, 1, 1, bias=False),
                    nn.BatchNorm2d(mid),
                    nn.ReLU(),
                    nn.Conv2d(mid, cout, 1, bias=False),
                    nn.BatchNorm2d(cout),
                )
            else:
                self.body = nn.Sequential(
                    nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                    nn.BatchNorm2d(cout),
                    nn.ReLU(),
                    nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                    nn.BatchNorm2d(cout),
                )
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            skip = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + skip)

    stages, cin = [], 64
    for i, (count, width) in enumerate(zip(layers, widths)):
        for j in range(count):
            stages.append(Block(cin, width, 2 if (j == 0 and i > 0) else 1))
            cin = width
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
        *stages,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(cin, classes),
    )


def _gluon_lm():
    from mxnet.gluon import nn, rnn

    class Model(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.embed = nn.Embedding(LM["vocab"], LM["embed"])
                self.lstm = rnn.LSTM(LM["hidden"], LM["layers"], input_size=LM["embed"])
                self.out = nn.Dense(LM["vocab"], flatten=False, in_units=LM["hidden"])

        def hybrid_forward(self, F, x):
            return self.out(self.lstm(self.embed(x)))

    net = Model()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.zeros((LM["steps"], LM["batch"])))
    mx.nd.waitall()
    return net


def _twin_lm(torch):
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(LM["vocab"], LM["embed"])
            self.lstm = nn.LSTM(LM["embed"], LM["hidden"], LM["layers"])
            self.out = nn.Linear(LM["hidden"], LM["vocab"])

        def forward(self, x):
            return self.out(self.lstm(self.embed(x))[0])

    return Model()


def _step(torch, model, x, y, mode, device):
    """One training step (forward, cross-entropy, backward, SGD with momentum)."""
    F = torch.nn.functional
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    cast = mode == "bf16" and x.dim() == 4
    if cast:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    run = torch.compile(model) if mode == "compile" else model

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=mode == "bf16"):
            out = run(x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]).float(), y.reshape(-1))
        loss.backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()

    return step


def _training_rows(torch, table, reps, device, quick, modes=None, steps=None):
    modes = modes or (["fp32"] if quick else ["fp32", "bf16", "compile"])
    for name, side, batch in steps or ([QUICK_STEP] if quick else STEPS):
        net = gluon_net(name, side)
        shape = (batch, 3, side, side)
        g = torch.Generator().manual_seed(0)
        x = torch.randn(shape, generator=g).to(device)
        y = torch.randint(0, 10, (batch,), generator=g).to(device)
        for mode in modes:
            converted = mxcompat.to_torch(net, [shape], verify=False).to(device).train()
            twin = _twin_resnet(torch, name).to(device).train()
            times = interleave(
                {
                    "twin": _step(torch, twin, x, y, mode, device),
                    "converted": _step(torch, converted, x, y, mode, device),
                },
                min(reps, 3) if quick else reps,
                warmup=3 if mode == "compile" else 1 if quick else 2,
            )
            table.add(
                "torch train %s %dx%d b%d %s %s" % (name, side, side, batch, mode, device),
                "torch.nn twin",
                times["twin"],
                "to_torch",
                times["converted"],
                target="<= 1.05x" if name == "resnet18_v1" else None,
            )
    if quick:
        return
    net = _gluon_lm()
    tokens = (LM["steps"], LM["batch"])
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, LM["vocab"], tokens, generator=g).to(device)
    y = torch.randint(0, LM["vocab"], tokens, generator=g).to(device)
    for mode in [m for m in modes if m != "bf16"]:
        converted = mxcompat.to_torch(net, [tokens], verify=False).to(device).train()
        twin = _twin_lm(torch).to(device).train()
        times = interleave(
            {
                "twin": _step(torch, twin, x, y, mode, device),
                "converted": _step(torch, converted, x.float(), y, mode, device),
            },
            reps,
        )
        table.add(
            "torch train LSTM LM T%d b%d %s %s" % (LM["steps"], LM["batch"], mode, device),
            "torch.nn twin (nn.LSTM)",
            times["twin"],
            "to_torch",
            times["converted"],
            target="<= 1.2x",
        )


def _batch_norm_rows(torch, table, reps, device, quick):
    from mxcompat.torch import runtime as mxops

    F = torch.nn.functional
    shape = (4, 64, 28, 28) if quick else (16, 64, 56, 56)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g).to(device).requires_grad_()
    gamma = torch.rand(64, generator=g).to(device).requires_grad_()
    beta = torch.rand(64, generator=g).to(device).requires_grad_()
    head = torch.randn(shape, generator=g).to(device)
    mean, var = torch.zeros(64, device=device), torch.ones(64, device=device)

    def ours():
        mxops.batch_norm(x, gamma, beta, mean, var, True, 1e-5, 0.9, False, False).backward(head)

    def theirs():
        F.batch_norm(x, mean, var, gamma, beta, True, 0.1, 1e-5).backward(head)

    before = torch.get_num_threads()
    for threads in [1] if device == "cuda" else [1, 2]:
        torch.set_num_threads(threads)
        # CPU time of all threads: on a shared machine, waiting for a core is not the op's.
        clock = time.perf_counter if device == "cuda" else time.process_time
        times = interleave({"torch": theirs, "mxops": ours}, reps * 4, clock=clock)
        table.add(
            "torch BatchNorm train fwd+bwd %s %s %d thread(s)"
            % ("x".join(map(str, shape)), device, threads),
            "F.batch_norm",
            times["torch"],
            "mxops.batch_norm",
            times["mxops"],
            target="<= 1.1x",
        )
    torch.set_num_threads(before)


def _rnn_row(torch, table, reps, device):
    from mxnet.gluon import rnn

    t, n, c, h = LM["steps"], LM["batch"], LM["embed"], LM["hidden"]

    class Layer(mx.gluon.HybridBlock):  # the layer alone, its begin states made inside
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.lstm = rnn.LSTM(h, LM["layers"], input_size=c)

        def hybrid_forward(self, F, x):
            return self.lstm(x)

    layer = Layer()
    layer.initialize(mx.init.Xavier())
    layer.hybridize()
    layer(mx.nd.zeros((t, n, c)))
    converted = mxcompat.to_torch(layer, [(t, n, c)], verify=False).to(device).train()
    twin = torch.nn.LSTM(c, h, LM["layers"]).to(device).train()
    g = torch.Generator().manual_seed(0)
    data = torch.randn(t, n, c, generator=g).to(device).requires_grad_()
    grad = torch.randn(t, n, h, generator=g).to(device)
    times = interleave(
        {
            "torch": lambda: twin(data)[0].backward(grad),
            "mxops": lambda: converted(data).backward(grad),
        },
        reps,
    )
    table.add(
        "torch RNN LSTM fwd+bwd %dx%dx%d, %d layers x %d, %s" % (t, n, c, LM["layers"], h, device),
        "nn.LSTM",
        times["torch"],
        "to_torch (fused RNN)",
        times["mxops"],
        target="<= 1.2x",
    )


def run(table, configs, reps, quick=False):
    """The converted models' training steps against their torch.nn twins, and the operators
    against PyTorch's namesakes (``configs`` is not used: these have their own shapes)."""
    try:
        import torch
    except ImportError:
        print("torchtrain: skipped (needs torch: pip install 'mxcompat[torch]')")
        return
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)
    torch.set_num_threads(threads)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        _batch_norm_rows(torch, table, reps, device, quick)
        if not quick:
            _rnn_row(torch, table, reps, device)
        _training_rows(torch, table, reps, device, quick)
