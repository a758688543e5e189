"""``mxcompat check``: a tiny real scenario per feature on the installed MXNet.

Each check returns a short detail or raises ``Skip(reason)``; anything else it raises is a
failure.  One line per check, then the versions; exit 0 when every applicable check passed.
"""

from __future__ import annotations

import argparse

# Importing the scenarios registers every check, in the order they run.
# isort: off
from . import scenarios  # noqa: F401
from . import numpy_scenarios  # noqa: F401
from . import model_scenarios  # noqa: F401
from . import gpu_scenarios  # noqa: F401

# isort: on
from .runner import report


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check", help="run a tiny real scenario per feature on this MXNet"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser


def main(args: argparse.Namespace) -> int:
    return report(as_json=args.json)
