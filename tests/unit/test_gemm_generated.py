"""The generated GEMM (rlx.lowering.gemm) against the reference interpreter: tile edges
(M, N, K of 1, primes, sizes that are not multiples of the tile, several k-slices and
task blocks), batches with broadcasting, f32/f16/bf16, fused epilogues, every tile ISA."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from test_rlx_to_linalg_harness import TOL, Compiled, rand, t
from xdsl.dialects.builtin import ModuleOp

from rlx.interpreter import run
from rlx.lowering.gemm import generic, target


@pytest.fixture(autouse=True)
def _generated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "0")  # never OpenBLAS: the generated GEMM


def _mm(a: Sequence[int], b: Sequence[int], out: Sequence[int], e: str = "f32") -> str:
    return f"""
func.func @main(%a: {t(a, e)}, %b: {t(b, e)}) -> {t(out, e)} {{
  %y = rlx.matmul %a, %b : ({t(a, e)}, {t(b, e)}) -> {t(out, e)}
  func.return %y : {t(out, e)}
}}
"""


def _kernel_labels(module: ModuleOp) -> list[str]:
    """The `rlx.kernel` labels of a lowered module."""
    return [
        str(op.attributes["rlx.kernel"]) for op in module.walk() if "rlx.kernel" in op.attributes
    ]


def _check(
    text: str, inputs: Sequence[np.ndarray], e: str = "f32", path: str = "generated"
) -> list[str]:
    """Compiled == reference, every GEMM on `path`; returns the lowered module's kernel
    labels (seen before the LLVM passes: the module is lowered once)."""
    paths: set[str] = set()
    labels: list[str] = []

    def lowered(module: ModuleOp) -> None:
        paths.update(
            op.attributes["rlx.gemm"].data  # type: ignore[attr-defined]
            for op in module.walk()
            if "rlx.gemm" in op.attributes
        )
        labels.extend(_kernel_labels(module))

    compiled = Compiled(text, inspect=lowered)
    if path == "loops":  # the loop nest carries no rlx.gemm attribute
        assert not paths, paths
    else:
        assert paths and all(p.startswith(path) for p in paths), paths
    (ref,) = run(text, list(inputs))
    (got,) = compiled(inputs)
    rtol, atol = TOL[e]
    scale = max(1.0, float(np.abs(ref.astype(np.float32)).max()))
    np.testing.assert_allclose(
        got.astype(np.float32), ref.astype(np.float32), rtol=rtol, atol=atol * scale * 4
    )
    return labels


# (M, K, N), at least 32^3 multiply-adds: 1s, primes, not multiples of any tile (4x8, 6x16, 12x32), several k-slices
# (K > 256) and several task blocks along M (> 96 rows) and N (> 256 columns).
SHAPES = [(1, 256, 130), (130, 256, 1), (190, 1, 190), (37, 29, 41), (12, 96, 32), (13, 300, 37),
          (7, 601, 11), (200, 20, 70), (20, 16, 300)]  # fmt: skip


@pytest.mark.parametrize("mkn", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_2d_edges(mkn: tuple[int, int, int]) -> None:
    m, k, n = mkn
    _check(_mm((m, k), (k, n), (m, n)), [rand((m, k), seed=1), rand((k, n), seed=2)])


@pytest.mark.parametrize("isa", sorted(target.TILES))
def test_every_tile(monkeypatch: pytest.MonkeyPatch, isa: str) -> None:
    monkeypatch.setenv(target.ENV, isa)
    m, k, n = 29, 70, 45
    _check(_mm((m, k), (k, n), (m, n)), [rand((m, k), seed=3), rand((k, n), seed=4)])


@pytest.mark.parametrize(
    "a,b,o",
    [
        ((2, 13, 64), (64, 70), (2, 13, 70)),  # one GEMM over all rows of a
        ((3, 1, 17, 40), (2, 40, 50), (3, 2, 17, 50)),  # broadcast on both sides
        ((2, 3, 17, 64), (2, 3, 64, 33), (2, 3, 17, 33)),  # batched b
        ((1, 40, 32), (5, 32, 30), (5, 40, 30)),  # a broadcast over b's batch
    ],
)
def test_batches(a: tuple[int, ...], b: tuple[int, ...], o: tuple[int, ...]) -> None:
    _check(_mm(a, b, o), [rand(a, seed=5), rand(b, seed=6)])


@pytest.mark.parametrize("e", ["f16", "bf16"])
def test_low_precision(e: str) -> None:
    a, b, o = (2, 19, 48), (48, 40), (2, 19, 40)
    _check(_mm(a, b, o, e), [rand(a, e, seed=7), rand(b, e, seed=8)], e)


@pytest.mark.parametrize(
    "act,e,bias",
    [("none", "f32", (45,)), ("relu", "f32", (45,)), ("gelu", "f32", (1,)),
     ("silu", "bf16", (45,)), ("gelu", "f16", (45,)), ("relu", "f32", (1, 1, 45))],
)  # fmt: skip
def test_fused_bias_act(act: str, e: str, bias: tuple[int, ...]) -> None:
    x, w, o = (3, 23, 70), (70, 45), (3, 23, 45)
    text = f"""
func.func @main(%x: {t(x, e)}, %w: {t(w, e)}, %b: {t(bias, e)}) -> {t(o, e)} {{
  %y = rlx.fused_matmul_bias_act %x, %w, %b {{activation = "{act}"}}
      : ({t(x, e)}, {t(w, e)}, {t(bias, e)}) -> {t(o, e)}
  func.return %y : {t(o, e)}
}}
"""
    _check(text, [rand(x, e, seed=9), rand(w, e, seed=10), rand(bias, e, seed=11)], e)


def test_fused_swiglu() -> None:
    x, w, o = (2, 13, 64), (64, 40), (2, 13, 40)
    text = f"""
func.func @main(%x: {t(x)}, %wg: {t(w)}, %wu: {t(w)}) -> {t(o)} {{
  %y = rlx.fused_swiglu %x, %wg, %wu : ({t(x)}, {t(w)}, {t(w)}) -> {t(o)}
  func.return %y : {t(o)}
}}
"""
    _check(text, [rand(x, seed=12), rand(w, seed=13), rand(w, seed=14)])


def test_tiny_and_integer_keep_the_loop_nest() -> None:
    _check(_mm((4, 5), (5, 6), (4, 6)), [rand((4, 5), seed=1), rand((5, 6), seed=2)], path="loops")
    text = _mm((40, 50), (50, 60), (40, 60), "i32")
    _check(text, [rand((40, 50), "i32", seed=1), rand((50, 60), "i32", seed=2)], "f32", "loops")


def test_bad_isa_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(target.ENV, "sse9")
    with pytest.raises(ValueError, match="RLX_GEMM_ISA='sse9'"):
        target.host_tile()


def test_tasks_on_two_threads() -> None:
    """Enough work for several tasks on the pool (edge blocks on both axes)."""
    from rlx.runtime import parallel

    before = parallel.get_num_threads()
    parallel.set_num_threads(2)
    try:
        m, k, n = 131, 67, 290
        _check(_mm((m, k), (k, n), (m, n)), [rand((m, k), seed=15), rand((k, n), seed=16)])
    finally:
        parallel.set_num_threads(before)


@pytest.mark.parametrize("isa", sorted(target.TILES))
@pytest.mark.parametrize("direct", [True, False], ids=["in-place-A", "packed-A"])
def test_task_grid_on_two_threads(monkeypatch: pytest.MonkeyPatch, isa: str, direct: bool) -> None:
    """The shape-generic worker's tasks cover a grid of 3 row blocks by 5-7 column
    blocks on every tile (row blocks vary fastest from task to task, `generic._worker`),
    M and N not multiples of the tile, the last row and column blocks partial; on two
    threads, with A read in place and packed: the reference's result."""
    from rlx.runtime import parallel

    monkeypatch.setenv(target.ENV, isa)
    monkeypatch.setenv(target.DIRECT_A_ENV, "1" if direct else "0")
    m, k, n = 203, 64, 601
    before = parallel.get_num_threads()
    parallel.set_num_threads(2)
    try:
        labels = _check(_mm((m, k), (k, n), (m, n)), [rand((m, k), seed=17), rand((k, n), seed=18)])
    finally:
        parallel.set_num_threads(before)
    assert any("rows ukernel" in s for s in labels) == direct, labels


@pytest.mark.parametrize("mode,path", [("0", "generated"), ("1", "openblas")])
def test_dispatch_report_names_the_gemm_path(
    monkeypatch: pytest.MonkeyPatch, mode: str, path: str
) -> None:
    import rlx

    monkeypatch.setenv("RLX_BLAS", mode)
    monkeypatch.setenv("RLX_CACHE", "0")
    text = _mm((40, 64), (64, 48), (40, 48)) + _mm((4, 5), (5, 6), (4, 6)).replace(
        "@main", "@small"
    )
    g = rlx.compile(text)
    report = g.dispatch_report()
    assert f"matmul ×1: {path}" in report, report
    from rlx.interpreter import parse_module
    from rlx.lowering.gemm.report import gemm_lines

    lines = gemm_lines(parse_module(text))
    assert "matmul ×1: loops" in lines and f"matmul ×1: {path}" in lines, lines


@pytest.mark.parametrize("isa", sorted(target.TILES))
@pytest.mark.parametrize("direct", [True, False], ids=["in-place-A", "packed-A"])
@pytest.mark.parametrize(
    "mkn", [(1, 300, 130), (25, 300, 33), (131, 7, 65), (67, 1000, 37)], ids=str
)
def test_in_place_a_edges(
    monkeypatch: pytest.MonkeyPatch, isa: str, direct: bool, mkn: tuple[int, int, int]
) -> None:
    """The shape-generic worker reading f32 A in place (`rows_microkernel`: the last, partial
    panel of A repeats its last row into the edge buffer) and packing it, for every tile:
    M of 1 (a 1-row tile), M not a multiple of mr with K over one k-slice, M over one task
    block, an A the pool would pack (67 x 1000, N <= K: several k-slices); the same
    results as the reference either way."""
    monkeypatch.setenv(target.ENV, isa)
    monkeypatch.setenv(target.DIRECT_A_ENV, "1" if direct else "0")
    m, k, n = mkn
    text = _mm((m, k), (k, n), (m, n))
    labels = " ".join(_check(text, [rand((m, k), seed=5), rand((k, n), seed=6)]))
    assert ("rows ukernel" in labels) == direct and ("gemm pack A" in labels) != direct, labels


@pytest.mark.parametrize("isa", sorted(target.TILES))
def test_in_place_a_batch_rows(monkeypatch: pytest.MonkeyPatch, isa: str) -> None:
    """A batched A times an unbatched B is one GEMM over all rows (3 x 23 = 69 rows of
    K = 1000, packed on the pool otherwise): read in place across the batch boundary
    (rows not a multiple of mr), the same results as the reference."""
    monkeypatch.setenv(target.ENV, isa)
    text = _mm((3, 23, 1000), (1000, 37), (3, 23, 37))
    labels = _check(text, [rand((3, 23, 1000), seed=7), rand((1000, 37), seed=8)])
    assert any("rows ukernel" in s for s in labels), labels


@pytest.mark.parametrize("direct", [True, False], ids=["in-place-A", "packed-A"])
def test_shapes_share_the_generic_kernels(monkeypatch: pytest.MonkeyPatch, direct: bool) -> None:
    """Several GEMM shapes in one module (edge shapes, a bias + gelu epilogue, a bf16 output)
    share one shape-generic packing task and one worker per epilogue kind; each call reads
    its own sizes table, so every result matches the reference. By default (not with
    `RLX_GEMM_DIRECT_A=0`) the small f32 A are read in place (`generic.in_place`; K = 601
    and the bf16 A are packed)."""
    monkeypatch.setenv(target.DIRECT_A_ENV, "1" if direct else "0")
    shapes = [(37, 29, 41), (130, 256, 1), (13, 601, 11)]  # rows >= 12: the full tile
    sig, body, outs, inputs = [], [], [], []
    for i, (m, k, n) in enumerate(shapes):
        sig += [f"%a{i}: {t((m, k))}", f"%b{i}: {t((k, n))}"]
        body.append(
            f"  %y{i} = rlx.matmul %a{i}, %b{i} : ({t((m, k))}, {t((k, n))}) -> {t((m, n))}"
        )
        outs.append((f"%y{i}", t((m, n))))
        inputs += [rand((m, k), seed=20 + i), rand((k, n), seed=30 + i)]
    x, w, bias = (23, 70), (70, 45), (45,)
    sig += [
        f"%x: {t(x)}",
        f"%w: {t(w)}",
        f"%c: {t(bias)}",
        f"%h: {t(x, 'bf16')}",
        f"%v: {t(w, 'bf16')}",
    ]
    body.append(
        f'  %f = rlx.fused_matmul_bias_act %x, %w, %c {{activation = "gelu"}} : ({t(x)}, {t(w)}, {t(bias)}) -> {t((23, 45))}'
    )
    body.append(
        f"  %g = rlx.matmul %h, %v : ({t(x, 'bf16')}, {t(w, 'bf16')}) -> {t((23, 45), 'bf16')}"
    )
    outs += [("%f", t((23, 45))), ("%g", t((23, 45), "bf16"))]
    inputs += [rand(x, seed=40), rand(w, seed=41), rand(bias, seed=42)]
    inputs += [rand(x, "bf16", seed=43), rand(w, "bf16", seed=44)]
    text = (
        f"func.func @main({', '.join(sig)}) -> ({', '.join(o[1] for o in outs)}) {{\n"
        + "\n".join(body)
        + f"\n  func.return {', '.join(o[0] for o in outs)} : {', '.join(o[1] for o in outs)}\n}}\n"
    )
    labels: list[str] = []
    compiled = Compiled(text, inspect=lambda module: labels.extend(_kernel_labels(module)))
    assert sum("gemm pack A" in s for s in labels) == 2, labels  # f32 (K = 601: packed), bf16
    assert any("rows ukernel" in s for s in labels) == direct, labels
    # plain, bias+gelu, bf16 out; in place: one more plain worker (K = 601 is packed)
    assert sum("gemm worker" in s for s in labels) == (4 if direct else 3), labels
    refs = run(text, list(inputs))
    got = compiled(inputs)
    for r, g in zip(refs, got, strict=True):
        rtol, atol = TOL["bf16" if r.dtype.itemsize == 2 else "f32"]
        scale = max(1.0, float(np.abs(r.astype(np.float32)).max()))
        np.testing.assert_allclose(
            g.astype(np.float32), r.astype(np.float32), rtol=rtol, atol=atol * scale * 4
        )


def test_in_place_only_for_small_a(monkeypatch: pytest.MonkeyPatch) -> None:
    """A is read in place (`generic.in_place`) when packing it would be one serial call and
    its rows are short: not for K over `IN_PLACE_MAX_K` (rows in few L1 sets); an A of
    `2 * PACK_TASK_ELEMENTS` elements or more (packed on the pool) only when N <= K, its
    row stride is not a multiple of 4 KiB and it has at most `POOLED_IN_PLACE_MAX`
    elements (MiniLM's FFN-down input, 128 x 1536); never with `RLX_GEMM_DIRECT_A=0`."""
    from rlx.lowering.gemm.batched import PACK_TASK_ELEMENTS, packs_serially

    mr = 12
    assert generic.in_place(128, 384, 1152, mr)
    assert generic.in_place(1, generic.IN_PLACE_MAX_K, 1024, mr)
    assert not generic.in_place(1, generic.IN_PLACE_MAX_K + 1, 1024, mr)
    assert not generic.in_place(2 * PACK_TASK_ELEMENTS // 256, 256, 1024, mr)
    assert not packs_serially(128, 1536, mr) and generic.in_place(128, 1536, 384, mr)
    assert not generic.in_place(128, 1536, 1537, mr)  # N > K: packed
    assert not generic.in_place(128, 1024, 384, mr) and not generic.in_place(128, 3072, 768, mr)
    assert not generic.in_place(1024, 1536, 384, mr)  # over POOLED_IN_PLACE_MAX
    monkeypatch.setenv(target.DIRECT_A_ENV, "0")
    assert not generic.in_place(128, 384, 1152, mr) and not generic.in_place(128, 1536, 384, mr)


def test_direct_a_switch_is_in_the_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """`RLX_GEMM_DIRECT_A` (compile time) is part of the compile-cache key, so code built
    with A read in place is never reused for a build that packs it (and back); unset or
    empty means on, 0 / false / off / no off."""
    from rlx.runtime import blas

    monkeypatch.delenv(target.DIRECT_A_ENV, raising=False)
    assert target.direct_a()
    on = blas.cache_key()
    for value in ("", "1", "yes"):
        monkeypatch.setenv(target.DIRECT_A_ENV, value)
        assert target.direct_a() and blas.cache_key() == on
    for value in ("0", "false", "OFF", "no"):
        monkeypatch.setenv(target.DIRECT_A_ENV, value)
        assert not target.direct_a() and blas.cache_key() != on
