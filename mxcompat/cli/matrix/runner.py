"""How ``mxcompat matrix`` runs: mxcompat and the project built once into wheels, each
combination's venv built (cached, by ``mxcompat._envs``) and its command run there."""

import hashlib
import json
import os
import re
import subprocess
import tempfile
import time

from ... import __version__, _envs
from ..._core import facts, settings
from .._usage import UsageError
from ._common import CACHE_FORMAT, ERROR, FAILED, PASSED

# --- what gets installed ---------------------------------------------------------------------


def default_mxcompat_spec():
    """This mxcompat, as pip can install it elsewhere: its source checkout, else the local
    directory or wheel it was installed from (PEP 610's direct_url.json), else the release."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # (mxcompat/, three folders above this file)
    checkout = os.path.dirname(package)
    pyproject = os.path.join(checkout, "pyproject.toml")
    if os.path.exists(pyproject):
        with open(pyproject) as f:
            if re.search(r'^name\s*=\s*"mxcompat"', f.read(), re.M):
                return checkout
    try:
        try:
            from importlib import metadata
        except ImportError:  # Python 3.7
            import importlib_metadata as metadata
        text = metadata.distribution("mxcompat").read_text("direct_url.json")
        url = json.loads(text)["url"] if text else ""
    except Exception:
        url = ""
    if url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        path = unquote(urlparse(url).path)
        if os.path.exists(path):
            return path
    return "mxcompat==" + __version__


class Packages:
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
            proc = subprocess.run(
                [uv, "build", "--wheel", "--out-dir", out, source],
                stdout=logf,
                stderr=subprocess.STDOUT,
                timeout=_envs.INSTALL_TIMEOUT,
            )
        wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
        if proc.returncode != 0 or len(wheels) != 1:
            raise UsageError("cannot build a wheel of %s (see %s)" % (source, self.log))
        name, _, rest = wheels[0][: -len(".whl")].partition("-")
        self.names.append(name)
        if rest.endswith("-none-any"):
            self.specs.append(os.path.join(out, wheels[0]))
        else:
            # Compiled: each env's Python builds its own.
            self.specs.append(source)


def _env_key(combination, python, python_version):
    text = json.dumps(
        [CACHE_FORMAT, os.path.realpath(python), python_version, combination.install_steps()]
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class Env:
    """One combination's environment and the result of running COMMAND in it."""

    def __init__(self, combination):
        self.combination = combination
        self.name = combination.name
        self.python = None  # the base interpreter
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
        return {
            "env": self.name,
            "mxnet": c.mxnet,
            "python": c.python,
            "python_version": self.python_version,
            "numpy": c.numpy,
            "numpy_version": self.numpy_version,
            "install": c.install_lines(),
            "result": self.result,
            "reason": self.reason,
            "returncode": self.returncode,
            "first_failure": self.first_failure,
            "reused": self.reused,
            "install_s": round(self.install_s, 1),
            "run_s": round(self.run_s, 1),
            "time_s": round(self.install_s + self.run_s, 1),
            "path": self.path,
            "log": self.log,
        }


class Runner:
    def __init__(self, uv, args, command, project, packages, cache, display):
        self.uv = uv
        self.args = args
        self.command = command
        self.project = project
        self.packages = packages
        self.cache = cache
        self.display = display

    # -- helpers
    def _pip(self, env, logf, args, extra_env=None):
        _envs.pip_install(self.uv, env.path, args, logf, extra_env, cwd=self.project)

    def _freeze(self, env):
        return _envs.freeze(self.uv, env.path)

    # -- one env
    def run(self, env):
        env.started = time.time()
        os.makedirs(os.path.join(self.cache, "logs"), exist_ok=True)
        env.log = os.path.join(self.cache, "logs", env.name + ".log")
        with open(env.log, "w") as logf:
            try:
                self._build(env, logf)
                self._install_project(env, logf)
            except (_envs.StepFailed, OSError, subprocess.SubprocessError) as exc:
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
        env.path = os.path.join(
            self.cache, "%s-%s" % (c.name, _env_key(c, env.python, env.python_version))
        )
        env.state = "installing"
        self.display.update(env)

        def distutils(path):
            if (
                facts.since(facts.NUMPY_SUBPACKAGE, facts.parse_version(c.mxnet))
                and not c.modern
                and _envs.lacks_distutils(path)
            ):
                # A distribution's Python without its distutils package (Debian's
                # python3-distutils): MXNet 1.6+ imports it and mxcompat serves it on
                # 3.12+ only; setuptools provides it.
                self._pip(env, logf, ["setuptools"])

        env.reused = _envs.build(
            self.uv,
            env.python,
            env.path,
            c.install_steps(),
            logf,
            recreate=self.args.recreate,
            after=distutils,
            cwd=self.project,
        )
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
        run_env.update(
            VIRTUAL_ENV=env.path,
            **{settings.MATRIX_ENV: env.name},
            PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
        )
        command = list(self.command)
        local = os.path.join(bindir, command[0])
        if (
            os.sep not in command[0]
            and not os.path.exists(local)
            and command[0] in ("pytest", "py.test", "python", "python3")
        ):
            # Found elsewhere on PATH it would run another Python's tests.
            env.result, env.reason = ERROR, "%s is not installed in the env" % command[0]
            env.first_failure = "%s is not installed in the env (add --with %s)" % (
                command[0],
                "pytest" if "test" in command[0] else command[0],
            )
            return
        logf.write("$ %s\n" % " ".join(command))
        logf.flush()
        start_at = logf.tell()
        begin = time.time()
        try:
            proc = subprocess.run(
                command,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=run_env,
                cwd=self.project,
                timeout=self.args.timeout,
            )
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
