"""``mxcompat torch PREFIX EPOCH -o DIR``: a checkpoint as PyTorch code and weights;
``--check`` lists the operators the model needs and which are not mapped (no torch needed)."""

from __future__ import annotations

import argparse
import os
import sys

from .._core.conversion import checkpoint_files, missing_checkpoint
from ._usage import conversion_failed, parse_shape


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``torch`` command's parser."""
    parser = subparsers.add_parser(
        "torch",
        help="convert a checkpoint to PyTorch: model.py (the model's structure, stock torch "
        "layers) and its weights, verified node by node; --check lists what it needs, "
        "without torch",
        description="Convert a checkpoint (PREFIX-symbol.json, PREFIX-EPOCH.params) to a "
        "PyTorch module: DIR/model.py (the class MXNetModel and the classes of its blocks, "
        "as the parameters' names nest), DIR/mxnet_ops/ (MXNet's operators in torch, which "
        "model.py imports), the weights (DIR/weights.safetensors) and each weight's MXNet "
        "name (DIR/mxnet_names.json).  Needs torch and "
        "safetensors: pip install 'mxcompat[torch]'; MXNet only to verify (here, or with "
        "--verify-with).",
    )
    parser.add_argument("prefix", metavar="PREFIX")
    parser.add_argument("epoch", metavar="EPOCH", type=int)
    parser.add_argument(
        "-o", "--output", metavar="DIR", help="where to write (default: PREFIX-torch)"
    )
    parser.add_argument(
        "--input-shape",
        action="append",
        metavar="N,C,H,W",
        type=parse_shape,
        help="an input's shape, to verify the module node by node (once per input, in order)",
    )
    parser.add_argument(
        "--verify-with",
        metavar="PYTHON",
        help="verify node by node with this interpreter's MXNet (one that has mxnet, and "
        "mxcompat importable: e.g. PYTHONPATH set to the folder mxcompat is installed in); "
        "by default with this one's, when MXNet is installed here",
    )
    parser.add_argument(
        "--states",
        metavar="FILE",
        help="also write the optimizer, resumed from this states file (Trainer.save_states, "
        "read without MXNet): DIR/mxnet_optim.py and DIR/optimizer.pt, which "
        "mxnet_optim.load(model, path) reads",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only list the operators the model uses and which the converter does not map",
    )
    return parser


def _check(prefix, epoch, symbol_file, params_file):
    """The operators' table; the .params file's names against the graph when it is there."""

    from ..formats.checkpoint import CheckpointError, read_symbol
    from ..torch import codegen

    try:
        graph = read_symbol(symbol_file)
        if os.path.isfile(params_file):
            from ..formats.checkpoint import Checkpoint

            Checkpoint(prefix, epoch)
    except (CheckpointError, ValueError, OSError) as exc:
        sys.stderr.write("mxcompat torch: %s\n" % exc)
        return 1
    nodes, _ = codegen.load(graph)
    ops, missing = codegen.needed(nodes)
    for op in sorted(ops):
        sys.stdout.write(
            "%-28s %4d node(s)  %s\n" % (op, len(ops[op]), "NOT MAPPED" if op in missing else "ok")
        )
    if missing:
        sys.stdout.write(
            "%d operator(s) not mapped: %s\n" % (len(missing), ", ".join(sorted(missing)))
        )
        return 1
    sys.stdout.write("every operator is mapped (attributes are checked when converting)\n")
    return 0


def main(args: argparse.Namespace) -> int:
    """Run ``mxcompat torch`` with its parsed ``args``; the exit status."""
    import warnings

    from .._core.log import MXCompatWarning

    files = checkpoint_files(args.prefix, args.epoch)
    missing = missing_checkpoint(args.prefix, args.epoch, files[:1] if args.check else files)
    if missing:
        sys.stderr.write("mxcompat torch: %s\n" % missing)
        return 1
    if args.check:
        return _check(args.prefix, args.epoch, *files)
    if args.verify_with and not args.input_shape:
        sys.stderr.write("mxcompat torch: --verify-with needs --input-shape (what to run)\n")
        return 1
    try:
        from .._core.conversion import mxnet_importable

        here = args.input_shape and args.verify_with is None
        if mxnet_importable() and (args.states is not None or here):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                import mxnet as mx  # noqa: F401 (loaded with the patches)
        from ..torch.export import write_model

        out = args.output or args.prefix + "-torch"
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", MXCompatWarning)
            written, weights_note = write_model(
                (args.prefix, args.epoch),
                out,
                args.input_shape,
                states=args.states,
                verify_with=args.verify_with,
            )
        for w in said:  # the command's own words, one line each
            if issubclass(w.category, MXCompatWarning):
                sys.stderr.write("mxcompat torch: %s\n" % str(w.message).split(": ", 1)[-1])
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    except Exception as exc:  # whatever it is, said as the command's error
        return conversion_failed("torch", exc)
    sys.stdout.write("wrote %s%s\n" % (", ".join(written), weights_note))
    return 0
