"""Patch ``onnx``: MXNet's own ONNX exporter works with today's onnx (``onnx.mapping`` there and
the opset the release writes, while an export runs), and ``Module.to_onnx()`` /
``HybridBlock.to_onnx()``.  What breaks and how it is held: ``mxcompat/onnx/__init__.py``; the
wrappers are ``mxcompat/onnx/mxnet_exporter.py``'s."""

from .._core.registry import Patch, Target, register
from ..onnx.in_memory import to_onnx
from ..onnx.mxnet_exporter import wrap_export, wrap_graph_proto

PATCH = "onnx"
register(
    Patch(
        PATCH,
        "MXNet's own ONNX exporter works with today's onnx (onnx.mapping, the opset it writes); "
        "Module.to_onnx() and HybridBlock.to_onnx(): verified ONNX models in memory.",
        targets=[
            # 1.9: mxnet.onnx (contrib.onnx.export_model calls export_model_, the same function)
            Target("mxnet.onnx", "export_model", wrap_export, optional=True),
            Target("mxnet.onnx.mx2onnx", "export_model", wrap_export, optional=True),
            Target("mxnet.onnx.mx2onnx._export_model", "export_model", wrap_export, optional=True),
            Target("mxnet.contrib.onnx", "export_model_", wrap_export, optional=True),
            Target(
                "mxnet.onnx.mx2onnx._export_onnx",
                "MXNetGraph.create_onnx_graph_proto",
                wrap_graph_proto,
                optional=True,
            ),
            # 1.3-1.8: mxnet.contrib.onnx
            Target("mxnet.contrib.onnx", "export_model", wrap_export, optional=True),
            Target(
                "mxnet.contrib.onnx.mx2onnx.export_model",
                "export_model",
                wrap_export,
                optional=True,
            ),
            Target(
                "mxnet.contrib.onnx.mx2onnx.export_onnx",
                "MXNetGraph.create_onnx_graph_proto",
                wrap_graph_proto,
                optional=True,
            ),
            Target("mxnet.module.module", "Module.to_onnx", new=to_onnx),
            Target("mxnet.gluon.block", "HybridBlock.to_onnx", new=to_onnx),
        ],
    )
)
