"""The ``mxcompat`` command: one module per subcommand, each with ``add_parser(subparsers)``
(its options and help) and ``main(args)`` (its exit status), listed once in ``COMMANDS``,
which the parser, ``mxcompat --help`` and the manual's command-line page all read.

A command whose arguments are not all its own (``run``: the script's; ``matrix``: the command
after ``--``) also has ``split_argv(argv)``: its own options for the parser, and the rest as
attributes of ``args``.  A command raises ``UsageError`` for what argparse cannot check; it is
reported as argparse reports a bad option.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from .._core import settings
from . import check, install, matrix, onnx, patches, run, scan, torch
from ._usage import UsageError

# In the order `mxcompat --help` lists them.
COMMANDS = {
    "run": run,
    "check": check,
    "patches": patches,
    "matrix": matrix,
    "onnx": onnx,
    "scan": scan,
    "install": install,
    "torch": torch,
}


def parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """``mxcompat``'s parser and each command's, by name."""
    top = argparse.ArgumentParser(
        prog="mxcompat",
        description="Keep legacy Apache MXNet 1.x code working.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=settings.HELP,
    )
    top.add_argument("--version", action="version", version="mxcompat " + __version__)
    subparsers = top.add_subparsers(dest="command", metavar="{%s}" % ",".join(COMMANDS))
    subparsers.required = True
    commands = {name: command.add_parser(subparsers) for name, command in COMMANDS.items()}
    return top, commands


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top, commands = parser()
    name = argv[0] if argv else ""
    try:
        extra: dict[str, object] = {}
        split_argv = getattr(COMMANDS.get(name), "split_argv", None)
        if split_argv is not None:
            own, extra = split_argv(argv[1:])
            argv = [name] + own
        args, unknown = top.parse_known_args(argv)
        name = args.command
        if unknown:
            # Said by the command's parser, with its usage (argparse's top parser would
            # show mxcompat's).
            raise UsageError("unrecognized arguments: %s" % " ".join(unknown))
        vars(args).update(extra)
        return COMMANDS[name].main(args)
    except UsageError as exc:
        commands[name].error(str(exc))
