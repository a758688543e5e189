"""trainer_kvstore_init: distributed Gluon Trainers keep every worker on the same weights.

A real ps-lite cluster on 127.0.0.1 (tests/ps_cluster.py: a scheduler, one server, two
workers) runs many trials, each a fresh net and a fresh ``Trainer(kvstore=<dist_sync>,
update_on_kvstore=False)`` whose kvstore is set up lazily inside its first ``step()``, the way
legacy training loops do.  Worker 1 has other work queued on its engine (a large ``dot``)
when it reaches that step, which makes MXNet >= 1.7's race
(``facts.TRAINER_LAZY_KVSTORE_RACE``) likely.  After two steps the two workers' weights
must be bit-identical.  Patched and plain trials alternate in the same cluster (the patch is
removed and put back in the workers), so the plain ones show, in the same harness, that the
test can fail.

A dist kvstore cannot initialise a key twice, and a Trainer numbers its parameters from 0: each
trial's Trainer gets the cluster's kvstore under keys of its own (``KeyRange``, a view of the
same store that adds an offset to every key), so one cluster start serves every trial.
"""

import json
import os

import numpy as np

import mxcompat
from mxcompat._core import facts
from tests.support.ps_cluster import run_cluster

RACE = facts.since(facts.TRAINER_LAZY_KVSTORE_RACE)

WORKER = r'''
import json, os, sys
import numpy as np
import mxcompat
import mxnet as mx      # a scheduler or server serves inside this import, then exits
from mxnet import autograd, gluon

schedule, outdir = sys.argv[1], sys.argv[2]
kv = mx.kv.create("dist_sync")
rank = kv.rank
LAYERS = 12


class KeyRange(mx.kv.KVStore):
    """The cluster's kvstore with ``base`` added to every key (same handle, same store)."""

    def __init__(self, store, base):
        self.__dict__.update(vars(store))     # its handle and whatever else this release keeps
        self._store, self._base = store, base

    def __del__(self):
        pass    # the handle is the store's

    def init(self, key, value):
        return self._store.init(key + self._base, value)

    def push(self, key, value, priority=0):
        return self._store.push(key + self._base, value, priority)

    def pull(self, key, *args, **kwargs):
        return self._store.pull(key + self._base, *args, **kwargs)

    def broadcast(self, key, value, out, priority=0):      # MXNet >= 1.6
        return self._store.broadcast(key + self._base, value, out, priority)

    def pushpull(self, key, value, out=None, priority=0):  # MXNet >= 1.6
        return self._store.pushpull(key + self._base, value, out, priority)


busy = mx.nd.ones((1600, 1600))
rng = np.random.RandomState(10 + rank)      # each worker its own data
results = []
for trial, mode in enumerate(schedule):
    if mode == "p":
        mxcompat.patch()
    else:
        mxcompat.unpatch("trainer_kvstore_init")
    net = gluon.nn.HybridSequential(prefix="t%d_" % trial)
    with net.name_scope():
        for _ in range(LAYERS):
            net.add(gluon.nn.Dense(4, in_units=4, activation="tanh"))
    mx.random.seed(trial)
    net.initialize(mx.init.Uniform(0.5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            kvstore=KeyRange(kv, 100 * trial), update_on_kvstore=False)
    for step in range(2):
        with autograd.record():
            loss = (net(mx.nd.array(rng.uniform(-1, 1, (4, 4)))) ** 2).sum()
        loss.backward()
        if step == 0 and rank == 1:
            # Worker 1's engine is still busy when it reaches the first step.
            mx.nd.waitall()
            product = mx.nd.dot(busy, busy)
        trainer.step(4)
    np.savez(os.path.join(outdir, "w%d-t%d.npz" % (rank, trial)),
             **{p.name: p.data().asnumpy() for p in net.collect_params().values()})
    results.append({"trial": trial, "mode": mode, "patched": mxcompat.patched()})
mx.nd.waitall()
with open(os.path.join(outdir, "w%d.json" % rank), "w") as f:
    json.dump(results, f)
'''


def run_trials(tmpdir, schedule):
    """``schedule``: one letter a trial, ``p`` patched, ``u`` plain.  Returns
    ``{"p": [diverged?...], "u": [...]}`` and the patch lists each worker reported."""
    outdir = run_cluster(tmpdir, WORKER, [schedule])
    reports = []
    for rank in (0, 1):
        with open(os.path.join(outdir, "w%d.json" % rank)) as f:
            reports.append(json.load(f))
    diverged = {"p": [], "u": []}
    for trial, mode in enumerate(schedule):
        w0, w1 = [np.load(os.path.join(outdir, "w%d-t%d.npz" % (r, trial))) for r in (0, 1)]
        assert sorted(w0.files) == sorted(w1.files) and len(w0.files) == 24
        diverged[mode].append(any(not np.array_equal(w0[n], w1[n]) for n in w0.files))
    return diverged, reports


def test_workers_stay_identical_patched_and_diverge_plain(tmpdir):
    schedule = "pu" * 20  # 20 patched trials, 20 plain, interleaved (ABAB)
    diverged, reports = run_trials(tmpdir, schedule)
    for report in reports:
        assert ["trainer_kvstore_init" in r["patched"] for r in report] == [
            m == "p" for m in schedule
        ]
    print(
        "diverged: patched %d of %d, plain %d of %d"
        % (sum(diverged["p"]), len(diverged["p"]), sum(diverged["u"]), len(diverged["u"]))
    )
    assert len(diverged["p"]) == 20 and sum(diverged["p"]) == 0
    if RACE:
        # MXNet as shipped, same cluster, same kind of trials: at least one divergence
        # (measured: 18-20 of 20 on 1.7.0, 1.8.0 and 1.9.1).  1.3-1.6 diverge too, but too
        # rarely (0-1 of 20) for a test to show it.
        assert sum(diverged["u"]) >= 1, diverged


def test_applies_on_every_release():
    assert "trainer_kvstore_init" in mxcompat.patched()
