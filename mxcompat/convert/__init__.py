"""Module ⇄ Gluon in memory: ``Module.to_gluon()`` and ``HybridBlock.to_module()``.

MXNet 1.x hands a model from one front end to the other only through files; these convert
in memory, copying the weights or sharing them (docs/guide/convert.md says how to use them).

Layout: ``module_to_gluon`` and ``gluon_to_module`` (one direction each), ``graph`` (the
symbol graphs of both sides: loss heads, a block's graph and parameters), ``params`` (the
Gluon ``Parameter`` internals that place arrays without copying them).  The patch ``convert``
(the two as methods of ``Module`` and ``HybridBlock``) is declared in
``mxcompat/patches/convert.py``.
"""

# Loaded at first use (module __getattr__): ``convert.shared``, which the torch converter's
# verification imports in another Python with MXNet and NumPy alone, needs neither of these
# (they reach the patches' registry and wrapt).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .gluon_to_module import to_module as to_module
    from .module_to_gluon import to_gluon as to_gluon

__all__ = ["to_gluon", "to_module"]
_PUBLIC = {"to_gluon": "module_to_gluon", "to_module": "gluon_to_module"}


def __getattr__(name: str) -> object:
    if name in _PUBLIC:
        from importlib import import_module

        return getattr(import_module(__name__ + "." + _PUBLIC[name]), name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
