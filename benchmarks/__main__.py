"""``python -m benchmarks [--quick] [--json FILE]``: see benchmarks/run.py."""
import sys

from .run import main

sys.exit(main())
