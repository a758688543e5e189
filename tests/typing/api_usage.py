"""A user's code, type-checked (never run) by tests/typing/test_typing.py with mypy --strict
against the installed mxcompat: each ``assert_type`` is what a user's checker must infer, and
each ``type: ignore[code]`` an error it must report (warn_unused_ignores fails the check when a
signature is too loose to catch it)."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from typing import Pattern, Tuple, Union

import mxnet as mx
from typing_extensions import assert_type

import mxcompat
from mxcompat.cli import main

PatternLike = Union[str, Pattern[str]]

assert_type(mxcompat.__version__, str)
assert_type(mxcompat.SUPPORTED, str)
assert_type(mxcompat.MXCompatWarning("x"), mxcompat.MXCompatWarning)
assert issubclass(mxcompat.MXCompatWarning, UserWarning)

assert_type(mxcompat.freeze("conv0_*", re.compile("fc.*_weight")), Tuple[PatternLike, ...])
assert_type(mxcompat.freeze("conv0_*", gradients=False), Tuple[PatternLike, ...])
assert_type(mxcompat.unfreeze(), Tuple[PatternLike, ...])
assert_type(mxcompat.frozen_patterns(), Tuple[PatternLike, ...])
assert_type(mxcompat.is_frozen("conv0_weight"), bool)
manager: AbstractContextManager[tuple[PatternLike, ...]] = mxcompat.frozen("fc1_*")
with mxcompat.frozen("fc1_*") as patterns:
    assert_type(patterns, Tuple[PatternLike, ...])

assert_type(mxcompat.patch(), Tuple[str, ...])
assert_type(mxcompat.patch("labels", "freeze"), Tuple[str, ...])
assert_type(mxcompat.unpatch("labels"), Tuple[str, ...])
assert_type(mxcompat.patched(), Tuple[str, ...])
assert_type(mxcompat.patch_names(), Tuple[str, ...])
assert_type(mxcompat.numpy_legacy(), None)
assert_type(main(["check"]), int)

report = mxcompat.frozen_report(mx.mod.Module(mx.sym.var("data")))
assert_type(report.frozen, Tuple[str, ...])
assert_type(report.trainable_elements, int)
assert_type(str(report), str)

# The conversions take MXNet's objects, which are Any without stubs; their other arguments
# are checked.
module = mxcompat.to_module(mx.gluon.nn.Dense(2), data_shapes=[("data", (1, 4))], copy=False)
block = mxcompat.to_gluon(module, copy=True)
quantized = mxcompat.quantize(module, calib_mode="none", data_names=["data"])
model = mxcompat.to_onnx(module, input_shapes=[(1, 4)], path="m.onnx", opset=13, verify=False)

# What a user's checker must refuse:
mxcompat.freeze(1)  # type: ignore[arg-type]
mxcompat.is_frozen(None)  # type: ignore[arg-type]
mxcompat.patch(["labels"])  # type: ignore[arg-type]
mxcompat.numpy_legacy("yes")  # type: ignore[arg-type]
mxcompat.to_module(block, copy="no")  # type: ignore[arg-type]
mxcompat.to_module(block, data_names="data")  # type: ignore[arg-type]
mxcompat.to_onnx(module, opset="13")  # type: ignore[arg-type]
mxcompat.quantize(module, num_calib_examples=1.5)  # type: ignore[arg-type]
mxcompat.frozen_patern()  # type: ignore[attr-defined]
len(mxcompat.is_frozen("x"))  # type: ignore[arg-type]
main("check")  # type: ignore[arg-type]
