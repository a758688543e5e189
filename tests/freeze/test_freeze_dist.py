"""Frozen parameters under MXNet's distributed kvstore ``dist_sync``, run for real.

A ps-lite cluster on 127.0.0.1 -- a scheduler, one server and two workers, each a local
process told its role by ``DMLC_ROLE`` -- trains the same net on each worker (different data)
with ``fc1_weight`` and ``fc2_b*`` frozen.  Afterwards, on both workers, the frozen weights are
equal to their start and identical on the two, and every other weight has changed.  The
cluster (tests/ps_cluster.py) is bounded in time.
"""

import os

import numpy as np
import pytest

from tests.support.ps_cluster import run_cluster

WORKER = r"""
import os, sys
import numpy as np
import mxcompat
import mxnet as mx      # a scheduler or server serves inside this import, then exits
from mxnet import autograd, gluon

scenario, outdir = sys.argv[1], sys.argv[2]
kv = mx.kv.create("dist_sync")
rank = kv.rank
rng = np.random.RandomState(10 + rank)     # each worker its own data
sgd = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}


def batch():
    return rng.uniform(-1, 1, (4, 4)), rng.uniform(-1, 1, (4, 3))


if scenario.startswith("module"):
    mxcompat.freeze("fc1_weight", "fc2_b*")
    data = mx.sym.Variable("data")
    hidden = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=5, name="fc1"),
                               act_type="tanh")
    out = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(hidden, num_hidden=3, name="fc2"),
                                        name="lro")
    mod = mx.mod.Module(out, data_names=("data",), label_names=("lro_label",))
    mod.bind(data_shapes=[("data", (4, 4))], label_shapes=[("lro_label", (4, 3))])
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(kvstore=kv, optimizer="sgd", optimizer_params=sgd)

    def params():
        group = mod._exec_group
        return {n: a[0].asnumpy().copy() for n, a in zip(group.param_names, group.param_arrays)}

    def step(x, y):
        mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
        mod.backward()
        mod.update()

    start = params()
    for _ in range(5):
        step(*batch())
    on_kvstore = mod._update_on_kvstore
else:
    mxcompat.freeze("net_fc1_weight", "net_fc2_b*")
    net = gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(gluon.nn.Dense(5, in_units=4, activation="tanh", prefix="fc1_"),
                gluon.nn.Dense(3, in_units=5, prefix="fc2_"))
    mx.random.seed(1)
    net.initialize(mx.init.Uniform(0.5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", sgd, kvstore=kv,
                            update_on_kvstore=(scenario == "gluon-on-kvstore"))

    def params():
        return {p.name[len("net_"):]: p.data().asnumpy().copy()
                for p in net.collect_params().values()}

    def step(x, y):
        with autograd.record():
            loss = ((net(mx.nd.array(x)) - mx.nd.array(y)) ** 2).sum()
        loss.backward()
        trainer.step(4)

    # The kvstore is set up lazily in the first step, as training loops do: from MXNet 1.7 a
    # worker could then start from the summed gradients, but for mxcompat's
    # trainer_kvstore_init (tests/patches/test_trainer_kvstore_init.py).
    step(*batch())
    start = params()
    for _ in range(5):
        step(*batch())
    on_kvstore = trainer._update_on_kvstore
end = params()
np.savez(os.path.join(outdir, "worker%d.npz" % rank), on_kvstore=bool(on_kvstore),
         **dict([("start_" + n, v) for n, v in start.items()] +
                [("end_" + n, v) for n, v in end.items()]))
print("worker %d of %d done, update_on_kvstore=%s" % (rank, kv.num_workers, on_kvstore))
"""


def _run_cluster(tmpdir, scenario, extra_env=None):
    """The two workers' npz files after the scenario ran on a cluster."""
    outdir = run_cluster(tmpdir, WORKER, [scenario], extra_env)
    return [np.load(os.path.join(outdir, "worker%d.npz" % r)) for r in (0, 1)]


FROZEN = {"fc1_weight", "fc2_bias"}
NAMES = ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")


def _assert_frozen_on_both(workers, on_kvstore):
    for w in workers:
        assert bool(w["on_kvstore"]) == on_kvstore
        assert sorted(k[len("end_") :] for k in w.files if k.startswith("end_")) == sorted(NAMES)
    w0, w1 = workers
    for name in NAMES:
        moved = [not np.array_equal(w["start_" + name], w["end_" + name]) for w in workers]
        assert moved == [name not in FROZEN] * 2, name
        if name in FROZEN:
            # Identical on both workers, bit for bit, and never moved.
            assert np.array_equal(w0["start_" + name], w1["start_" + name]), name
            assert np.array_equal(w0["end_" + name], w1["end_" + name]), name


def test_module_dist_sync_update_on_kvstore(tmpdir):
    _assert_frozen_on_both(_run_cluster(tmpdir, "module"), on_kvstore=True)


@pytest.mark.mxnet(">=1.5", reason="MXNET_UPDATE_ON_KVSTORE is read from MXNet 1.5")
def test_module_dist_sync_local_update(tmpdir):
    workers = _run_cluster(tmpdir, "module-local", {"MXNET_UPDATE_ON_KVSTORE": "0"})
    _assert_frozen_on_both(workers, on_kvstore=False)


def test_gluon_trainer_dist_sync(tmpdir):
    _assert_frozen_on_both(_run_cluster(tmpdir, "gluon"), on_kvstore=False)


@pytest.mark.mxnet(
    ">=1.4",
    reason="Trainer(update_on_kvstore=True) on a dist kvstore "
    "is honoured from MXNet 1.4 (1.3 turns it off)",
)
def test_gluon_trainer_dist_sync_update_on_kvstore(tmpdir):
    _assert_frozen_on_both(_run_cluster(tmpdir, "gluon-on-kvstore"), on_kvstore=True)
