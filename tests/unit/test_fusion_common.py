"""Shared helpers of the fusion tests: run the pass in-process and compare the
reference interpreter's outputs before and after."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from rlx.transforms.fusion import FusionPass


def fuse(module: ModuleOp, **options: object) -> ModuleOp:
    """A fused, verified copy of `module`."""
    out = module.clone()
    FusionPass(**options).apply(Context(), out)  # type: ignore[arg-type]
    out.verify()
    return out


def op_names(module: ModuleOp) -> list[str]:
    """Names of the ops directly in the function bodies (no region bodies, no return)."""
    names = []
    for f in module.body.block.ops:
        for op in f.regions[0].block.ops:
            if op.name != "func.return":
                names.append(op.name)
    return names


def assert_same_numbers(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    params: Mapping[str, np.ndarray] | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    **options: object,
) -> ModuleOp:
    """Fuse `module` and check the reference outputs match; returns the fused module."""
    from rlx.interpreter import run

    fused = fuse(module, **options)
    want = run(module, dict(inputs), dict(params or {}))
    got = run(fused, dict(inputs), dict(params or {}))
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert w.shape == g.shape and w.dtype == g.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
    return fused


def randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def test_fusion_is_idempotent() -> None:
    """A second run finds nothing left to fuse."""
    from rlx.builder import Graph

    g = Graph()
    x = g.input("x", (2, 8))
    h = g.gelu(g.add(g.matmul(x, g.param("w", (8, 16))), g.param("b", (16,))))
    g.output(g.exp(g.neg(g.mul(h, h))))
    once = fuse(g.module)
    assert str(fuse(once)) == str(once)
