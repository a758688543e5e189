"""MXNet's file formats read with NumPy alone, bounds-checked: a ``.params`` file (the NDArray
list), a ``-symbol.json`` graph, a checkpoint's two files together, an optimizer's states file.
No mxnet import, ever, and no torch: every failure is one ``CheckpointError`` naming the file,
the byte offset and what was expected."""
