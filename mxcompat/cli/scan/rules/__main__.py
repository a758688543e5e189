"""``python -m mxcompat.cli.scan.rules``: the rules table of docs/scan.md."""

import sys

from . import markdown

sys.stdout.write(markdown())
