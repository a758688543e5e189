"""Hand-written tables of the guides that name what the code holds: kept equal to it."""

import os
import re

from docs.conftest import DOCS


def test_the_numpy_names_table_lists_exactly_the_names_mxcompat_restores():
    from mxcompat.patches import numpy_names

    with open(os.path.join(DOCS, "guide", "numpy2.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("| name | value | removed in NumPy |", 1)[1].split("\n\n", 1)[0]
    shown = []
    for row in table.splitlines()[2:]:
        first = row.strip("|").split("|")[0]
        shown += [re.sub(r"\(.*\)", "", name) for name in re.findall(r"`([^`]+)`", first)]
    assert sorted(shown) == sorted(name for name, _ in numpy_names.NAMES)
