"""The shape-generic strided workers (`rlx_to_linalg/strided.py`): concat, transpose,
slice, broadcast_to and `rlx.elementwise_region` over ranks 1-5, broadcast patterns, odd
sizes and several element types, compiled and compared with the reference interpreter;
ops of different shapes share one worker; a layout table addressing outside a buffer is a
ValueError naming it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_rlx_to_linalg_harness import check, lower, rand, t

from rlx.lowering.rlx_to_linalg.strided import Layout, check_layouts, collapse, row_major

DTYPES = ["f32", "f16", "bf16", "i32", "i8"]


def _workers(text: str) -> dict[str, int]:
    """Kernel label -> number of kernels of the lowered module."""
    module, _ = lower(text, plan=False)
    out: dict[str, int] = {}
    for m in re.finditer(r'rlx.kernel = "([^"]*)"', str(module)):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def _concat_module(cases: list[tuple[list[tuple[int, ...]], int, str]]) -> str:
    args, lines, outs = [], [], []
    for c, (shapes, axis, e) in enumerate(cases):
        names = []
        for i, s in enumerate(shapes):
            args.append(f"%a{c}_{i}: {t(s, e)}")
            names.append(f"%a{c}_{i}")
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        ins = ", ".join(t(s, e) for s in shapes)
        lines.append(
            f"  %r{c} = rlx.concat {', '.join(names)} {{axis = {axis}}} : ({ins}) -> {t(out, e)}"
        )
        outs.append((f"%r{c}", t(out, e)))
    ret = ", ".join(n for n, _ in outs), ", ".join(ty for _, ty in outs)
    return (f"func.func @main({', '.join(args)}) -> ({ret[1]}) {{\n" + "\n".join(lines)
            + f"\n  func.return {ret[0]} : {ret[1]}\n}}\n")  # fmt: skip


CONCATS = [
    ([(5,), (3,), (1,)], 0),
    ([(2, 3), (2, 5)], 1),
    ([(2, 3), (4, 3)], 0),
    ([(1, 3, 7), (1, 6, 7), (1, 1, 7)], 1),
    ([(2, 3, 5, 7), (2, 4, 5, 7)], 1),
    ([(1, 2, 3, 5, 3), (1, 2, 3, 5, 2)], 4),
    ([(1, 4, 3, 3), (1, 9, 3, 3), (1, 2, 3, 3)], 1),
]


@pytest.mark.parametrize("e", DTYPES)
def test_concat_ranks_and_dtypes(e: str) -> None:
    text = _concat_module([(s, a, e) for s, a in CONCATS])
    inputs = [rand(s, e, seed=i) for i, s in enumerate(s for c, _ in CONCATS for s in c)]
    check(text, inputs, rtol=0, atol=0)


def test_concats_of_many_shapes_share_one_copy_worker() -> None:
    # channel concats of batch-1 NCHW tensors (densenet) are all a flat copy at an offset
    cases = [([(1, c, 5, 5), (1, 3, 5, 5)], 1, "f32") for c in (2, 4, 7, 11, 16)]
    text = _concat_module(cases)
    workers = _workers(text)
    assert workers["copy (any shape)"] == 1
    assert workers["rlx.concat"] == 5  # the per-op wrappers: a table and a call per input
    check(text, [rand(s, seed=i) for i, s in enumerate(s for c, _, _ in cases for s in c)],
          rtol=0, atol=0)  # fmt: skip


def _region(shapes: list[tuple[int, ...]], out: tuple[int, ...], e: str, c: int) -> str:
    ins = ", ".join(t(s, e) for s in shapes)
    names = ", ".join(f"%a{c}_{i}" for i in range(len(shapes)))
    bargs = ", ".join(f"%x{i}: {e}" for i in range(len(shapes)))
    fl = e.startswith(("f", "bf"))
    op = "arith.mulf" if fl else "arith.muli"
    add = "arith.addf" if fl else "arith.addi"
    body = [f"    %m = {op} %x0, %x1 : {e}"]
    body.append(f"    %s = {add} %m, %x{len(shapes) - 1} : {e}")
    return (f"  %r{c} = rlx.elementwise_region {names} : ({ins}) -> {t(out, e)} {{\n"
            f"  ^bb0({bargs}):\n" + "\n".join(body) + f"\n    rlx.yield %s : {e}\n  }}")  # fmt: skip


REGIONS = [
    ([(7,), (7,), (1,)], (7,)),
    ([(3, 5), (5,), (3, 1)], (3, 5)),
    ([(2, 3, 4), (3, 1), (2, 1, 4)], (2, 3, 4)),
    ([(1, 6, 5, 3), (1, 6, 1, 1), (1, 6, 1, 1)], (1, 6, 5, 3)),  # per-channel scale/shift
    ([(2, 1, 3, 1, 5), (1, 4, 1, 2, 1), (5,)], (2, 4, 3, 2, 5)),
    ([(1,), (4, 3)], (4, 3)),
]


def _region_module(cases: list[tuple[list[tuple[int, ...]], tuple[int, ...]]], e: str) -> str:
    args = [f"%a{c}_{i}: {t(s, e)}" for c, (shp, _) in enumerate(cases) for i, s in enumerate(shp)]
    lines = [_region(shp, out, e, c) for c, (shp, out) in enumerate(cases)]
    rets = ", ".join(f"%r{c}" for c in range(len(cases)))
    types = ", ".join(t(out, e) for _, out in cases)
    return (f"func.func @main({', '.join(args)}) -> ({types}) {{\n" + "\n".join(lines)
            + f"\n  func.return {rets} : {types}\n}}\n")  # fmt: skip


@pytest.mark.parametrize("e", DTYPES)
def test_region_broadcasts_and_dtypes(e: str) -> None:
    text = _region_module(REGIONS, e)
    inputs = [rand(s, e, seed=i) for i, s in enumerate(s for shp, _ in REGIONS for s in shp)]
    check(text, inputs, rtol=1e-2 if e in ("f16", "bf16") else 1e-6, atol=1e-2)


def test_regions_of_many_shapes_share_one_worker() -> None:
    # the BN + scale pattern of a CNN at several channel counts and plane sizes
    cases = [([(1, c, h, h), (1, c, 1, 1), (1, c, 1, 1)], (1, c, h, h))
             for c, h in ((3, 5), (8, 3), (13, 7), (32, 2))]  # fmt: skip
    text = _region_module(cases, "f32")
    workers = _workers(text)
    assert workers["rlx.elementwise_region (any shape)"] == 1
    inputs = [rand(s, seed=i) for i, s in enumerate(s for shp, _ in cases for s in shp)]
    check(text, inputs, rtol=1e-6, atol=1e-6)


MOVES = """
func.func @main(%a: tensor<2x3x4x5x3xf32>, %b: tensor<3x1x5xi8>, %c: tensor<7x9xbf16>) -> (tensor<3x5x2x3x4xf32>, tensor<1x2x2x3x1xf32>, tensor<2x3x4x5xi8>, tensor<3x4xbf16>, tensor<9x7xbf16>) {
  %t = rlx.transpose %a {permutation = array<i64: 4, 3, 0, 1, 2>} : (tensor<2x3x4x5x3xf32>) -> tensor<3x5x2x3x4xf32>
  %s = rlx.slice %a {starts = array<i64: 1, 0, 1, 2, 0>, limits = array<i64: 2, 3, 4, 5, 1>, strides = array<i64: 1, 2, 2, 1, 1>} : (tensor<2x3x4x5x3xf32>) -> tensor<1x2x2x3x1xf32>
  %bt = rlx.broadcast_to %b : (tensor<3x1x5xi8>) -> tensor<2x3x4x5xi8>
  %cs = rlx.slice %c {starts = array<i64: 1, 2>, limits = array<i64: 7, 9>, strides = array<i64: 2, 2>} : (tensor<7x9xbf16>) -> tensor<3x4xbf16>
  %ct = rlx.transpose %c {permutation = array<i64: 1, 0>} : (tensor<7x9xbf16>) -> tensor<9x7xbf16>
  func.return %t, %s, %bt, %cs, %ct : tensor<3x5x2x3x4xf32>, tensor<1x2x2x3x1xf32>, tensor<2x3x4x5xi8>, tensor<3x4xbf16>, tensor<9x7xbf16>
}
"""


def test_transpose_slice_broadcast() -> None:
    check(MOVES, [rand((2, 3, 4, 5, 3), seed=1), rand((3, 1, 5), "i8", seed=2),
                  rand((7, 9), "bf16", seed=3)], rtol=0, atol=0)  # fmt: skip


def test_collapse_merges_contiguous_and_broadcast_dims() -> None:
    sizes = [1, 6, 5, 3]
    x = Layout(0, row_major(sizes))
    s = Layout(0, (0, 1, 0, 0))
    dims, (lx, ls) = collapse(sizes, [x, s])
    assert dims == [6, 15] and lx.strides == (15, 1) and ls.strides == (1, 0)
    dims, (la,) = collapse([1, 4, 3, 3], [Layout(7, (99, 9, 3, 1))])
    assert dims == [36] and la == Layout(7, (1,))


def test_bad_layout_tables_are_value_errors() -> None:
    ok = Layout(0, (3, 1))
    check_layouts([2, 3], [ok], [6], ["input 0"])
    with pytest.raises(ValueError, match="input 0: element 6 is out of bounds of a buffer of 6"):
        check_layouts([2, 3], [Layout(1, (3, 1))], [6], ["input 0"])
    with pytest.raises(ValueError, match="output 0: element 8 is out of bounds"):
        check_layouts([2, 3], [ok, Layout(0, (4, 2))], [6, 6], ["input 0", "output 0"])
    with pytest.raises(ValueError, match="negative offset or stride"):
        check_layouts([2, 3], [Layout(-1, (3, 1))], [6], ["input 0"])
    with pytest.raises(ValueError, match="negative size"):
        check_layouts([-1, 3], [ok], [6], ["input 0"])
    with pytest.raises(ValueError, match="1 strides for rank 2"):
        check_layouts([2, 3], [Layout(0, (1,))], [6], ["input 0"])
    check_layouts([0, 3], [Layout(100, (3, 1))], [0], ["input 0"])  # empty: nothing is read
    np.testing.assert_equal(row_major([2, 3, 4]), (12, 4, 1))


def test_without_registry_the_loops_are_inline() -> None:
    """A builder without a kernel registry (no module to put a worker in) emits the loop
    nest itself, with the sizes as constants."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType, MemRefType, f32

    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
    from rlx.lowering.rlx_to_linalg.strided import broadcast, strided_call

    a, b = MemRefType(f32, [3, 4]), MemRefType(f32, [4])
    fn = func.FuncOp("k", FunctionType.from_lists([a, b, a], []))
    kb = KernelBuilder(fn.body.block)
    x, y, o = fn.body.block.args
    lays = [Layout(0, row_major([3, 4])), broadcast([4], [3, 4]), Layout(0, row_major([3, 4]))]
    strided_call(kb, "add", lambda wb, v: [wb.addf(v[0], v[1])], [x, y], [o], [3, 4], lays, "add")
    kb.finish()
    fn.verify()
    text = str(fn)
    assert "func.call" not in text and text.count("scf.for") == 2 and "arith.addf" in text
