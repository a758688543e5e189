"""The last damaged checkpoints that reached NumPy or the converter: each gets one error in
mxcompat's words, naming the file and what was expected, from ``mxcompat.formats`` and from
``mxcompat torch`` (one line, exit 1), MXNet installed or not (blocked in the child here).

The files are made here byte by byte: a graph data -> FullyConnected "fc" -> Activation
"act" as MXNet 1.9.1 writes it, and its ``.params`` file in NDArray's V2 layout."""

import importlib.util
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from mxcompat.formats.checkpoint import CheckpointError, read_params, read_symbol
from tests.support.repo import ROOT

GRAPH = {
    "nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "null", "name": "fc_weight", "inputs": []},
        {"op": "null", "name": "fc_bias", "inputs": []},
        {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "3"},
         "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
        {"op": "Activation", "name": "act", "attrs": {"act_type": "relu"},
         "inputs": [[3, 0, 0]]},
    ],
    "arg_nodes": [0, 1, 2],
    "node_row_ptr": [0, 1, 2, 3, 4, 5],
    "heads": [[4, 0, 0]],
    "attrs": {"mxnet_version": ["int", 10901]},
}  # fmt: skip


def _array(shape, values=None):
    data = b"" if values is None else np.asarray(values, "<f4").tobytes()
    dims = struct.pack("<i%dq" % len(shape), len(shape), *shape)
    return struct.pack("<Ii", 0xF993FAC9, 0) + dims + struct.pack("<iii", 1, 0, 0) + data


def _params(path, arrays):
    out = [struct.pack("<QQQ", 0x112, 0, len(arrays))]
    out += [_array(shape, values) for shape, values in arrays.values()]
    out.append(struct.pack("<Q", len(arrays)))
    out += [struct.pack("<Q", len(n)) + n.encode() for n in arrays]
    with open(path, "wb") as f:
        f.write(b"".join(out))


def _checkpoint(tmp_path, name, graph=GRAPH, extra=None):
    prefix = str(tmp_path / name)
    with open(prefix + "-symbol.json", "w") as f:
        json.dump(graph, f)
    arrays = {"arg:fc_weight": ((3, 4), np.ones(12)), "arg:fc_bias": ((3,), np.zeros(3))}
    arrays.update(extra or {})
    _params(prefix + "-0000.params", arrays)
    return prefix


def _graph(**changes):
    graph = json.loads(json.dumps(GRAPH))
    for (node, position), entry in changes.get("inputs", {}).items():
        graph["nodes"][node]["inputs"][position] = entry
    if changes.get("no_row_ptr"):
        del graph["node_row_ptr"]
    return graph


def _cli_error(prefix):
    """The one line ``mxcompat torch`` says, MXNet blocked in its process."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("the command's part needs torch (the reader's error is checked above)")
    code = (
        "import sys\nsys.modules['mxnet'] = None\nfrom mxcompat.cli import main\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "torch", prefix, "0", "-o", prefix + "-out"]
        + ["--input-shape", "2,4"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert not os.path.exists(prefix + "-out")
    return proc.stderr.strip()


def test_an_empty_array_beside_a_huge_dimension(tmp_path):
    prefix = _checkpoint(tmp_path, "big", extra={"arg:extra": ((0, 2**62, 8), None)})
    message = (
        "mxcompat: %s-0000.params, at byte 156: expected an array shape NumPy can hold (its "
        "non-zero dimensions' product in bytes below 2**63), found (0, %d, 8)" % (prefix, 2**62)
    )
    with pytest.raises(CheckpointError) as err:
        read_params(prefix + "-0000.params")
    assert str(err.value) == message
    assert _cli_error(prefix) == "mxcompat torch: " + message


@pytest.mark.parametrize(
    "changes, said",
    [
        # An operator's output beyond what node_row_ptr counts for it.
        ({"inputs": {(4, 0): [3, 2, 0]}}, "node 4's input naming one of the 1 outputs of node 3"),
        # A variable's second output (a file without node_row_ptr: 0.8's form).
        (
            {"inputs": {(3, 1): [1, 1, 0]}, "no_row_ptr": True},
            "node 3's input naming one of the 1 outputs of node 1",
        ),
    ],
)
def test_an_input_naming_an_output_its_node_does_not_have(tmp_path, changes, said):
    prefix = _checkpoint(tmp_path, "outputs", _graph(**changes))
    with pytest.raises(CheckpointError) as err:
        read_symbol(prefix + "-symbol.json")
    assert str(err.value).startswith(
        "mxcompat: %s-symbol.json: expected %s, found " % (prefix, said)
    )
    assert _cli_error(prefix) == "mxcompat torch: " + str(err.value)


@pytest.mark.parametrize(
    "entry, found",
    [
        ([3, 0, 0], "node 3, itself"),  # fc reads its own output
        ([4, 0, 0], "node 4, after it"),  # fc reads act, which reads fc: a cycle
    ],
)
def test_a_cycle_or_forward_reference_says_so(tmp_path, entry, found):
    prefix = _checkpoint(tmp_path, "cycle", _graph(inputs={(3, 0): entry}))
    with pytest.raises(CheckpointError) as err:
        read_symbol(prefix + "-symbol.json")
    assert str(err.value) == (
        "mxcompat: %s-symbol.json: expected node 3's input naming a node before it (MXNet "
        "writes each node after its inputs), found %s (a cycle or a forward reference)"
        % (prefix, found)
    )
    assert _cli_error(prefix) == "mxcompat torch: " + str(err.value)


def test_a_head_naming_no_node(tmp_path):
    graph = _graph()
    graph["heads"] = [[7, 0, 0]]
    prefix = _checkpoint(tmp_path, "head", graph)
    with pytest.raises(
        CheckpointError, match=r"expected a head as \[node, output\(, version\)\] of one"
    ):
        read_symbol(prefix + "-symbol.json")


def test_an_operators_output_it_does_not_have_in_a_file_that_cannot_count_them(tmp_path):
    """0.8's form has no node_row_ptr: the reader cannot count an operator's outputs, the
    converter can (it was converted as output 0)."""
    prefix = _checkpoint(tmp_path, "old_form", _graph(inputs={(4, 0): [3, 1, 0]}, no_row_ptr=True))
    read_symbol(prefix + "-symbol.json")  # nothing to count with
    assert _cli_error(prefix) == (
        "mxcompat torch: mxcompat.to_torch: node 'act' reads output 1 of node 'fc' "
        "(op FullyConnected), which has 1"
    )
