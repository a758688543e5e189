"""A Horovod job as the tests (tests/test_horovod.py) and the benchmarks (horovod_step.py) run
it: ``horovodrun -np 2 --gloo`` on 127.0.0.1, two workers of this interpreter, bounded in
time (``processes.run``)."""

import os
import subprocess
import sys

from . import processes

WORKERS = 2
# Seconds horovodrun waits for the workers to start (two cold MXNet imports on a loaded
# machine take longer than its default 30 s).
START_TIMEOUT = 120
_BIN = os.path.dirname(sys.executable)


def command(program, mxcompat_run=None):
    """The command line that runs ``program`` (a script and its arguments) as the job's
    workers: launched by this interpreter's horovodrun, or with ``mxcompat_run`` (a list of
    `mxcompat run` options, maybe empty) through ``python -m mxcompat run``, whose bootstrap
    horovodrun and every worker then get."""
    launch = ["horovodrun", "-np", str(WORKERS), "-H", "localhost:%d" % WORKERS, "--gloo"]
    launch += ["--start-timeout", str(START_TIMEOUT), sys.executable] + list(program)
    if mxcompat_run is None:
        return [os.path.join(_BIN, "horovodrun")] + launch[1:]
    return [sys.executable, "-m", "mxcompat", "run"] + list(mxcompat_run) + launch


def run(cmd, env, timeout):
    """Run the job ``cmd`` (``command``) in ``env`` with this interpreter's folder first on
    PATH (where ``mxcompat run`` looks for horovodrun): ``(exit status, output)``, the exit
    status ``None`` when the job was killed on timeout."""
    env = dict(env, PATH=_BIN + os.pathsep + env.get("PATH", ""))
    return processes.run(
        cmd, timeout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
