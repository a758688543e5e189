"""The reference environment of ``test_results_match_the_reference_environment``, made live.

The promise checked there: MXNet on today's Python/NumPy (with mxcompat) computes exactly what
the same MXNet release computes, *without* mxcompat, on the stack it was released for.  Both
sides must run on the same machine in the same test run: MXNet's bundled OpenBLAS and oneDNN
pick CPU-specific kernels (``OPENBLAS_CORETYPE``, ``DNNL_MAX_CPU_ISA``,
``MXNET_MKLDNN_ENABLED`` and the CPU itself change the last bits of a training step), so
results stored on one machine cannot judge another.  On one machine and one setting they are
bit-identical from run to run (measured with 1 and 2 OpenMP threads, every OpenBLAS core type
and oneDNN ISA limit tried, and NumPy's own SIMD dispatch limited to AVX2 and to SSE4.1), so the
comparison is exact.

Where the reference comes from:

* This env *is* a reference stack (Python < 3.12 and NumPy < 1.24: MXNet imports without
  mxcompat): the same interpreter, in a fresh process that never imports mxcompat.
* Otherwise: a virtualenv with Python ``REFERENCE_PYTHON`` and NumPy ``REFERENCE_NUMPY`` and the
  same MXNet wheel (``--no-deps``: 1.3.1/1.4.1 declare ``numpy<1.15``), built once by
  ``mxcompat/_envs.py`` (the builder ``mxcompat matrix`` uses) and cached
  under ``MXCOMPAT_TEST_CACHE`` (default ``~/.cache/mxcompat/tests``); delete that folder to
  rebuild.  The child runs with this process's environment, so every CPU setting above
  applies to both sides.
"""

import os
import sys
import tempfile

from mxcompat import _envs
from mxcompat._core import facts, settings, versions

from . import numpy_reference
from .processes import run_plain

# The stack MXNet's Python layer is judged against: every release 1.3.1 … 1.9.1 imports and
# trains on it without mxcompat.  It is 1.9.1's row of mxcompat's versions table (Python 3.11:
# the newest 1.6-1.9's pins allow; NumPy 1.23.5: the last before 1.24 removed numpy.bool and
# the other aliases MXNet reads), not restated here.
_REFERENCE = versions.by_name("mx191")
REFERENCE_PYTHON = _REFERENCE.python
REFERENCE_NUMPY = _REFERENCE.numpy_version
# What mxnet's wheels require besides numpy (installed by hand beside --no-deps).
REFERENCE_EXTRAS = versions.MXNET_EXTRAS

CACHE_ENV = settings.TEST_CACHE


class Unavailable(Exception):
    """No reference environment can be had on this machine (the message says why)."""


def is_reference_stack(numpy_version, python=sys.version_info):
    """True when plain MXNet runs on this Python/NumPy as released (no patch of the NumPy
    family is needed): the env is its own reference."""
    return tuple(python[:2]) < (3, 12) and facts.parse_version(numpy_version)[:2] < (1, 24)


def mxnet_wheel_version():
    """The installed mxnet distribution's exact version (``1.5.1.post0``, not ``1.5.1``)."""
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7
        import pkg_resources

        try:
            return pkg_resources.get_distribution("mxnet").version
        except pkg_resources.DistributionNotFound:
            raise Unavailable("MXNet is not installed as the `mxnet` distribution") from None
    try:
        return metadata.version("mxnet")
    except metadata.PackageNotFoundError:
        raise Unavailable("MXNet is not installed as the `mxnet` distribution") from None


def cache_dir():
    root = settings.cache_folder("tests", CACHE_ENV)
    os.makedirs(root, exist_ok=True)
    return root


def reference_venv(wheel_version):
    """The cached reference virtualenv's Python for ``mxnet==wheel_version``, built if missing
    (by mxcompat's one environment builder: uv when there is one, else venv and pip)."""

    def distutils(root):
        if _envs.lacks_distutils(root):
            # A distribution's Python 3.11 without its distutils package (Debian's
            # python3-distutils): MXNet 1.6+ imports it, setuptools provides it.
            with open(root + ".log", "a") as logf:
                _envs.pip_install(_envs.find_uv(required=False), root, ["setuptools"], logf)

    name = "mxnet-%s-py%s-numpy-%s" % (wheel_version, REFERENCE_PYTHON, REFERENCE_NUMPY)
    steps = [
        ["--no-deps", "mxnet==" + wheel_version],
        ["numpy==" + REFERENCE_NUMPY] + list(REFERENCE_EXTRAS),
    ]
    try:
        return _envs.cached(cache_dir(), name, REFERENCE_PYTHON, steps, after=distutils)
    except _envs.EnvError as e:
        raise Unavailable(
            "cannot build the reference environment (MXNet %s on Python %s + NumPy %s): %s"
            % (wheel_version, REFERENCE_PYTHON, REFERENCE_NUMPY, e)
        ) from None


def reference_python(numpy_version):
    """``(python, description)`` of the interpreter that computes the reference here."""
    if is_reference_stack(numpy_version):
        return sys.executable, "this env without mxcompat (Python %s, NumPy %s)" % (
            sys.version.split()[0],
            numpy_version,
        )
    wheel = mxnet_wheel_version()
    return reference_venv(wheel), "mxnet==%s on Python %s + NumPy %s, without mxcompat" % (
        wheel,
        REFERENCE_PYTHON,
        REFERENCE_NUMPY,
    )


def compute_reference(python, env):
    """Run ``numpy_reference.compute()`` with plain MXNet in ``python`` (a fresh process with
    ``env``), and return its results."""
    fd, out = tempfile.mkstemp(suffix=".npz", prefix="mxcompat-reference-")
    os.close(fd)
    try:
        run_plain(python, "tests.support.numpy_reference", [out], env)
        return numpy_reference.load(out)
    finally:
        os.unlink(out)
