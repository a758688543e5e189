"""Data parallel: a converted model under torch's DistributedDataParallel (gloo, two processes
on CPU, forked) against one process, float64, three steps of MXNet's SGD with momentum through
``to_torch_optimizer``.

DDP averages the gradients over the processes; MXNet's kvstore (``device``, ``dist_sync``)
sums them and its Module divides by the global batch (a Gluon Trainer by what ``step`` is
given; Horovod's DistributedTrainer divides by the number of workers too).  So each process's
optimizer takes its *local* batch size: rescale 1/local on the average of local sums is
1/global on the global sum, as in one process.

BatchNorm: each process normalises its own half-batch with that half's mean and variance (as
MXNet's kvstore ``device`` did per GPU: its BatchNorm sees one device's slice), so outputs and
gradients are not those of one process on the whole batch; they are those of one process that
runs each half separately and averages the gradients.  DDP broadcasts rank 0's buffers before
each forward, so the running statistics are those that rank 0's halves alone move.
``torch.nn.SyncBatchNorm.convert_sync_batchnorm`` does not apply: the converted module calls
MXNet's BatchNorm as a function (``mxops.batch_norm``), there is no ``nn.BatchNorm`` module to
swap (asserted below); MXNet's ``contrib.SyncBatchNorm`` has no converted counterpart."""

import copy
import datetime
import importlib.util
import os
import sys
import traceback

import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon import nn

import mxcompat

_SPEC = importlib.util.find_spec("torch")
pytestmark = [
    pytest.mark.skipif(
        _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
    ),
    pytest.mark.skipif(sys.platform == "win32", reason="forks the two processes"),
]

BATCH = 8  # global; 4 per process
STEPS = 3


def _net(batchnorm):
    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 3, padding=1))
    if batchnorm:
        net.add(nn.BatchNorm(scale=True))
    net.add(nn.Activation("relu"), nn.MaxPool2D(), nn.Conv2D(6, 3, padding=1))
    if batchnorm:
        net.add(nn.BatchNorm())
    net.add(nn.Activation("tanh"), nn.GlobalAvgPool2D(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.cast("float64")
    net.hybridize()
    net(mx.nd.zeros((2, 3, 8, 8), dtype="float64"))
    return mxcompat.to_torch(net, verify=False)


def _batches():
    rng = np.random.RandomState(0)
    return [
        (rng.uniform(-1, 1, (BATCH, 3, 8, 8)), rng.randint(0, 3, (BATCH,))) for _ in range(STEPS)
    ]


def _optimizer(module, batch):
    """MXNet's SGD: rescale_grad 1/batch on a summed loss, as a Module sets it."""
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-3, rescale_grad=1.0 / batch)
    return mxcompat.to_torch_optimizer(opt, module)


def _loss(module, x, y):
    import torch

    out = module(torch.from_numpy(x))
    return torch.nn.functional.cross_entropy(out, torch.from_numpy(y), reduction="sum")


def _worker(rank, module, path, result):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    # Each rank ends with os._exit, its result saved and the other rank's seen at the barrier:
    # gloo's process group can wait forever in its destructor (joining its worker thread) once
    # the other rank has gone, seen under load; and a collective gives up after two minutes.
    try:
        timeout = datetime.timedelta(seconds=120)
        dist.init_process_group(
            "gloo", init_method="file://" + path, rank=rank, world_size=2, timeout=timeout
        )
        opt = _optimizer(module, BATCH // 2)
        ddp = torch.nn.parallel.DistributedDataParallel(module)
        ddp.train()
        half = slice(rank * BATCH // 2, (rank + 1) * BATCH // 2)
        for x, y in _batches():
            _loss(ddp, x[half], y[half]).backward()
            opt.step()
            opt.zero_grad()
        torch.save(module.state_dict(), result % rank)
        dist.barrier()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)


def _ddp(module, tmp_path):
    # torch._dynamo: DDP imports it (and SymPy) at its first construction; once here, not in
    # each child at the same time.
    import torch
    import torch._dynamo  # noqa: F401
    import torch.multiprocessing as tmp

    result = str(tmp_path / "rank%d.pt")
    # fork: the converted module's class is generated code, which a spawned child could not
    # unpickle.
    tmp.start_processes(
        _worker,
        args=(module, str(tmp_path / "init"), result),
        nprocs=2,
        start_method="fork",
    )
    return [torch.load(result % r) for r in range(2)]


def _one_process(module, halves):
    """One process on each global batch; ``halves``: BatchNorm per half-batch, the gradients
    averaged, the statistics moved by the first half only (as rank 0's under DDP)."""
    import torch

    opt = _optimizer(module, BATCH // 2 if halves else BATCH)
    module.train()
    for x, y in _batches():
        if not halves:
            _loss(module, x, y).backward()
        else:
            buffers = {n: b.clone() for n, b in module.named_buffers()}
            _loss(module, x[BATCH // 2 :], y[BATCH // 2 :]).backward()
            with torch.no_grad():
                for n, b in module.named_buffers():
                    b.copy_(buffers[n])
            _loss(module, x[: BATCH // 2], y[: BATCH // 2]).backward()
            for p in module.parameters():
                p.grad /= 2
        opt.step()
        opt.zero_grad()
    return module.state_dict()


def _worst(actual, expected):
    return max(
        float((actual[n] - v).abs().max()) / max(float(v.abs().max()), 1e-12)
        for n, v in expected.items()
    )


@pytest.fixture(autouse=True)
def _loopback(monkeypatch):
    """gloo finds its interface by resolving the host's name, which without a name server
    waits minutes: the loopback device, named, does not."""
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")


def test_ddp_without_batchnorm_trains_like_one_process(tmp_path):
    module = _net(batchnorm=False)
    ranks = _ddp(copy.deepcopy(module), tmp_path)
    one = _one_process(copy.deepcopy(module), halves=False)
    start = module.state_dict()
    assert _worst(one, start) > 1e-3  # the steps moved the weights
    for state in ranks:
        assert _worst(state, one) <= 1e-12


def test_ddp_with_batchnorm_normalises_each_half(tmp_path):
    import torch

    module = _net(batchnorm=True)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in module.modules())
    synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(module))
    assert not any(isinstance(m, torch.nn.SyncBatchNorm) for m in synced.modules())
    ranks = _ddp(copy.deepcopy(module), tmp_path)
    halves = _one_process(copy.deepcopy(module), halves=True)
    whole = _one_process(copy.deepcopy(module), halves=False)
    params = {n for n, _ in module.named_parameters()}
    for state in ranks:
        assert _worst({n: state[n] for n in params}, {n: halves[n] for n in params}) <= 1e-12
    # rank 0's statistics are the halves' run's; rank 1 moved its own after the last broadcast
    assert _worst(ranks[0], halves) <= 1e-12
    # ... and not one process's on the whole batch
    assert _worst({n: ranks[0][n] for n in params}, {n: whole[n] for n in params}) > 1e-6
