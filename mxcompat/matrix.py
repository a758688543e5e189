"""``mxcompat matrix [options] -- COMMAND [ARGS...]``: run the user's own tests (or any command)
in one fresh environment per supported MXNet x Python x NumPy combination.

The combinations and their install lines are mxcompat's (``_versions.COMBINATIONS``, the ones
its own tox matrix runs).  uv does the environment work: it finds the interpreters (pyenv's
too) and creates and fills the environments, which are cached between runs under a key made
of what was installed into them (the interpreter and the install lines); mxcompat and the
user's project are reinstalled into them on every run.  Exit status: 0 when every env that
ran passed, 1 when one failed (or could not be built, or with ``--strict`` lacked its
interpreter), 2 for a usage error.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from xml.sax.saxutils import escape, quoteattr

from packaging.version import InvalidVersion, Version

from . import __version__, _compat, _versions

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
# Bump when what goes into a cached environment changes (e.g. the setuptools rule below).
CACHE_FORMAT = 1
CACHE_ENV = "MXCOMPAT_MATRIX_CACHE"
MARKER = ".mxcompat-complete"
# Install steps must not hang a CI job on a dead mirror.
INSTALL_TIMEOUT = 1800

USAGE = "mxcompat matrix [options] -- COMMAND [ARGS...]\n       mxcompat matrix --list [options]"
EPILOG = """The combinations (mxcompat matrix --list shows which this machine can run):
%s

Each env gets the MXNet/NumPy install lines shown by --list, then mxcompat and your project
(`pip install .` from the current directory), then runs COMMAND there, with the env's bin
directory first on PATH.  Under pytest, mxcompat's plugin applies the patches; for a script,
use `mxcompat run script.py` as the command.  Example:

  mxcompat matrix --with pytest --mxnet 1.5.1,1.9.1 -- pytest -q tests/
""" % "\n".join("  %-28s MXNet %-12s Python %-5s %s" % (c.name, c.mxnet, c.python, c.numpy)
                for c in _versions.COMBINATIONS)


class UsageError(Exception):
    pass


def _parser():
    parser = argparse.ArgumentParser(
        prog="mxcompat matrix", usage=USAGE, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run COMMAND in a fresh environment per supported MXNet x Python x NumPy "
                    "combination, and say where it passes.")
    sel = parser.add_argument_group("which combinations (all by default)")
    sel.add_argument("--mxnet", metavar="VERSIONS",
                     help="comma-separated MXNet releases, e.g. 1.5.1,1.9.1 (1.5 means every "
                          "1.5.x)")
    sel.add_argument("--python", metavar="VERSIONS", help="comma-separated Pythons, e.g. 3.13")
    sel.add_argument("--numpy", choices=("latest", "pinned"),
                     help="latest: only the envs on the newest NumPy there is; pinned: the rest")
    sel.add_argument("--modern", action="store_true",
                     help="only today's stack: Python 3.12+ (NumPy 1.26 and 2.x)")
    sel.add_argument("--env", action="append", default=[], metavar="NAME",
                     help="a combination by name (see --list); repeatable")
    sel.add_argument("--list", action="store_true",
                     help="print the selected combinations, which of them this machine can "
                          "run and why not the others, then exit")
    sel.add_argument("--strict", action="store_true",
                     help="a combination whose Python is missing is an error, not a skip")
    inst = parser.add_argument_group("what goes into each env")
    inst.add_argument("--with", dest="with_", action="append", default=[], metavar="PKG",
                      help="also install this requirement (e.g. pytest); repeatable")
    inst.add_argument("-r", "--requirements", action="append", default=[], metavar="FILE",
                      help="also install the requirements in FILE; repeatable")
    inst.add_argument("--no-install-project", action="store_true",
                      help="do not install the project in the current directory")
    inst.add_argument("--mxcompat", metavar="SPEC",
                      help="what to install as mxcompat (a directory, a wheel or a "
                           "requirement; default: this mxcompat's own source, else "
                           "mxcompat==%s)" % __version__)
    inst.add_argument("--recreate", action="store_true",
                      help="rebuild the cached envs instead of reusing them")
    inst.add_argument("--cache-dir", metavar="DIR",
                      help="where envs are cached (default: $%s, else "
                           "~/.cache/mxcompat/matrix)" % CACHE_ENV)
    inst.add_argument("--download-pythons", action="store_true",
                      help="let uv download an interpreter this machine lacks")
    run = parser.add_argument_group("running")
    run.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                     help="envs to run at once (default: half the cores, at least 1)")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                     help="stop COMMAND in an env after this long (then it failed)")
    run.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    run.add_argument("--junit", metavar="DIR",
                     help="write one JUnit XML file per env into DIR (for CI)")
    return parser


# --- selection -------------------------------------------------------------------------------

def _csv(text):
    return [v.strip() for v in (text or "").split(",") if v.strip()]


def _release_matches(wanted, version):
    # "1.5.1" and "1.5.1.post0" name the same release; "1.5" every 1.5.x.
    try:
        prefix = Version(wanted).release
    except InvalidVersion:
        return False
    return Version(version).release[:len(prefix)] == prefix


def select(args):
    combos = list(_versions.COMBINATIONS)
    known = [c.name for c in combos]
    for name in args.env:
        if name not in known:
            raise UsageError("--env %s: no such combination (see mxcompat matrix --list)" % name)
    if args.env:
        combos = [c for c in combos if c.name in args.env]
    if args.mxnet:
        wanted = _csv(args.mxnet)
        bad = [w for w in wanted if not any(_release_matches(w, c.mxnet)
                                            for c in _versions.COMBINATIONS)]
        if bad:
            raise UsageError("--mxnet: no supported combination has MXNet %s (there are: %s)"
                             % (", ".join(bad), ", ".join(sorted(set(
                                 c.mxnet for c in _versions.COMBINATIONS)))))
        combos = [c for c in combos if any(_release_matches(w, c.mxnet) for w in wanted)]
    if args.python:
        combos = [c for c in combos if c.python in _csv(args.python)]
    if args.numpy:
        combos = [c for c in combos if c.latest == (args.numpy == "latest")]
    if args.modern:
        combos = [c for c in combos if c.modern]
    if not combos:
        raise UsageError("no supported combination matches the selection (see mxcompat "
                         "matrix --list)")
    return combos


# --- uv and interpreters ---------------------------------------------------------------------

def find_uv():
    """uv's binary: the ``uv`` package's (``pip install 'mxcompat[matrix]'``), else ``uv`` on
    PATH."""
    try:
        import uv
        return uv.find_uv_bin()
    except Exception:  # pylint: disable=broad-except  (not installed, or no binary in it)
        found = shutil.which("uv")
        if found:
            return found
    raise UsageError("mxcompat matrix needs uv: pip install 'mxcompat[matrix]' (or uv)")


def _search_path():
    """PATH for finding interpreters: pyenv's version folders first and its shims out (uv
    cannot use the shims: they fail for a version that is not pyenv's global one)."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    shims = os.path.join(root, "shims")
    dirs = []
    versions = os.path.join(root, "versions")
    if os.path.isdir(versions):
        for name in sorted(os.listdir(versions), reverse=True):
            d = os.path.join(versions, name, "bin")
            if os.path.isdir(d):
                dirs.append(d)
    dirs += [d for d in os.environ.get("PATH", "").split(os.pathsep)
             if d and os.path.normpath(d) != os.path.normpath(shims)]
    return os.pathsep.join(dirs)


def find_python(uv, version, download=False):
    """``(interpreter path, None)`` or ``(None, why not)``."""
    cmd = [uv, "python", "find", version]
    if not download:
        cmd.append("--no-python-downloads")
    env = dict(os.environ, PATH=_search_path())
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "uv python find %s took more than 600 s" % version
    path = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode == 0 and path:
        return path, None
    detail = proc.stderr.strip().splitlines()
    return None, "no Python %s interpreter found (uv: %s)" % (
        version, detail[0] if detail else "exit %d" % proc.returncode)


def _python_version(python):
    proc = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120)
    return proc.stdout.strip() if proc.returncode == 0 else None


# --- what gets installed ---------------------------------------------------------------------

def default_mxcompat_spec():
    """This mxcompat, as pip can install it elsewhere: its source checkout, else the local
    directory or wheel it was installed from (PEP 610's direct_url.json), else the release."""
    here = os.path.dirname(os.path.abspath(__file__))
    checkout = os.path.dirname(here)
    pyproject = os.path.join(checkout, "pyproject.toml")
    if os.path.exists(pyproject):
        with open(pyproject) as f:
            if re.search(r'^name\s*=\s*"mxcompat"', f.read(), re.M):
                return checkout
    try:
        try:
            from importlib import metadata
        except ImportError:   # Python 3.7
            import importlib_metadata as metadata
        text = metadata.distribution("mxcompat").read_text("direct_url.json")
        url = json.loads(text)["url"] if text else ""
    except Exception:  # pylint: disable=broad-except
        url = ""
    if url.startswith("file://"):
        from urllib.parse import unquote, urlparse
        path = unquote(urlparse(url).path)
        if os.path.exists(path):
            return path
    return "mxcompat==" + __version__


class Packages(object):
    """mxcompat and the user's project, built once per run into wheels every env installs
    (as tox does): a pure-Python wheel fits every Python.  ``specs`` are what is installed,
    ``names`` the distributions to reinstall in a reused env."""

    def __init__(self, uv, mxcompat_spec, project, workdir, log):
        self.specs, self.names = [], []
        self.log = log
        for source in [mxcompat_spec] + ([project] if project else []):
            self._add(uv, source, workdir)

    def _add(self, uv, source, workdir):
        if not os.path.isdir(source):
            self.specs.append(source)
            if source.endswith(".whl"):
                self.names.append(os.path.basename(source).split("-")[0])
            return
        out = tempfile.mkdtemp(dir=workdir)
        with open(self.log, "a") as logf:
            logf.write("$ uv build --wheel %s\n" % source)
            logf.flush()
            proc = subprocess.run([uv, "build", "--wheel", "--out-dir", out, source],
                                  stdout=logf, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT)
        wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
        if proc.returncode != 0 or len(wheels) != 1:
            raise UsageError("cannot build a wheel of %s (see %s)" % (source, self.log))
        name, _, rest = wheels[0][:-len(".whl")].partition("-")
        self.names.append(name)
        if rest.endswith("-none-any"):
            self.specs.append(os.path.join(out, wheels[0]))
        else:
            # Compiled: each env's Python builds its own.
            self.specs.append(source)


def _env_key(combination, python, python_version):
    text = json.dumps([CACHE_FORMAT, os.path.realpath(python), python_version,
                       combination.install_steps()])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class Env(object):
    """One combination's environment and the result of running COMMAND in it."""

    def __init__(self, combination):
        self.combination = combination
        self.name = combination.name
        self.python = None          # the base interpreter
        self.python_version = None
        self.numpy_version = None
        self.path = None
        self.log = None
        self.state = "waiting"
        self.result = None
        self.reason = None
        self.returncode = None
        self.reused = False
        self.started = None
        self.install_s = 0.0
        self.run_s = 0.0
        self.first_failure = None

    @property
    def elapsed(self):
        if self.started is None:
            return 0.0
        if self.result is not None:
            return self.install_s + self.run_s
        return time.time() - self.started

    def as_json(self):
        c = self.combination
        return {"env": self.name, "mxnet": c.mxnet, "python": c.python,
                "python_version": self.python_version, "numpy": c.numpy,
                "numpy_version": self.numpy_version, "install": c.install_lines(),
                "result": self.result, "reason": self.reason, "returncode": self.returncode,
                "first_failure": self.first_failure, "reused": self.reused,
                "install_s": round(self.install_s, 1), "run_s": round(self.run_s, 1),
                "time_s": round(self.install_s + self.run_s, 1), "path": self.path,
                "log": self.log}


class _Failed(Exception):
    """An install step failed (the log has its output)."""


class Runner(object):
    def __init__(self, uv, args, command, project, packages, cache, display):
        self.uv = uv
        self.args = args
        self.command = command
        self.project = project
        self.packages = packages
        self.cache = cache
        self.display = display

    # -- helpers
    def _step(self, env, logf, cmd, extra_env=None, timeout=INSTALL_TIMEOUT):
        logf.write("$ %s\n" % " ".join(cmd))
        logf.flush()
        full_env = dict(os.environ)
        full_env.pop("VIRTUAL_ENV", None)
        full_env.update(extra_env or {})
        begin = time.time()
        try:
            proc = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT, env=full_env,
                                  timeout=timeout, cwd=self.project)
        except subprocess.TimeoutExpired:
            raise _Failed("%s took more than %d s" % (cmd[0], timeout))
        logf.write("(%.1f s)\n" % (time.time() - begin))
        if proc.returncode != 0:
            raise _Failed("`%s` failed (exit %d)" % (" ".join(cmd[:4]), proc.returncode))

    def _pip(self, env, logf, args, extra_env=None):
        self._step(env, logf, [self.uv, "pip", "install", "--python", self._env_python(env)]
                   + list(args), extra_env)

    def _env_python(self, env):
        return os.path.join(env.path, "bin", "python")

    def _freeze(self, env):
        proc = subprocess.run([self.uv, "pip", "freeze", "--python", self._env_python(env)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=300)
        pins = {}
        for line in proc.stdout.splitlines():
            name, sep, version = line.partition("==")
            if sep:
                pins[name.strip().lower()] = version.strip()
        return pins

    # -- one env
    def run(self, env):
        env.started = time.time()
        os.makedirs(os.path.join(self.cache, "logs"), exist_ok=True)
        env.log = os.path.join(self.cache, "logs", env.name + ".log")
        with open(env.log, "w") as logf:
            try:
                self._build(env, logf)
                self._install_project(env, logf)
            except (_Failed, OSError, subprocess.SubprocessError) as exc:
                # One env that cannot be built (a wheel missing for its Python, a dead mirror)
                # is that env's error; the others still run.
                env.install_s = time.time() - env.started
                env.result, env.reason = ERROR, str(exc)
                env.first_failure = "install: %s" % exc
                self.display.update(env)
                return env
            env.install_s = time.time() - env.started
            self._run_command(env, logf)
        self.display.update(env)
        return env

    def _build(self, env, logf):
        c = env.combination
        env.path = os.path.join(self.cache, "%s-%s" % (c.name, _env_key(
            c, env.python, env.python_version)))
        marker = os.path.join(env.path, MARKER)
        env.state = "installing"
        self.display.update(env)
        with _lock_file(env.path + ".lock"):
            if os.path.exists(marker) and not self.args.recreate:
                env.reused = True
                logf.write("reusing %s\n" % env.path)
            else:
                shutil.rmtree(env.path, ignore_errors=True)
                self._step(env, logf, [self.uv, "venv", "--python", env.python, env.path])
                for step in c.install_steps():
                    self._pip(env, logf, step)
                if (_compat.since(_compat.NUMPY_SUBPACKAGE, _compat.parse_version(c.mxnet))
                        and not c.modern
                        and subprocess.run([self._env_python(env), "-c",
                                            "import distutils.version"],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           timeout=120).returncode):
                    # A distribution's Python without its distutils package (Debian's
                    # python3-distutils): MXNet 1.6+ imports it and mxcompat serves it on
                    # 3.12+ only; setuptools provides it.
                    self._pip(env, logf, ["setuptools"])
                with open(marker, "w") as f:
                    f.write("\n".join(c.install_lines()) + "\n")
        env.numpy_version = self._freeze(env).get("numpy")

    def _install_project(self, env, logf):
        pins = self._freeze(env)
        # The env's MXNet and NumPy stay as installed whatever the project requires: an
        # `mxnet` requirement would otherwise pull its wheel's numpy<2 pin back in.
        fd, overrides = tempfile.mkstemp(suffix=".txt", prefix="mxcompat-overrides-")
        with os.fdopen(fd, "w") as f:
            for name in ("mxnet", "numpy"):
                if name in pins:
                    f.write("%s==%s\n" % (name, pins[name]))
        try:
            args = []
            for name in self.packages.names:
                # Same version, new code: uv would keep the installed one.
                args += ["--reinstall-package", name]
            args += self.packages.specs + list(self.args.with_)
            for req in self.args.requirements:
                args += ["-r", os.path.abspath(req)]
            self._pip(env, logf, args, {"UV_OVERRIDE": overrides})
        finally:
            os.unlink(overrides)

    def _run_command(self, env, logf):
        env.state = "running"
        self.display.update(env)
        bindir = os.path.join(env.path, "bin")
        run_env = dict(os.environ)
        run_env.pop("PYTHONHOME", None)
        run_env.update(VIRTUAL_ENV=env.path, MXCOMPAT_MATRIX_ENV=env.name,
                       PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        command = list(self.command)
        local = os.path.join(bindir, command[0])
        if os.sep not in command[0] and not os.path.exists(local) and command[0] in (
                "pytest", "py.test", "python", "python3"):
            # Found elsewhere on PATH it would run another Python's tests.
            env.result, env.reason = ERROR, "%s is not installed in the env" % command[0]
            env.first_failure = "%s is not installed in the env (add --with %s)" % (
                command[0], "pytest" if "test" in command[0] else command[0])
            return
        logf.write("$ %s\n" % " ".join(command))
        logf.flush()
        start_at = logf.tell()
        begin = time.time()
        try:
            proc = subprocess.run(command, stdout=logf, stderr=subprocess.STDOUT,
                                  env=run_env, cwd=self.project, timeout=self.args.timeout)
            env.returncode = proc.returncode
        except subprocess.TimeoutExpired:
            env.returncode = None
            env.reason = "stopped after %g s (--timeout)" % self.args.timeout
        except OSError as exc:
            env.returncode = None
            env.reason = "cannot run %s: %s" % (command[0], exc)
        env.run_s = time.time() - begin
        logf.flush()
        env.result = PASSED if env.returncode == 0 else FAILED
        if env.result == FAILED:
            with open(env.log) as f:
                f.seek(start_at)
                env.first_failure = env.reason or first_failure(f.read())


def first_failure(output):
    """The line that says what failed: pytest's first FAILED/ERROR summary line, else the
    last line of the output."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if re.match(r"(FAILED|ERROR) ", line):
            return line
    return lines[-1] if lines else None


class _lock_file(object):
    """An exclusive lock on a file (two matrix runs sharing a cache build an env once)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.f = open(self.path, "w")
        try:
            import fcntl
            fcntl.flock(self.f, fcntl.LOCK_EX)
        except ImportError:   # not POSIX: no lock
            pass
        return self

    def __exit__(self, *exc):
        self.f.close()


# --- display ---------------------------------------------------------------------------------

class PlainDisplay(object):
    """One line per state change (logs, CI)."""

    def __init__(self, envs, out):
        self.out = out
        self.lock = threading.Lock()

    def update(self, env):
        with self.lock:
            if env.result is not None:
                text = "%s: %s (%.1f s)" % (env.name, env.result, env.elapsed)
                if env.result != PASSED and env.first_failure:
                    text += ": " + env.first_failure
            else:
                text = "%s: %s" % (env.name, env.state)
            self.out.write(text + "\n")
            self.out.flush()

    def start(self):
        pass

    def stop(self):
        pass


class LiveDisplay(PlainDisplay):
    """One line per env, redrawn in place twice a second (a terminal).

    Hand-written rather than ``rich``/``tqdm``: two ANSI sequences are all it needs, and a
    display library would be one more dependency in every legacy environment mxcompat is
    installed into (Python 3.7, old pins), for one command."""

    def __init__(self, envs, out):
        PlainDisplay.__init__(self, envs, out)
        self.envs = envs
        self.drawn = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop)
        self.thread.daemon = True

    def update(self, env):
        with self.lock:
            self._draw()

    def _line(self, env):
        state = env.result or env.state
        text = "%-28s %-10s %6.1f s" % (env.name, state, env.elapsed)
        if env.result not in (None, PASSED) and env.first_failure:
            text += "  " + env.first_failure
        return text[:shutil.get_terminal_size((100, 20)).columns - 1]

    def _draw(self):
        if self.drawn:
            self.out.write("\x1b[%dF" % self.drawn)
        for env in self.envs:
            self.out.write("\x1b[2K" + self._line(env) + "\n")
        self.drawn = len(self.envs)
        self.out.flush()

    def _loop(self):
        while not self.done.wait(0.5):
            with self.lock:
                self._draw()

    def start(self):
        with self.lock:
            self._draw()
        self.thread.start()

    def stop(self):
        self.done.set()
        self.thread.join()
        with self.lock:
            self._draw()


# --- reports ---------------------------------------------------------------------------------

def table(envs):
    # Padded columns by hand (not tabulate/rich): a dozen lines against a dependency in
    # every legacy environment.
    rows = [("env", "MXNet", "Python", "NumPy", "result", "time", "first failing line")]
    for env in envs:
        c = env.combination
        rows.append((env.name, c.mxnet, env.python_version or c.python,
                     env.numpy_version or c.numpy_version or c.numpy,
                     env.result,
                     "%.1f s" % (env.install_s + env.run_s) if env.started else "-",
                     (env.first_failure or "") if env.result != PASSED else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = []
    for r in rows:
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(6)) + "  " + r[6])
    return "\n".join(line.rstrip() for line in lines)


def write_junit(envs, directory):
    os.makedirs(directory, exist_ok=True)
    for env in envs:
        failures = int(env.result == FAILED)
        errors = int(env.result == ERROR)
        skipped = int(env.result == SKIPPED)
        body = ""
        message = quoteattr(env.first_failure or env.reason or "")
        output = ""
        if env.log and os.path.exists(env.log) and env.result != PASSED:
            with open(env.log, errors="replace") as f:
                output = f.read()[-20000:]
        if failures:
            body = "<failure message=%s>%s</failure>" % (message, escape(output))
        elif errors:
            body = "<error message=%s>%s</error>" % (message, escape(output))
        elif skipped:
            body = "<skipped message=%s/>" % quoteattr(env.reason or "")
        xml = ('<?xml version="1.0" encoding="utf-8"?>\n'
               '<testsuites><testsuite name="mxcompat-matrix" tests="1" failures="%d" '
               'errors="%d" skipped="%d" time="%.1f"><testcase classname="mxcompat.matrix" '
               'name=%s time="%.1f">%s</testcase></testsuite></testsuites>\n'
               % (failures, errors, skipped, env.install_s + env.run_s, quoteattr(env.name),
                  env.install_s + env.run_s, body))
        with open(os.path.join(directory, env.name + ".xml"), "w") as f:
            f.write(xml)


def _exit_code(envs, strict):
    ran = [e for e in envs if e.result != SKIPPED]
    if strict and len(ran) != len(envs):
        return 1
    if not ran:
        return 1
    return 0 if all(e.result == PASSED for e in ran) else 1


# --- main ------------------------------------------------------------------------------------

def _cache_dir(args):
    if args.cache_dir:
        return os.path.abspath(args.cache_dir)
    if os.environ.get(CACHE_ENV):
        return os.path.abspath(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "mxcompat", "matrix")


def _locate(uv, combos, download):
    found = {}
    envs = []
    for c in combos:
        if c.python not in found:
            python, why = find_python(uv, c.python, download)
            version = _python_version(python) if python else None
            if python and version is None:
                python, why = None, "%s does not run" % python
            found[c.python] = (python, version, why)
        env = Env(c)
        env.python, env.python_version, why = found[c.python]
        if env.python is None:
            env.result, env.reason = SKIPPED, why
        envs.append(env)
    return envs


def _print_list(envs, out):
    width = max(len(e.name) for e in envs)
    for e in envs:
        c = e.combination
        where = ("Python %s at %s" % (e.python_version, e.python) if e.python
                 else "cannot run here: %s" % e.reason)
        out.write("%-*s  MXNet %-12s Python %-5s %-14s %s\n" % (width, e.name, c.mxnet,
                                                               c.python, c.numpy, where))
        for line in c.install_lines():
            out.write("%-*s    %s\n" % (width, "", line))


def main(argv, out=None):
    out = out or sys.stdout
    argv = list(argv)
    command = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1:]
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.jobs is not None and args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        # Not "> 0" alone: nan compares false both ways and would stop no command.
        if args.timeout is not None and not 0 < args.timeout < float("inf"):
            raise UsageError("--timeout must be a positive number of seconds, not %s"
                             % args.timeout)
        combos = select(args)
        if not args.list and not command:
            raise UsageError("name the command to run after --, e.g. "
                             "mxcompat matrix -- pytest -q tests/")
        project = os.getcwd()
        if not (args.list or args.no_install_project or any(
                os.path.exists(os.path.join(project, f)) for f in ("pyproject.toml",
                                                                   "setup.py"))):
            raise UsageError("no pyproject.toml or setup.py in %s to install: run from your "
                             "project's folder or pass --no-install-project" % project)
        for req in args.requirements:
            if not os.path.exists(req):
                raise UsageError("-r %s: no such file" % req)
        uv = find_uv()
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        sys.stderr.write("mxcompat matrix: error: %s\n" % exc)
        return 2

    envs = _locate(uv, combos, args.download_pythons)
    if args.list:
        _print_list(envs, out)
        return 0
    if args.strict and any(e.result == SKIPPED for e in envs):
        for e in envs:
            if e.result == SKIPPED:
                e.result = ERROR
                e.first_failure = e.reason
    cache = _cache_dir(args)
    os.makedirs(cache, exist_ok=True)
    jobs = args.jobs or max(1, (os.cpu_count() or 2) // 2)
    runnable = [e for e in envs if e.result is None]
    live = hasattr(out, "isatty") and out.isatty() and os.environ.get("TERM") != "dumb"
    display = (LiveDisplay if live else PlainDisplay)(envs, out)
    spec = args.mxcompat or default_mxcompat_spec()
    if spec and os.path.exists(spec):
        spec = os.path.abspath(spec)
    if not live:
        out.write("mxcompat matrix: %d env(s), %d at a time, cache %s, mxcompat from %s\n"
                  % (len(runnable), jobs, cache, spec))
        for e in envs:
            if e.result is not None:
                display.update(e)
    os.makedirs(os.path.join(cache, "logs"), exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="mxcompat-matrix-")
    try:
        try:
            packages = Packages(uv, spec, None if args.no_install_project else project,
                                workdir, os.path.join(cache, "logs", "build.log"))
        except UsageError as exc:
            sys.stderr.write("mxcompat matrix: error: %s\n" % exc)
            return 1
        runner = Runner(uv, args, command, project, packages, cache, display)
        display.start()
        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                list(pool.map(runner.run, runnable))
        finally:
            display.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    out.write("\n" + table(envs) + "\n")
    code = _exit_code(envs, args.strict)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "project": project, "mxcompat": spec,
                       "cache": cache, "exit_code": code,
                       "envs": [e.as_json() for e in envs]}, f, indent=2)
            f.write("\n")
    if args.junit:
        write_junit(envs, args.junit)
    return code
