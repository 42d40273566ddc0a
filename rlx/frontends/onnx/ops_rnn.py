"""RNN, GRU and LSTM (opsets 7-25; forward, reverse, bidirectional; layouts 0 and 1;
sequence_lens; clip; custom activations; peepholes; linear_before_reset).

Unrolled over the static sequence length: the input projections of every step are one
`rlx.matmul` per direction, each step adds `H @ R^T` and applies the gate math with
elementwise ops. With `sequence_lens`, steps past a batch row's length keep its state
(`rlx.where`) and write zeros to `Y`, as the ONNX reference does.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from rlx.frontends.onnx.importer import Node, is_static, shape
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
        raise n.error(f"{n.op_type} needs static shapes (it is unrolled over the sequence)")
    seq, batch, inp = shape(x)
    g = _GATES[n.op_type]
    hid = n.attr("hidden_size") or shape(r)[-1]
    direction = n.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    acts = _acts(n, dirs)
    clip = n.attr("clip")
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
    x2 = n.reshape(x, [seq * batch, inp])
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wd, rd = _slice0(n, w, d), _slice0(n, r, d)
        xw = n.reshape(
            n.emit("matmul", x2, n.emit("transpose", wd, permutation=[1, 0])), [seq, batch, g * hid]
        )
        rt = n.emit("transpose", rd, permutation=[1, 0])  # [hid, g*hid]
        wb = rb = None
        if n.has(3):
            bd = _slice0(n, n.input(3), d)
            wb, rb = _cols(n, bd, 0, g * hid), _cols(n, bd, 1, g * hid)
            if not gru or not n.attr("linear_before_reset", 0):
                xw = n.emit("add", xw, n.emit("add", wb, rb))
                wb = rb = None
            else:
                xw = n.emit("add", xw, wb)
        h = _slice0(n, h0, d) if h0 is not None else zeros
        c = _slice0(n, c0, d) if c0 is not None else zeros
        pd = _slice0(n, peep, d) if peep is not None else None
        outs: list[SSAValue | None] = [None] * seq
        for step in range(seq):
            t = seq - 1 - step if reverse else step
            pre = _slice0(n, xw, t)
            hr = n.emit("matmul", h, rt)

            def gate(k: int, extra: SSAValue | None = None, pre=pre, hr=hr) -> SSAValue:  # noqa: ANN001
                v = n.emit("add", _cols(n, pre, k, hid), _cols(n, hr, k, hid))
                if extra is not None:
                    v = n.emit("add", v, extra)
                if clip is not None:
                    v = n.emit("min", n.emit("max", v, n.constant(-clip, v)), n.constant(clip, v))
                return v

            f, gact = acts[d][0], acts[d][1] if g > 1 else None
            if n.op_type == "RNN":
                h_new, c_new = f(gate(0)), None
            elif gru:
                rbz = None if rb is None else _cols(n, rb, 0, hid)
                rbr = None if rb is None else _cols(n, rb, 1, hid)
                z, rr = f(gate(0, rbz)), f(gate(1, rbr))
                xh = _cols(n, pre, 2, hid)
                rh = _cols(n, rt, 2, hid)
                if n.attr("linear_before_reset", 0):
                    hh = n.emit("matmul", h, rh)
                    if rb is not None:
                        hh = n.emit("add", hh, _cols(n, rb, 2, hid))
                    v = n.emit("add", xh, n.emit("mul", rr, hh))
                else:
                    v = n.emit("add", xh, n.emit("matmul", n.emit("mul", rr, h), rh))
                if clip is not None:
                    v = n.emit("min", n.emit("max", v, n.constant(-clip, v)), n.constant(clip, v))
                hc = gact(v)
                one = n.constant(1, z)
                h_new, c_new = (
                    n.emit("add", n.emit("mul", n.emit("sub", one, z), hc), n.emit("mul", z, h)),
                    None,
                )
            else:
                pi = _cols(n, pd, 0, hid) if pd is not None else None
                po = _cols(n, pd, 1, hid) if pd is not None else None
                pf = _cols(n, pd, 2, hid) if pd is not None else None
                i_ = f(gate(0, None if pi is None else n.emit("mul", pi, c)))
                f_ = f(gate(2, None if pf is None else n.emit("mul", pf, c)))
                if n.attr("input_forget", 0):
                    f_ = n.emit("sub", n.constant(1, i_), i_)
                cc = gact(gate(3))
                c_new = n.emit("add", n.emit("mul", f_, c), n.emit("mul", i_, cc))
                o_ = f(gate(1, None if po is None else n.emit("mul", po, c_new)))
                h_new = n.emit("mul", o_, acts[d][2](c_new))
            y = h_new
            if lens is not None:
                live = n.emit("compare", n.reshape(n.cast(lens, "i64"), [batch, 1]),
                              n.constant(t, "i64"), predicate="gt")  # fmt: skip
                h_new = n.emit("where", live, h_new, h)
                if c_new is not None:
                    c_new = n.emit("where", live, c_new, c)
                y = n.emit("where", live, y, zeros)
            h = h_new
            if c_new is not None:
                c = c_new
            outs[t] = n.reshape(y, [1, 1, batch, hid])
        ys.append(outs[0] if seq == 1 else n.emit("concat", *outs, axis=0))
        hs.append(n.reshape(h, [1, batch, hid]))
        cs.append(n.reshape(c, [1, batch, hid]))

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
