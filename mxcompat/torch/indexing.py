"""Emitters of MXNet's indexing, sorting and resizing operators (gather/scatter, topk, sort,
shapes of tensors, adaptive pooling, bilinear resizing), registered in ``nodes``.  Imports
neither torch nor mxnet."""
