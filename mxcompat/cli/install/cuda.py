"""``mxcompat install mxnet-cu11X==V``: a CUDA wheel, and the ``nvidia-*-cu11`` packages that
bring the libraries its ``libmxnet.so`` names in ``DT_NEEDED`` (``mxcompat/cuda/libs.py``),
read from the installed file once the wheel is in.  CUDA 9/10 wheels have no such packages:
refused, naming the nearest CUDA 11 wheel of the same release (``facts.CUDA11_WHEELS``)."""

import os
import re

from ..._core import facts, versions
from .._usage import UsageError

_NAME = re.compile(r"^mxnet-cu(\d+)(\d)$")


def variant(name):
    """``(name, (major, minor))`` for ``mxnet-cu117`` (``(11, 7)``), ``None`` for plain
    ``mxnet``; a UsageError for any other distribution."""
    name = name.strip().lower().replace("_", "-")
    if name == "mxnet":
        return None
    match = _NAME.match(name)
    if match is None:
        raise UsageError(
            "%r: mxcompat installs mxnet or a CUDA wheel mxnet-cuXYZ (mxnet-cu117==1.9.1)" % name
        )
    return name, (int(match.group(1)), int(match.group(2)))


def refuse_old_cuda(name, cuda, release):
    """A UsageError for a CUDA 9/10 wheel, naming the nearest CUDA 11 wheel of ``release``."""
    if cuda[0] >= 11:
        return
    chosen = next((r for r in facts.CUDA11_WHEELS if versions.release_matches(release, r)), None)
    if chosen is None:
        newest = max(facts.CUDA11_WHEELS, key=versions.Version)
        way = "no release before 1.8 has a CUDA 11 wheel; the newest is mxnet-%s==%s" % (
            facts.CUDA11_WHEELS[newest][-1],
            newest,
        )
    else:
        way = "the nearest CUDA 11 wheel of %s is mxnet-%s==%s" % (
            chosen,
            facts.CUDA11_WHEELS[chosen][0],
            chosen,
        )
    raise UsageError(
        "%s is built for CUDA %d.%d, whose libraries NVIDIA publishes as no pip package "
        "(only CUDA 11's: nvidia-*-cu11), and today's hosts do not have it; %s"
        % (name, cuda[0], cuda[1], way)
    )


def split_spec(spec):
    """``mxnet-cu117==1.9.1`` -> ``("mxnet-cu117", "mxnet==1.9.1")``; plain specs as they are."""
    name, sep, rest = spec.strip().partition("==")
    if name.strip().lower().startswith("mxnet-"):
        return name.strip(), "mxnet" + sep + rest
    return None, spec


def renamed(steps, cuda_name):
    """The install steps of the CPU wheel, with the CUDA wheel's name in place of ``mxnet``."""
    return [
        [cuda_name + a[len("mxnet") :] if a.startswith("mxnet==") else a for a in s] for s in steps
    ]


def installed_library(python):
    """Where the wheel just installed put ``libmxnet.so``, for the interpreter ``python`` (this
    one: ``mxcompat install`` installs into its own environment)."""
    import importlib
    import importlib.util

    importlib.invalidate_caches()
    spec = importlib.util.find_spec("mxnet")
    for folder in getattr(spec, "submodule_search_locations", None) or ():
        path = os.path.join(folder, "libmxnet.so")
        if os.path.isfile(path):
            return path
    return None


def plain_import(out):
    """Write the ``.pth`` of a plain ``import mxnet`` (``mxcompat/cuda/plain_import.py``) beside
    the installed ``mxnet``, then try such an import in a fresh interpreter and say what it did,
    naming the file."""
    import subprocess
    import sys
    import tempfile

    from ...cuda import plain_import as pth

    library = installed_library(sys.executable)
    folder = pth.folder_of(library) if library else None
    if folder is None:
        out.write(
            "mxnet is not in a site folder of this Python (%s): no %s written, so a plain "
            "`import mxnet` will not find the CUDA libraries; import mxcompat first.\n"
            % (library and os.path.dirname(os.path.dirname(library)), pth.NAME)
        )
        return None
    try:
        path = pth.write(folder)
    except OSError as exc:
        out.write(
            "Could not write %s into %s (%s): a plain `import mxnet` will not find the CUDA "
            "libraries; import mxcompat first.\n" % (pth.NAME, folder, exc)
        )
        return None
    with tempfile.TemporaryDirectory(prefix="mxcompat-install-") as cwd:
        tried = subprocess.run(
            [sys.executable, "-c", "import mxnet"],
            cwd=cwd,
            capture_output=True,
            text=True,
        )
    said = (
        "A plain `import mxnet` here loads the CUDA libraries from the nvidia-*-cu11 packages "
        "too (and on a Python or NumPy newer than MXNet's, the NumPy names and distutils it "
        "imports; nothing else of mxcompat), by one file: %s (delete it to undo)" % path
    )
    if tried.returncode == 0:
        out.write(said + ".\n")
    else:
        lines = tried.stderr.strip().splitlines() or ["exit status %d" % tried.returncode]
        out.write(
            "%s; it still fails here for another reason (%s): import mxcompat first.\n"
            % (said, lines[-1])
        )
    return path
