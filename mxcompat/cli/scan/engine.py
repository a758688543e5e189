"""Walking a tree, parsing each file with libcst, running the rules in one pass per file, and
applying the certain fixes (formatting and comments kept: libcst round-trips a file byte for
byte, and a fix replaces one node)."""

import collections
import os

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from . import rules
from .rules.numeric import removed_numpy_names

# Folders no one wants scanned (ruff's default excludes, and any folder holding a venv).
EXCLUDED = frozenset(
    [
        ".bzr",
        ".direnv",
        ".eggs",
        ".git",
        ".git-rewrite",
        ".hg",
        ".ipynb_checkpoints",
        ".mypy_cache",
        ".nox",
        ".pants.d",
        ".pyenv",
        ".pytest_cache",
        ".pytype",
        ".ruff_cache",
        ".svn",
        ".tox",
        ".venv",
        ".vscode",
        "__pypackages__",
        "__pycache__",
        "_build",
        "buck-out",
        "build",
        "dist",
        "node_modules",
        "site-packages",
        "venv",
    ]
)

Located = collections.namedtuple("Located", "path line column code message fixable")
FileResult = collections.namedtuple("FileResult", "path findings error new_source source")

_EMPTY = cst.Module([])


def python_files(paths):
    """Every ``.py`` file under ``paths`` (a file named explicitly is always scanned), sorted
    per folder, excluded folders skipped."""
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in EXCLUDED and not os.path.exists(os.path.join(root, d, "pyvenv.cfg"))
            )
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.join(root, name)


class _Context:
    """What a rule may ask while the scanner walks one file."""

    def __init__(self, module, source=b""):
        self.module = module
        self.source = source  # the file's bytes: a rule may look for a word before walking
        self.scopes = [{}]
        self.exports = set()
        self.numpy_aliases = {"np", "numpy"}
        self._removed = None

    def bound(self, name):
        """The value last assigned to ``name`` in the innermost scope that assigns it (so
        far, in source order), else None."""
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def code(self, node):
        return self.module.code_for_node(node)

    @staticmethod
    def code_of(node):
        # A node built by a fix belongs to no module yet.
        return _EMPTY.code_for_node(node)

    @property
    def removed_numpy_names(self):
        if self._removed is None:
            self._removed = removed_numpy_names()
        return self._removed


class _Scanner(cst.CSTVisitor):
    def __init__(self, ctx, selected):
        super().__init__()
        self.ctx = ctx
        self.found = []
        self.by_type = collections.defaultdict(list)
        for r in selected:
            types = r.node_type if isinstance(r.node_type, tuple) else (r.node_type,)
            for t in types:
                self.by_type[t].append(r)

    def on_visit(self, node):
        for r in self.by_type.get(type(node), ()):
            for finding in r.check(node, self.ctx):
                self.found.append(finding)
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            self.ctx.scopes.append({})
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            # `with tarfile.open(f) as tar:` binds tar before its body runs.
            if isinstance(node.asname.name, cst.Name):
                self.ctx.scopes[-1][node.asname.name.value] = node.item
        return True

    def on_leave(self, original_node):
        if isinstance(original_node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            self.ctx.scopes.pop()
        elif isinstance(original_node, cst.Assign):
            # Bound after the statement, as Python binds it: `x = x.astype(...)` reads the old x.
            for target in original_node.targets:
                if isinstance(target.target, cst.Name):
                    self.ctx.scopes[-1][target.target.value] = original_node.value
        elif isinstance(original_node, (cst.Import, cst.ImportFrom)):
            self._aliases(original_node)

    def _aliases(self, node):
        if isinstance(node, cst.Import):
            for alias in node.names:
                if rules.dotted(alias.name) == "numpy":
                    self.ctx.numpy_aliases.add(alias.asname.name.value if alias.asname else "numpy")


class _Fixer(cst.CSTTransformer):
    def __init__(self, replacements):
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        return self.replacements.get(original_node, updated_node)


def scan_source(source, path, selected, fix=False):
    """Scan one file's bytes: a FileResult (``error`` set for a file that does not parse;
    ``new_source`` the fixed bytes when ``fix`` and something was fixed)."""
    try:
        module = cst.parse_module(source)
    except (cst.ParserSyntaxError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        return FileResult(path, [], _parse_error(exc), None, source)
    except RecursionError:
        return FileResult(path, [], "too deeply nested to parse", None, source)
    ctx = _Context(module, source)
    scanner = _Scanner(ctx, selected)
    module.visit(scanner)
    located, replacements = [], {}
    positions = {}
    if scanner.found:
        # Positions cost more than the scan itself: computed only for a file with findings.
        # The module is ours alone, so the wrapper needs no defensive copy, and its nodes are
        # the ones the rules returned.
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    for finding in scanner.found:
        position = positions[finding.node]
        fixable = fix and finding.fix is not None and finding.node not in replacements
        if fixable:
            replacements[finding.node] = finding.fix
        located.append(
            Located(
                path,
                position.start.line,
                position.start.column + 1,
                finding.code,
                finding.message,
                finding.fix is not None,
            )
        )
    located.sort(key=lambda f: (f.line, f.column, f.code))
    new_source = None
    if replacements:
        new_source = module.visit(_Fixer(replacements)).bytes
    return FileResult(path, located, None, new_source, source)


def _parse_error(exc):
    if isinstance(exc, cst.ParserSyntaxError):
        return (exc.editor_line, exc.editor_column, "syntax error: %s" % exc.message)
    return (
        getattr(exc, "lineno", None),
        None,
        "%s: %s"
        % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else ""),
    )


def scan_paths(paths, selected, fix=False):
    for path in python_files(paths):
        with open(path, "rb") as f:
            source = f.read()
        yield scan_source(source, path, selected, fix=fix)
