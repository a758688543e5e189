"""A checkpoint as MXNet 0.8-0.12 wrote it, made here in that form (the form of MXNet's own
tests/python/unittest/save_000800.json): the symbol file's nodes with "param" (the operator's
settings) and "attr" (the user's: ctx_group, lr_mult, wd_mult, ARG_lr_mult), without
BatchNorm's moving mean and variance (stored in the .params file, not the graph, before 0.9),
the arrays in NDArray's oldest layout (32-bit dimensions, no magic number).  NumPy only."""

import json
import struct

import numpy as np


def var(name, attr=None):
    return {"op": "null", "param": {}, "name": name, "inputs": [], "backward_source_id": -1,
            "attr": attr or {}}  # fmt: skip


def op(op, name, inputs, param, attr=None):
    return {"op": op, "param": param, "name": name, "inputs": [[i, 0] for i in inputs],
            "backward_source_id": -1, "attr": attr or {}}  # fmt: skip


def net_0800():
    """A small convolutional network in 0.8's form: two BatchNorms (one with fix_gamma
    False and its own eps, one with the defaults), the hidden keys in each of their forms."""
    nodes = [
        var("data", {"ctx_group": "stage1", "lr_mult": "0.2"}),
        var("conv_weight", {"ctx_group": "stage1", "wd_mult": "0.3", "weight_lr_mult": "1.2"}),
        var("conv_bias", {"ctx_group": "stage1"}),
        op("Convolution", "conv", [0, 1, 2],
            {"kernel": "(3, 3)", "pad": "(1, 1)", "num_filter": "4", "no_bias": "False"},
            {"ctx_group": "stage1", "weight_lr_mult": "1.2", "bias_wd_mult": "0"}),
        var("bn1_gamma"),
        var("bn1_beta"),
        op("BatchNorm", "bn1", [3, 4, 5],
            {"eps": "0.002", "fix_gamma": "False", "momentum": "0.8"}, {"ctx_group": "stage2"}),
        op("Activation", "relu1", [6], {"act_type": "relu"}),
        op("Pooling", "pool", [7], {"kernel": "(2, 2)", "stride": "(2, 2)", "pool_type": "max"}),
        var("bn2_gamma"),
        var("bn2_beta"),
        op("BatchNorm", "bn2", [8, 9, 10], {}),
        op("Flatten", "flat", [11], {}),
        var("fc1_weight", {"wd_mult": "0.5"}),
        var("fc1_bias"),
        op("FullyConnected", "fc1", [12, 13, 14], {"num_hidden": "10", "no_bias": "False"},
            {"weight_wd_mult": "0.1"}),
        op("Activation", "tanh1", [15], {"act_type": "tanh"}),
        var("fc2_weight"),
        var("fc2_bias"),
        op("FullyConnected", "fc2", [16, 17, 18], {"num_hidden": "3"}),
        var("softmax_label"),
        op("SoftmaxOutput", "softmax", [19, 20], {"grad_scale": "1"}),
    ]  # fmt: skip
    args = [i for i, n in enumerate(nodes) if n["op"] == "null"]
    return {"nodes": nodes, "arg_nodes": args, "heads": [[len(nodes) - 1, 0]]}


SHAPES = {
    "conv_weight": (4, 1, 3, 3),
    "conv_bias": (4,),
    "bn1_gamma": (4,),
    "bn1_beta": (4,),
    "bn2_gamma": (4,),
    "bn2_beta": (4,),
    "fc1_weight": (10, 256),
    "fc1_bias": (10,),
    "fc2_weight": (3, 10),
    "fc2_bias": (3,),
}
AUX = ["bn1_moving_mean", "bn1_moving_var", "bn2_moving_mean", "bn2_moving_var"]
INPUT = (2, 1, 16, 16)


def legacy_params(path, arrays):
    """``mx.nd.save``'s list with each array in NDArray's oldest layout (what 0.8 wrote)."""
    out = [struct.pack("<QQQ", 0x112, 0, len(arrays))]
    for value in arrays.values():
        value = np.ascontiguousarray(value, np.float32)
        out.append(struct.pack("<I%dI" % value.ndim, value.ndim, *value.shape))
        out.append(struct.pack("<iii", 1, 0, 0) + value.tobytes())
    out.append(struct.pack("<Q", len(arrays)))
    for name in arrays:
        out.append(struct.pack("<Q", len(name.encode())) + name.encode())
    with open(path, "wb") as f:
        f.write(b"".join(out))


def write(prefix, epoch, seed=3):
    """PREFIX-symbol.json and PREFIX-EPOCH.params of ``net_0800`` with seeded values."""
    rng = np.random.RandomState(seed)
    with open(prefix + "-symbol.json", "w") as f:
        json.dump(net_0800(), f, indent=2)
    arrays = {"arg:" + n: rng.uniform(-0.5, 0.5, s) for n, s in SHAPES.items()}
    for name in AUX:
        low = 0.5 if name.endswith("var") else -0.3
        arrays["aux:" + name] = rng.uniform(low, low + 1.0, (4,))
    legacy_params("%s-%04d.params" % (prefix, epoch), arrays)
