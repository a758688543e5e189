"""``mxcompat-cuda-libs.pth``: what ``mxcompat install mxnet-cu11X==V`` writes beside the
``mxnet`` it installed, so that a plain ``import mxnet`` there (a notebook cell, an entry point
nobody edits) loads the CUDA libraries from the ``nvidia-*-cu11`` packages too; on a Python or
NumPy newer than MXNet's, also what MXNet's import itself needs there (NumPy's removed names,
``distutils.version``: without them no plain ``import mxnet`` computes); nothing else of
mxcompat.

Python runs a ``.pth`` line that starts with ``import`` at every interpreter start of that
environment.  This one only calls ``_mxcompat_cuda_libs.install()`` (the top-level module the
wheel ships beside the package: one finder, answering ``mxnet`` alone), inside a ``try``: where
mxcompat is uninstalled or broken it does nothing and says nothing.  Delete the file to undo.
"""

import os
import site

NAME = "mxcompat-cuda-libs.pth"
MODULE = "_mxcompat_cuda_libs"
# One line, compiled at every start: `exec` holds the `try` a .pth line cannot have itself.
LINE = 'import sys; exec("try:\\n import %s\\n %s.install()\\nexcept Exception:\\n pass")' % (
    MODULE,
    MODULE,
)
TEXT = (
    "# Written by `mxcompat install`: a plain `import mxnet` of this environment's CUDA wheel\n"
    "# loads the CUDA libraries from the nvidia-*-cu11 packages (mxcompat's patch cuda_libs;\n"
    "# on a Python or NumPy newer than MXNet's, also numpy_names and distutils, which its import\n"
    "# needs; nothing else).  Without mxcompat installed it does nothing.  Delete it to undo.\n"
    + LINE
    + "\n"
)


def site_folders():
    """The folders whose ``.pth`` files this interpreter's ``site`` reads."""
    folders = list(getattr(site, "getsitepackages", lambda: [])())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return [os.path.realpath(f) for f in folders]


def folder_of(library):
    """The site folder that holds the ``mxnet`` package of ``libmxnet.so`` at ``library``, or
    ``None`` where that folder is no site folder of this interpreter (a ``.pth`` there would
    never be read)."""
    folder = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(library))))
    return folder if folder in site_folders() else None


def write(folder):
    """Write the ``.pth`` into ``folder``; returns its path."""
    path = os.path.join(folder, NAME)
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(TEXT)
    os.replace(tmp, path)
    return path
