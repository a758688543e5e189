"""MXNet models to ONNX on today's onnx and onnxruntime: MXNet's own exporter, working and
verified.

MXNet ships an exporter in every supported release (``mx.contrib.onnx.export_model`` from
1.3, ``mx.onnx.export_model`` in 1.9), written against the onnx of its day.  Today's onnx
breaks it three ways: ``onnx.mapping`` is gone (onnx 1.19+; "Onnx and protobuf need to be
installed"), the exporter stamps the newest opset of the installed onnx on a graph written for
an old one (``BatchNormalization``'s ``spatial`` attribute of 1.3-1.7 fails onnx's checker,
1.9's ``ReduceMean`` with an ``axes`` attribute is another op at opset 18), and onnx's checker
checks it against that newest opset.  Patch ``onnx`` (declared in ``mxcompat/patches/onnx.py``,
the wrappers in ``mxnet_exporter``): while an MXNet export runs (its
``export_model`` or ``MXNetGraph.create_onnx_graph_proto``), and only then, ``onnx.mapping``
is there (built from ``onnx.helper``'s dtype functions) and, on the exporting thread,
``onnx.defs.onnx_opset_version()`` and ``onnx.checker.check_graph`` say the opset the
release's exporter writes (``facts.ONNX_EXPORT_OPSETS``).  Code that never exports an MXNet
model sees onnx unchanged; another thread's onnx calls during an export pass through (only
``onnx.mapping`` is visible to it then).

``mxcompat.to_onnx(model, ...)`` (also ``Module.to_onnx``, ``HybridBlock.to_onnx``) calls
MXNet's own graph converter in memory, returns the ``onnx.ModelProto`` (a file only with
``path``), replaces loss heads by their inference ops as ``to_gluon`` does, makes parameters
initializers only (MXNet's exporter also lists them as graph inputs, which stops onnxruntime
from constant-folding them), and by default runs the model in onnxruntime against MXNet.
onnx and onnxruntime are optional: ``pip install 'mxcompat[onnx]'``.

Layout: ``mxnet_exporter`` (MXNet's own exporter on today's onnx: the scope of an export, what
each release's exporter is), ``in_memory`` (``to_onnx``), ``converters`` (ours beside MXNet
1.9's, for ``to_onnx`` only, and the attribute values no converter takes), ``verify`` (the run
in onnxruntime).
"""

from .in_memory import to_onnx
from .mxnet_exporter import INSTALL_HINT

__all__ = ["to_onnx", "INSTALL_HINT"]
