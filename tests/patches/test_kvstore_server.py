"""A dist_sync kvstore server unpickles only an optimizer (patch ``kvstore_server``), on a real
ps-lite cluster on 127.0.0.1 (tests/support/ps_cluster.py): a scheduler, one server, two
workers, all running the script below, with mxcompat imported before mxnet (the server
serves inside ``import mxnet``).

Training: SGD (with a FactorScheduler), Adam and a custom
optimizer of a module of the user's, named in ``MXCOMPAT_KVSTORE_CLASSES``, each set with
``set_optimizer`` and run for three push/pull steps; the weights the workers pull are the
ones a local Updater computes from the summed gradients, bit for bit.  Attack: worker 0 sends
a pickle whose reduction calls ``os.system`` the way ``set_optimizer`` sends (command 0 to
every server); nothing runs, the server logs one error naming ``posix.system``, and the next
valid set_optimizer/push/pull works.  With the patch off, the same pickle runs (the test can
fail).
"""

import os

import numpy as np
import pytest

from tests.support.ps_cluster import run_cluster
from tests.support.repo import ROOT

CUSTOM = r"""
import mxnet as mx
from mxnet import ndarray as nd  # a server runs this inside `import mxnet`: no mx.nd yet


class SignStep(mx.optimizer.Optimizer):
    # A user's optimizer in a module of its own (a server cannot reach a worker's __main__).
    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        weight[:] = weight - self._get_lr(index) * nd.sign(grad)
"""

WORKER = r"""
import os, pickle, sys
import numpy as np
import mxcompat
import mxnet as mx      # a scheduler or server serves inside this import, then exits
from mxnet.base import py_str

scenario, outdir = sys.argv[1], sys.argv[2]
kv = mx.kv.create("dist_sync")
rank = kv.rank
SHAPE = (3, 4)


def grad(r, key, step):
    return np.random.RandomState(100 * key + 10 * step + r).uniform(-1, 1, SHAPE).astype("f")


def optimizers():
    import myopt
    return {
        1: lambda: mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.5,
                                    lr_scheduler=mx.lr_scheduler.FactorScheduler(2, 0.5)),
        2: lambda: mx.optimizer.Adam(learning_rate=0.01, wd=0.001),
        3: lambda: myopt.SignStep(learning_rate=0.05),
    }


def train(key, make):
    # The server's weights after three dist_sync steps, and a local Updater's replay of them.
    start = np.random.RandomState(key).uniform(-1, 1, SHAPE).astype("f")
    kv.set_optimizer(make())
    kv.init(key, mx.nd.array(start))
    out = mx.nd.zeros(SHAPE)
    local, replay = mx.nd.array(start), mx.optimizer.get_updater(make())
    kv.pull(key, out=out)
    results["init%d" % key] = out.asnumpy()
    for step in range(3):
        kv.push(key, mx.nd.array(grad(rank, key, step)))
        kv.pull(key, out=out)
        results["step%d_%d" % (key, step)] = out.asnumpy()
        replay(key, mx.nd.array(grad(0, key, step) + grad(1, key, step)), local)
    return out.asnumpy(), local.asnumpy()


class Attack(object):
    def __reduce__(self):
        return (os.system, ("touch " + os.path.join(outdir, "ran"),))


results = {}
if scenario == "train":
    for key, make in sorted(optimizers().items()):
        results["server%d" % key], results["local%d" % key] = train(key, make)
else:  # attack, then a valid optimizer
    if rank == 0:
        kv._send_command_to_servers(0, py_str(pickle.dumps(Attack(), 0)))
    kv._barrier()
    results["server1"], results["local1"] = train(1, optimizers()[1])
np.savez(os.path.join(outdir, "worker%d.npz" % rank), **results)
print("worker %d done" % rank)
"""


def _cluster(tmpdir, scenario, env=None, script=WORKER, path=()):
    pythonpath = str(tmpdir.mkdir("pkg"))
    with open(os.path.join(pythonpath, "myopt.py"), "w") as f:
        f.write(CUSTOM)
    folders = [pythonpath, *path, os.environ.get("PYTHONPATH")]
    extra = {"PYTHONPATH": os.pathsep.join(filter(None, folders))}
    extra.update(env or {})
    outdir = run_cluster(tmpdir, script, [scenario], extra)
    with open(os.path.join(outdir, "1-server.log")) as f:
        server_log = f.read()
    workers = [np.load(os.path.join(outdir, "worker%d.npz" % r)) for r in (0, 1)]
    return outdir, server_log, workers


def _refusals(log):
    return [line for line in log.splitlines() if "mxcompat refused" in line]


def _assert_trained(workers, keys):
    for w in workers:
        for key in keys:
            server, local = w["server%d" % key], w["local%d" % key]
            assert not np.array_equal(server, np.random.RandomState(key).uniform(-1, 1, (3, 4)))
            # The server ran the optimizer the worker sent: its weights are a local replay's.
            np.testing.assert_array_equal(server, local, err_msg="optimizer %d" % key)


def test_sgd_adam_and_a_named_custom_optimizer_train(tmpdir):
    _, log, workers = _cluster(tmpdir, "train", {"MXCOMPAT_KVSTORE_CLASSES": "myopt:SignStep"})
    assert _refusals(log) == []
    _assert_trained(workers, (1, 2, 3))


def test_a_custom_optimizer_not_named_is_refused(tmpdir):
    # Without the setting the custom class is refused by name, once per command (each worker
    # sends its own); SGD and Adam still train.  The server goes on with the optimizer it had
    # (as when MXNet's pickle.loads fails): the custom one never ran.
    _, log, workers = _cluster(tmpdir, "train")
    refusals = _refusals(log)
    assert len(refusals) == 2, log
    for line in refusals:
        assert "myopt.SignStep" in line and "MXCOMPAT_KVSTORE_CLASSES" in line
    _assert_trained(workers, (1, 2))
    for w in workers:
        assert not np.array_equal(w["server3"], w["local3"])


def test_a_pickle_that_runs_a_command_is_refused_and_the_server_serves_on(tmpdir):
    outdir, log, workers = _cluster(tmpdir, "attack")
    assert not os.path.exists(os.path.join(outdir, "ran")), "the pickle's command ran"
    refusals = _refusals(log)
    assert len(refusals) == 1, log
    assert "posix.system" in refusals[0]
    assert "Traceback" not in log
    _assert_trained(workers, (1,))


def test_a_script_without_import_mxcompat_under_mxcompat_run(tmpdir):
    # Every node started as `mxcompat run` starts it (its bootstrap on PYTHONPATH, which a
    # launcher's children inherit): the server is patched though the script never names us.
    # The checkout first: the bootstrap imports mxcompat before `python -c` puts the working
    # folder on sys.path.
    from mxcompat.cli.run import BOOTSTRAP

    script = WORKER.replace("import mxcompat\n", "")
    assert script != WORKER
    outdir, log, workers = _cluster(tmpdir, "attack", script=script, path=[ROOT, BOOTSTRAP])
    assert not os.path.exists(os.path.join(outdir, "ran")), "the pickle's command ran"
    assert len(_refusals(log)) == 1 and "posix.system" in log
    _assert_trained(workers, (1,))


def test_without_the_patch_the_pickle_runs(tmpdir):
    # What the patch prevents, on the same cluster: MXNet's server runs the command.
    outdir, log, workers = _cluster(
        tmpdir, "attack", {"MXCOMPAT_DISABLE_PATCHES": "kvstore_server"}
    )
    assert os.path.exists(os.path.join(outdir, "ran"))
    assert _refusals(log) == []


def _server_class():
    import mxnet as mx

    return getattr(mx.kv, "KVStoreServer", None) or mx.kvstore_server.KVStoreServer


def _controller(got):
    # The controller as the registry applies it where mxnet's import finishes (a worker).
    class Store:
        rank = 0

        def set_optimizer(self, optimizer):
            got.append(optimizer)

    server = _server_class().__new__(_server_class())
    server.kvstore, server.init_logginig = Store(), True
    return server._controller()


@pytest.mark.parametrize(
    "payload",
    [b"garbage", b"c__builtin__\neval\n(S'1'\ntR.", b"cnumpy\nload\n."],
    ids=["not-a-pickle", "eval", "numpy-load"],
)
def test_the_controller_refuses_in_this_process(payload, caplog):
    import pickle

    import mxnet as mx

    got = []
    controller = _controller(got)
    with caplog.at_level("ERROR", logger="mxcompat"):
        controller(0, payload, None)
    assert got == []
    assert len(caplog.records) == 1 and "mxcompat refused" in caplog.records[0].getMessage()
    # NumPy's scalars are admitted (an optimizer's setting may be one).
    sgd = mx.optimizer.SGD(learning_rate=np.float32(0.25), multi_precision=True)
    controller(0, pickle.dumps(sgd, 0), None)
    assert [type(o).__name__ for o in got] == ["SGD"]
    assert got[0].lr == np.float32(0.25) and type(got[0].lr) is np.float32


def test_unpatch_gives_mxnet_its_controller_back():
    import mxcompat

    cls = _server_class()
    assert hasattr(vars(cls)["_controller"], "__wrapped__")
    mxcompat.unpatch("kvstore_server")
    try:
        assert not hasattr(vars(cls)["_controller"], "__wrapped__")
        assert "kvstore_server" not in mxcompat.patched()
    finally:
        mxcompat.patch()
    assert "kvstore_server" in mxcompat.patched()
