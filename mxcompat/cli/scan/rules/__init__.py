"""The rules of ``mxcompat scan``: each legacy trap that can be seen in source, as a check over
one libcst node.

A rule is a function registered with ``@rule(code, node type, ...)``: given the node and the
scan's context (the names bound so far in the enclosing scope, the code of a node, its
position), it returns the findings, each with the fix when the fix is certain (the rewritten
node), else without one.  ``trap`` names the entry of the one trap list (``mxcompat._core.traps``)
the rule finds in code: the patch and a few words of its symptom, checked by a test.
"""

# The rules register in the order below, which is the order scan reports them in.
from . import models, numeric, threads  # noqa: F401
from .base import (  # noqa: F401
    RULES,
    RUNTIME_ONLY,
    Finding,
    Rule,
    dotted,
    find_trap,
    keyword,
    markdown,
    number_value,
    rule,
    string_value,
)

BY_CODE = {r.code: r for r in RULES}
