"""Code run elsewhere than in the test's own thread: a fresh interpreter of this env (a script
written to a file, ``python -c``, ``python -m mxcompat``), or many threads at once."""

import os
import subprocess
import sys
import textwrap
import threading
import time

from mxcompat._core import settings

from . import repo


def subprocess_env(env=None):
    """This process's environment less mxcompat's own variables (each test sets what it
    means to test), one OpenMP thread, tracebacks without colour (Python 3.13 colours them
    under FORCE_COLOR), plus ``env``."""
    full_env = settings.environ_without_ours()
    full_env.setdefault("OMP_NUM_THREADS", "1")
    full_env["PYTHON_COLORS"] = "0"
    full_env.update(env or {})
    return full_env


def mxcompat_cmd(*args, **kwargs):
    """``python -m mxcompat ARGS`` in this env, as a user runs it (CompletedProcess)."""
    return subprocess.run(
        [sys.executable, "-m", "mxcompat"] + list(args),
        capture_output=True,
        text=True,
        env=subprocess_env(kwargs.pop("env", None)),
        timeout=kwargs.pop("timeout", 180),
        **kwargs,
    )


def write(path, text):
    """Write ``text`` (dedented) to ``path``, a script or a file a script reads; its path."""
    with open(str(path), "w") as f:
        f.write(textwrap.dedent(text))
    return str(path)


def run_python(code, env=None, timeout=180, cwd=None):
    """Run ``code`` in a fresh interpreter (this env's), returning the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=timeout,
        cwd=cwd,
    )


def run_threads(target, count, timeout):
    """Run ``target`` in ``count`` threads at once, the interpreter switching between them
    every microsecond (so their critical sections overlap on every run); the threads still
    alive ``timeout`` seconds after the start (hung) are returned.  Daemon threads: a hung one
    does not keep the interpreter from exiting after the test fails."""
    threads = [threading.Thread(target=target, daemon=True) for _ in range(count)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
    finally:
        sys.setswitchinterval(interval)
    return [t for t in threads if t.is_alive()]


def run_plain(python, module, args, env=None, what="the reference computation"):
    """``python -m module *args`` from the checkout as plain MXNet runs there (mxcompat kept
    out; plain MXNet 1.3-1.6 cannot load on glibc >= 2.41, so it gets glibc's switch); a
    RuntimeError with its stderr when it fails."""
    from mxcompat.patches import exec_stack

    env = exec_stack.without_mxcompat(dict(os.environ if env is None else env))
    proc = subprocess.run(
        [python, "-m", module] + list(args),
        capture_output=True,
        text=True,
        env=env,
        cwd=repo.ROOT,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            "%s failed in %s (%d):\n%s" % (what, python, proc.returncode, proc.stderr[-4000:])
        )
    return proc
