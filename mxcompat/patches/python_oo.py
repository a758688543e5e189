"""MXNet under ``python -OO`` (``PYTHONOPTIMIZE=2``).

``-OO`` strips docstrings, and every MXNet 1.x release builds its operators' documentation
while ``import mxnet`` runs by joining the docstrings of its doc classes
(``mxnet/ndarray_doc.py``, ``mxnet/symbol_doc.py``): ``TypeError: sequence item 0: expected
str instance, NoneType found``, so MXNet cannot be imported at all.  When MXNet is really
being imported under ``-OO``, mxcompat gives those classes an empty docstring as each of the
two modules finishes loading (before any operator is registered).  Patch name ``python_oo``;
it applies under ``-OO`` only.
"""

import sys

from .._core import hooks
from .._core.registry import Patch, record, register

PATCH = "python_oo"
_DOC_MODULES = {"mxnet.ndarray_doc": "NDArrayDoc", "mxnet.symbol_doc": "SymbolDoc"}


def stripped():
    """Whether Python runs under -OO (PYTHONOPTIMIZE=2), which strips docstrings."""
    return sys.flags.optimize >= 2


def _empty_docstrings(module):
    base = getattr(module, _DOC_MODULES[module.__name__], None)
    if base is None:
        return
    for cls in [base] + type.__subclasses__(base):
        if cls.__doc__ is None:
            cls.__doc__ = ""
            record(PATCH)


def _before_mxnet(version):
    if stripped():
        for name in _DOC_MODULES:
            hooks.when_imported(name, _empty_docstrings)


# Under -OO only (when=stripped).
register(
    Patch(
        PATCH,
        "MXNet under python -OO: the doc classes whose docstrings MXNet joins "
        "while it imports get empty ones instead of None.",
        when=stripped,
        before_import=_before_mxnet,
    )
)
