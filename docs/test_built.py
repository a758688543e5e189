"""The built pages show the generated reference in full: every trap, patch, combination,
variable, scan rule and public name, as the code says (run after the build, tox -e docs)."""

import html
import os
import re

import pytest

import mxcompat
from mxcompat._core import registry, settings, traps, versions


def _text(built_html, page):
    with open(os.path.join(built_html, page), encoding="utf-8") as f:
        raw = f.read()
    body = raw.split('<article role="main"', 1)[-1]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def _plain(markdown_text):
    # A cell's Markdown as the page shows it: code without its backticks, no emphasis marks
    # outside code, links as their text.
    out = []
    for part in re.split(r"(``.*?``|`[^`]*`)", markdown_text):
        if part.startswith("`"):
            out.append(part.strip("`").strip())
        else:
            part = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", part).replace("\\|", "|")
            out.append(re.sub(r"(?<![\w*])\*([^*]+)\*(?![\w*])", r"\1", part))
    return " ".join("".join(out).split())


def _rows(built_html, page):
    with open(os.path.join(built_html, page), encoding="utf-8") as f:
        return len(re.findall(r"<tr", f.read()))


def _squeeze(text):
    # Rendering puts spaces around inline code; compare without any.
    return re.sub(r"[\s`]+", "", text)


def test_troubleshooting_shows_every_trap(built_html):
    page = _squeeze(_text(built_html, "troubleshooting.html"))
    for trap in traps.TRAPS:
        for cell in (trap.symptom, trap.cause, trap.ours):
            assert _squeeze(_plain(cell)) in page, cell
    assert _rows(built_html, "troubleshooting.html") == len(traps.TRAPS) + 1


def test_patches_shows_every_patch_with_its_doc_and_switch(built_html):
    page = _squeeze(_text(built_html, "patches.html"))
    for name in mxcompat.patch_names():
        patch = registry.get(name)
        assert _squeeze(patch.doc) in page, name
        assert _squeeze("%s=%s" % (settings.DISABLE_PATCHES, name)) in page, name
    assert _rows(built_html, "patches.html") == len(mxcompat.patch_names()) + 1


def test_supported_versions_shows_every_combination_and_its_install_lines(built_html):
    page = _squeeze(_text(built_html, "supported-versions.html"))
    for c in versions.COMBINATIONS:
        assert _squeeze(c.name) in page
        for line in c.install_lines():
            assert _squeeze(line) in page, c.name
    assert _rows(built_html, "supported-versions.html") == len(versions.COMBINATIONS) + 1
    assert _squeeze("mxcompat supports mxnet %s" % mxcompat.SUPPORTED) in page


def test_environment_shows_every_variable(built_html):
    page = _squeeze(_text(built_html, "environment.html"))
    for v in settings.VARIABLES:
        assert _squeeze("%s=%s" % (v.name, v.example)) in page
        assert _squeeze(v.effect) in page, v.name
    assert _rows(built_html, "environment.html") == len(settings.VARIABLES) + 1


def test_scan_shows_every_rule(built_html):
    rules = pytest.importorskip("mxcompat.cli.scan.rules", reason="the scan extra (libcst)")
    page = _squeeze(_text(built_html, "scan.html"))
    for rule in rules.RULES:
        assert _squeeze("%s %s %s" % (rule.code, rule.name, rule.summary)) in page, rule.code


def test_api_documents_every_public_name_from_its_docstring(built_html):
    page = _text(built_html, "api.html")
    for name in mxcompat.__all__:
        if name == "__version__":
            continue
        assert _squeeze("mxcompat." + name) in _squeeze(page), name
        doc = getattr(mxcompat, name).__doc__
        if callable(getattr(mxcompat, name)):
            assert doc, "mxcompat.%s has no docstring" % name
            first = _plain(doc.strip().split("\n\n")[0].replace("``", "`"))
            assert _squeeze(first)[:40] in _squeeze(page), name


def test_cli_shows_every_command_with_its_help(built_html):
    from mxcompat import cli

    page = _squeeze(_text(built_html, "cli.html"))
    commands = list(cli.COMMANDS)
    assert "run" in commands and "scan" in commands
    for command in commands:
        assert _squeeze("usage: mxcompat %s" % command) in page, command


def test_the_pytorch_guide_shows_every_operator_to_torch_maps(built_html):
    from mxcompat.torch import codegen

    page = _text(built_html, "guide/leaving-for-pytorch.html")
    table = page.split("The operators it maps", 1)[1].split("How far it is tested", 1)[0]
    shown = set(re.findall(r"\b[A-Za-z_][\w]*\b", table))
    assert set(codegen.SUPPORTED) <= shown
    for family in codegen.by_family():
        assert _squeeze(family) in _squeeze(table), family
