"""Which NumPy names does MXNet's Python code use?  (Test helper; also a script.)

Reads every ``mxnet/**/*.py`` of an installed release with ``ast`` (never imports it), finds
the names a module binds to NumPy (``import numpy as np``, ``import numpy as _np``,
``import numpy.random as npr``, ``from numpy import random``, …) and records every attribute
chain read from them (``np.PZERO``, ``_np.random.uniform``, ``onp.linalg.norm``), every
``from numpy[.sub] import X``, ``getattr(np, "X")`` with a constant name, and the operator names
``numpy_dispatch_protocol`` looks up dynamically with ``getattr(_np, op_name)``.

``python tests/mxnet_numpy_uses.py [mxnet_dir]`` prints the chains that do not resolve on
the NumPy of the running interpreter.
"""

import ast
import os
import sys
import warnings

NUMPY = "numpy"

# numpy_dispatch_protocol.py (1.6+) registers __array_function__ overrides for each name in
# this list with getattr(numpy, name), at import time: a missing name fails `import mxnet`.
DYNAMIC_LISTS = ("_NUMPY_ARRAY_FUNCTION_LIST",)


class Use:
    __slots__ = ("chain", "path", "line")

    def __init__(self, chain, path, line):
        self.chain = chain  # ("random", "uniform") for numpy.random.uniform
        self.path = path
        self.line = line

    def __repr__(self):
        return "numpy.%s (%s:%d)" % (".".join(self.chain), self.path, self.line)


def _numpy_aliases(tree):
    """name -> the numpy module path it is bound to, for the whole file.

    Scoping is ignored (an import inside a function counts for the file): MXNet binds these
    names once per file, so the only effect is to look at a few more attributes than needed.
    A name also bound to something else in the file (e.g. ``np`` = ``mxnet.numpy``) is
    dropped, since its attributes are not NumPy's.
    """
    aliases, other = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == NUMPY or a.name.startswith(NUMPY + "."):
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:
                        aliases[NUMPY] = NUMPY  # `import numpy.linalg` binds `numpy`
                else:
                    other.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if node.level == 0 and node.module == NUMPY:
                    # `from numpy import linalg as la`: la.norm is numpy.linalg.norm
                    aliases[a.asname or a.name] = NUMPY + "." + a.name
                else:
                    other.add(a.asname or a.name)
    return {k: v for k, v in aliases.items() if k not in other}


if sys.version_info >= (3, 8):

    def _const_str(node):
        return (
            node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
        )
else:  # string literals are ast.Str up to Python 3.7

    def _const_str(node):
        return node.s if isinstance(node, ast.Str) else None


def _chain(node):
    """(base name, [attr, ...]) of ``a.b.c``, or None if the chain does not start at a name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node.id, attrs[::-1]
    return None


def uses_in_file(path, rel=None):
    with open(path, "rb") as f:
        source = f.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences in old docstrings
        tree = ast.parse(source, filename=path)
    rel = rel or path
    aliases = _numpy_aliases(tree)
    found = []

    def prefix(module):
        return tuple(module.split(".")[1:])

    # Only the outermost attribute of a chain is recorded (np.random.uniform, not np.random).
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            c = _chain(node)
            if c and c[0] in aliases:
                found.append(Use(prefix(aliases[c[0]]) + tuple(c[1]), rel, node.lineno))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and (node.module == NUMPY or node.module.startswith(NUMPY + "."))
        ):
            for a in node.names:
                if a.name != "*":
                    found.append(Use(prefix(node.module) + (a.name,), rel, node.lineno))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
        ):
            c = _chain(node.args[0])
            name = _const_str(node.args[1])
            if c and c[0] in aliases and name is not None:
                found.append(Use(prefix(aliases[c[0]]) + tuple(c[1]) + (name,), rel, node.lineno))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in DYNAMIC_LISTS for t in node.targets
        ):
            if isinstance(node.value, (ast.List, ast.Tuple)) and aliases:
                for elt in node.value.elts:
                    name = _const_str(elt)
                    if name is not None:
                        found.append(Use(tuple(name.split(".")), rel, elt.lineno))
    return found


def mxnet_dir():
    """The installed mxnet package folder, found without importing mxnet."""
    import importlib.util

    spec = importlib.util.find_spec("mxnet")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def scan(root):
    """Every NumPy use in the package at ``root`` (the ``mxnet`` folder)."""
    uses = []
    base = os.path.dirname(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                uses.extend(uses_in_file(path, os.path.relpath(path, base)))
    return uses


def resolve(module, chain):
    """Follow ``chain`` from ``module``; return the first missing dotted prefix or None.

    NumPy's own module ``__getattr__`` warns for some names (``np.object``): such warnings
    are silenced here because only existence is asked.
    """
    obj = module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, attr in enumerate(chain):
            try:
                obj = getattr(obj, attr)
            except Exception:
                return ".".join(chain[: i + 1])
    return None


def main(argv):
    import numpy

    root = argv[1] if len(argv) > 1 else mxnet_dir()
    uses = scan(root)
    missing = {}
    for use in uses:
        m = resolve(numpy, use.chain)
        if m is not None:
            missing.setdefault(m, []).append(use)
    print(
        "numpy %s: %d uses of NumPy in %s, %d distinct chains, %d missing"
        % (numpy.__version__, len(uses), root, len({u.chain for u in uses}), len(missing))
    )
    for name in sorted(missing):
        first = missing[name][0]
        print("  %-28s %3d use(s), e.g. %s:%d" % (name, len(missing[name]), first.path, first.line))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
