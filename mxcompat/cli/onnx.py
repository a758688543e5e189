"""``mxcompat onnx PREFIX EPOCH --input-shape ...``: a checkpoint to a verified ONNX file."""

import argparse
import os
import sys

from .. import onnx as onnx_export


def parse_shape(text):
    """``--input-shape 1,3,224,224`` as a tuple of positive ints (argparse's type)."""
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError("%r is not a shape like 1,3,224,224" % text)
    return shape


def main(args):
    """Run ``mxcompat onnx`` with its parsed ``args``; the exit status."""
    import warnings

    files = ["%s-symbol.json" % args.prefix, "%s-%04d.params" % (args.prefix, args.epoch)]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        # MXNet's own error here is a C++ stack trace.
        sys.stderr.write(
            "mxcompat onnx: no checkpoint %s, epoch %d: %s not found\n"
            % (args.prefix, args.epoch, " and ".join(missing))
        )
        return 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import mxnet as mx
        symbol, arg_params, aux_params = mx.model.load_checkpoint(args.prefix, args.epoch)
        path = args.output or args.prefix + ".onnx"
        model = onnx_export.to_onnx(
            (symbol, arg_params, aux_params),
            args.input_shape,
            path=path,
            opset=args.opset,
            verify=not args.no_verify,
        )
    except (
        OSError,
        ImportError,
        NotImplementedError,
        ValueError,
        TypeError,
        AssertionError,
    ) as exc:
        sys.stderr.write("mxcompat onnx: %s\n" % exc)
        return 1
    except Exception as exc:
        # MXNetError and the like: one line, as above, with the type that says whose it is.
        sys.stderr.write("mxcompat onnx: %s: %s\n" % (type(exc).__name__, exc))
        return 1
    sys.stdout.write(
        "wrote %s: opset %d, %d nodes, inputs %s%s\n"
        % (
            path,
            model.opset_import[0].version,
            len(model.graph.node),
            ", ".join(i.name for i in model.graph.input),
            ""
            if args.no_verify
            else "; onnxruntime %s agrees with MXNet %s"
            % (sys.modules["onnxruntime"].__version__, mx.__version__),
        )
    )
    return 0
