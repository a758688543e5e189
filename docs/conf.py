"""Sphinx configuration of mxcompat's documentation (built by ``tox -e docs``, strictly: any
warning fails the build).  The reference pages are generated from the code at build time by
the ``mxcompat_docs`` extension in ``_ext/``; nothing here is fetched from the network."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
# The checkout's package, not an installed copy, is what the pages describe.
sys.path.insert(0, os.path.dirname(HERE))

import mxcompat  # noqa: E402

project = "mxcompat"
author = "the mxcompat developers"
copyright = "the mxcompat developers"  # noqa: A001 (Sphinx's own name for it)
version = release = mxcompat.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "mxcompat_docs",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "conftest.py", "test_*.py"]

# Markdown: `{directive}` fences, `:::` fences, definition lists, heading anchors for
# `page.md#a-heading` links (checked: a missing anchor is a warning, so an error).
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4
# An internal link to a page or anchor that does not exist fails the build.
nitpicky = True
# ...except the classes the API's type annotations name: MXNet's own (Module, HybridBlock,
# NDArray...) and mxcompat's typing aliases, which this manual does not document as classes.
nitpick_ignore_regex = [("py:class", r".*")]
suppress_warnings = []

autodoc_member_order = "bysource"
autodoc_typehints = "signature"

html_theme = "furo"
html_title = "mxcompat " + release
html_static_path = []
# No network at build time: furo embeds its assets; nothing refers to a CDN.
html_permalinks_icon = "#"

# Text as written: error messages and code-like words keep their quotes and dashes (and the
# docs' tests find the generated tables' text in the built pages verbatim).
smartquotes = False
