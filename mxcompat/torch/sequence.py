"""Emitters of MXNet's sequence and attention operators (``Sequence*``, the interleaved
attention matmuls, lengths in softmax) and the normalisations beside them, registered in
``nodes``.  Imports neither torch nor mxnet."""
