"""split-graph: graph functions outlined into noinline parts compute what the unsplit
function computes (compared with the NumPy reference interpreter), keep their ABI, and
functions that cannot be split safely are left alone."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

import rlx
from rlx.builder import Graph
from rlx.lowering.convert_rlx_to_linalg import ConvertRlxToLinalgPass
from rlx.lowering.plan_memory import PlanMemoryPass
from rlx.lowering.split_graph import SplitGraphPass, count_calls, plan_split, split_module
from rlx.runtime import option_pipeline
from rlx.runtime.cache import CACHE
from rlx.runtime.compiler import load_module, make_context

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMER = ROOT / "examples" / "transformer_block.mlir"

# The graph exactly as built: no fusion (which would merge the elementwise chain).
BARE = rlx.CompileOptions(dce=False, constant_folding=False, fusion_target="none")

SHAPES = [(16, 24), (8, 48), (48, 8), (384,), (4, 96), (2, 3, 64)]
UNARY = ["tanh", "sigmoid", "neg", "exp", "silu", "abs"]
BINARY = ["add", "mul", "sub", "max"]


def chain_graph(n_ops: int) -> tuple[Graph, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """About `n_ops` ops: elementwise chains on one 384-element value viewed in six shapes,
    with a per-shape param and a few side outputs (matmuls, reductions)."""
    rng = np.random.default_rng(0)
    g = Graph()
    x = g.input("x", SHAPES[0])
    params: dict[str, np.ndarray] = {}
    outs = []
    n = 0
    while n < n_ops:
        shape = SHAPES[(n // 10) % len(SHAPES)]
        x = g.reshape(x, shape)
        n += 1
        for j in range(8):
            if j % 3 == 1:
                name = f"p{'x'.join(map(str, shape))}_{j}"
                if name not in params:
                    params[name] = rng.uniform(0.5, 1.0, shape[-1:]).astype(np.float32)
                w = g.param(name, shape[-1:])
                x = getattr(g, BINARY[(n + j) % len(BINARY)])(x, w)
                n += 2
            else:
                x = getattr(g, UNARY[(n + j) % len(UNARY)])(x)
                n += 1
            # keep values bounded (exp of exp ... overflows otherwise)
            x = g.tanh(x)
            n += 1
        if len(outs) < 4 and (n // 10) % 7 == 3:
            m = g.reshape(x, (16, 24))
            outs.append(g.matmul(m, g.reshape(m, (24, 16))))
            n += 3
    g.output(x, *outs)
    inputs = {"x": rng.uniform(-1, 1, SHAPES[0]).astype(np.float32)}
    return g, inputs, params


@pytest.fixture
def split_with(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`split_with(n)`: the next compiles split with max-calls n (None: no split); the
    compile cache is off (it is keyed by the source, not by this patch)."""
    monkeypatch.setenv("RLX_CACHE", "0")
    CACHE.clear_memory()

    def set_(max_calls: int | None) -> None:
        def apply(self: SplitGraphPass, ctx: Context, op: ModuleOp) -> None:
            if max_calls is not None:
                split_module(op, max_calls)

        monkeypatch.setattr(SplitGraphPass, "apply", apply)

    return set_


def _run(source: object, opts: rlx.CompileOptions, inputs: dict, params: dict):  # type: ignore[no-untyped-def]
    c = rlx.compile(source, opts)
    c.set_params({k: v for k, v in params.items() if k in c.params})
    return c, c.run(**inputs)


def test_chain_split_matches_reference(split_with) -> None:  # type: ignore[no-untyped-def]
    g, inputs, params = chain_graph(600)
    want = rlx.reference.run(g.module, inputs, params)
    assert len(want) > 2
    results = {}
    for max_calls in (None, 256, 37):
        split_with(max_calls)
        c, got = _run(g.module.clone(), BARE, inputs, params)
        ir = c.ir("llvm-ir")
        if max_calls is None:
            assert "@main_part" not in ir
        else:
            parts = set(re.findall(r"define (?:internal )?\w* ?void @(main_part\d+)\(", ir))
            assert len(parts) >= {256: 2, 37: 10}[max_calls], parts
        for w, a in zip(want, got, strict=True):
            np.testing.assert_allclose(a, w, rtol=2e-5, atol=2e-5)
        results[max_calls] = got
    for a, b in zip(results[None], results[37], strict=True):
        np.testing.assert_array_equal(a, b)  # same kernels, same order: same bits


def test_default_pipeline_splits_transformer(split_with) -> None:  # type: ignore[no-untyped-def]
    text = TRANSFORMER.read_text()
    module = rlx.reference.parse_module(text)
    f = next(o for o in module.ops if isinstance(o, func.FuncOp))
    shapes = {}
    for o in f.walk():
        if o.name == "rlx.param":
            shapes[o.attributes["name"].data] = o.results[0].type.get_shape()  # type: ignore[attr-defined]
    rng = np.random.default_rng(1)
    params = {k: (rng.standard_normal(s) * 0.2).astype(np.float32) for k, s in shapes.items()}
    inputs = {"x": rng.standard_normal((16, 64)).astype(np.float32)}
    (want,) = rlx.reference.run(text, inputs, params)
    for max_calls in (None, 4, 1):
        split_with(max_calls)
        c, (got,) = _run(text, rlx.CompileOptions(), inputs, params)
        assert ("@main_part1" in c.ir("llvm-ir")) == (max_calls is not None)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_prepare_and_main_both_split(split_with) -> None:  # type: ignore[no-untyped-def]
    """With cache_param_invariant, @prepare (weight-only work) is a public graph function
    too: both are split, and the CompiledGraph still finds and runs them."""
    rng = np.random.default_rng(2)
    g = Graph()
    x = g.input("x", (8, 16))
    params = {}
    for i in range(6):
        params[f"w{i}"] = rng.standard_normal((16, 16)).astype(np.float32)
        w = g.tanh(g.exp(g.neg(g.param(f"w{i}", (16, 16)))))
        x = g.tanh(g.matmul(x, w))
    g.output(x)
    inputs = {"x": rng.standard_normal((8, 16)).astype(np.float32)}
    (want,) = rlx.reference.run(g.module, inputs, params)
    split_with(3)
    opts = rlx.CompileOptions(
        dce=False, constant_folding=False, fusion_target="none", cache_param_invariant=True
    )
    c, (got,) = _run(g.module.clone(), opts, inputs, params)
    ir = c.ir("llvm-ir")
    assert "@prepare_part1(" in ir and "@main_part1(" in ir
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    (again,) = c.run(**inputs)
    np.testing.assert_array_equal(again, got)


def test_default_pipeline_runs_split_graph() -> None:
    plan = option_pipeline.build_plan(rlx.CompileOptions(), Path("."))
    lower = [p.name for p in plan.phase("lower")]
    assert lower == ["convert-rlx-to-linalg", "plan-memory", "split-graph"]
    (p,) = [p for p in plan.passes if p.name == "split-graph"]
    assert p.instance.max_calls == 256  # type: ignore[attr-defined]


def _lowered(source: object) -> ModuleOp:
    module, _ = load_module(source, make_context())
    ctx = Context()
    ConvertRlxToLinalgPass().apply(ctx, module)
    PlanMemoryPass().apply(ctx, module)
    return module


def test_parts_keep_abi_and_structure() -> None:
    g, _, _ = chain_graph(200)
    module = _lowered(g.module)
    main = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main")
    before_type, before_attrs = main.function_type, main.arg_attrs
    before_fattrs = dict(main.attributes)
    calls_before = sum(count_calls(o) for o in main.body.block.ops)
    SplitGraphPass(max_calls=50).apply(Context(), module)
    module.verify()
    assert main.function_type == before_type and main.arg_attrs == before_attrs
    assert dict(main.attributes) == before_fattrs
    parts = [o for o in module.ops if isinstance(o, func.FuncOp) and "_part" in o.sym_name.data]
    assert len(parts) == -(-calls_before // 50)
    body = [o for o in main.body.block.ops]
    assert [o.callee.root_reference.data for o in body[:-1]] == [  # type: ignore[attr-defined]
        p.sym_name.data for p in parts
    ]
    n = 0
    for p in parts:
        assert p.sym_visibility is not None and p.sym_visibility.data == "private"
        assert p.function_type == before_type and p.arg_attrs == before_attrs
        assert str(p.attributes["passthrough"]) == '["noinline"]'
        k = sum(count_calls(o) for o in p.body.block.ops)
        assert 0 < k <= 50
        n += k
    assert n == calls_before
    # once split, a second run changes nothing
    text = str(module)
    SplitGraphPass(max_calls=50).apply(Context(), module)
    assert str(module) == text


def test_unsplittable_functions_are_left_alone() -> None:
    g, _, _ = chain_graph(100)
    module = _lowered(g.module)
    main = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main")
    assert plan_split(main, 10) is not None
    assert plan_split(main, 10_000) is None  # below the limit
    # an unplanned buffer
    module2, _ = load_module(g.module, make_context())
    ConvertRlxToLinalgPass().apply(Context(), module2)
    text = str(module2)
    SplitGraphPass(max_calls=2).apply(Context(), module2)
    assert str(module2) == text


RETURNS_A_VALUE = """
func.func private @k(memref<4xf32>, memref<4xf32>) -> ()
func.func @f(%x: memref<4xf32>, %y: memref<4xf32>) -> memref<4xf32> {
  func.call @k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%y, %x) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return %x : memref<4xf32>
}
func.func @g(%x: memref<4xf32>) {
  func.return
}
"""


def test_functions_outside_the_contract_are_left_alone() -> None:
    """A function returning a value, a bodyless declaration and an empty function."""
    module, _ = load_module(RETURNS_A_VALUE, make_context())
    text = str(module)
    SplitGraphPass(max_calls=1).apply(Context(), module)
    assert str(module) == text


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_option(bad: int) -> None:
    with pytest.raises(PassFailedException, match=f"max-calls must be at least 1, got {bad}"):
        SplitGraphPass(max_calls=bad).apply(Context(), ModuleOp([]))
