"""MXNet's fused ``RNN`` operator: its flat parameter vector laid out as PyTorch's kernels
take it, run by those kernels (cuDNN on a GPU)."""

import torch
import torch.nn.functional as F

from .shapes import _UnknownZeros

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# PyTorch's fused kernels (cuDNN on a GPU, the native ones on a CPU) compute what MXNet's RNN
# operator computes: LSTM gates i, f, g, o; GRU r, z, n with the hidden bias of n inside the
# reset gate, r * (W_hn h + b_hn); dropout on every layer's output but the last.  They differ
# in where the weights lie only.
_KERNELS = {
    "lstm": torch.lstm,
    "gru": torch.gru,
    "rnn_tanh": torch.rnn_tanh,
    "rnn_relu": torch.rnn_relu,
}
_PLANS: dict = {}  # layout -> (segment sizes, [(segment, shape)] in PyTorch's order)


def _plan(mode, input_size, state_size, num_layers, bidirectional):
    """MXNet's flat layout, worked out once per layout: every weight first (layer by layer,
    direction by direction, input-to-hidden then hidden-to-hidden), then every bias in the
    same order; as segment sizes and, in PyTorch's order (w_ih, w_hh, b_ih, b_hh per layer
    and direction), which segment each weight is and its shape."""
    key = (mode, input_size, state_size, num_layers, bidirectional)
    plan = _PLANS.get(key)
    if plan is None:
        gates = _GATES[mode] * state_size
        dirs = 2 if bidirectional else 1
        sizes, shapes = [], []
        for layer in range(num_layers):
            size = input_size if layer == 0 else state_size * dirs
            for _ in range(dirs):
                sizes += [gates * size, gates * state_size]
                shapes += [(gates, size), (gates, state_size)]
        n = len(sizes)
        sizes += [gates] * n
        order = []
        for k in range(0, n, 2):
            order += [
                (k, shapes[k]),
                (k + 1, shapes[k + 1]),
                (n + k, (gates,)),
                (n + k + 1, (gates,)),
            ]
        plan = _PLANS[key] = (sizes, order)
    return plan


def _layout_error(count, plan, mode, num_layers, state_size, input_size):
    return ValueError(
        f"RNN: {count} parameters, the layout needs {sum(plan[0])} (mode {mode}, "
        f"{num_layers} layer(s), state_size {state_size}, input size {input_size})"
    )


def rnn_unpack(params, mode, input_size, state_size, num_layers, bidirectional):
    """The fused ``RNN`` operator's parameters as PyTorch's flat weight list (``w_ih, w_hh,
    b_ih, b_hh`` per layer and direction, the order of ``torch.nn.LSTM``'s
    ``_flat_weights``): views of MXNet's one flat vector, or, given the list of pieces MXNet
    concatenates into it (a Gluon layer's own parameters, weights first), those pieces."""
    plan = _plan(mode, input_size, state_size, num_layers, bidirectional)
    sizes, order = plan
    if isinstance(params, (list, tuple)):
        if len(params) == len(sizes) and all(
            p.numel() == s for p, s in zip(params, sizes)
        ):
            return [
                params[k] if params[k].shape == s else params[k].view(s)
                for k, s in order
            ]
        params = torch.cat([p.reshape(-1) for p in params])
    if params.numel() != sum(sizes):
        raise _layout_error(
            params.numel(), plan, mode, num_layers, state_size, input_size
        )
    parts = params.split(sizes)
    return [parts[k].view(s) for k, s in order]


def _compiling():
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    return False


# A parameter (weakly) -> (stamp, its weights): inference's views, made once.
_SPLITS = None


def _weights(params, mode, input_size, state_size, num_layers, bidirectional):
    global _SPLITS
    if isinstance(params, (list, tuple)) or _compiling():
        return rnn_unpack(
            params, mode, input_size, state_size, num_layers, bidirectional
        )
    if torch.is_grad_enabled() and params.requires_grad:
        # Training: views made now, in this graph.  Views kept from an earlier step would
        # still be right, but after the optimizer's in-place update autograd would take them
        # back through as_strided, a full-size copy each.
        return rnn_unpack(
            params, mode, input_size, state_size, num_layers, bidirectional
        )
    # Inference: views of the same storage serve every call until the vector is replaced
    # or written (load_state_dict, an optimizer step: its version moves).
    stamp = (
        params._version,
        params.data_ptr(),
        params.dtype,
        params.device,
        torch.is_inference_mode_enabled(),
        mode,
        input_size,
        state_size,
        num_layers,
        bidirectional,
    )
    if _SPLITS is None:
        from torch.utils.weak import WeakIdKeyDictionary

        _SPLITS = WeakIdKeyDictionary()
    cached = _SPLITS.get(params)
    if cached is None or cached[0] != stamp:
        # Views of the detached vector: they keep its storage, not the Parameter, alive.
        weights = rnn_unpack(
            params.detach(), mode, input_size, state_size, num_layers, bidirectional
        )
        cached = _SPLITS[params] = (stamp, weights)
    return cached[1]


def _cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    if mode == "lstm":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c
    if mode == "gru":
        ir, iz, in_ = gi.chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r = torch.sigmoid(ir + hr)
        z = torch.sigmoid(iz + hz)
        return (1 - z) * torch.tanh(in_ + r * hn) + z * h, None
    pre = gi + gh
    return (torch.tanh(pre) if mode == "rnn_tanh" else torch.relu(pre)), None


def _rnn_steps(data, weights, state, state_cell, mode, num_layers, dirs, p, training):
    """The same, step by step: only for what torch.compile traces on a CPU with MXNet's flat
    vector in training, where AOT autograd fails on the oneDNN kernel given views of a
    parameter (torch 2.13); a compiled graph unrolls the steps anyway."""
    x, last_h, last_c = data, [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            h, c = state[k], state_cell[k] if mode == "lstm" else None
            seq = [None] * x.shape[0]
            for t in range(x.shape[0]) if d == 0 else range(x.shape[0] - 1, -1, -1):
                h, c = _cell(mode, x[t], h, c, *weights[4 * k : 4 * k + 4])
                seq[t] = h
            outs.append(torch.stack(seq))
            last_h.append(h)
            last_c.append(c)
        x = torch.cat(outs, -1) if dirs == 2 else outs[0]
        if p and training and layer < num_layers - 1:
            x = F.dropout(x, p, True)
    return x, torch.stack(last_h), torch.stack(last_c) if mode == "lstm" else None


def rnn(
    data,
    params,
    state,
    state_cell,
    mode,
    state_size,
    num_layers,
    bidirectional=False,
    p=0.0,
    state_outputs=False,
    training=False,
):
    """MXNet's fused ``RNN`` operator: ``data`` (T, N, C), ``params`` MXNet's flat vector (or
    the pieces it is concatenated from, see ``rnn_unpack``), ``state`` (and, for LSTM,
    ``state_cell``) (layers * directions, N, state_size); the output (T, N, directions *
    state_size), with the last states if ``state_outputs``.  Dropout ``p`` between layers in
    training.  One call of PyTorch's fused kernel (``torch.lstm``/``gru``/``rnn_tanh``/
    ``rnn_relu``), which autograd differentiates back to MXNet's parameters."""
    dirs = 2 if bidirectional else 1
    # None (Gluon's begin state) or zeros of a batch size left to inference: zero states.
    if state is None or isinstance(state, _UnknownZeros):
        state = data.new_zeros(num_layers * dirs, data.shape[1], state_size)
    if mode == "lstm" and (state_cell is None or isinstance(state_cell, _UnknownZeros)):
        state_cell = data.new_zeros(num_layers * dirs, data.shape[1], state_size)
    weights = _weights(
        params, mode, data.shape[2], state_size, num_layers, bidirectional
    )
    dropout = float(p) if training else 0.0
    if (
        _compiling()
        and data.device.type == "cpu"
        and torch.is_tensor(params)
        and params.requires_grad
        and torch.is_grad_enabled()
    ):
        out, h, c = _rnn_steps(
            data, weights, state, state_cell, mode, num_layers, dirs, p, training
        )
        if not state_outputs:
            return out
        return [out, h, c] if mode == "lstm" else [out, h]
    if mode == "lstm":
        out, h, c = torch.lstm(
            data,
            (state, state_cell),
            weights,
            True,
            num_layers,
            dropout,
            training,
            bidirectional,
            False,
        )
        return [out, h, c] if state_outputs else out
    out, h = _KERNELS[mode](
        data, state, weights, True, num_layers, dropout, training, bidirectional, False
    )
    return [out, h] if state_outputs else out


# --- small ones -----------------------------------------------------------------------------------
