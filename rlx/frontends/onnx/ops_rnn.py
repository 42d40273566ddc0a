"""RNN, GRU and LSTM (opsets 7-25; forward, reverse, bidirectional; layouts 0 and 1;
sequence_lens; clip; custom activations; peepholes; linear_before_reset).

Each direction is one `rlx.scan` over the static sequence length (the import is O(1) in
it): the input projections of every step are one `rlx.matmul` before the scan (its `xs`,
reversed along the sequence for the reverse direction); the carries are `H` (and `C` for
LSTM); the body adds `H @ R^T` and applies the gate math of one step (`_step`) with
elementwise ops, yielding the next carries and the step's `Y` row. The stacked `Y` is
reversed back for the reverse direction; `Y_h` / `Y_c` are the final carries. With
`sequence_lens`, a per-step `[batch, 1]` mask is scanned too: steps past a batch row's
length keep its state (`rlx.where`, so the final carry is the state at the row's last
valid step) and write zeros to `Y`, as the ONNX reference does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Block, SSAValue

from rlx.dialects.rlx.base import tensor
from rlx.dialects.rlx.control import YieldOp
from rlx.frontends.onnx.loops import reverse0, scan_op
from rlx.frontends.onnx.node import Node, elem, is_static, shape
from rlx.frontends.onnx.ops_index import wrap_index
from rlx.frontends.onnx.registry import converter

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
Act = Callable[[SSAValue], SSAValue]


def _activation(n: Node, name: str, alpha: float | None, beta: float | None) -> Act:
    def c(v: float, like: SSAValue) -> SSAValue:
        return n.constant(v, like)

    def _d(v: float | None, default: float) -> float:  # an explicit 0.0 is a value too
        return default if v is None else v

    def sig(x: SSAValue) -> SSAValue:
        return n.emit("sigmoid", x)

    table: dict[str, Act] = {
        "sigmoid": sig,
        "tanh": lambda x: n.emit("tanh", x),
        "relu": lambda x: n.emit("relu", x),
        "leakyrelu": lambda x: n.emit("where", n.emit("compare", x, c(0, x), predicate="lt"),
                                      n.emit("mul", x, c(_d(alpha, 0.01), x)), x),
        "thresholdedrelu": lambda x: n.emit("where", n.emit("compare", x, c(_d(alpha, 1.0), x), predicate="gt"),
                                            x, c(0, x)),
        "scaledtanh": lambda x: n.emit("mul", c(_d(alpha, 1.0), x),
                                       n.emit("tanh", n.emit("mul", x, c(_d(beta, 1.0), x)))),
        "hardsigmoid": lambda x: n.emit("min", c(1, x), n.emit("max", c(0, x), n.emit(
            "add", n.emit("mul", x, c(0.2 if alpha is None else alpha, x)), c(0.5 if beta is None else beta, x)))),
        "elu": lambda x: n.emit("where", n.emit("compare", x, c(0, x), predicate="lt"),
                                n.emit("mul", c(_d(alpha, 1.0), x), n.emit("sub", n.emit("exp", x), c(1, x))), x),
        "softsign": lambda x: n.emit("div", x, n.emit("add", c(1, x), n.emit("abs", x))),
        "softplus": lambda x: n.emit("log", n.emit("add", n.emit("exp", x), c(1, x))),
        "affine": lambda x: n.emit("add", n.emit("mul", x, c(_d(alpha, 1.0), x)), c(_d(beta, 0.0), x)),
    }  # fmt: skip
    fn = table.get(name.lower())
    if fn is None:
        raise n.error(f"activation '{name}' is not supported")
    return fn


def _acts(n: Node, dirs: int) -> list[list[Act]]:
    names = [a.decode() if isinstance(a, bytes) else a for a in n.attr("activations", [])]
    per = len(_DEFAULT_ACTS[n.op_type])
    if not names:
        names = _DEFAULT_ACTS[n.op_type] * dirs
    alphas = list(n.attr("activation_alpha", []))
    betas = list(n.attr("activation_beta", []))
    out = []
    for d in range(dirs):
        row = []
        for k in range(per):
            i = d * per + k
            row.append(_activation(n, names[i], alphas[i] if i < len(alphas) else None,
                                   betas[i] if i < len(betas) else None))  # fmt: skip
        out.append(row)
    return out


def _slice0(n: Node, v: SSAValue, i: int, axis: int = 0) -> SSAValue:
    """`v[i]` along `axis` (the axis removed)."""
    s = list(shape(v))
    st = [0] * len(s)
    lim = list(s)
    st[axis], lim[axis] = i, i + 1
    return n.reshape(n.emit("slice", v, starts=st, limits=lim), s[:axis] + s[axis + 1 :])


def _cols(n: Node, v: SSAValue, k: int, size: int) -> SSAValue:
    """Gate block `k` (columns `k*size:(k+1)*size` of the last axis)."""
    s = list(shape(v))
    return n.emit(
        "slice", v, starts=[0] * (len(s) - 1) + [k * size], limits=[*s[:-1], (k + 1) * size]
    )


@dataclass
class _Dir:
    """What one direction's step reads from outside the scan body (regions see outer values)."""

    rt: SSAValue  # R^T, [hid, g*hid]
    rb: SSAValue | None  # the recurrence bias, kept apart only for GRU linear_before_reset
    peep: SSAValue | None  # LSTM peepholes [3*hid]
    acts: list[Act]
    zeros: SSAValue  # [batch, hid]


def _clip(n: Node, v: SSAValue) -> SSAValue:
    clip = n.attr("clip")
    if clip is None:
        return v
    return n.emit("min", n.emit("max", v, n.constant(-clip, v)), n.constant(clip, v))


def _step(
    n: Node, dr: _Dir, pre: SSAValue, h: SSAValue, c: SSAValue | None, live: SSAValue | None
) -> tuple[SSAValue, SSAValue | None, SSAValue]:
    """One step's gate math: (next H, next C or None, the step's Y row) from the step's
    input projection `pre` [batch, g*hid] and the carries; `live` [batch, 1] (with
    `sequence_lens`) keeps the state and zeroes Y of rows past their length."""
    hid = shape(h)[-1]
    hr = n.emit("matmul", h, dr.rt)

    def gate(k: int, extra: SSAValue | None = None) -> SSAValue:
        v = n.emit("add", _cols(n, pre, k, hid), _cols(n, hr, k, hid))
        return _clip(n, v if extra is None else n.emit("add", v, extra))

    f = dr.acts[0]
    c_new = None
    if n.op_type == "RNN":
        h_new = f(gate(0))
    elif n.op_type == "GRU":
        rb = dr.rb
        z = f(gate(0, None if rb is None else _cols(n, rb, 0, hid)))
        rr = f(gate(1, None if rb is None else _cols(n, rb, 1, hid)))
        xh, rh = _cols(n, pre, 2, hid), _cols(n, dr.rt, 2, hid)
        if n.attr("linear_before_reset", 0):
            hh = n.emit("matmul", h, rh)
            if rb is not None:
                hh = n.emit("add", hh, _cols(n, rb, 2, hid))
            v = n.emit("add", xh, n.emit("mul", rr, hh))
        else:
            v = n.emit("add", xh, n.emit("matmul", n.emit("mul", rr, h), rh))
        hc = dr.acts[1](_clip(n, v))
        one = n.constant(1, z)
        h_new = n.emit("add", n.emit("mul", n.emit("sub", one, z), hc), n.emit("mul", z, h))
    else:
        assert c is not None
        pi, po, pf = (
            (None,) * 3 if dr.peep is None else (_cols(n, dr.peep, k, hid) for k in range(3))
        )
        i_ = f(gate(0, None if pi is None else n.emit("mul", pi, c)))
        f_ = f(gate(2, None if pf is None else n.emit("mul", pf, c)))
        if n.attr("input_forget", 0):
            f_ = n.emit("sub", n.constant(1, i_), i_)
        cc = dr.acts[1](gate(3))
        c_new = n.emit("add", n.emit("mul", f_, c), n.emit("mul", i_, cc))
        o_ = f(gate(1, None if po is None else n.emit("mul", po, c_new)))
        h_new = n.emit("mul", o_, dr.acts[2](c_new))
    y = h_new
    if live is not None:
        h_new = n.emit("where", live, h_new, h)
        if c_new is not None:
            c_new = n.emit("where", live, c_new, c)
        y = n.emit("where", live, y, dr.zeros)
    return h_new, c_new, y


def _scan(
    n: Node, dr: _Dir, xs: list[SSAValue], h: SSAValue, c: SSAValue | None, reverse: bool
) -> tuple[SSAValue, SSAValue | None, SSAValue]:
    """One direction as an `rlx.scan` over `xs` (the projections, then the mask if any):
    (final H, final C or None, Y [seq, batch, hid] in sequence order)."""
    if reverse:
        xs = [reverse0(n, x) for x in xs]
    inits = [h] if c is None else [h, c]
    block = Block(
        arg_types=[*(v.type for v in inits), *(tensor(shape(x)[1:], elem(x)) for x in xs)]
    )
    args = list(block.args)
    with n.ctx.g.building(block):
        carries = args[: len(inits)]
        steps = args[len(inits) :]
        h_new, c_new, y = _step(n, dr, steps[0], carries[0], carries[1] if c is not None else None,
                                steps[1] if len(steps) > 1 else None)  # fmt: skip
    ys = [h_new] if c_new is None else [h_new, c_new]
    ys.append(y)
    block.add_op(YieldOp(*ys))
    res = list(scan_op(n, inits, xs, block, ys, shape(xs[0])[0]).results)
    y_all = reverse0(n, res[-1]) if reverse else res[-1]
    return res[0], res[1] if c is not None else None, y_all


@converter(
    "RNN", "GRU", "LSTM",
    attrs=("activation_alpha", "activation_beta", "activations", "clip", "direction",
           "hidden_size", "input_forget", "layout", "linear_before_reset"),
)  # fmt: skip
def recurrent(n: Node) -> list[SSAValue | None]:
    x, w, r = n.input(0), n.input(1), n.input(2)
    layout = n.attr("layout", 0)
    if layout:
        x = n.emit("transpose", x, permutation=[1, 0, 2])
    if not is_static(shape(x)):
        raise n.error(f"{n.op_type} needs static shapes (its scan has a static length)")
    seq, batch, inp = shape(x)
    if seq == 0:  # onnx.reference fails; onnxruntime's Y_h is zeros, not initial_h
        raise n.error(f"{n.op_type} of an empty sequence (seq_length 0) is not supported")
    g = _GATES[n.op_type]
    hid = n.attr("hidden_size", shape(r)[-1])  # 0 is checked below (was R's size)
    direction = n.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    acts = _acts(n, dirs)
    for name, v, width in (("W", w, inp), ("R", r, hid)):  # a W of 5 directions was sliced
        want = [dirs, g * hid, width]
        if list(shape(v)) != want:
            raise n.error(f"{name} of shape {list(shape(v))} must be {want} ({direction})")
    lstm, gru = n.op_type == "LSTM", n.op_type == "GRU"
    lens = n.opt(4)
    h0 = n.opt(5)
    c0 = n.opt(6) if lstm else None
    peep = n.opt(7) if lstm else None
    if layout and h0 is not None:
        h0 = n.emit("transpose", h0, permutation=[1, 0, 2])
    if layout and c0 is not None:
        c0 = n.emit("transpose", c0, permutation=[1, 0, 2])
    zeros = n.typed("broadcast_to", n.constant(0, x), [batch, hid])
    mask = None
    if lens is not None:  # [seq, batch, 1]: step t of row b is within its length
        # a length outside [0, seq_length] is an IndexError, as onnxruntime refuses it
        # (was a silent clamp: -1 ran no step, seq + 1 every step)
        lens = wrap_index(n, lens, seq + 1, negative=False)
        steps = n.constant(np.arange(seq, dtype=np.int64).reshape(seq, 1, 1))
        mask = n.emit(
            "compare", n.reshape(n.cast(lens, "i64"), [1, batch, 1]), steps, predicate="gt"
        )
    x2 = n.reshape(x, [seq * batch, inp])
    ys, hs, cs = [], [], []
    for d in range(dirs):
        wd, rd = _slice0(n, w, d), _slice0(n, r, d)
        xw = n.reshape(
            n.emit("matmul", x2, n.emit("transpose", wd, permutation=[1, 0])), [seq, batch, g * hid]
        )
        rb = None
        if n.has(3):
            bd = _slice0(n, n.input(3), d)
            wb, rb = _cols(n, bd, 0, g * hid), _cols(n, bd, 1, g * hid)
            if not gru or not n.attr("linear_before_reset", 0):
                xw = n.emit("add", xw, n.emit("add", wb, rb))
                rb = None
            else:
                xw = n.emit("add", xw, wb)
        dr = _Dir(
            rt=n.emit("transpose", rd, permutation=[1, 0]),
            rb=rb,
            peep=_slice0(n, peep, d) if peep is not None else None,
            acts=acts[d],
            zeros=zeros,
        )
        h = _slice0(n, h0, d) if h0 is not None else zeros
        c = (_slice0(n, c0, d) if c0 is not None else zeros) if lstm else None
        xs = [xw] if mask is None else [xw, mask]
        h, c, y = _scan(n, dr, xs, h, c, direction == "reverse" or d == 1)
        ys.append(n.reshape(y, [seq, 1, batch, hid]))
        hs.append(n.reshape(h, [1, batch, hid]))
        cs.append(n.reshape(c if c is not None else zeros, [1, batch, hid]))

    def cat(vs: list[SSAValue], axis: int) -> SSAValue:
        return vs[0] if len(vs) == 1 else n.emit("concat", *vs, axis=axis)

    y_all, h_all, c_all = (
        cat(ys, 1),
        cat(hs, 0),
        cat(cs, 0),
    )  # [seq, dirs, batch, hid], [dirs, batch, hid]
    if layout:
        y_all = n.emit("transpose", y_all, permutation=[2, 0, 1, 3])
        h_all = n.emit("transpose", h_all, permutation=[1, 0, 2])
        c_all = n.emit("transpose", c_all, permutation=[1, 0, 2])
    res: list[SSAValue | None] = [y_all if n.wants(0) else None, h_all if n.wants(1) else None]
    if lstm:
        res.append(c_all if n.wants(2) else None)
    return res
