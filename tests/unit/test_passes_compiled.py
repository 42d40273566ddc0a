"""Every graph pass, compiled: random graphs compiled before and after the pass give the
outputs of the NumPy reference interpreter on the original graph."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graphgen import RandomGraph, apply, random_graph
from xdsl.dialects.builtin import ModuleOp

import rlx
from rlx.transforms.canonicalize import RlxCanonicalizePass
from rlx.transforms.constant_folding import ConstantFoldingPass
from rlx.transforms.dce import DeadCodeEliminationPass
from rlx.transforms.fusion import FusionPass
from rlx.transforms.kernel_dispatch import KernelDispatchPass
from rlx.transforms.legalize import LegalizePass
from rlx.transforms.precision import Precision

# Compile exactly the given module: no graph passes of the default pipeline.
BARE = rlx.CompileOptions(dce=False, constant_folding=False, fusion_target="none")

PASSES: dict[str, tuple[Any, float]] = {
    "dce": (DeadCodeEliminationPass(), 1e-5),
    "canonicalize": (RlxCanonicalizePass(), 1e-5),
    "constant-folding": (ConstantFoldingPass(), 1e-5),
    "fusion": (FusionPass(), 1e-4),
    "kernel-dispatch=common": (KernelDispatchPass(policy="common"), 1e-4),
    "legalize": (
        LegalizePass(
            supported_ops=(
                "add",
                "sub",
                "mul",
                "div",
                "max",
                "min",
                "neg",
                "abs",
                "exp",
                "tanh",
                "erf",
                "sin",
                "sqrt",
                "matmul",
                "reduce",
                "transpose",
                "reshape",
                "broadcast_to",
                "constant",
            )
        ),
        1e-4,
    ),  # fmt: skip
    "precision=f16": (Precision(precision="f16"), 2e-2),
}
SEEDS = (0, 1, 2)


def _compiled(module: ModuleOp, g: RandomGraph) -> list[np.ndarray]:
    c = rlx.compile(module, BARE)
    c.set_params({k: v for k, v in g.params.items() if k in c.params})
    return c.run(**g.inputs)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_preserves_compiled_outputs(name: str, seed: int) -> None:
    pass_, tol = PASSES[name]
    g = random_graph(seed)
    want = g.run()
    before = _compiled(g.module.clone(), g)
    after_module = apply(pass_, g.module.clone())
    after = _compiled(after_module, g)
    for w, b, a in zip(want, before, after, strict=True):
        np.testing.assert_allclose(b, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a, w, rtol=tol, atol=tol)
