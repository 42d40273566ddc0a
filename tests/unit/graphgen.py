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
