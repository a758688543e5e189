"""gluon.utils.split_data(..., even_split=False) differs between releases; mxcompat leaves it.

Pinned per release from the facts (``facts.SPLIT_DATA_*``, docs/differences.md, "Differences
between releases"): where the remainder goes (the last slice up to 1.6, one row each to the first
slices from 1.7) and what fewer rows than slices give.  Every patch is applied here: the
outcome is MXNet's own, so these tests fail the day mxcompat (or MXNet) changes it.
"""

import mxnet as mx
import pytest
from mxnet.gluon.utils import split_and_load, split_data

from mxcompat._core import facts

SPREADS = facts.since(facts.SPLIT_DATA_SPREADS_REMAINDER)
HAS_NP = facts.since(facts.NUMPY_SUBPACKAGE)


def batch(rows, axis, front):
    """Rows numbered along ``axis``: row i holds 10 * i + (0, 1) across the other axis."""
    lib = mx.np if front == "np" else mx.nd
    data = lib.array([[10 * i, 10 * i + 1] for i in range(rows)])
    return data if axis == 0 else data.T


def described(parts, axis):
    """(rows, first row's number) for each slice; None for an empty slice."""
    out = []
    for part in parts:
        rows = part.shape[axis]
        first = part.asnumpy().reshape(-1)[0] if rows else None
        out.append((rows, None if first is None else int(first) // 10))
    return out


FRONTS = [
    "nd",
    pytest.param("np", marks=pytest.mark.mxnet(">=1.6", reason="mx.np arrives in MXNet 1.6")),
]


@pytest.fixture
def front(request):
    if request.param == "np":
        mx.npx.set_np()
        yield "np"
        mx.npx.reset_np()
    else:
        yield "nd"


@pytest.mark.parametrize("front", FRONTS, indirect=True)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize(
    "rows, num_slice, before_1_7, from_1_7",
    [
        (11, 4, [(2, 0), (2, 2), (2, 4), (5, 6)], [(3, 0), (3, 3), (3, 6), (2, 9)]),
        (10, 3, [(3, 0), (3, 3), (4, 6)], [(4, 0), (3, 4), (3, 7)]),
        (3, 2, [(1, 0), (2, 1)], [(2, 0), (1, 2)]),
        (8, 4, [(2, 0), (2, 2), (2, 4), (2, 6)], [(2, 0), (2, 2), (2, 4), (2, 6)]),
    ],
)
def test_where_the_remainder_goes(front, axis, rows, num_slice, before_1_7, from_1_7):
    parts = split_data(batch(rows, axis, front), num_slice, batch_axis=axis, even_split=False)
    assert described(parts, axis) == (from_1_7 if SPREADS else before_1_7)


@pytest.mark.parametrize("front", FRONTS, indirect=True)
@pytest.mark.parametrize("axis", [0, 1])
def test_fewer_rows_than_slices(front, axis):
    data = batch(2, axis, front)
    if not facts.since(facts.SPLIT_DATA_FEWER_SLICES):
        with pytest.raises(ValueError) as info:
            split_data(data, 4, batch_axis=axis, even_split=False)
        assert str(info.value) == (
            "Too many slices for data with shape %s. Arguments are num_slice=4 and "
            "batch_axis=%d." % (data.shape, axis)
        )
        return
    if not SPREADS:
        # One slice per row: fewer slices than asked.
        parts = split_data(data, 4, batch_axis=axis, even_split=False)
        assert described(parts, axis) == [(1, 0), (1, 1)]
        return
    if front == "np" or (axis == 0 and facts.since(facts.SPLIT_DATA_AXIS0_INDEXING)):
        parts = split_data(data, 4, batch_axis=axis, even_split=False)
        assert described(parts, axis) == [(1, 0), (1, 1), (0, None), (0, None)]
        return
    # An NDArray's empty slices come from slice_axis, which refuses begin == end.
    with pytest.raises(mx.base.MXNetError) as info:
        split_data(data, 4, batch_axis=axis, even_split=False)
    assert "Invalid begin, end, get begin=2, end=2" in str(info.value)


def test_split_and_load_follows_split_data():
    parts = split_and_load(
        mx.nd.arange(11), [mx.cpu(0), mx.cpu(1), mx.cpu(2), mx.cpu(3)], even_split=False
    )
    assert [p.shape[0] for p in parts] == ([3, 3, 3, 2] if SPREADS else [2, 2, 2, 5])
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1), mx.cpu(2), mx.cpu(3)]


def test_even_split_is_the_same_everywhere():
    parts = split_data(mx.nd.arange(12), 4)
    assert [p.asnumpy().tolist() for p in parts] == [
        [0.0, 1.0, 2.0],
        [3.0, 4.0, 5.0],
        [6.0, 7.0, 8.0],
        [9.0, 10.0, 11.0],
    ]
    with pytest.raises(ValueError) as info:
        split_data(mx.nd.arange(11), 4)
    assert str(info.value) == (
        "data with shape (11,) cannot be evenly split into 4 slices along axis 0. Use a batch "
        "size that's multiple of 4 or set even_split=False to allow uneven partitioning of "
        "data."
    )
