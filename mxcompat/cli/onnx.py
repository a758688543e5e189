"""``mxcompat onnx PREFIX EPOCH --input-shape ...``: a checkpoint to a verified ONNX file."""

from __future__ import annotations

import argparse
import sys

from .. import onnx as onnx_export
from .._core.conversion import missing_checkpoint
from ._usage import conversion_failed, parse_shape


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "onnx",
        help="convert a checkpoint (PREFIX-symbol.json, PREFIX-EPOCH.params) to ONNX "
        "with MXNet's own exporter, verified in onnxruntime",
        description="Convert a checkpoint to ONNX with MXNet's own exporter (loss heads become "
        "their inference ops), then run it in onnxruntime against MXNet.  Needs "
        "onnx and onnxruntime: " + onnx_export.INSTALL_HINT,
    )
    parser.add_argument("prefix", metavar="PREFIX")
    parser.add_argument("epoch", metavar="EPOCH", type=int)
    parser.add_argument(
        "--input-shape",
        action="append",
        required=True,
        metavar="N,C,H,W",
        type=parse_shape,
        help="the shape of the model's input, e.g. 1,3,224,224; "
        "once per input, in the symbol's order",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="where to write the model (default: PREFIX.onnx)"
    )
    parser.add_argument(
        "--opset",
        type=int,
        metavar="N",
        help="ONNX opset (default: the newest this MXNet's exporter writes)",
    )
    parser.add_argument(
        "--no-verify", action="store_true", help="do not run the model in onnxruntime against MXNet"
    )
    return parser


def main(args: argparse.Namespace) -> int:
    """Run ``mxcompat onnx`` with its parsed ``args``; the exit status."""
    import warnings

    missing = missing_checkpoint(args.prefix, args.epoch)
    if missing:
        sys.stderr.write("mxcompat onnx: %s\n" % missing)
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
    except Exception as exc:  # whatever it is, said as the command's error
        return conversion_failed("onnx", exc)
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
