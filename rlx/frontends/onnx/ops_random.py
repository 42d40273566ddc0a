"""RandomUniform / RandomNormal and their `*Like` forms (opsets 1-25) onto `rlx.rng_uniform`
/ `rlx.rng_normal`; Bernoulli (15-25) as `cast(uniform < p)`; Dropout (1-25: the input
in inference, `where(uniform >= ratio, x / (1 - ratio), 0)` with training_mode).

Bernoulli has its own converter because ONNX's function body for it (opset 15,
`Greater(RandomUniformLike(p), p)`) draws 1 with probability 1 - p, against the operator's
own definition ("an output of 1 is produced with probability p") and onnxruntime's kernel
(docs/onnx-coverage.md, "Upstream").

The numbers come from RLX's Philox stream (the `rng` pass's module seed and a per-op
`seed_offset`), not from onnxruntime's generator: the distribution and the shape match,
the values do not. An integral ONNX `seed` attribute becomes the op's `seed_offset` (same
seed, same stream, as ONNX intends; a fractional one its bits); unseeded ops get offsets
2^32, 2^32 + 1, ... in node order, so two of them (two dropout masks) never share a
stream. Shapes must be static (`rlx.rng_*` need them).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import is_float
from rlx.frontends.onnx.importer import onnx_elem
from rlx.frontends.onnx.node import Node, dims_text, elem, is_static, shape
from rlx.frontends.onnx.registry import converter

_DIST = {
    "RandomUniform": ("rng_uniform", "low", 0.0, "high", 1.0),
    "RandomNormal": ("rng_normal", "mean", 0.0, "scale", 1.0),
}
"""Per op (and its `Like` form): rlx op, its two attributes with their ONNX defaults."""
_UNSEEDED = 1 << 32
"""First `seed_offset` of the unseeded random ops of a model."""
_FLOAT_TYPES = frozenset(
    {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}
)


def _random(n: Node, dims: tuple[int, ...], dtype: object) -> SSAValue:
    op, a_name, a_default, b_name, b_default = _DIST[n.op_type.removesuffix("Like")]
    a, b = float(n.attr(a_name, a_default)), float(n.attr(b_name, b_default))
    if not (math.isfinite(a) and math.isfinite(b)):
        raise n.error(f"{a_name} and {b_name} must be finite, got {a} and {b}")
    attrs: dict[str, object] = {"low": a, "high": b} if op == "rng_uniform" else {}
    if op == "rng_normal":
        if b < 0:
            raise n.error(f"scale must be non-negative, got {b}")
        attrs = {"mean": a, "std": b}
    elif a > b:
        raise n.error(f"low ({a}) must not exceed high ({b})")
    return _draw(n, op, attrs, dims, dtype)


def _draw(
    n: Node, op: str, attrs: dict[str, object], dims: tuple[int, ...], dtype: object
) -> SSAValue:
    """`rlx.<op>` of `dims`, seeded from the node's `seed` (or the next unseeded offset)."""
    if not is_static(dims):
        raise n.error(f"random tensors need a static shape, got {dims_text(dims)}")
    seed = n.attr("seed")
    if seed is None:
        attrs["seed_offset"] = _UNSEEDED + n.ctx.unseeded_random
        n.ctx.unseeded_random += 1
    else:
        if not math.isfinite(float(seed)):
            raise n.error(f"seed must be finite, got {seed}")
        s = float(seed)  # a float in ONNX: integral seeds keep their value, others their bits
        whole = s.is_integer() and abs(s) < 2.0**63
        attrs["seed_offset"] = int(s) if whole else int(np.float64(s).view(np.int64))
    g = n.ctx.g
    build = g.rng_uniform if op == "rng_uniform" else g.rng_normal
    try:
        return build(list(dims), dtype, **attrs)
    except ValueError as e:
        raise n.error(str(e)) from None


def _float_type(n: Node, code: int) -> object:
    if code not in _FLOAT_TYPES:
        raise n.error(f"dtype must be a floating-point type, got TensorProto type {code}")
    return onnx_elem(code)


@converter(
    "RandomUniform",
    "RandomNormal",
    attrs={"dtype", "low", "high", "mean", "scale", "seed", "shape"},
)
def random(n: Node) -> list[SSAValue]:
    dims = n.attr("shape")
    if dims is None:
        raise n.error("attribute 'shape' is required")
    if any(int(d) < 0 for d in dims):
        raise n.error(f"shape must be non-negative, got {list(dims)}")
    return [_random(n, tuple(int(d) for d in dims), _float_type(n, int(n.attr("dtype", 1))))]


@converter(
    "RandomUniformLike", "RandomNormalLike", attrs={"dtype", "low", "high", "mean", "scale", "seed"}
)
def random_like(n: Node) -> list[SSAValue]:
    x = n.input(0)
    code = n.attr("dtype")
    dtype = elem(x) if code is None else _float_type(n, int(code))
    if code is None and not is_float(dtype):
        raise n.error(f"input element type {dtype} is not floating point: give 'dtype'")
    return [_random(n, shape(x), dtype)]


@converter("Bernoulli", attrs={"dtype", "seed"})
def bernoulli(n: Node) -> list[SSAValue]:
    p = n.input(0)
    dtype = elem(p)  # floating point: the schema check before any converter says so
    u = _draw(n, "rng_uniform", {"low": 0.0, "high": 1.0}, shape(p), dtype)
    code = n.attr("dtype")
    return [
        n.cast(
            n.emit("compare", u, p, predicate="lt"), dtype if code is None else onnx_elem(int(code))
        )
    ]


@converter("Dropout", attrs=("seed", "ratio"))
def dropout(n: Node) -> list[SSAValue | None]:
    x = n.input(0)
    training = n.const(2, "training_mode ")
    given = n.const(1, "ratio ")
    ratio = float(n.attr("ratio", 0.5) if given is None else np.asarray(given).reshape(-1)[0])
    if training is None or not bool(np.asarray(training).reshape(-1)[0]) or ratio == 0.0:
        mask = n.typed("broadcast_to", n.constant(True, "bool"), shape(x)) if n.wants(1) else None
        return [x, mask]  # inference: the input, every element kept
    if not 0.0 <= ratio < 1.0:
        raise n.error(f"ratio must be in [0, 1) in training mode, got {ratio}")
    u = _draw(n, "rng_uniform", {"low": 0.0, "high": 1.0}, shape(x), elem(x))
    keep = n.emit("compare", u, n.constant(ratio, x), predicate="ge")
    scaled = n.emit("mul", x, n.constant(1.0 / (1.0 - ratio), x))
    y = n.emit("where", keep, scaled, n.constant(0.0, x))
    return [y, keep if n.wants(1) else None]
