"""A command run in its own session, bounded in time: on timeout the command and every process
it started (its whole process group: a launcher such as horovodrun or pytest leaves its
workers running when only it is killed) are killed."""

import os
import signal
import subprocess


def start(cmd, **popen_args):
    """``cmd`` started in a session (and process group) of its own; the ``Popen``."""
    return subprocess.Popen(cmd, start_new_session=True, **popen_args)


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # the group has ended meanwhile
        pass


def kill(proc):
    """Kill ``proc``'s whole process group if ``proc`` still runs, and wait for ``proc``."""
    if proc.poll() is None:
        _kill_group(proc)
    proc.communicate()


def run(cmd, timeout, **popen_args):
    """Run ``cmd`` (``start``) to its end, for at most ``timeout`` seconds:
    ``(exit status, output)``, the exit status ``None`` when it was killed on timeout, the
    output what its stdout gave (``None`` unless ``stdout=subprocess.PIPE``)."""
    proc = start(cmd, **popen_args)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Not yet waited for, so its pid (the group's id) cannot have been reused.
        _kill_group(proc)
        output, _ = proc.communicate()
        return None, output
    return proc.returncode, output
