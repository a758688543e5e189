"""MXNet models to ONNX on today's onnx and onnxruntime: MXNet's own exporter, working and
verified.

MXNet ships an exporter in every supported release (``mx.contrib.onnx.export_model`` from
1.3, ``mx.onnx.export_model`` in 1.9), written against the onnx of its day.  Today's onnx
breaks it three ways: ``onnx.mapping`` is gone (onnx 1.19+; "Onnx and protobuf need to be
installed"), the exporter stamps the newest opset of the installed onnx on a graph written for
an old one (``BatchNormalization``'s ``spatial`` attribute of 1.3-1.7 fails onnx's checker,
1.9's ``ReduceMean`` with an ``axes`` attribute is another op at opset 18), and onnx's checker
checks it against that newest opset.  Patch ``onnx``: while an MXNet export runs (its
``export_model`` or ``MXNetGraph.create_onnx_graph_proto``), and only then, ``onnx.mapping``
is there (built from ``onnx.helper``'s dtype functions) and, on the exporting thread,
``onnx.defs.onnx_opset_version()`` and ``onnx.checker.check_graph`` say the opset the
release's exporter writes (``_compat.ONNX_EXPORT_OPSETS``).  Code that never exports an MXNet
model sees onnx unchanged; another thread's onnx calls during an export pass through (only
``onnx.mapping`` is visible to it then).

``mxcompat.to_onnx(model, ...)`` (also ``Module.to_onnx``, ``HybridBlock.to_onnx``) calls
MXNet's own graph converter in memory, returns the ``onnx.ModelProto`` (a file only with
``path``), replaces loss heads by their inference ops as ``to_gluon`` does, makes parameters
initializers only (MXNet's exporter also lists them as graph inputs, which stops onnxruntime
from constant-folding them), and by default runs the model in onnxruntime against MXNet.
onnx and onnxruntime are optional: ``pip install 'mxcompat[onnx]'``.
"""

from .._core.registry import Patch, Target, register
from .export import to_onnx
from .exporter import INSTALL_HINT, _wrap_export, _wrap_graph_proto  # noqa: F401  (the CLI's)

PATCH = "onnx"


register(
    Patch(
        PATCH,
        "MXNet's own ONNX exporter works with today's onnx (onnx.mapping, the opset it writes); "
        "Module.to_onnx() and HybridBlock.to_onnx(): verified ONNX models in memory.",
        targets=[
            # 1.9: mxnet.onnx (contrib.onnx.export_model calls export_model_, the same function)
            Target("mxnet.onnx", "export_model", _wrap_export, optional=True),
            Target("mxnet.onnx.mx2onnx", "export_model", _wrap_export, optional=True),
            Target("mxnet.onnx.mx2onnx._export_model", "export_model", _wrap_export, optional=True),
            Target("mxnet.contrib.onnx", "export_model_", _wrap_export, optional=True),
            Target(
                "mxnet.onnx.mx2onnx._export_onnx",
                "MXNetGraph.create_onnx_graph_proto",
                _wrap_graph_proto,
                optional=True,
            ),
            # 1.3-1.8: mxnet.contrib.onnx
            Target("mxnet.contrib.onnx", "export_model", _wrap_export, optional=True),
            Target(
                "mxnet.contrib.onnx.mx2onnx.export_model",
                "export_model",
                _wrap_export,
                optional=True,
            ),
            Target(
                "mxnet.contrib.onnx.mx2onnx.export_onnx",
                "MXNetGraph.create_onnx_graph_proto",
                _wrap_graph_proto,
                optional=True,
            ),
            Target("mxnet.module.module", "Module.to_onnx", new=to_onnx),
            Target("mxnet.gluon.block", "HybridBlock.to_onnx", new=to_onnx),
        ],
    )
)
