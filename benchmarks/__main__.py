"""``python -m benchmarks [--quick] [--only SECTION] [--json FILE]``: see benchmarks/cli.py."""

import sys

from .cli import main

sys.exit(main())
