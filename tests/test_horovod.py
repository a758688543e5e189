"""mxcompat under Horovod (``horovod.mxnet``), run for real: ``horovodrun -np 2 --gloo`` on
127.0.0.1, two workers, each its own data (tests/support/horovod_worker.py).

Two jobs, each bounded in time: ``plain`` (MXNet without mxcompat; where MXNet does not import
without it, mxcompat without its update-path patches) and ``mxcompat`` (every patch, launched
as users launch it, ``mxcompat run horovodrun ...``).  Compared, bit for bit: the two workers;
a step with nothing frozen, plain against mxcompat; ``mxcompat.freeze`` on
``DistributedTrainer`` and on Module + ``DistributedOptimizer`` (frozen before and after
bind) against MXNet's own ``grad_req='null'`` / ``fixed_param_names``; a ``to_gluon`` /
``to_module`` result broadcast and trained against the original API.

Horovod must be built against the env's MXNet (tox envs ``hvd-*``, docs/horovod.md).
Elsewhere these tests skip, unless ``TEST_HOROVOD_REQUIRED=1`` says Horovod must be there.
"""

import json
import os

import numpy as np
import pytest

import tools.horovod
from tests.support.processes import subprocess_env
from tests.support.repo import ROOT
from tests.support.stack import plain_import_works

try:
    import horovod.mxnet  # noqa: F401
except ImportError as exc:
    if os.environ.get("TEST_HOROVOD_REQUIRED") == "1":
        raise
    pytest.skip(
        "horovod.mxnet is not importable here (%s): Horovod is built against MXNet in the "
        "tox envs hvd-* only" % exc,
        allow_module_level=True,
    )

WORKER = os.path.join(ROOT, "tests", "support", "horovod_worker.py")
JOB_TIMEOUT = 240  # seconds, for one horovodrun job (both workers, every scenario)
# The patches on the update path: off in the plain job where mxcompat must be loaded at all.
UPDATE_PATH = ("freeze", "onednn_fc_bias", "trainer_kvstore_init", "frozen_statistics")
PLAIN = ("gluon", "gluon-null", "module", "module-fixed")
MXCOMPAT = (
    "gluon",
    "gluon-frozen",
    "module",
    "module-frozen-before-bind",
    "module-frozen-after-bind",
    "to-gluon",
    "to-module",
)
# What the worker freezes, and the statistics of that BatchNorm (Gluon's and Module's names).
FROZEN = {"conv0_weight", "bn0_gamma", "bn0_beta"}
STATISTICS = {"bn0_running_mean", "bn0_running_var", "bn0_moving_mean", "bn0_moving_var"}


def horovodrun(mode, outdir, scenarios):
    """Run one job of two workers to the end (killed, with every process it started, after
    ``JOB_TIMEOUT``); its output is returned, a failure fails the test."""
    program = [WORKER, mode, outdir] + list(scenarios)
    if mode == "mxcompat":
        cmd = tools.horovod.command(program, mxcompat_run=[])
    elif not plain_import_works():
        off = [a for name in UPDATE_PATH + ("fixed_param_names",) for a in ("--no-patch", name)]
        cmd = tools.horovod.command(program, mxcompat_run=off)
    else:
        cmd = tools.horovod.command(program)
    returncode, out = tools.horovod.run(cmd, subprocess_env(), JOB_TIMEOUT)
    if returncode is None:
        pytest.fail("the %s horovodrun job took over %d s:\n%s" % (mode, JOB_TIMEOUT, out[-4000:]))
    if returncode != 0:
        pytest.fail("the %s horovodrun job failed (%d):\n%s" % (mode, returncode, out[-4000:]))
    return out


class Job:
    def __init__(self, mode, outdir, scenarios):
        self.output = horovodrun(mode, outdir, scenarios)
        self.info = []
        for rank in (0, 1):
            with open(os.path.join(outdir, "%s-%d.json" % (mode, rank))) as f:
                self.info.append(json.load(f))
        self.runs = {}
        for s in scenarios:
            self.runs[s] = [np.load(os.path.join(outdir, "%s-%d.npz" % (s, r))) for r in (0, 1)]

    def values(self, scenario, when, rank=0):
        run = self.runs[scenario][rank]
        prefix = when + ":"
        return {k[len(prefix) :]: run[k] for k in run.files if k.startswith(prefix)}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    found = {}
    for mode, scenarios in (("plain", PLAIN), ("mxcompat", MXCOMPAT)):
        found[mode] = Job(mode, str(tmp_path_factory.mktemp(mode)), scenarios)
    return found


def assert_equal(got, want, names, what):
    for name in sorted(names):
        assert np.array_equal(got[name], want[name]), "%s: %s differs" % (what, name)


def trained(values):
    return {n for n in values if n not in STATISTICS}


def test_jobs_ran_two_workers_with_the_patches_they_mean(jobs):
    for job in jobs.values():
        assert [i["size"] for i in job.info] == [2, 2]
    applied = set(jobs["mxcompat"].info[0]["patched"])
    assert {"freeze", "frozen_statistics", "convert", "trainer_kvstore_init"} <= applied
    plain = jobs["plain"].info[0]["patched"]
    if plain_import_works():
        assert plain is None, "the plain job imported mxcompat"
    else:
        assert plain is not None and not set(plain) & set(UPDATE_PATH)


@pytest.mark.parametrize("scenario", ["gluon", "module"])
def test_nothing_frozen_is_plain_horovod_bit_for_bit(jobs, scenario):
    plain, ours = jobs["plain"], jobs["mxcompat"]
    for rank in (0, 1):
        for when in ("start", "end"):
            want = plain.values(scenario, when, rank)
            got = ours.values(scenario, when, rank)
            assert sorted(got) == sorted(want)
            assert_equal(got, want, want, "%s rank %d %s" % (scenario, rank, when))
    start, end = plain.values(scenario, "start"), plain.values(scenario, "end")
    # The step really trained: every parameter and statistic moved.
    assert all(not np.array_equal(start[n], end[n]) for n in start), scenario
    # Both workers hold the same trained parameters; the statistics are each worker's own.
    assert_equal(
        ours.values(scenario, "end", 1), ours.values(scenario, "end"), trained(end), "ranks"
    )
    for n in STATISTICS & set(end):
        assert not np.array_equal(ours.values(scenario, "end", 1)[n], end[n]), n


@pytest.mark.parametrize(
    "scenario, reference",
    [
        ("gluon-frozen", "gluon-null"),
        ("module-frozen-before-bind", "module-fixed"),
        ("module-frozen-after-bind", "module-fixed"),
    ],
)
def test_freeze_holds_under_horovod(jobs, scenario, reference):
    ours, plain = jobs["mxcompat"], jobs["plain"]
    for rank in (0, 1):
        start, end = ours.values(scenario, "start", rank), ours.values(scenario, "end", rank)
        held = FROZEN | (STATISTICS & set(start))
        assert len(held) == 5, sorted(start)
        # Frozen weights and the frozen BatchNorm's statistics: bit for bit where they started.
        assert_equal(end, start, held, "%s rank %d held" % (scenario, rank))
        # Everything else trained, exactly as with MXNet's own way of fixing those weights
        # (whose BatchNorm statistics, unlike mxcompat's, move).
        others = set(start) - held
        assert others and all(not np.array_equal(start[n], end[n]) for n in others)
        want = plain.values(reference, "end", rank)
        assert_equal(end, want, others, "%s rank %d vs %s" % (scenario, rank, reference))
        assert all(not np.array_equal(want[n], start[n]) for n in STATISTICS & set(want))
    # The same on both workers (start: the broadcast; end: the frozen and the trained ones).
    for when in ("start", "end"):
        r0, r1 = ours.values(scenario, when, 0), ours.values(scenario, when, 1)
        assert_equal(r1, r0, set(r0) if when == "start" else trained(r0) | held, when)


@pytest.mark.parametrize("scenario, original", [("to-gluon", "module"), ("to-module", "gluon")])
def test_converted_model_broadcast_and_trained_under_horovod(jobs, scenario, original):
    ours, plain = jobs["mxcompat"], jobs["plain"]
    # Each worker initialised its own way (different seeds): after broadcast_parameters both
    # hold rank 0's, which are the original's.
    r0, r1 = ours.values(scenario, "start", 0), ours.values(scenario, "start", 1)
    assert sorted(r0) == sorted(plain.values(original, "start"))
    assert_equal(r1, r0, r0, "%s start, rank 1 vs 0" % scenario)
    assert_equal(r0, plain.values(original, "start"), r0, "%s start vs %s" % (scenario, original))
    # Then it trains as the original does, weights and BatchNorm statistics, on each worker.
    for rank in (0, 1):
        end = ours.values(scenario, "end", rank)
        want = plain.values(original, "end", rank)
        assert_equal(end, want, end, "%s rank %d vs %s" % (scenario, rank, original))
    assert_equal(ours.values(scenario, "end", 1), end, trained(end), "%s ranks" % scenario)
