"""A legacy training script that knows nothing of mxcompat: one hand-set 3x3 kernel `kw`
that should stay fixed.  `python examples/frozen_kernel.py` prints 41.58 (the kernel moved);
`mxcompat run --freeze kw examples/frozen_kernel.py` prints 42.0 (it did not).
"""

import mxnet as mx

kernel = mx.nd.array([[1, 2, 3], [1, 2, 3], [1, 2, 3]]).reshape((1, 1, 3, 3))
data = mx.sym.Variable("data")
weight = mx.sym.Variable("kw")
loss = mx.sym.MakeLoss(
    mx.sym.Convolution(data=data, weight=weight, kernel=(3, 3), num_filter=1, no_bias=True)
)
mod = mx.mod.Module(symbol=loss, data_names=("data",), label_names=None)
mod.bind(data_shapes=[("data", (1, 1, 3, 3))])
mod.set_params({"kw": kernel}, {})
mod.init_optimizer()
for _ in range(1):
    mod.forward(mx.io.DataBatch([kernel], []))
    mod.backward()
    mod.update()
mod.forward(mx.io.DataBatch([kernel], []))
print(round(float(mod.get_outputs()[0].asnumpy().ravel()[0]), 4))
