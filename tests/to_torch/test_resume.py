"""Training resumes where MXNet stopped: MXNet trains N steps (SGD with momentum and a
FactorScheduler, NAG, Adam with a FactorScheduler, RMSProp plain and centered; clipping,
weight decay, an ``lr_mult``), the model and the optimizer are converted (from the Trainer,
from the Module, from a states file), then steps N+1..N+K run in both: every parameter within
1e-12 of MXNet's in float64 (relative to its largest value; measured at most 6e-16 on 1.9.1
and 1.5.1: the float32 hyper-parameters are rounded alike on both sides).  Starting from zero
state instead parts by 0.58 (NAG) to 1.4 (centered RMSProp) after the same steps (checked).
``state_dict()``/``load_state_dict()`` resume bit for bit, and ``mxcompat torch --states``
writes an optimizer a script with torch alone resumes."""

import copy
import importlib.util
import io
import json
import os
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

import mxcompat
from tests.support.torch_names import state_by_mxnet_name

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

N, K, BATCH = 4, 3, 5
SHAPES = (6, 7, 4)  # inputs, hidden units, classes


def _scheduler():
    # Changes at updates 3, 5 and 7: inside both the first N steps and the next K.
    return mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)


OPTIMIZERS = {
    "sgd": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-2, "clip_gradient": 0.5}),
    "nag": ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-2, "clip_gradient": 0.5}),
    "adam": ("adam", {"learning_rate": 1e-2, "wd": 1e-2, "clip_gradient": 0.5}),
    "rmsprop": ("rmsprop", {"learning_rate": 1e-2, "wd": 1e-2, "clip_gradient": 0.5}),
    "rmsprop_centered": (
        "rmsprop",
        {"learning_rate": 1e-2, "wd": 1e-2, "clip_gradient": 0.5, "centered": True},
    ),
}


def _opt(kind):
    name, params = OPTIMIZERS[kind]
    params = dict(params)
    if kind in ("sgd", "adam"):
        params["lr_scheduler"] = _scheduler()
    return name, params


@pytest.fixture(autouse=True)
def rmsprop_states_of_the_weights_type(monkeypatch):
    """MXNet's RMSProp makes float32 states whatever the weight's type, and its kernel then
    refuses a float64 weight: here they take the weight's type (the rule is untouched)."""
    make = mx.optimizer.RMSProp.create_state

    def create_state(self, index, weight):
        return tuple(s.astype(weight.dtype) for s in make(self, index, weight))

    monkeypatch.setattr(mx.optimizer.RMSProp, "create_state", create_state)


def _batches():
    rng = np.random.RandomState(0)
    return [
        (
            rng.uniform(-1, 1, (BATCH, SHAPES[0])),
            rng.randint(0, SHAPES[2], (BATCH,)).astype(np.float64),
        )
        for _ in range(N + K)
    ]


def _net(values=None):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(SHAPES[1], activation="tanh", in_units=SHAPES[0]))
        net.add(gluon.nn.Dense(SHAPES[2], in_units=SHAPES[1]))
    mx.random.seed(0)
    net.initialize(mx.init.Xavier())
    net.cast("float64")
    if values is not None:  # another net's values, in order
        for p, v in zip(net.collect_params().values(), values):
            p.set_data(mx.nd.array(v, dtype="float64"))
    net.hybridize()
    net(mx.nd.ones((1, SHAPES[0]), dtype="float64"))
    return net


def _values(net):
    return [p.data().asnumpy() for p in net.collect_params().values()]


def _trainer(net, kind, lr_mult=True, kvstore=None):
    name, params = _opt(kind)
    if lr_mult:
        list(net.collect_params().values())[-1].lr_mult = 0.5
    if kvstore is None:
        return gluon.Trainer(net.collect_params(), name, params)
    return gluon.Trainer(
        net.collect_params(), name, params, kvstore=kvstore, update_on_kvstore=True
    )


def _gluon_step(net, trainer, x, y):
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(
            net(mx.nd.array(x, dtype="float64")), mx.nd.array(y, dtype="float64")
        )
    loss.backward()
    trainer.step(BATCH)


def _torch_gluon_step(module, topt, x, y):
    import torch

    out = module(torch.from_numpy(x))
    torch.nn.functional.cross_entropy(out, torch.from_numpy(y).long(), reduction="sum").backward()
    topt.step()
    topt.zero_grad()


def _close(module, expected, what, rtol=1e-12):
    state = state_by_mxnet_name(module)
    for name, want in expected.items():
        got = state[name].numpy()
        scale = max(float(np.abs(want).max()), 1e-6)
        worst = float(np.abs(got - want).max())
        assert worst <= rtol * scale, "%s, %s: %.3g off (max %.3g)" % (what, name, worst, scale)


def _far(module, expected):
    state = state_by_mxnet_name(module)
    return max(
        float(np.abs(state[n].numpy() - v).max() / max(np.abs(v).max(), 1e-6))
        for n, v in expected.items()
    )


# --- Gluon's Trainer ------------------------------------------------------------------------


def _resume_gluon(kind, from_file, tmp_path, carry=True, kvstore=None):
    batches = _batches()
    net = _net()
    trainer = _trainer(net, kind, kvstore=kvstore)
    for x, y in batches[:N]:
        _gluon_step(net, trainer, x, y)
    if from_file:
        path = str(tmp_path / "trainer.states")
        trainer.save_states(path)
        # MXNet resumes in a fresh Trainer that loads the file; torch reads the file alone
        # (converted before the fresh Trainer has loaded anything).
        net = _net(_values(net))
        trainer = _trainer(net, kind)
    module = mxcompat.to_torch(net, verify=False)
    if not carry:
        topt = mxcompat.to_torch_optimizer(_trainer(_net(), kind), module, batch_size=BATCH)
    else:
        topt = mxcompat.to_torch_optimizer(
            trainer, module, batch_size=BATCH, states=path if from_file else None
        )
    if from_file:
        trainer.load_states(path)
    module.train()
    for x, y in batches[N:]:
        _gluon_step(net, trainer, x, y)
        _torch_gluon_step(module, topt, x, y)
    return module, {p.name: p.data().asnumpy() for p in net.collect_params().values()}


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_starting_from_zero_state_would_part(kind, tmp_path):
    """The comparison above can fail: a fresh optimizer's steps N+1.. differ by far more."""
    module, expected = _resume_gluon(kind, False, tmp_path, carry=False)
    assert _far(module, expected) > 0.1


# --- the Module -----------------------------------------------------------------------------


def _module(net, kind, kvstore=None):
    sym = mx.sym.SoftmaxOutput(net(mx.sym.var("data")), name="softmax")
    mod = mx.mod.Module(sym)
    mod.bind(
        [mx.io.DataDesc("data", (BATCH, SHAPES[0]), np.float64)],
        [mx.io.DataDesc("softmax_label", (BATCH,), np.float64)],
    )
    args = {p.name: p.data().copy() for p in net.collect_params().values()}
    mod.set_params(args, {})
    name, params = _opt(kind)
    extra = {} if kvstore is None else {"kvstore": kvstore}
    mod.init_optimizer(optimizer=name, optimizer_params=params, **extra)
    mod._optimizer.set_lr_mult({sorted(args)[-1]: 0.5})
    return mod


def _module_step(mod, x, y):
    batch = mx.io.DataBatch([mx.nd.array(x, dtype="float64")], [mx.nd.array(y, dtype="float64")])
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()


def _resume_module(kind, from_file, tmp_path, kvstore=None):
    import torch

    batches = _batches()
    net = _net()
    mod = _module(net, kind, kvstore)
    for x, y in batches[:N]:
        _module_step(mod, x, y)
    if from_file:
        path = str(tmp_path / "module.states")
        mod.save_optimizer_states(path)
        # MXNet's own resume: a fresh Module with the weights, which loads the file (its
        # counts start again: the file holds the states only).
        args, _ = mod.get_params()
        mod = _module(net, kind)
        mod.set_params(args, {})
    module = mxcompat.to_torch(mod, verify=False)
    topt = mxcompat.to_torch_optimizer(mod, module, states=path if from_file else None)
    if from_file:
        mod.load_optimizer_states(path)
    module.train()
    for x, y in batches[N:]:
        _module_step(mod, x, y)
        out = module(torch.from_numpy(x), torch.from_numpy(y))
        out.backward(torch.ones_like(out))
        topt.step()
        topt.zero_grad()
    args, _ = mod.get_params()
    return module, {n: v.asnumpy() for n, v in args.items()}


RESUMES = {"Trainer": _resume_gluon, "Module": _resume_module}
STATES_FILES = {"Trainer": "Trainer.save_states", "Module": "Module.save_optimizer_states"}


@pytest.mark.parametrize("source", sorted(RESUMES))
@pytest.mark.parametrize("from_file", [False, True], ids=["live", "states_file"])
@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_resumes_at_step_n_plus_1(source, from_file, kind, tmp_path):
    module, expected = RESUMES[source](kind, from_file, tmp_path)
    _close(module, expected, "%s, %s" % (STATES_FILES[source] if from_file else source, kind))


@pytest.mark.parametrize("source", sorted(RESUMES))
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_updating_on_its_kvstore_resumes(source, kind, tmp_path):
    """update_on_kvstore: the states are the kvstore's updater's (a Module's keyed by name)."""
    module, expected = RESUMES[source](kind, False, tmp_path, kvstore=mx.kv.create("local"))
    _close(module, expected, "%s on a kvstore, %s" % (source, kind))


# --- the torch side ---------------------------------------------------------------------------


def _adam_after_n_steps():
    """N Adam steps of the Gluon net (its scheduler on), then the model and the optimizer
    converted: (batches, trainer, module, torch optimizer)."""
    batches = _batches()
    net = _net()
    trainer = _trainer(net, "adam")
    for x, y in batches[:N]:
        _gluon_step(net, trainer, x, y)
    module = mxcompat.to_torch(net, verify=False)
    return batches, trainer, module, mxcompat.to_torch_optimizer(trainer, module, batch_size=BATCH)


def test_scheduler_position_and_update_count_carry_over(tmp_path):
    batches, trainer, module, topt = _adam_after_n_steps()
    assert topt.num_update == trainer._optimizer.num_update == N
    group = topt.param_groups[0]
    # The scheduler was halved at update 3: its next value is MXNet's.
    want = copy.deepcopy(trainer._optimizer.lr_scheduler)(N + 1)
    topt.num_update += 1
    assert topt.current_lr(group) == want == 1e-2 * 0.5**2
    topt.num_update -= 1
    first = group["params"][0]
    assert topt.state[first]["step"] == N


def test_state_dict_round_trip_resumes_bit_for_bit(tmp_path):
    import torch

    batches, trainer, module, topt = _adam_after_n_steps()
    module.train()
    _torch_gluon_step(module, topt, *batches[N])
    buf = io.BytesIO()
    torch.save({"model": module.state_dict(), "opt": topt.state_dict()}, buf)
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)
    again = copy.deepcopy(module)
    again.load_state_dict(saved["model"])
    # A fresh optimizer of another configuration: everything comes from the state_dict.
    topt2 = mxcompat.to_torch_optimizer(mx.optimizer.Adam(learning_rate=0.5), again)
    topt2.load_state_dict(saved["opt"])
    assert topt2.num_update == topt.num_update == N + 1
    for x, y in batches[N + 1 :]:
        _torch_gluon_step(module, topt, x, y)
        _torch_gluon_step(again, topt2, x, y)
    for (n, a), b in zip(module.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), n


def test_a_state_for_another_model_is_refused(tmp_path):
    batches = _batches()
    net = _net()
    trainer = _trainer(net, "sgd")
    _gluon_step(net, trainer, *batches[0])
    other = gluon.nn.Dense(3, in_units=2, prefix="other_")
    other.initialize()
    other.hybridize()
    other(mx.nd.ones((1, 2)))
    module = mxcompat.to_torch(other, verify=False)
    with pytest.raises(ValueError, match="no parameter of the module"):
        mxcompat.to_torch_optimizer(trainer, module, batch_size=BATCH)


def test_a_file_that_is_no_states_file_is_refused(tmp_path):
    path = tmp_path / "x.states"
    path.write_bytes(b"not a pickle")
    module = mxcompat.to_torch(_net(), verify=False)
    with pytest.raises(ValueError, match="not an optimizer states file"):
        mxcompat.to_torch_optimizer(mx.optimizer.SGD(), module, states=str(path))


# --- mxcompat torch --states ------------------------------------------------------------------


def test_cli_writes_an_optimizer_a_torch_only_script_resumes(tmp_path):
    """A Trainer's file (its settings, counts and scheduler; not the Parameters' own
    lr_mult, which MXNet does not save either) through the command, resumed by torch alone."""
    batches = _batches()
    net = _net()
    trainer = _trainer(net, "adam", lr_mult=False)
    for x, y in batches[:N]:
        _gluon_step(net, trainer, x, y)
    prefix = str(tmp_path / "net")
    net.export(prefix, N)
    trainer.save_states(prefix + ".states")
    cmd = "import sys\nfrom mxcompat.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    run = subprocess.run(
        [sys.executable, "-c", cmd, "torch", "net", str(N), "-o", "out", "--states", "net.states"],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    out = tmp_path / "out"
    assert {"model.py", "mxnet_ops", "mxnet_optim.py", "optimizer.pt"} <= set(os.listdir(str(out)))
    np.save(
        str(out / "batches.npy"),
        np.array([np.concatenate([x, y[:, None]], 1) for x, y in batches[N:]]),
    )
    script = (
        "import sys; sys.modules['mxnet'] = None; sys.modules['mxcompat'] = None\n"
        "import numpy as np, torch, model, mxnet_optim\n"
        "from safetensors.torch import load_file\n"
        "net = model.MXNetModel().double(); net.load_state_dict(load_file('weights.safetensors'))\n"
        "opt = mxnet_optim.load(net, 'optimizer.pt')\n"
        "for b in np.load('batches.npy'):\n"
        "    x, y = torch.from_numpy(b[:, :-1]), torch.from_numpy(b[:, -1]).long()\n"
        "    torch.nn.functional.cross_entropy(net(x), y, reduction='sum').backward()\n"
        "    opt.step(); opt.zero_grad()\n"
        "np.savez('after.npz', **{k: v.numpy() for k, v in net.state_dict().items()})\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=str(out), capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    for x, y in batches[N:]:
        _gluon_step(net, trainer, x, y)
    with open(str(out / "mxnet_names.json")) as f:
        names = {mx_name: key for key, mx_name in json.load(f).items()}
    loaded = np.load(str(out / "after.npz"))
    after = {p.name: loaded[names[p.name]] for p in net.collect_params().values()}
    for p in net.collect_params().values():
        want = p.data().asnumpy()
        worst = float(np.abs(after[p.name] - want).max())
        assert worst <= 1e-12 * max(float(np.abs(want).max()), 1e-6), (p.name, worst)


def test_cli_refuses_a_states_file_without_the_optimizer(tmp_path):
    """A Module's file holds the states alone: no settings to rebuild the optimizer from."""
    batches = _batches()
    mod = _module(_net(), "sgd")
    _module_step(mod, *batches[0])
    prefix = str(tmp_path / "mod")
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    cmd = "import sys\nfrom mxcompat.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    run = subprocess.run(
        [sys.executable, "-c", cmd, "torch", "mod", "1", "--states", "mod-0001.states"],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1
    assert "holds the optimizer's states only" in run.stderr
    assert "Traceback" not in run.stderr
