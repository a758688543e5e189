"""The checkout the tests run from: its root, and what its documentation pages generate."""

import os
import re

# The repository's root (this file sits two folders deeper: tests/support/).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def reference_directives(page):
    """The generated tables a documentation page shows (its ``mxcompat-reference`` directives,
    in order): the docs build renders each from the code, so the page can hold no copy."""
    with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as f:
        return re.findall(r"^```\{mxcompat-reference\} ([\w-]+)\s*$", f.read(), re.M)
