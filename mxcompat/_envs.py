"""The one environment builder of mxcompat and its tools: finding uv, finding the interpreters
(pyenv's version folders put on PATH for that), building a virtualenv from a list of install
steps under a lock, and caching it.

``mxcompat matrix`` (one env per combination of ``_core/versions``), the test suite's
reference environments (``tests/support/reference_env.py``), its packaging tests and the
MXNet-suite runner (``python -m tools.mxnet_suite``) all build their envs here, so an
interpreter is found, an env locked, reused or rebuilt the same way everywhere.  Without uv
(the test suite's reference envs in a bare tox env) the stdlib's ``venv`` and pip do the same
steps, slower.  Private, and outside ``cli/``: not a command, but the package's own, since
``mxcompat matrix`` needs it in every wheel.
"""

import json
import os
import re
import shutil
import subprocess
import time

# A marker written last: an env without it was cut short (a killed run) and is rebuilt.
MARKER = ".mxcompat-complete"
# Install steps must not hang a CI job on a dead mirror.
INSTALL_TIMEOUT = 1800


class EnvError(Exception):
    """An environment cannot be had (the message says why)."""


class StepFailed(EnvError):
    """One install step failed (the log has its output)."""


def find_uv(required=True):
    """uv's binary: the ``uv`` package's (``pip install 'mxcompat[matrix]'``), else ``uv`` on
    PATH; ``None`` when there is none and not ``required``."""
    try:
        import uv

        return uv.find_uv_bin()
    except Exception:  # not installed, or no binary in it
        found = shutil.which("uv")
        if found:
            return found
    if required:
        raise EnvError("uv is needed: pip install 'mxcompat[matrix]' (or uv)")
    return None


def pyenv_root():
    """pyenv's folder (``PYENV_ROOT``, else ``~/.pyenv``), whether or not it exists."""
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def search_path():
    """PATH for finding interpreters: pyenv's version folders first and its shims out (uv
    cannot use the shims: they fail for a version that is not pyenv's global one).  The one
    place that does this: ``.ci/run`` and ``.ci/newroot`` ask it (``python -m mxcompat._envs``)."""
    root = pyenv_root()
    shims = os.path.join(root, "shims")
    dirs = []
    versions = os.path.join(root, "versions")
    if os.path.isdir(versions):
        for name in sorted(os.listdir(versions), reverse=True):
            d = os.path.join(versions, name, "bin")
            if os.path.isdir(d):
                dirs.append(d)
    dirs += [
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and os.path.normpath(d) != os.path.normpath(shims)
    ]
    return os.pathsep.join(dirs)


def find_python(uv, version, download=False):
    """``(interpreter path, None)`` or ``(None, why not)`` for Python ``version`` ("3.7").

    With uv, ``uv python find`` over ``search_path()``; without, ``python<version>`` in the
    same folders."""
    if uv is None:
        for d in search_path().split(os.pathsep):
            candidate = os.path.join(d, "python" + version)
            if os.path.exists(candidate) and python_version(candidate, version):
                return candidate, None
        return None, "no python%s on PATH or under pyenv" % version
    cmd = [uv, "python", "find", version]
    if not download:
        cmd.append("--no-python-downloads")
    env = dict(os.environ, PATH=search_path())
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "uv python find %s took more than 600 s" % version
    path = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode == 0 and path:
        return path, None
    detail = proc.stderr.strip().splitlines()
    return None, "no Python %s interpreter found (uv: %s)" % (
        version,
        detail[0] if detail else "exit %d" % proc.returncode,
    )


def python_version(python, prefix=None):
    """The full version ``python`` runs ("3.7.16"), or ``None`` when it does not run (or does
    not start with ``prefix``)."""
    try:
        proc = subprocess.run(
            [python, "-c", "import platform; print(platform.python_version())"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = proc.stdout.strip()
    if proc.returncode != 0 or (prefix and not (version + ".").startswith(prefix + ".")):
        return None
    return version


def env_python(path):
    return os.path.join(path, "bin", "python")


class lock_file:
    """An exclusive lock on a file (two runs sharing a cache build an env once)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.f = open(self.path, "w")
        try:
            import fcntl

            fcntl.flock(self.f, fcntl.LOCK_EX)
        except ImportError:  # not POSIX: no lock
            pass
        return self

    def __exit__(self, *exc):
        self.f.close()


def step(cmd, logf, extra_env=None, timeout=INSTALL_TIMEOUT, cwd=None):
    """Run one command into the log ``logf``; ``StepFailed`` when it fails."""
    logf.write("$ %s\n" % " ".join(cmd))
    logf.flush()
    full_env = dict(os.environ)
    full_env.pop("VIRTUAL_ENV", None)
    full_env.update(extra_env or {})
    begin = time.time()
    try:
        proc = subprocess.run(
            cmd, stdout=logf, stderr=subprocess.STDOUT, env=full_env, timeout=timeout, cwd=cwd
        )
    except subprocess.TimeoutExpired:
        raise StepFailed("%s took more than %d s" % (cmd[0], timeout)) from None
    logf.write("(%.1f s)\n" % (time.time() - begin))
    logf.flush()
    if proc.returncode != 0:
        raise StepFailed("`%s` failed (exit %d)" % (" ".join(cmd[:6]), proc.returncode))


def pip_install(uv, path, args, logf, extra_env=None, cwd=None):
    """``pip install ARGS`` into the env at ``path`` (uv's pip, else the env's own)."""
    python = env_python(path)
    if uv is None:
        cmd = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    else:
        cmd = [uv, "pip", "install", "--python", python]
    step(cmd + list(args), logf, extra_env, cwd=cwd)


def freeze(uv, path):
    """``{distribution (lower case): version}`` installed in the env at ``path``."""
    python = env_python(path)
    cmd = [uv, "pip", "freeze", "--python", python] if uv else [python, "-m", "pip", "freeze"]
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=300
    )
    pins = {}
    for line in proc.stdout.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def lacks_distutils(path):
    """Whether the env's Python cannot ``import distutils.version`` (3.12+, or a distribution's
    Python without its distutils package, like Debian's python3-distutils)."""
    return bool(
        subprocess.run(
            [env_python(path), "-c", "import distutils.version"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        ).returncode
    )


def build(uv, base, path, steps, logf, recreate=False, after=None, cwd=None):
    """The env at ``path``: made with interpreter ``base`` and ``steps`` (pip argument lists
    installed in turn), then ``after(path)`` if given, unless a complete one is there.

    Locked, so two runs that need the same env build it once; the marker (the steps, as
    JSON) is written last.  Returns whether the env was reused."""
    marker = os.path.join(path, MARKER)
    with lock_file(path + ".lock"):
        if os.path.exists(marker) and not recreate:
            logf.write("reusing %s\n" % path)
            return True
        shutil.rmtree(path, ignore_errors=True)
        if uv is None:
            step([base, "-m", "venv", path], logf, cwd=cwd)
        else:
            step([uv, "venv", "-q", "--python", base, path], logf, cwd=cwd)
        for args in steps:
            pip_install(uv, path, args, logf, cwd=cwd)
        if after is not None:
            after(path)
        with open(marker, "w") as f:
            json.dump([list(s) for s in steps], f)
    return False


def cached(root, name, python_version, steps, log=None, after=None, download=False):
    """The Python of the env ``name`` under ``root`` on Python ``python_version`` with
    ``steps``, built if missing (see ``build``).  ``EnvError`` when it cannot be had."""
    uv = find_uv(required=False)
    base, why = find_python(uv, python_version, download)
    if base is None:
        raise EnvError(why)
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, name)
    log = log or path + ".log"
    with open(log, "a") as logf:
        try:
            build(uv, base, path, steps, logf, after=after)
        except StepFailed as exc:
            raise EnvError("building %s: %s (log: %s)" % (name, exc, log)) from None
    return env_python(path)


def safe_name(text):
    """``text`` as a folder name."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text)


if __name__ == "__main__":
    # For the CI scripts, which run before any env exists: `path` prints search_path(),
    # `pyenv-root` pyenv's folder when there is one.
    import sys

    if sys.argv[1:] == ["path"]:
        print(search_path())
    elif sys.argv[1:] == ["pyenv-root"] and os.path.isdir(pyenv_root()):
        print(pyenv_root())
    elif sys.argv[1:] != ["pyenv-root"]:
        sys.exit("usage: python -m mxcompat._envs path|pyenv-root")
