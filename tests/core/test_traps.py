"""The one list of legacy traps (mxcompat/_core/traps.py) agrees with the README, the patches and
the ``mxcompat check`` lines."""

import os

from conftest import ROOT

import mxcompat
from mxcompat._core import traps as _traps
from mxcompat.cli import check

README = os.path.join(ROOT, "README.md")


def test_readme_troubleshooting_table_is_the_list():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    start = text.index(_traps.HEADER)
    end = text.index("\n\n", start) + 1
    # Regenerate with: python -m mxcompat._core.traps README.md
    assert text[start:end] == _traps.markdown()


def test_every_patch_handles_a_trap_and_every_trap_names_a_real_patch():
    names = mxcompat.patch_names()
    assert [n for n in names if not _traps.for_patch(n)] == []
    assert [t.patch for t in _traps.TRAPS if t.patch is not None and t.patch not in names] == []


def test_a_trap_with_a_patch_says_so_and_one_without_says_mxcompat_leaves_it():
    for trap in _traps.TRAPS:
        if trap.patch is not None:
            assert "patch `%s`" % trap.patch in trap.ours, trap
        else:
            assert trap.check is None, trap


def test_every_check_a_trap_names_exists_and_every_patch_check_is_named():
    checks = [name for name, _, _ in check._checks]
    assert [t.check for t in _traps.TRAPS if t.check is not None and t.check not in checks] == []
    named = set(t.check for t in _traps.TRAPS)
    # quantize is a feature of mxcompat, not a trap of MXNet.
    assert [c for c in checks if c not in named] == ["quantize"]


def test_markdown_rows_have_three_cells():
    for line in _traps.markdown().splitlines()[2:]:
        assert line.startswith("| ") and line.endswith(" |")
    assert len(_traps.markdown().splitlines()) == len(_traps.TRAPS) + 2
