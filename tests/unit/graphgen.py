"""Seeded generator of small random valid rlx graphs (for numeric pass tests).

`random_graph(seed)` builds a module with `rlx.Graph` from elementwise, broadcasting,
matmul, reduce, softmax, layer/rms norm, transpose, reshape and broadcast_to ops (plus
constants, some of them 0 / 1 so the simplifications fire), and returns it with
matching random inputs and params. Values stay O(1) (exp only sees tanh-bounded input).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from rlx.builder import Graph
from rlx.dialects.rlx.base import shape_of

UNARY = ("neg", "abs", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "sin", "erf")
BINARY = ("add", "sub", "mul", "max", "min")


@dataclass
class RandomGraph:
    module: ModuleOp
    inputs: dict[str, np.ndarray]
    params: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])

    def run(self, module: ModuleOp | None = None) -> list[np.ndarray]:
        """Reference outputs of `module` (default: this graph's own module)."""
        from rlx.interpreter import run

        return run(module or self.module, self.inputs, self.params)


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.g = Graph()
        self.params: dict[str, np.ndarray] = {}
        self.inputs: dict[str, np.ndarray] = {}
        self.pool: list[SSAValue] = []

    def arr(self, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.standard_normal(shape).astype(np.float32)

    def param(self, shape: tuple[int, ...]) -> SSAValue:
        name = f"p{len(self.params)}"
        self.params[name] = self.arr(shape)
        return self.g.param(name, shape)

    def operand_like(self, shape: tuple[int, ...]) -> SSAValue:
        """A value broadcastable to `shape`: same-shape pool value, param, or constant."""
        same = [v for v in self.pool if shape_of(v.type) == shape]
        r = self.rng.integers(5)
        if r == 0 and same:
            return same[self.rng.integers(len(same))]
        if r == 1:
            return self.param(shape[-1:])
        if r == 2:
            return self.g.constant(np.float32(self.rng.choice([0.0, 1.0, 0.5, 2.0])))
        if r == 3:
            return self.g.constant(self.arr(shape[-1:]))
        return self.param(shape)

    def step(self, x: SSAValue) -> SSAValue:
        g, s = self.g, shape_of(x.type)
        ops: list[Callable[[], SSAValue]] = [
            lambda: g.op(str(self.rng.choice(UNARY)), x),  # type: ignore[return-value]
            lambda: g.op(str(self.rng.choice(BINARY)), x, self.operand_like(s)),  # type: ignore[return-value]
            lambda: g.op(str(self.rng.choice(BINARY)), self.operand_like(s), x),  # type: ignore[return-value]
            lambda: g.exp(g.tanh(x)),
            lambda: g.softmax(x, axis=int(self.rng.choice([-1, 0]))),
            lambda: g.layer_norm(x, self.param(s[-1:]), self.param(s[-1:]), epsilon=1e-5),
            lambda: g.rms_norm(x, self.param(s[-1:]), epsilon=1e-6),
            lambda: g.reduce(
                x, kind=str(self.rng.choice(["sum", "mean", "max"])), axes=[-1], keepdims=True
            ),
            lambda: g.broadcast_to(x, (2, *s)) if len(s) < 3 else g.neg(x),
            lambda: g.add(x, g.mul(g.constant(self.arr(s[-1:])), g.constant(np.float32(2.0)))),
        ]
        if len(s) >= 2:
            perm = list(range(len(s)))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            n = int(self.rng.integers(2, 5))
            ops += [
                lambda: g.matmul(x, self.param((s[-1], n))),
                lambda: g.transpose(x, permutation=perm),
                lambda: g.reshape(x, (*s[:-2], s[-1], s[-2])),
                lambda: g.reshape(g.reshape(x, (int(np.prod(s)),)), s),
            ]
        return ops[self.rng.integers(len(ops))]()


def random_graph(seed: int, n_ops: int = 8) -> RandomGraph:
    """A random module `@main(x) -> (y[, z])` with `n_ops` random steps."""
    gen = _Gen(seed)
    shape = (int(gen.rng.integers(1, 4)), int(gen.rng.integers(2, 6)))
    x = gen.g.input("x", shape)
    gen.inputs["x"] = gen.arr(shape)
    gen.pool.append(x)
    for _ in range(n_ops):
        src = gen.pool[-1] if gen.rng.random() < 0.7 else gen.pool[gen.rng.integers(len(gen.pool))]
        gen.pool.append(gen.step(src))
    outs = [gen.pool[-1]]
    if len(gen.pool) > 3 and gen.rng.random() < 0.5:
        outs.append(gen.pool[len(gen.pool) // 2])
    gen.g.output(*outs)
    return RandomGraph(gen.g.module, gen.inputs, gen.params)


# ----------------------------------------------------------------------------- test helpers


def parse(text: str) -> ModuleOp:
    """Parse rlx/func/arith/math MLIR text (what the FileCheck inputs look like)."""
    from rlx.interpreter import parse_module

    return parse_module(text)


def apply(pass_: object, module: ModuleOp) -> ModuleOp:
    """Apply a ModulePass in place, verify, and return the module."""
    from xdsl.context import Context

    pass_.apply(Context(), module)  # type: ignore[attr-defined]
    module.verify()
    return module


def op_names(module: ModuleOp) -> list[str]:
    """Names of the rlx ops of a module, in order."""
    return [o.name for o in module.walk() if o.name.startswith("rlx.")]


# ----------------------------------------------------------------------------- fuzzing

FUZZ_FLOAT_DTYPES = ("f32", "f16", "bf16")
FUZZ_INT_DTYPES = ("i32", "i64", "i8")
FP8_DTYPES: tuple[str, ...] = ("f8E4M3FN", "f8E5M2")
"""fp8 element types fuzzed end to end (OCP e4m3 without infinities, IEEE-like e5m2)."""
FUZZ_SHAPES = ((3, 5), (2, 4, 6), (64, 64), (96, 80), (64, 512), (4, 16, 512))
"""Small shapes, shapes whose matmuls reach BLAS (>= 32^3 multiply-adds) and shapes of
>= 2^15 elements (the row-parallel pool chunks over 2^14-element tasks)."""
FUZZ_TOLERANCE = {"f32": 2e-4, "f16": 2e-2, "bf16": 8e-2, "f8E4M3FN": 0.25, "f8E5M2": 0.5}
"""Relative tolerance (of the output's magnitude) of compiled vs reference results: fp8
values are rounded after every op, so a last-bit difference of an f32 intermediate can move
a result by one fp8 step (2^-3 of its magnitude in e4m3, 2^-2 in e5m2); two steps allowed."""
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid")


def _np(dtype: str) -> np.dtype:
    from rlx.builder import _np_dtype

    return np.dtype(_np_dtype(dtype))


class _FuzzGen:
    """Random graphs over every op family for one element type (ints mix in f32 casts).

    Values stay O(1) for floats (norms, bounded activations) and within [-64, 64] for
    integers (products are clipped), so results are comparable across precisions."""

    def __init__(self, seed: int, dtype: str, shape: tuple[int, ...]) -> None:
        self.rng = np.random.default_rng(seed)
        self.g = Graph()
        self.dtype = dtype
        self.params: dict[str, np.ndarray] = {}
        self.inputs: dict[str, np.ndarray] = {}
        self.pool: list[SSAValue] = [self.g.input("x", shape, dtype)]
        self.inputs["x"] = self.values(shape, dtype)

    def is_float(self, v: SSAValue) -> bool:
        return str(v.type.element_type)[0] in "fb"  # type: ignore[attr-defined]

    def dt(self, v: SSAValue) -> str:
        return str(v.type.element_type)  # type: ignore[attr-defined]

    def values(self, shape: tuple[int, ...], dtype: str, scale: float = 0.5) -> np.ndarray:
        if dtype[0] == "i":
            return self.rng.integers(-3, 4, shape).astype(_np(dtype))
        return (self.rng.standard_normal(shape) * scale).astype(_np(dtype))

    def param(self, shape: tuple[int, ...], dtype: str, scale: float = 0.5) -> SSAValue:
        name = f"p{len(self.params)}"
        self.params[name] = self.values(shape, dtype, scale)
        return self.g.param(name, shape, dtype)

    def other(self, v: SSAValue) -> SSAValue:
        """A second operand for `v`: a pool value of its type, a row or full param, a scalar."""
        t, s = self.dt(v), shape_of(v.type)
        same = [p for p in self.pool if p.type == v.type and p is not v]
        r = int(self.rng.integers(4))
        if r == 0 and same:
            return same[int(self.rng.integers(len(same)))]
        if r == 1:
            return self.param(s[-1:], t)
        if r == 2:
            return self.g.constant(np.asarray(self.rng.choice([0, 1, 2]), _np(t)), t)
        return self.param(s, t)

    def exact(self, v: SSAValue) -> tuple[str, ...]:
        """floor/ceil/round only of the graph's input: of a computed value they turn a
        last-bit difference (f32 vs f64 accumulation, 1.0000001 vs 1.0) into 1.0."""
        return ("floor", "ceil", "round") if v is self.pool[0] else ()

    def clip(self, v: SSAValue) -> SSAValue:
        t = self.dt(v)
        hi, lo = (np.asarray(b, _np(t)) for b in (64, -64))
        return self.g.max(self.g.min(v, self.g.constant(hi, t)), self.g.constant(lo, t))

    def int_step(self, x: SSAValue) -> SSAValue:
        g = self.g
        ops: list[Callable[[], SSAValue]] = [
            lambda: g.op(str(self.rng.choice(("add", "sub", "max", "min"))), x, self.other(x)),
            lambda: self.clip(g.mul(x, self.other(x))),
            lambda: g.op(str(self.rng.choice(("neg", "abs"))), x),
            lambda: g.reduce(
                x, kind=str(self.rng.choice(["sum", "max"])), axes=[-1], keepdims=True
            ),
            lambda: g.where(g.compare(x, self.other(x), predicate="lt"), x, self.other(x)),
            lambda: g.cast(x, "f32"),
            lambda: g.cumsum(x, axis=-1),
        ]
        return self.shape_step(x) if self.rng.random() < 0.2 else ops[self.rng.integers(len(ops))]()

    def float_step(self, x: SSAValue) -> SSAValue:
        g, s, t = self.g, shape_of(x.type), self.dt(x)
        act = lambda v: g.op(str(self.rng.choice(ACTIVATIONS)), v)  # noqa: E731
        pos = lambda v: g.add(g.abs(v), g.constant(np.asarray(0.5, _np(t)), t))  # noqa: E731
        k, n = s[-1], int(self.rng.choice([4, 16, 64]))
        ops: list[Callable[[], SSAValue]] = [
            lambda: act(x),
            lambda: g.op(str(self.rng.choice(UNARY + ("cos",) + self.exact(x))), x),
            lambda: g.op(str(self.rng.choice(("sqrt", "rsqrt", "log"))), pos(x)),
            lambda: g.op(str(self.rng.choice(BINARY)), x, self.other(x)),
            lambda: g.exp(g.tanh(x)),
            lambda: g.softmax(x, axis=-1),
            lambda: g.layer_norm(
                g.add(x, self.other(x)), self.param(s[-1:], t), self.param(s[-1:], t), epsilon=1e-5
            ),
            lambda: g.rms_norm(g.add(x, self.other(x)), self.param(s[-1:], t), epsilon=1e-6),
            lambda: g.reduce(
                x, kind=str(self.rng.choice(["sum", "mean", "max"])), axes=[-1], keepdims=True
            ),
            lambda: g.cumsum(x, axis=-1),
            lambda: g.where(g.compare(x, self.other(x), predicate="gt"), x, self.other(x)),
            # matmul epilogues (fused_matmul_bias_act), SwiGLU (two matmuls of one input)
            lambda: act(g.add(g.matmul(x, self.param((k, n), t, k**-0.5)), self.param((n,), t))),
            lambda: g.mul(
                g.silu(g.matmul(x, self.param((k, n), t, k**-0.5))),
                g.matmul(x, self.param((k, n), t, k**-0.5)),
            ),  # fmt: skip
        ]
        if len(s) == 3:  # attention over [1, B, S, D]
            q = g.reshape(x, (1, *s))
            ops.append(lambda: g.reshape(g.attention(q, q, q), s))
        if t != "f32":
            ops.append(lambda: g.cast(g.mul(g.cast(x, "f32"), g.constant(np.float32(0.5))), t))
        return self.shape_step(x) if self.rng.random() < 0.2 else ops[self.rng.integers(len(ops))]()

    def shape_step(self, x: SSAValue) -> SSAValue:
        g, s = self.g, shape_of(x.type)
        ops: list[Callable[[], SSAValue]] = [
            lambda: g.reshape(g.reshape(x, (int(np.prod(s)),)), s),
            lambda: g.concat(x, x, axis=-1) if s[-1] <= 64 else x,
            lambda: g.slice(
                x, starts=[0] * len(s), limits=[max(d // 2, 1) for d in s[:-1]] + [s[-1]]
            ),
        ]
        if len(s) >= 2:
            perm = list(range(len(s)))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            ops.append(lambda: g.transpose(x, permutation=perm))
        if len(s) < 3:
            ops.append(lambda: g.broadcast_to(x, (2, *s)))
        return ops[self.rng.integers(len(ops))]()


def fuzz_graph(seed: int, dtype: str, shape: tuple[int, ...], n_ops: int) -> RandomGraph:
    """A random `@main(x) -> (y[, z])` of element type `dtype` (inputs and params too)."""
    gen = _FuzzGen(seed, dtype, shape)
    for _ in range(n_ops):
        pool = gen.pool
        src = pool[-1] if gen.rng.random() < 0.7 else pool[int(gen.rng.integers(len(pool)))]
        step = gen.float_step if gen.is_float(src) else gen.int_step
        out = step(src)
        if int(np.prod(shape_of(out.type))) > 1 << 20:  # keep the reference fast
            out = gen.g.reduce(out, kind="sum", axes=[0], keepdims=False)
        pool.append(out)
    outs = [gen.pool[-1]]
    if len(gen.pool) > 3 and gen.rng.random() < 0.5:
        outs.append(gen.pool[len(gen.pool) // 2])
    gen.g.output(*outs)
    return RandomGraph(gen.g.module, gen.inputs, gen.params)
