"""A real ps-lite cluster on 127.0.0.1 for the ``dist_sync`` tests.

A scheduler, one server and the workers are local processes, each told its role by
``DMLC_ROLE``; all run the same script (a scheduler or a server serves inside
``import mxnet``, then exits).  A worker script gets ``argv[1:]`` = the caller's arguments,
then the output folder, and writes its results there.  The whole cluster is bounded in time:
on timeout or on the first failed process every process of it is killed.
"""

import os
import socket
import subprocess
import sys
import time

import pytest

from mxcompat._core import settings
from tools import processes

CLUSTER_TIMEOUT = 150  # seconds, for the whole cluster


def _free_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def run_cluster(tmpdir, script, args=(), extra_env=None, num_workers=2, timeout=CLUSTER_TIMEOUT):
    """Run ``script`` on a scheduler, one server and ``num_workers`` workers; returns the
    output folder (a str) the workers wrote into.

    The scheduler's port is free when picked but another process (a parallel tox env) may take
    it before ps-lite binds it, which ps-lite reports as "bind failed": the cluster is then
    started again on another port (3 tries)."""
    for attempt in range(3):
        outdir = str(tmpdir.mkdir("try%d" % attempt))
        failed = _start_cluster(outdir, script, list(args), extra_env, num_workers, timeout)
        if not failed:
            return outdir
        logs = cluster_logs(outdir)
        if "bind failed" not in logs:
            break
    pytest.fail("cluster processes failed %s:\n%s" % (failed, logs))


def _start_cluster(outdir, script, args, extra_env, num_workers, timeout):
    """Run the processes to the end; the failed ``(role, exit code)`` pairs."""
    base = {
        k: v
        for k, v in settings.environ_without_ours().items()
        if not k.startswith(("DMLC_", "PS_"))
    }
    base.update(
        {
            "OMP_NUM_THREADS": "1",
            "MXNET_SUBGRAPH_VERBOSE": "0",
            "DMLC_PS_ROOT_URI": "127.0.0.1",
            "DMLC_PS_ROOT_PORT": str(_free_port()),
            "DMLC_NUM_SERVER": "1",
            "DMLC_NUM_WORKER": str(num_workers),
            "DMLC_NODE_HOST": "127.0.0.1",  # every node on the loopback interface
        }
    )
    base.update(extra_env or {})
    procs = []
    try:
        roles = ["scheduler", "server"] + ["worker"] * num_workers
        for i, role in enumerate(roles):
            log = open(os.path.join(outdir, "%d-%s.log" % (i, role)), "w")
            env = dict(base, DMLC_ROLE=role)
            # Own session: on timeout the process and anything it spawned are killed.
            procs.append(
                (
                    role,
                    log,
                    processes.start(
                        [sys.executable, "-c", script] + args + [outdir],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    ),
                )
            )
        deadline = time.time() + timeout
        # Poll: once one process has failed the others would wait for it until the deadline.
        while any(p.poll() is None for _, _, p in procs):
            if any(p.returncode not in (None, 0) for _, _, p in procs):
                break
            if time.time() > deadline:
                pytest.fail(
                    "the dist_sync cluster did not finish within %d s:\n%s"
                    % (timeout, cluster_logs(outdir))
                )
            time.sleep(0.1)
    finally:
        for _role, log, proc in procs:
            processes.kill(proc)
            log.close()
    return [(role, proc.returncode) for role, _, proc in procs if proc.returncode != 0]


def cluster_logs(outdir):
    text = []
    for name in sorted(os.listdir(outdir)):
        if name.endswith(".log"):
            with open(os.path.join(outdir, name)) as f:
                text.append("---- %s\n%s" % (name, f.read()[-3000:]))
    return "\n".join(text)
