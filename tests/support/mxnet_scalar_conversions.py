"""Where does MXNet's Python code turn a value into a Python scalar?  (Test helper; a script.)

NumPy 2.4 refuses ``int()``/``float()``/``complex()``/``operator.index()`` of an array with
ndim > 0 (NumPy 1 took its one element).  This reads every ``mxnet/**/*.py`` of an installed
release with ``ast`` (never imports it) and lists, per function, the candidates:

* ``float``/``int``/``complex``/``round``/``math.*``/``operator.index``/``range`` of an
  expression that mentions ``.asnumpy()``, ``asscalar``, a NumPy call (``np.``, ``_np.``,
  ``numpy.``) or a local name assigned from one, and ``"..." % value`` of such a value;
* ``float``/``int``/``complex`` of one of the function's own parameters, and calls of a
  parameter named ``type_`` (``_to_python_scalar(inputs, type_, name)`` in contrib's
  ``while_loop``/``cond``): a value the caller hands in, possibly a 1-element array.

The ``mx.np`` front end (``numpy/``, ``ndarray/numpy``, ``symbol/numpy``, ``numpy_extension``),
the ONNX converters, ``tools/`` and the generated operator files are left out: mx.np arrays are
MXNet's own, and the rest are scripts or reach only MXNet operators.

A candidate is identified by ``(file, function, source of the call)``, which does not move with
line numbers between releases.  ``ast.unparse`` needs Python 3.9.

``python tests/mxnet_scalar_conversions.py [mxnet_dir]`` prints them with line numbers.
"""

import ast
import os
import sys
import warnings

from .mxnet_numpy_uses import mxnet_dir  # one way to find the package for both scans

SKIPPED_PARTS = (
    "/numpy/",
    "/ndarray/numpy",
    "/symbol/numpy",
    "numpy_extension",
    "onnx",
    "/tools/",
    "/gen_",
)
CONVERSIONS = {"float", "int", "complex", "round", "range", "operator.index"}
PARAMETER_CONVERSIONS = {"float", "int", "complex"}
ARRAY_SOURCES = ("asnumpy", "asscalar", "np.", "_np.", "numpy.")


class Candidate:
    __slots__ = ("path", "function", "code", "line")

    def __init__(self, path, function, code, line):
        self.path, self.function, self.code, self.line = path, function, code, line

    @property
    def key(self):
        return (self.path, self.function, self.code)

    def __repr__(self):
        return "%s:%d %s(): %s" % (self.path, self.line, self.function, self.code)


def _mentions_array(node, names):
    text = ast.unparse(node)
    if any(source in text for source in ARRAY_SOURCES):
        return True
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _array_names(func):
    """Local names a function assigns from an expression that mentions an array source."""
    names = set()
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            text = ast.unparse(node.value)
            if any(source in text for source in ARRAY_SOURCES):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def candidates_in_file(path, rel):
    with open(path, "rb") as f:
        source = f.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences in old docstrings
        tree = ast.parse(source, filename=path)
    found = {}
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = _array_names(func)
        params = {a.arg for a in func.args.args + func.args.kwonlyargs} - {"self", "cls"}
        for node in ast.walk(func):
            hit = False
            if isinstance(node, ast.Call) and node.args:
                callee = ast.unparse(node.func)
                arg = node.args[0]
                if (callee in CONVERSIONS or callee.startswith("math.")) and _mentions_array(
                    arg, names
                ):
                    hit = True
                elif (
                    callee in PARAMETER_CONVERSIONS
                    and isinstance(arg, ast.Name)
                    and arg.id in params
                ):
                    hit = True
                elif callee == "type_" and "type_" in params:
                    hit = True
            elif (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Mod)
                and isinstance(node.left, ast.Constant)
                and isinstance(node.left.value, str)
                and _mentions_array(node.right, names)
            ):
                hit = True
            if hit:
                code = ast.unparse(node)
                # Nested functions are walked from their parents too: the innermost wins.
                found[(rel, func.name, code)] = Candidate(rel, func.name, code, node.lineno)
    return list(found.values())


def scan(root):
    """Every candidate in the package at ``root`` (the ``mxnet`` folder), keyed."""
    out = {}
    base = os.path.dirname(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if any(part in "/" + rel for part in SKIPPED_PARTS):
                continue
            for c in candidates_in_file(path, rel):
                out.setdefault(c.key, c)
    return out


def main(argv):
    root = argv[1] if len(argv) > 1 else mxnet_dir()
    found = scan(root)
    for key in sorted(found):
        print(found[key])
    print("%d candidates in %s" % (len(found), root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
