"""Patch ``convert``: ``Module.to_gluon()`` and ``HybridBlock.to_module()``, the conversions of
``mxcompat/convert/`` as methods of MXNet's classes."""

from .._core.registry import Patch, Target, register
from ..convert.gluon_to_module import to_module
from ..convert.module_to_gluon import to_gluon

PATCH = "convert"
register(
    Patch(
        PATCH,
        "Module.to_gluon() and HybridBlock.to_module(): in-memory conversion between the APIs.",
        targets=[
            Target("mxnet.module.module", "Module.to_gluon", new=to_gluon),
            Target("mxnet.gluon.block", "HybridBlock.to_module", new=to_module),
        ],
    )
)
