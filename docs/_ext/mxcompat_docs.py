"""The documentation's generated reference: tables rendered from mxcompat's own data at build
time, so no page holds a hand-kept copy that could drift from the code.

In a page::

    ```{mxcompat-reference} patches
    ```

renders one of ``REFERENCES`` (the patch list from the registry, the trap list, the supported
combinations, the environment variables, mxcompat scan's rules, the public API) as Markdown,
parsed in place like the page's own text.  The renderers are plain functions, so the docs'
tests read exactly what the pages show.
"""

import inspect

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

import mxcompat
from mxcompat._core import facts, registry, settings, traps, versions


def _release(version):
    return ".".join(str(part) for part in version)


def tested_releases():
    """The oldest and newest MXNet release the supported combinations install."""
    from packaging.version import Version

    found = sorted(set(c.mxnet for c in versions.COMBINATIONS), key=Version)
    return Version(found[0]).base_version, Version(found[-1]).base_version


def _condition(when):
    # The condition's docstring, first sentence, without its "Whether": what the page says.
    doc = inspect.getdoc(when)
    if not doc:
        raise ValueError(
            "patch condition %s.%s has no docstring: the patch list says what it asks"
            % (when.__module__, when.__qualname__)
        )
    first = doc.split(".  ")[0].split("\n\n")[0].replace("\n", " ").rstrip(".")
    if first.startswith("Whether "):
        first = first[len("Whether ") :]
    return first


def releases(patch):
    """Which MXNet releases (and which processes) a patch applies to, in words."""
    low, high = tested_releases()
    if patch.since is None:
        text = "every release (%s … %s)" % (low, high)
    else:
        text = "%s and later (… %s)" % (_release(patch.since), high)
    if patch.when is not None:
        text += "; only where %s" % _condition(patch.when)
    return text


def _cell(text):
    # Plain text (a patch's doc, a variable's effect) in a Markdown cell: shown as written,
    # never read as emphasis (`__array__`), a tag or a column break.
    text = " ".join(text.split())
    for special in "\\`*_<[|":
        text = text.replace(special, "\\" + special)
    return text


def patches_table():
    """Every patch, in stacking order: name, what it fixes, releases, how to turn it off."""
    mxcompat.patch_names()  # registers every patch (imports no mxnet)
    rows = [
        "| patch | what it fixes | applies to | traps | turn it off |",
        "|---|---|---|---:|---|",
    ]
    for name in registry.ORDER:
        patch = registry.get(name)
        off = "`%s=%s`, `mxcompat run --no-patch %s` or `mxcompat.unpatch(%r)`" % (
            settings.DISABLE_PATCHES,
            name,
            name,
            name,
        )
        rows.append(
            "| `%s` | %s | %s | %d | %s |"
            % (name, _cell(patch.doc), releases(patch), len(traps.for_patch(name)), off)
        )
    return "\n".join(rows) + "\n"


def versions_table():
    """Every combination the test matrix and ``mxcompat matrix`` run."""
    return versions.markdown()


def modern_versions_table():
    """The combinations on today's stack (Python 3.12+)."""
    return versions.markdown([c for c in versions.COMBINATIONS if c.modern])


def supported_line():
    """One sentence: the supported range and the Pythons and NumPys tested."""
    pythons = sorted(set(c.python for c in versions.COMBINATIONS), key=facts.parse_version)
    low, high = tested_releases()
    return "mxcompat supports `mxnet %s` (%s … %s), on Python %s … %s.\n" % (
        facts.SUPPORTED,
        low,
        high,
        pythons[0],
        pythons[-1],
    )


def settings_table():
    """Every ``MXCOMPAT_*`` variable mxcompat reads."""
    rows = ["| variable | kind | effect | in `mxcompat --help` |", "|---|---|---|---|"]
    for v in settings.VARIABLES:
        rows.append(
            "| `%s=%s` | %s | %s | %s |"
            % (v.name, v.example, v.kind, _cell(v.effect), "yes" if v.help else "no")
        )
    return "\n".join(rows) + "\n"


def traps_table():
    return traps.markdown()


def scan_rules_table():
    from mxcompat.cli.scan import rules

    return rules.markdown()


def api():
    """An autodoc entry for every public name (``mxcompat.__all__``), in its order."""
    out = []
    for name in mxcompat.__all__:
        if name == "__version__":
            continue
        obj = getattr(mxcompat, name)
        if inspect.isclass(obj):
            out.append(".. autoclass:: mxcompat.%s\n" % name)
        elif callable(obj):
            out.append(".. autofunction:: mxcompat.%s\n" % name)
        else:
            # A constant has no docstring of its own: its value, and what it is for.
            out.append(
                ".. py:data:: mxcompat.%s\n   :value: %r\n\n   %s\n" % (name, obj, CONSTANTS[name])
            )
    # Autodoc writes reStructuredText: parsed as such, not as the page's Markdown.
    return "```{eval-rst}\n" + "\n".join(out) + "```\n"


CONSTANTS = {
    "SUPPORTED": "The MXNet releases mxcompat patches, as a PEP 440 specifier; with another "
    "release it warns once and patches nothing.",
}


def facts_table():
    """Every "changed in MXNet 1.x" fact of ``_core/facts.py``: its name, the release it changed
    in, and the comment above it, which says what was seen (the one home of these facts)."""
    import ast

    with open(facts.__file__, encoding="utf-8") as f:
        source = f.read()
    lines = source.splitlines()
    rows = ["| fact | since | what the code relies on |", "|---|---|---|"]
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name) or not target.id.isupper():
            continue
        value = getattr(facts, target.id, None)
        comment = []
        at = node.lineno - 2
        while at >= 0 and lines[at].lstrip().startswith("#"):
            comment.insert(0, lines[at].lstrip()[1:].strip())
            at -= 1
        if not comment or target.id in ("MIN_VERSION", "MAX_VERSION", "SUPPORTED"):
            continue
        if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
            since = _release(value)
        else:
            since = "(see the comment)"
        rows.append("| `%s` | %s | %s |" % (target.id, since, _cell(" ".join(comment))))
    return "\n".join(rows) + "\n"


def _help_of(argv):
    import contextlib
    import io
    import os

    from mxcompat import cli

    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: one width for every build
    try:
        with contextlib.redirect_stdout(out):
            try:
                cli.main(argv + ["--help"])
            except SystemExit:
                pass
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue().rstrip("\n")


def cli_reference():
    """``mxcompat --help`` and each command's ``--help``, as the installed CLI prints them."""
    from mxcompat import cli

    out = ["## `mxcompat`\n", "```text\n%s\n```\n" % _help_of([])]
    for command in cli.COMMANDS:
        out.append("## `mxcompat %s`\n" % command)
        out.append("```text\n%s\n```\n" % _help_of([command]))
    return "\n".join(out)


def suite_allowed_table():
    """The MXNet-suite runner's allowed differences (``ALLOWED`` of its ``releases.py``): each
    test id, the releases it is allowed for, the test's own line and NumPy's change."""
    from tools.mxnet_suite import releases as suite

    grouped = {}
    for tag, ids in suite.ALLOWED.items():
        for tid, allowed in ids.items():
            grouped.setdefault((tid, allowed), []).append(tag)
    rows = [
        "| test | releases | the test's line | what the test's own code does | NumPy's change |"
    ]
    rows.append("|---|---|---|---|---|")
    for (tid, allowed), tags in sorted(grouped.items(), key=lambda kv: (kv[0][0], kv[1])):
        rows.append(
            "| `%s` | %s | `%s` | %s %s | %s |"
            % (
                tid,
                ", ".join(tags),
                allowed.line,
                allowed.code,
                allowed.why.replace("|", "\\|"),
                allowed.change.replace("|", "\\|"),
            )
        )
    return "\n".join(rows) + "\n"


def suite_deselected_table():
    """The ids the MXNet-suite runner does not run (``DESELECT``), each with its reason."""
    from tools.mxnet_suite import releases as suite

    rows = ["| test | why it is not run |", "|---|---|"]
    rows += ["| `%s` | %s |" % (t, _cell(r)) for t, r in sorted(suite.DESELECT.items())]
    return "\n".join(rows) + "\n"


def torch_operators_table():
    """Every MXNet operator ``to_torch`` maps, by family, from the emitters' registry; those
    written as a stock layer where their settings are the layer's marked."""
    from mxcompat.torch import codegen
    from mxcompat.torch.nodes import LAYERS

    rows = ["| family | operators |", "|---|---|"]
    for family, ops in codegen.by_family().items():
        names = ", ".join("`%s`%s" % (op, " (layer)" if op in LAYERS else "") for op in ops)
        rows.append("| %s | %s |" % (_cell(family), names))
    return "\n".join(rows) + "\n"


REFERENCES = {
    "torch-operators": torch_operators_table,
    "suite-allowed": suite_allowed_table,
    "suite-deselected": suite_deselected_table,
    "cli": cli_reference,
    "facts": facts_table,
    "patches": patches_table,
    "traps": traps_table,
    "versions": versions_table,
    "versions-modern": modern_versions_table,
    "supported": supported_line,
    "settings": settings_table,
    "scan-rules": scan_rules_table,
    "api": api,
}


class Reference(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        name = self.arguments[0]
        if name not in REFERENCES:
            raise self.error(
                "unknown reference %r; known: %s" % (name, ", ".join(sorted(REFERENCES)))
            )
        text = REFERENCES[name]()
        # Rebuilt whenever the data it comes from changes.
        for module in (registry, settings, traps, versions, facts):
            self.env.note_dependency(module.__file__)
        holder = nodes.container()
        self.state.nested_parse(
            StringList(text.splitlines(), source="mxcompat-reference " + name),
            self.content_offset,
            holder,
        )
        return holder.children


class OtherPages(SphinxDirective):
    """A toctree of every page no other toctree of this page lists (a page added to docs/ is
    in the manual at once, listed once; the build fails on a page in no toctree)."""

    has_content = False

    def run(self):
        import re

        with open(self.env.doc2path(self.env.docname), encoding="utf-8") as f:
            source = f.read()
        listed = set()
        for block in re.findall(r"```\{toctree\}\n(.*?)```", source, re.S):
            listed.update(
                line.strip() for line in block.splitlines() if line.strip() and line[0] != ":"
            )
        others = sorted(d for d in self.env.found_docs if d not in listed | {self.env.docname})
        if not others:
            return []
        text = "```{toctree}\n:caption: More\n:maxdepth: 1\n\n%s\n```\n" % "\n".join(others)
        holder = nodes.container()
        self.state.nested_parse(StringList(text.splitlines()), self.content_offset, holder)
        return holder.children


def setup(app):
    app.add_directive("mxcompat-reference", Reference)
    app.add_directive("mxcompat-other-pages", OtherPages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
