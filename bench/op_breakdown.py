"""Where an ONNX model's time goes: every op of its compiled `@main`, compiled and timed alone.

    python bench/op_breakdown.py MODEL.onnx [--reps 7] [--top 12]

The model is imported and compiled as bench/cnn.py does (`cache_param_invariant=True`);
each top-level rlx op of `@main` after the graph passes (fused ops included; params,
constants and reshapes skipped) becomes a one-op module compiled without graph passes and
run on random inputs of its operand types. Prints the fastest of `--reps` runs per op,
summed by kind (convolutions split into kxk, 1x1 and depthwise), and the slowest ops. The
sum ignores what running in sequence adds or saves (caches, the pool's wake-ups): it says
which kernels to look at, not the model's time. Bench-only (needs onnx).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from common import THREADS  # noqa: F401  (before numpy: thread caps, compile cache, BLAS)

import numpy as np  # isort: skip

import rlx  # isort: skip

SKIP = ("rlx.param", "rlx.constant", "rlx.reshape")


def kind(op: object) -> str:
    """The op's name; convolutions as `conv2d kxk` / `conv2d 1x1` / `conv2d dw`."""
    name = op.name  # type: ignore[attr-defined]
    if "conv2d" not in name:
        return name
    w = op.operands[1].type.get_shape()  # type: ignore[attr-defined]
    groups = op.groups or 1  # type: ignore[attr-defined]
    if groups > 1 and groups == w[0]:
        return f"{name} dw"
    return f"{name} {'1x1' if tuple(w[2:]) == (1, 1) else 'kxk'}"


def breakdown(path: str, reps: int) -> list[tuple[float, str, str]]:
    """(fastest ms, kind, types) per op of the compiled `@main`."""
    import onnx
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block, Region

    from rlx.dtypes import numpy_dtype
    from rlx.frontends.onnx import import_model
    from rlx.interpreter import parse_module

    module, _ = import_model(onnx.load(path))
    compiled = rlx.compile(module, rlx.CompileOptions(cache_param_invariant=True))
    graph = parse_module(compiled.ir("rlx"))
    main = next(
        o for o in graph.body.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main"
    )
    bare = rlx.CompileOptions(dce=False, constant_folding=False, fusion_target="none")
    rng = np.random.default_rng(0)
    rows = []
    for op in list(main.body.block.ops):
        if op.name in SKIP or not op.name.startswith("rlx."):
            continue
        in_types = [o.type for o in op.operands]
        block = Block(arg_types=in_types)
        one = op.clone()
        for i, a in enumerate(block.args):
            one.operands[i] = a
        block.add_op(one)
        block.add_op(func.ReturnOp(*one.results))
        f = func.FuncOp("main", (in_types, [r.type for r in op.results]), Region(block))
        c = rlx.compile(ModuleOp([f]), bare)
        ins = [
            (rng.standard_normal(t.get_shape()) * 0.1).astype(numpy_dtype(t.element_type))
            for t in in_types
        ]
        c.run(*ins)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            c.run(*ins)
            ts.append(time.perf_counter() - t0)
        types = f"{in_types[0]} -> {op.results[0].type}"
        rows.append((min(ts) * 1e3, kind(op), types))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    rows = breakdown(a.model, a.reps)
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for ms, k, _ in rows:
        total[k] += ms
        count[k] += 1
    print(f"sum of ops {sum(total.values()):.2f} ms (fastest of {a.reps} each)")
    for k in sorted(total, key=lambda k: -total[k]):
        print(f"  {k:28s} x{count[k]:3d} {total[k]:8.2f} ms")
    for ms, k, types in sorted(rows, reverse=True)[: a.top]:
        print(f"  {ms:8.3f} ms  {k:20s} {types}")


if __name__ == "__main__":
    main()
