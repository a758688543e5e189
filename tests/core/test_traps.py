"""The one list of legacy traps (mxcompat/_core/traps.py) agrees with the docs' Troubleshooting
page, the patches and the ``mxcompat check`` lines."""

import os

import mxcompat
from mxcompat._core import traps
from mxcompat.cli.check import runner
from tests.support.repo import ROOT


def test_the_troubleshooting_page_renders_the_list_and_holds_no_copy():
    # docs/troubleshooting.md renders traps.markdown() at build time (docs/test_built.py
    # checks every row in the built page); no page or README may keep a hand-made copy.
    from tests.support.repo import reference_directives

    assert reference_directives("troubleshooting.md") == ["traps"]
    for path in [os.path.join(ROOT, "README.md")] + [
        os.path.join(folder, name)
        for folder, _, names in os.walk(os.path.join(ROOT, "docs"))
        for name in names
        if name.endswith(".md")
    ]:
        with open(path, encoding="utf-8") as f:
            assert traps.HEADER not in f.read(), path


def test_every_patch_handles_a_trap_and_every_trap_names_a_real_patch():
    names = mxcompat.patch_names()
    assert [n for n in names if not traps.for_patch(n)] == []
    assert [t.patch for t in traps.TRAPS if t.patch is not None and t.patch not in names] == []


def test_a_trap_with_a_patch_says_so_and_one_without_says_mxcompat_leaves_it():
    for trap in traps.TRAPS:
        if trap.patch is not None:
            assert "patch `%s`" % trap.patch in trap.ours, trap
        else:
            assert trap.check is None, trap


def test_every_check_a_trap_names_exists_and_every_patch_check_is_named():
    checks = [name for name, _, _ in runner._checks]
    assert [t.check for t in traps.TRAPS if t.check is not None and t.check not in checks] == []
    named = set(t.check for t in traps.TRAPS)
    # quantize is a feature of mxcompat, not a trap of MXNet.
    assert [c for c in checks if c not in named] == ["quantize"]


def test_markdown_rows_have_three_cells():
    for line in traps.markdown().splitlines()[2:]:
        assert line.startswith("| ") and line.endswith(" |")
    assert len(traps.markdown().splitlines()) == len(traps.TRAPS) + 2
