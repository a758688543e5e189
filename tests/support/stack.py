"""The stack under test (MXNet, NumPy, Python, glibc, the MXNet build) and what mxcompat must
do on it, told from the facts rather than from the patches, whose own answers the tests check.

Imported after mxcompat (tests/conftest.py imports it first): ``import mxnet`` here is the
patched import every test sees.
"""

import os
import sys

import mxnet as mx

import mxcompat
from mxcompat._core import facts

from .processes import run_python

MX_VERSION = facts.parse_version(mx.__version__)

# The oneDNN FullyConnected fact (facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS): the builds where
# a weight's grad_req 'null' stops its bias (there mxcompat keeps the weight's gradient), and
# whether oneDNN's kernels really run (not with MXNET_MKLDNN_ENABLED=0: MXNet then trains
# the bias itself).
ONEDNN_FC = facts.since(facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS) and "MKLDNN" in (
    facts.build_features() or ()
)
ONEDNN_FC_RUNS = ONEDNN_FC and facts.onednn_enabled()
CUDA_BUILD = "CUDA" in (facts.build_features() or ())


def applicable_patches():
    """The patch names ``patch()`` applies here, in stacking order.  Derived from the facts,
    not from the patches' own ``applies_to``, so the tests that compare it with
    ``mxcompat.patched()`` check those too."""
    numpy_major = facts.parse_version(sys.modules["numpy"].__version__)[0]
    conditional = {
        "onednn_fc_bias": ONEDNN_FC,
        "distutils": sys.version_info >= (3, 12),
        "numpy2": numpy_major >= 2,
        "python_oo": sys.flags.optimize >= 2,
        # Every 1.x release traps (facts.INT_DIVISION_SIGFPE names no release that raises).
        "int_division": True,
        # The operators take dtype "bfloat16" from 1.7 (read through numpy.dtype()).
        "bfloat16_name": facts.since(facts.NDARRAY_BFLOAT16),
        # Every release asserts without a message; before UNBOUND_GET_PARAMS it also refuses
        # a loaded module, so the patch is needed on both sides of that fact.
        "unbound_get_params": True,
        # A Pool-based DataLoader (1.4+) is retired without terminate().
        "dataloader_teardown": facts.since(facts.DATALOADER_WORKER_POOL),
        # Where fork is no longer multiprocessing's default (Python 3.14+ on Linux).
        "dataloader_start_method": sys.platform.startswith("linux")
        and facts.python_since(facts.PYTHON_FORKSERVER_DEFAULT),
        "dataloader_spawn": sys.platform.startswith("linux"),
        # A dist Trainer's broadcast races its first pushpull on every release (often from
        # 1.7 on, rarely before).
        "trainer_kvstore_init": True,
        # mxnet.test_utils' chisquare, where SciPy (imported by `import mxnet`) checks sums.
        "scipy_chisquare": getattr(mx.test_utils, "ss", None) is not None
        and facts.scipy_since(facts.SCIPY_CHISQUARE_SUM_CHECK),
        # glibc 2.41+ (unless told otherwise at start) refuses an executable-stack library.
        "exec_stack": glibc_refuses_exec_stack(),
        # A CUDA build of MXNet (an mxnet-cu11X wheel: the gpu-* env).
        "cuda_libs": CUDA_BUILD,
        "gpu_arch": CUDA_BUILD,
    }
    return tuple(n for n in mxcompat.patch_names() if conditional.get(n, True))


def glibc_refuses_exec_stack():
    """Whether this glibc refuses to load a library that asks for an executable stack (from
    the facts, not from the patch, whose own answer the tests check)."""
    try:
        name, _, number = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    except (ValueError, OSError):
        return False
    if name != "glibc" or facts.parse_version(number)[:2] < (facts.GLIBC_DLOPEN_REFUSES_EXECSTACK):
        return False
    return "glibc.rtld.execstack=2" not in os.environ.get("GLIBC_TUNABLES", "")


_plain_import = []


def plain_import_works():
    """Whether ``import mxnet`` works here *without* mxcompat imported first.  It does not for
    MXNet 1.6+ on NumPy >= 1.24 or Python >= 3.12 (numpy.bool, numpy.PZERO, distutils), where
    only mxcompat's pre-import finder makes MXNet importable."""
    if not _plain_import:
        _plain_import.append(run_python("import mxnet").returncode == 0)
    return _plain_import[0]
