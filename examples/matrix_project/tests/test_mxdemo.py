import mxdemo
import mxnet as mx


def test_served_module_predicts_like_gluon():
    net = mxdemo.tiny_net()
    x = mx.nd.ones((3, 5))
    expected = net(x).asnumpy().tolist()  # export needs a forward pass first
    assert mxdemo.serve_as_module(net, x).asnumpy().tolist() == expected


def test_mean_of_squares():
    assert mxdemo.mean_of_squares([1.0, 3.0]) == 5.0
