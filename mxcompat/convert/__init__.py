"""Module ⇄ Gluon in memory: ``Module.to_gluon()`` and ``HybridBlock.to_module()``.

MXNet 1.x hands a model from one front end to the other only through files; these convert
in memory, copying the weights or sharing them (docs/guide/convert.md says how to use them).

Layout: ``module_to_gluon`` and ``gluon_to_module`` (one direction each), ``graph`` (the
symbol graphs of both sides: loss heads, a block's graph and parameters), ``params`` (the
Gluon ``Parameter`` internals that place arrays without copying them).  The patch ``convert``
(the two as methods of ``Module`` and ``HybridBlock``) is declared in
``mxcompat/patches/convert.py``.
"""

from .gluon_to_module import to_module
from .module_to_gluon import to_gluon

__all__ = ["to_gluon", "to_module"]
