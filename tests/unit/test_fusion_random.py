"""Random graphs built from fusable motifs (and their near misses): `fusion` must keep
the reference outputs (allclose) and produce verifiable IR."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest
from test_fusion_common import assert_same_numbers, op_names
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from rlx.builder import Graph
from rlx.dialects.rlx.base import shape_of

ACTS = ("relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid", None)
UNARY = ("neg", "tanh", "sigmoid", "relu", "gelu", "silu", "sin", "abs")
BINARY = ("add", "sub", "mul", "max", "min")


@dataclass
class FusionGraph:
    """A random module with inputs and params to run it on."""

    module: ModuleOp
    inputs: dict[str, np.ndarray]
    params: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])


class _Gen:
    """Grows a pool of [M, n] values by applying random motifs to random pool members
    (so values get several users and graph outputs fall in the middle of chains)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.g = Graph()
        self.m = int(self.rng.choice([2, 3, 4]))
        self.params: dict[str, np.ndarray] = {}
        x = self.g.input("x", (self.m, 8))
        self.inputs = {"x": self.rng.standard_normal((self.m, 8)).astype(np.float32)}
        self.pool: list[SSAValue] = [x]

    def param(self, shape: tuple[int, ...], scale: float = 0.4) -> SSAValue:
        name = f"p{len(self.params)}"
        self.params[name] = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.g.param(name, shape)

    def pick(self) -> SSAValue:
        return self.pool[int(self.rng.integers(len(self.pool)))]

    def pick_like(self, v: SSAValue) -> SSAValue:
        same = [p for p in self.pool if shape_of(p.type) == shape_of(v.type) and p is not v]
        return same[int(self.rng.integers(len(same)))] if same else self.param(shape_of(v.type))

    def width(self) -> int:
        return int(self.rng.choice([4, 8]))

    # ------------------------------------------------------------------ motifs
    def mba(self) -> SSAValue:
        g, v = self.g, self.pick()
        n = self.width()
        h = g.matmul(v, self.param((shape_of(v.type)[-1], n)))
        if self.rng.random() < 0.8:
            bias = self.param((n,) if self.rng.random() < 0.8 else (self.m, n))
            h = g.add(h, bias) if self.rng.random() < 0.5 else g.add(bias, h)
        act = ACTS[int(self.rng.integers(len(ACTS)))]
        return getattr(g, act)(h) if act else h

    def shared(self) -> SSAValue:
        g, v = self.g, self.pick()
        k = shape_of(v.type)[-1]
        outs = [
            g.matmul(v, self.param((k, self.width()))) for _ in range(int(self.rng.integers(2, 4)))
        ]
        self.pool.extend(outs[:-1])
        return outs[-1]

    def swiglu(self) -> SSAValue:
        g, v = self.g, self.pick()
        k, n = shape_of(v.type)[-1], self.width()
        other = v if self.rng.random() < 0.8 else self.pick()
        gate = g.silu(g.matmul(v, self.param((k, n))))
        up = g.matmul(other, self.param((shape_of(other.type)[-1], n)))
        return g.mul(gate, up) if self.rng.random() < 0.5 else g.mul(up, gate)

    def packed(self) -> SSAValue:
        g, v = self.g, self.pick()
        n = self.width()
        h = g.matmul(v, self.param((shape_of(v.type)[-1], 2 * n)))
        lo = g.slice(h, starts=[0, 0], limits=[self.m, n])
        hi = g.slice(h, starts=[0, n], limits=[self.m, 2 * n])
        gate, up = (lo, hi) if self.rng.random() < 0.5 else (hi, lo)
        return g.mul(up, g.silu(gate))

    def norm(self) -> SSAValue:
        g, v = self.g, self.pick()
        s = g.add(v, self.pick_like(v))
        n = shape_of(v.type)[-1]
        gamma, beta = self.param((n,)), self.param((n,))
        if self.rng.random() < 0.5:
            return g.layer_norm(s, gamma, beta)
        out = g.rms_norm(s, gamma)
        if self.rng.random() < 0.5:  # rms_norm -> flattening reshape -> back
            r = g.reshape(g.rms_norm(g.reshape(out, (1, self.m, n)), gamma), (self.m, n))
            return r
        return out

    def elementwise(self) -> SSAValue:
        g, v = self.g, self.pick()
        for _ in range(int(self.rng.integers(1, 5))):
            r = self.rng.random()
            if r < 0.45:
                v = getattr(g, UNARY[int(self.rng.integers(len(UNARY)))])(v)
            elif r < 0.8:
                other = (
                    self.pick_like(v)
                    if self.rng.random() < 0.6
                    else self.param((shape_of(v.type)[-1],))
                )
                v = getattr(g, BINARY[int(self.rng.integers(len(BINARY)))])(v, other)
            elif r < 0.9:
                w = self.pick_like(v)
                v = g.where(g.compare(v, w, predicate="gt"), v, w)
            else:
                v = g.cast(g.cast(v, "f16"), "f32")
        return v

    def attention(self) -> SSAValue:
        g, v = self.g, self.pick()
        k = shape_of(v.type)[-1]

        def head(x: SSAValue) -> SSAValue:
            return g.reshape(g.matmul(x, self.param((k, 4))), (1, 1, self.m, 4))

        q, kk, vv = head(v), head(v), head(v)
        s = g.mul(
            g.matmul(q, g.transpose(kk, permutation=[0, 1, 3, 2])), g.constant(np.float32(0.5))
        )
        if self.rng.random() < 0.5:
            s = g.add(s, self.param((1, 1, self.m, self.m)))
        return g.reshape(g.matmul(g.softmax(s, axis=-1), vv), (self.m, 4))

    def build(self) -> FusionGraph:
        motifs = (
            self.mba,
            self.shared,
            self.swiglu,
            self.packed,
            self.norm,
            self.elementwise,
            self.attention,
        )
        for _ in range(int(self.rng.integers(3, 8))):
            self.pool.append(motifs[int(self.rng.integers(len(motifs)))]())
        outs = [self.pool[-1]] + [self.pick() for _ in range(int(self.rng.integers(0, 3)))]
        self.g.output(*dict.fromkeys(outs))
        return FusionGraph(self.g.module, self.inputs, self.params)


def random_fusion_graph(seed: int) -> FusionGraph:
    """A seeded random graph of fusable motifs (see `_Gen`)."""
    return _Gen(seed).build()


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_graph_numerics(seed: int) -> None:
    rg = random_fusion_graph(seed)
    assert_same_numbers(rg.module, rg.inputs, rg.params, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_random_graph_numerics_bounded_regions(seed: int) -> None:
    rg = random_fusion_graph(seed)
    assert_same_numbers(
        rg.module, rg.inputs, rg.params, rtol=2e-4, atol=2e-4, max_steps=3, max_inputs=2
    )


def test_random_graphs_exercise_every_pattern() -> None:
    from test_fusion_common import fuse

    seen: Counter[str] = Counter()
    for seed in SEEDS:
        seen.update(op_names(fuse(random_fusion_graph(seed).module)))
    for kind in ("fused_matmul_bias_act", "fused_swiglu", "fused_residual_layer_norm",
                 "fused_residual_rms_norm", "attention", "elementwise_region", "concat"):  # fmt: skip
        assert seen[f"rlx.{kind}"] > 0, kind
