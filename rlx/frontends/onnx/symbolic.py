"""Symbolic sizes for dynamic dims, so shape arithmetic on them imports without `dims=`.

`Shape` of a tensor with dynamic dims yields an object array mixing ints and `Dim`s
(named dims of the graph inputs, or expressions over them); the usual shape-computation
ops (Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, Identity, Reshape, arithmetic,
Equal, Where, ReduceProd, Min, Max) are evaluated on them with NumPy (`fold_symbolic`). A
Reshape / Expand / ConstantOfShape whose target holds `Dim`s gets `?` in its result type
and the expressions in its `rlx.dims` attribute, which `bind-dims` evaluates
(`rlx.transforms.dim_exprs`). Comparisons are answered only when sizes >= 1 make them
certain (`batch == -1` is false); anything else is an import error, never a guess.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.registry import OnnxImportError
from rlx.transforms.dim_exprs import DIMS_ATTR


class SymbolicDimError(OnnxImportError):
    """An operation that needs the value of a symbolic size."""


class Dim:
    """A symbolic size: a dim name or an arithmetic expression over dim names.

    Products of names and integers are kept as monomials (`mono`: coefficient and sorted
    names), so `(1024*batch)//16//(4*batch)` is `16` and `2*batch//2` is `batch` (exact
    for every value of the names); other expressions are kept as text."""

    __slots__ = ("expr", "mono")

    def __init__(self, expr: str, mono: tuple[int, tuple[str, ...]] | None = None) -> None:
        self.expr = expr
        if mono is None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", expr):
            mono = (1, (expr,))
        self.mono = mono

    def __repr__(self) -> str:
        return self.expr

    def __hash__(self) -> int:
        return hash(self.expr)

    def _bin(self, other: Any, op: str, rev: bool = False) -> Any:
        if isinstance(other, np.integer):
            other = int(other)
        if not isinstance(other, int | Dim):
            return NotImplemented
        if not rev and isinstance(other, int):
            if (
                (op in "*" and other == 1)
                or (op in "+-" and other == 0)
                or (op == "//" and other == 1)
            ):
                return self
        if (
            rev
            and isinstance(other, int)
            and ((op == "*" and other == 1) or (op == "+" and other == 0))
        ):
            return self
        a, b = (other, self) if rev else (self, other)
        m = _mono_op(_mono(a), _mono(b), op)
        if m is not None:
            return _from_mono(m)
        return Dim(f"({a}{op}{b})")

    def __add__(self, o: Any) -> Any:
        return self._bin(o, "+")

    def __radd__(self, o: Any) -> Any:
        return self._bin(o, "+", True)

    def __sub__(self, o: Any) -> Any:
        return self._bin(o, "-")

    def __rsub__(self, o: Any) -> Any:
        return self._bin(o, "-", True)

    def __mul__(self, o: Any) -> Any:
        return self._bin(o, "*")

    def __rmul__(self, o: Any) -> Any:
        return self._bin(o, "*", True)

    def __floordiv__(self, o: Any) -> Any:
        return self._bin(o, "//")

    def __rfloordiv__(self, o: Any) -> Any:
        return self._bin(o, "//", True)

    __truediv__, __rtruediv__ = __floordiv__, __rfloordiv__

    def __mod__(self, o: Any) -> Any:
        return self._bin(o, "%")

    def __eq__(self, o: object) -> bool:  # type: ignore[override]
        if isinstance(o, Dim) and o.expr == self.expr:
            return True
        if isinstance(o, int | np.integer) and int(o) < 1:
            return False  # sizes are >= 1
        raise SymbolicDimError(f"cannot decide {self} == {o} before the dims are bound")

    def __ne__(self, o: object) -> bool:  # type: ignore[override]
        return not self.__eq__(o)

    def __int__(self) -> int:
        raise SymbolicDimError(
            f"size '{self}' is only known once dims are bound; pass dims= (rlx-translate"
            " --dim-binding) to import this graph"
        )

    __index__ = __int__


Mono = tuple[int, tuple[str, ...]]


def _mono(v: int | Dim) -> Mono | None:
    return (v, ()) if isinstance(v, int) else v.mono


def _mono_op(a: Mono | None, b: Mono | None, op: str) -> Mono | None:
    """`a op b` on monomials when the result is one (exactly, for every value)."""
    if a is None or b is None:
        return None
    (ca, na), (cb, nb) = a, b
    if op == "*":
        return ca * cb, tuple(sorted(na + nb))
    if op in "+-" and na == nb:
        return (ca + cb if op == "+" else ca - cb), na
    if op == "//" and cb != 0 and ca % cb == 0:
        rest = list(na)
        for name in nb:
            if name not in rest:
                return None
            rest.remove(name)
        return ca // cb, tuple(rest)
    return None


def _from_mono(m: Mono) -> int | Dim:
    c, names = m
    if not names or c == 0:
        return c
    text = "*".join(names)
    if c == 1 and len(names) == 1:
        return Dim(text)
    return Dim(f"({text})" if c == 1 else f"({c}*{text})", m)


def is_symbolic(a: Any) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == object


def dim_of(d: int | str | None) -> int | Dim:
    if isinstance(d, str):
        return Dim(d)
    if d is None or d == DYN:
        raise SymbolicDimError("a dynamic dim without a name")
    return d


def _ints(a: np.ndarray | None) -> list[int]:
    return [] if a is None else [int(v) for v in np.asarray(a).reshape(-1)]


def fold_symbolic(
    op: str, attrs: dict[str, Any], ins: list[np.ndarray | None]
) -> list[np.ndarray] | None:
    """Evaluate a shape-computation op on arrays holding `Dim`s (None: not such an op)."""
    x = ins[0]
    if op in ("Identity", "Cast", "CastLike"):
        return [x]  # type: ignore[list-item]
    if op == "Shape":
        sel = slice(attrs.get("start", 0), attrs.get("end", None))
        return [np.array(np.shape(x)[sel], np.int64)]
    if op == "Size":
        return [np.array(np.size(x), np.int64)]
    if op == "Expand":
        shp = _ints(ins[1])
        return [np.broadcast_to(x, np.broadcast_shapes(np.shape(x), tuple(shp))).copy()]
    if op == "Gather":
        return [np.take(x, np.asarray(ins[1]).astype(np.int64), axis=attrs.get("axis", 0))]
    if op == "Concat":
        return [np.concatenate([np.atleast_1d(a) for a in ins], axis=attrs.get("axis", 0))]
    if op == "Unsqueeze":
        axes = sorted(
            a % (x.ndim + len(ax))
            for ax in [_ints(ins[1]) if len(ins) > 1 else attrs["axes"]]
            for a in ax
        )
        for a in axes:
            x = np.expand_dims(x, a)
        return [x]
    if op == "Squeeze":
        axes = _ints(ins[1]) if len(ins) > 1 else list(attrs.get("axes", []))
        return [np.squeeze(x, axis=tuple(axes)) if axes else np.squeeze(x)]
    if op == "Slice":
        st, en = _ints(ins[1]), _ints(ins[2])
        axes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(st)))
        steps = _ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(st)
        sl = [slice(None)] * x.ndim
        for a, s, e, p in zip(axes, st, en, steps, strict=True):
            sl[a] = slice(s, e, p)
        return [x[tuple(sl)]]
    if op == "Reshape":
        return [x.reshape(_ints(ins[1]))]
    ops = {
        "Add": np.add,
        "Sub": np.subtract,
        "Mul": np.multiply,
        "Div": np.floor_divide,
        "Mod": np.mod,
    }
    if op in ops:
        return [ops[op](np.asarray(x, dtype=object), np.asarray(ins[1], dtype=object))]
    if op in ("Min", "Max") and all(i is not None for i in ins):
        f = np.frompyfunc(lambda a, b: size_min_max(op, a, b), 2, 1)
        out = np.asarray(ins[0], dtype=object)
        for other in ins[1:]:
            out = f(out, np.asarray(other, dtype=object))
        return [np.asarray(out, dtype=object)]
    if op == "Equal":
        return [np.vectorize(lambda a, b: bool(a == b), otypes=[bool])(x, ins[1])]
    if op == "Where":
        return [
            np.where(
                np.asarray(x).astype(bool),
                np.asarray(ins[1], dtype=object),
                np.asarray(ins[2], dtype=object),
            )
        ]
    if op == "ReduceProd" and len(ins) == 1:
        keep = attrs.get("keepdims", 1)
        return [np.asarray(np.prod(x, keepdims=bool(keep)), dtype=object)]
    return None


def size_min_max(op: str, a: Any, b: Any) -> Any:
    """min / max of two sizes: an int when both are, else a `min(a,b)` expression."""
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return min(int(a), int(b)) if op == "Min" else max(int(a), int(b))
    if isinstance(a, Dim) and isinstance(b, Dim) and a.expr == b.expr:
        return a
    return Dim(f"{op.lower()}({a},{b})")


def concrete(a: np.ndarray) -> np.ndarray:
    """An object array with no `Dim` left as int64."""
    if any(isinstance(v, Dim) for v in a.reshape(-1)):
        return a
    return a.astype(np.int64)


def mark(ctx: Any, v: SSAValue, dims: list[int | Dim]) -> None:
    """Record the symbolic sizes of `v`'s dynamic dims on its defining op (`rlx.dims`,
    for `bind-dims`) and in the importer (`ctx.ssa_dims`, for later `Shape`s)."""
    if not any(isinstance(d, Dim) for d in dims):
        return
    ctx.ssa_dims[v] = list(dims)
    op = v.owner
    if not isinstance(op, Operation):
        return  # a graph input passed through unchanged: its dims are named already
    text = [StringAttr(_text(d)) if isinstance(d, Dim) else IntegerAttr(int(d), 64) for d in dims]
    op.attributes[DIMS_ATTR] = ArrayAttr(text)  # type: ignore[union-attr]


def _text(d: Dim) -> str:
    return re.sub(r"\s+", "", d.expr)


def sizes(dims: list[int | Dim]) -> list[int]:
    """Result-type sizes: `?` for symbolic dims."""
    return [DYN if isinstance(d, Dim) else int(d) for d in dims]


def materialize_symbolic(ctx, arr: np.ndarray) -> SSAValue:  # noqa: ANN001
    """An i64 tensor holding the sizes of `arr` (ints and `Dim`s) at run time: each `Dim`
    is the sum of a `[size]` ones tensor, so it folds to a constant after `bind-dims`."""
    g = ctx.g
    parts = []
    for d in arr.reshape(-1).tolist():
        if isinstance(d, Dim):
            ones = g.broadcast_to(g.constant(np.ones([1], np.int64), dtype="i64"), sizes([d]))
            mark(ctx, ones, [d])
            parts.append(g.reshape(g.op("reduce", ones, kind="sum", axes=[0], keepdims=True), [1]))
        else:
            parts.append(g.constant(np.array([int(d)], np.int64), dtype="i64"))
    flat = parts[0] if len(parts) == 1 else g.op("concat", *parts, axis=0)
    return g.reshape(flat, list(arr.shape))
