"""What every rule of ``mxcompat scan`` is built from: the registry of rules (``@rule``), the
traps no source line shows, and the helpers that read a libcst node."""

import collections

import libcst as cst

from ...._core import traps

Rule = collections.namedtuple("Rule", "code name node_type trap summary fixable check")
Finding = collections.namedtuple("Finding", "code message node fix")

RULES = []

# Traps no source line shows: they depend on the installed stack or on what a run does, and
# the pytest plugin's "traps handled" list or `mxcompat check` finds them instead.
RUNTIME_ONLY = {
    ("labels", "UserWarning: You created Module"): "a warning MXNet prints at run time",
    ("labels", "label_names=['label']"): "the symbol's label name is known only at run time",
    ("numpy_names", "has no attribute 'bool'"): "MXNet's own code on the installed NumPy",
    ("numpy_names", "np.PZERO"): "MXNet's own code on the installed NumPy",
    ("distutils", "at `import mxnet`"): "MXNet's own import on the installed Python",
    ("numpy2", "Invalid Parameter format"): "NumPy scalars reach MXNet at run time",
    ("convert", "mod.save_params"): "which prefixes differ is known only at run time",
    ("frozen_statistics", "BatchNorm running mean"): "training moves them; no line says so",
    ("fixed_param_names", "module._fixed_param_names"): "only wrong together with freeze()",
    ("int_division", "the same death after"): "the divisor's values are known at run time",
    ("bfloat16_name", "not understood"): "whether ml_dtypes is loaded, at run time",
    ("unbound_get_params", "after `Module.load"): "fixed by mxcompat on every release",
    ("unbound_get_params", "never initialised"): "a run-time state",
    ("trainer_kvstore_init", "distributed Gluon job"): "a race between workers",
    ("dataloader_teardown", "multi-worker"): "a race in the standard library's Pool",
    ("dataloader_start_method", "Python 3.14+ on Linux"): "the interpreter's default start method",
    ("dataloader_spawn", "set_start_method('spawn')"): "the start method chosen at run time",
    ("exec_stack", "cannot enable executable stack"): "the installed library and glibc",
    ("scipy_chisquare", "sum of the observed"): "MXNet's own code on the installed SciPy",
    ("cuda_libs", "cannot open shared object file"): "the host's CUDA libraries",
    ("gpu_arch", "NVRTC Compilation failed"): "the GPU the code runs on",
    ("onnx", "Onnx and protobuf"): "the installed onnx",
    ("ndarray_to_numpy", "mx.test_utils.same"): "the installed NumPy",
    ("ndarray_to_numpy", "Could not convert"): "the installed NumPy",
    ("python_oo", "sequence item 0"): "the interpreter's -OO flag",
    ("kvstore_server", "kvstore server's port"): "what reaches a server's port at run time",
    ("operator_cache", "takes 0.7"): "the cost of every `import mxnet`, in every process",
    ("checked_loads", "the process dies"): "the bytes of the files loaded at run time",
    (None, "Error in sitecustomize"): "the environment of a child process",
    (None, "printed twice"): "an older mxcompat",
    (None, "mxcompat's import hook"): "an older mxcompat",
    (None, "split_and_load"): "the release's documented behaviour",
    (None, "for a `.lst` that an earlier Python"): "a file's bytes and the locale that wrote it",
}


def find_trap(key):
    """The one entry of ``traps.TRAPS`` that ``key`` (patch, words of the symptom) names."""
    patch, words = key
    found = [t for t in traps.TRAPS if t.patch == patch and words in t.symptom]
    if len(found) != 1:
        raise LookupError("%r names %d traps" % (key, len(found)))
    return found[0]


def rule(code, name, node_type, summary, trap=None, fixable=False):
    def register(check):
        RULES.append(Rule(code, name, node_type, trap, summary, fixable, check))
        return check

    return register


# --- helpers over nodes ------------------------------------------------------------------------


def dotted(node):
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else base + "." + node.attr.value
    return None


def keyword(call, name):
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def string_value(node):
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    return None


def number_value(node):
    negative = False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node, negative = node.expression, True
    if isinstance(node, (cst.Integer, cst.Float)):
        value = node.evaluated_value
        return -value if negative else value
    return None


def markdown():
    """The rules table of the docs' scan page (docs/scan.md renders it at build time)."""
    rows = ["| code | name | finds | trap | --fix |", "|---|---|---|---|---|"]
    for r in RULES:
        trap = find_trap(r.trap).symptom if r.trap else "(not in the trap list)"
        rows.append(
            "| %s | `%s` | %s | %s | %s |"
            % (r.code, r.name, r.summary, trap.replace("|", "\\|"), "yes" if r.fixable else "no")
        )
    return "\n".join(rows) + "\n"
