"""The examples of the Markdown files beside the docs (README.md, CONTRIBUTING.md,
CHANGELOG.md) run as the pages' do (conftest.py's parsers), each file in a folder of its own."""

import os

import pytest

from docs.conftest import ROOT, SYBIL, _page_setup, _page_teardown

PAGES = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]


def _examples():
    for page in PAGES:
        document = SYBIL.parse(__import__("pathlib").Path(os.path.join(ROOT, page)))
        for example in document:
            yield pytest.param(page, example, id="%s:%d" % (page, example.line))


@pytest.fixture(scope="module")
def namespaces():
    # One namespace per file, set up on its first example, torn down after the last.
    opened = {}
    yield opened
    for namespace in opened.values():
        _page_teardown(namespace)


@pytest.mark.parametrize("page, example", list(_examples()))
def test_example(page, example, namespaces):
    namespace = example.document.namespace
    if page not in namespaces:
        namespaces[page] = namespace
        _page_setup(namespace)
    os.chdir(namespace["__cwd__"])
    example.evaluate()


def test_the_readme_has_examples_that_run():
    # The seed example and the commands: a README without runnable examples fails here.
    assert [p for p in _examples() if p.values[0] == "README.md"]


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_name_files_that_exist(page):
    # Sphinx checks the docs' own links; these files are read on their own too (a forge, an
    # sdist), where a link into docs/ must name a real file.
    import re

    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert targets or page == "CHANGELOG.md"
    missing = [t for t in targets if not os.path.exists(os.path.join(ROOT, t.split("#")[0]))]
    assert missing == []


def test_the_readme_is_a_landing_page_with_the_two_commands_first():
    import re

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert len(text.splitlines()) <= 150
    first_screen = "\n".join(text.splitlines()[:40])
    commands = re.findall(r"```sh\n(.*?)\n```", first_screen, re.S)
    assert len(commands) == 2, commands
    assert "mxcompat check" in commands[0] and "install" in commands[0]
    assert commands[1].strip() == "bash .ci/run"
    # Every page of the manual is reachable from the README's links or the docs' index.
    assert "docs/index.md" in text
