"""``python -m mxcompat.cli.scan.rules``: the rules table docs/scan.md shows."""

import sys

from . import markdown

sys.stdout.write(markdown())
