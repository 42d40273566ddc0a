"""`rlx.if` compiled (scf.if) against the reference interpreter: default options (fusion
on), fusion off, f16 / bf16 precision, translation validation, a split graph function, a
hoisted param and bound dims, for both condition values; only the taken region runs, so an
out-of-range gather in the other one does not raise."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

import rlx
from rlx.errors import RlxIndexError
from rlx.lowering.split_graph import SplitGraphPass, split_module
from rlx.runtime.cache import CACHE

SRC = """
func.func @main(%c: tensor<i1>, %x: tensor<2x4xf32>, %i: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = rlx.param "w" : tensor<4xf32>
  %x2 = rlx.mul %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r, %s = rlx.if %c : tensor<i1> -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %a = rlx.add %x2, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %b = rlx.tanh %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %g = rlx.gather %x, %i {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
    %e = rlx.exp %g : (tensor<2x4xf32>) -> tensor<2x4xf32>
    rlx.yield %b, %e : tensor<2x4xf32>, tensor<2x4xf32>
  } else {
    %n = rlx.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
    rlx.yield %n, %x2 : tensor<2x4xf32>, tensor<2x4xf32>
  }
  %o = rlx.sigmoid %r : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %o, %s : tensor<2x4xf32>, tensor<2x4xf32>
}
"""

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 4)).astype(np.float32)
W = RNG.standard_normal(4).astype(np.float32)


def _inputs(cond: bool) -> list[np.ndarray]:
    # the else region never gathers, so its indices may be out of range
    return [np.array(cond), X, np.array([1, 0] if cond else [5, -9], np.int64)]


def _check(opts: rlx.CompileOptions, cond: bool, tol: float, src: str = SRC) -> None:
    ins = _inputs(cond)
    want = rlx.reference.run(src, ins, {"w": W})
    g = rlx.compile(src, opts)
    g.set_params({"w": W})
    for a, b in zip(g.run(*ins), want, strict=True):
        np.testing.assert_allclose(np.asarray(a, np.float32), b, rtol=tol, atol=tol)


@pytest.mark.parametrize("cond", [True, False])
@pytest.mark.parametrize(
    "opts, tol",
    [
        (rlx.CompileOptions(), 1e-5),
        (rlx.CompileOptions(fusion_target="none", dce=False, constant_folding=False), 1e-5),
        (rlx.CompileOptions(precision="f16"), 2e-2),
        (rlx.CompileOptions(precision="bf16", check_equivalence=True), 5e-2),
        (rlx.CompileOptions(check_equivalence=True, cache_param_invariant=True), 1e-5),
    ],
    ids=["default", "no-fusion", "f16", "bf16-checked", "hoisted-checked"],
)
def test_compiled_matches_reference(opts: rlx.CompileOptions, tol: float, cond: bool) -> None:
    _check(opts, cond, tol)


def test_taken_region_still_checks_its_indices() -> None:
    g = rlx.compile(SRC)
    g.set_params({"w": W})
    with pytest.raises(RlxIndexError, match="gather"):
        g.run(np.array(True), X, np.array([5, 0], np.int64))
    with pytest.raises(RlxIndexError):
        rlx.reference.run(SRC, [np.array(True), X, np.array([5, 0], np.int64)], {"w": W})


def test_split_graph_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outlined into parts of 2 calls each, the scf.if (a call-holding loop-like op) is a
    part of its own and still computes the reference values."""
    monkeypatch.setenv("RLX_CACHE", "0")
    CACHE.clear_memory()

    def apply(self: SplitGraphPass, ctx: Context, op: ModuleOp) -> None:
        split_module(op, 2)

    monkeypatch.setattr(SplitGraphPass, "apply", apply)
    for cond in (True, False):
        _check(rlx.CompileOptions(fusion_target="none"), cond, 1e-5)


def test_bound_dims_flow_through_regions() -> None:
    src = """
    func.func @main(%c: tensor<1xi1>, %x: tensor<?x3xf32> {rlx.dims = ["n", 3]}) -> tensor<?x3xf32> {
      %r = rlx.if %c : tensor<1xi1> -> (tensor<?x3xf32>) {
        %e = rlx.exp %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
        rlx.yield %e : tensor<?x3xf32>
      } else {
        rlx.yield %x : tensor<?x3xf32>
      }
      %o = rlx.add %r, %r : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
      func.return %o : tensor<?x3xf32>
    }"""
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    g = rlx.compile(src, rlx.CompileOptions(dim_binding={"n": 5}))
    for cond in (True, False):
        (got,) = g.run(np.array([cond]), x)
        want = 2 * (np.exp(x) if cond else x)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_if_inside_scan_body() -> None:
    """A conditional in a loop body: the carry doubles while it is below 10, else halves."""
    src = """
    func.func @main(%h0: tensor<f32>) -> tensor<f32> {
      %lim = rlx.constant dense<10.0> : tensor<f32>
      %two = rlx.constant dense<2.0> : tensor<f32>
      %h = rlx.scan (%h0) over () {length = 6 : i64} : (tensor<f32>), () -> (tensor<f32>) {
      ^bb0(%c: tensor<f32>):
        %p = rlx.compare %c, %lim {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %n = rlx.if %p : tensor<i1> -> (tensor<f32>) {
          %d = rlx.mul %c, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
          rlx.yield %d : tensor<f32>
        } else {
          %q = rlx.div %c, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
          rlx.yield %q : tensor<f32>
        }
        rlx.yield %n : tensor<f32>
      }
      func.return %h : tensor<f32>
    }"""
    h0 = np.array(3.0, np.float32)
    want = rlx.reference.run(src, [h0])
    h = 3.0
    for _ in range(6):
        h = h * 2 if h < 10 else h / 2
    assert float(want[0]) == h
    for opts in (rlx.CompileOptions(), rlx.CompileOptions(scan_unroll_max_length=0)):
        (got,) = rlx.compile(src, opts).run(h0)
        assert float(got) == h


def test_reference_f16_results_keep_their_type() -> None:
    src = SRC.replace("f32", "f16")
    ins = [np.array(False), X.astype(np.float16), np.array([0, 1], np.int64)]
    o, s = rlx.reference.run(src, ins, {"w": W.astype(np.float16)})
    assert o.dtype == s.dtype == np.float16
    np.testing.assert_array_equal(s, ins[1] * ins[1])
    bf = np.dtype(ml_dtypes.bfloat16)
    src = SRC.replace("f32", "bf16")
    ins = [np.array(False), X.astype(bf), np.array([0, 1], np.int64)]
    o, _ = rlx.reference.run(src, ins, {"w": W.astype(bf)})
    assert o.dtype == bf


def test_hoisted_param_condition() -> None:
    """An rlx.if on a param moves to @prepare (cache_param_invariant); the result follows a
    change of the param."""
    src = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %w = rlx.param "w" : tensor<4xf32>
      %k = rlx.param "k" : tensor<i1>
      %s = rlx.if %k : tensor<i1> -> (tensor<4xf32>) {
        %t = rlx.tanh %w : (tensor<4xf32>) -> tensor<4xf32>
        rlx.yield %t : tensor<4xf32>
      } else {
        rlx.yield %w : tensor<4xf32>
      }
      %r = rlx.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      func.return %r : tensor<4xf32>
    }"""
    g = rlx.compile(src, rlx.CompileOptions(cache_param_invariant=True))
    assert "@prepare" in g.ir("rlx")
    x = RNG.standard_normal(4).astype(np.float32)
    for k in (True, False, True):
        params = {"w": W, "k": np.array(k)}
        g.set_params(params)
        (want,) = rlx.reference.run(src, [x], params)
        np.testing.assert_allclose(g.run(x)[0], want, rtol=1e-6)


def test_graph_builds_an_if() -> None:
    """`Graph.building(block)` emits a region body, `Graph.add_op` appends the region op."""
    from xdsl.ir import Block, Region

    from rlx.dialects.rlx.control import IfOp, YieldOp

    g = rlx.Graph()
    c = g.input("c", (), "bool")
    x = g.input("x", (3,), "f32")
    then_b, else_b = Block(), Block()
    with g.building(then_b):
        t = g.exp(x)
    then_b.add_op(YieldOp(t))
    else_b.add_op(YieldOp(x))
    op = g.add_op(IfOp(c, [x.type], Region(then_b), Region(else_b)))
    g.output(g.neg(op.results[0]))
    xv = np.array([0.0, 1.0, -1.0], np.float32)
    for cond in (True, False):
        (got,) = rlx.reference.run(g.module, [np.array(cond), xv])
        np.testing.assert_allclose(got, -(np.exp(xv) if cond else xv), rtol=1e-6)
