"""plan-memory invariants, kernel deduplication, pass errors, and one transformer block
compiled at O3 end to end (convert-rlx-to-linalg + plan-memory + LLVM)."""

from __future__ import annotations

import numpy as np
import pytest
import test_rlx_to_linalg_harness as harness
from test_rlx_to_linalg_harness import check, compile_text, lower, parse
from xdsl.dialects import func, memref
from xdsl.utils.exceptions import PassFailedException

from rlx.lowering.plan_memory import Buffer, PlanMemoryPass, assign_offsets
from rlx.lowering.rlx_to_linalg import ConvertRlxToLinalgPass


@pytest.mark.parametrize("alignment", [1, 16, 64])
def test_assign_offsets_never_overlaps_live_buffers(alignment: int) -> None:
    rng = np.random.default_rng(alignment)
    for _ in range(50):
        bufs = []
        for _ in range(int(rng.integers(1, 25))):
            start = int(rng.integers(0, 30))
            bufs.append(
                Buffer(None, int(rng.integers(1, 500)), start, start + int(rng.integers(0, 8)))
            )  # type: ignore[arg-type]
        total = assign_offsets(bufs, alignment)
        assert total % alignment == 0
        for b in bufs:
            assert b.offset % alignment == 0 and b.offset + b.size <= total
        for i, a in enumerate(bufs):
            for b in bufs[i + 1 :]:
                if a.overlaps(b):
                    assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset
        assert total <= sum(-(-b.size // alignment) * alignment for b in bufs)


def _block(layers: int, s: int = 16, d: int = 32, h: int = 2, ff: int = 64) -> str:
    """A pre-norm transformer: rms_norm, q/k/v projections, rope, causal attention,
    output projection + residual, rms_norm, swiglu MLP + residual (params per layer)."""
    hd = d // h
    x_t, hs_t, hh_t = (
        f"tensor<1x{s}x{d}xf32>",
        f"tensor<1x{s}x{h}x{hd}xf32>",
        f"tensor<1x{h}x{s}x{hd}xf32>",
    )
    cs_t, w_t, v_t = f"tensor<{s}x{hd // 2}xf32>", f"tensor<{d}x{d}xf32>", f"tensor<{d}xf32>"
    lines, x = [], "%x"
    for li in range(layers):
        p = f"%l{li}"
        lines += [f'{p}g1 = rlx.param "l{li}.g1" : {v_t}', f'{p}g2 = rlx.param "l{li}.g2" : {v_t}']
        lines.append(f"{p}n = rlx.rms_norm {x}, {p}g1 : ({x_t}, {v_t}) -> {x_t}")
        for nm in "qkv":
            lines.append(f'{p}w{nm} = rlx.param "l{li}.w{nm}" : {w_t}')
            lines.append(f"{p}m{nm} = rlx.matmul {p}n, {p}w{nm} : ({x_t}, {w_t}) -> {x_t}")
            lines.append(f"{p}r{nm} = rlx.reshape {p}m{nm} : ({x_t}) -> {hs_t}")
            lines.append(
                f"{p}t{nm} = rlx.transpose {p}r{nm} {{permutation = array<i64: 0, 2, 1, 3>}} : ({hs_t}) -> {hh_t}"
            )
        for nm in "qk":
            lines.append(
                f"{p}e{nm} = rlx.rope {p}t{nm}, %cos, %sin : ({hh_t}, {cs_t}, {cs_t}) -> {hh_t}"
            )
        lines.append(
            f'{p}a = rlx.attention {p}eq, {p}ek, {p}tv {{mask_kind = "causal"}} : ({hh_t}, {hh_t}, {hh_t}) -> {hh_t}'
        )
        lines.append(
            f"{p}at = rlx.transpose {p}a {{permutation = array<i64: 0, 2, 1, 3>}} : ({hh_t}) -> {hs_t}"
        )
        lines.append(f"{p}ar = rlx.reshape {p}at : ({hs_t}) -> {x_t}")
        lines.append(f'{p}wo = rlx.param "l{li}.wo" : {w_t}')
        lines.append(f"{p}o = rlx.matmul {p}ar, {p}wo : ({x_t}, {w_t}) -> {x_t}")
        lines.append(f"{p}x2 = rlx.add {x}, {p}o : ({x_t}, {x_t}) -> {x_t}")
        lines.append(f"{p}n2 = rlx.rms_norm {p}x2, {p}g2 : ({x_t}, {v_t}) -> {x_t}")
        up_t, f_t = f"tensor<{d}x{ff}xf32>", f"tensor<1x{s}x{ff}xf32>"
        lines += [
            f'{p}wg = rlx.param "l{li}.wg" : {up_t}',
            f'{p}wu = rlx.param "l{li}.wu" : {up_t}',
        ]
        lines.append(f'{p}wd = rlx.param "l{li}.wd" : tensor<{ff}x{d}xf32>')
        lines.append(
            f"{p}f = rlx.fused_swiglu {p}n2, {p}wg, {p}wu : ({x_t}, {up_t}, {up_t}) -> {f_t}"
        )
        lines.append(f"{p}dn = rlx.matmul {p}f, {p}wd : ({f_t}, tensor<{ff}x{d}xf32>) -> {x_t}")
        lines.append(f"{p}x3 = rlx.add {p}x2, {p}dn : ({x_t}, {x_t}) -> {x_t}")
        x = f"{p}x3"
    body = "\n".join("  " + ln for ln in lines)
    return f"func.func @main(%x: {x_t}, %cos: {cs_t}, %sin: {cs_t}) -> {x_t} {{\n{body}\n  func.return {x} : {x_t}\n}}\n"


def _block_params(layers: int, d: int = 32, ff: int = 64) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    params = {}
    for li in range(layers):
        for nm, shp in (("g1", (d,)), ("g2", (d,)), ("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)), ("wo", (d, d)),
                        ("wg", (d, ff)), ("wu", (d, ff)), ("wd", (ff, d))):  # fmt: skip
            params[f"l{li}.{nm}"] = (rng.standard_normal(shp) / np.sqrt(shp[0])).astype(np.float32)
    return params


def test_identical_layers_share_kernels() -> None:
    m1, _ = lower(_block(1), plan=False)
    m3, _ = lower(_block(3), plan=False)
    k1 = [o for o in m1.ops if isinstance(o, func.FuncOp) and "rlx.kernel" in o.attributes]
    k3 = [o for o in m3.ops if isinstance(o, func.FuncOp) and "rlx.kernel" in o.attributes]
    # 9 op kernels, plus the flash worker and GEMM microkernel the attention kernel calls
    # and the shape-generic workers of the transposes (copy) and the residual adds
    assert len(k1) == len(k3) == 13
    main = next(o for o in m3.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main")
    assert sum(isinstance(o, func.CallOp) for o in main.walk()) == 3 * 17


def test_transformer_block_o3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "OPT_LEVEL", 3)
    s, hd = 16, 16
    pos = np.arange(s)[:, None] * (10000.0 ** (-np.arange(hd // 2) / (hd // 2)))[None, :]
    ins = [
        np.random.default_rng(1).standard_normal((1, s, 32)).astype(np.float32),
        np.cos(pos),
        np.sin(pos),
    ]
    check(_block(2), ins, _block_params(2), rtol=1e-4, atol=1e-4)
    c = compile_text(_block(2))
    assert 0 < c.arena_bytes < c.unplanned_bytes


def test_dynamic_dim_is_an_error() -> None:
    c, m = parse("func.func @main(%x: tensor<?x4xf32>) -> tensor<4xf32> {\n"
                 '  %s = rlx.reduce %x {kind = "sum", axes = array<i64: 0>} : (tensor<?x4xf32>) -> tensor<4xf32>\n'
                 "  func.return %s : tensor<4xf32>\n}\n")  # fmt: skip
    with pytest.raises(
        PassFailedException,
        match=r"%x in @main has dynamic shape tensor<\?x4xf32>; run `bind-dims`",
    ):
        ConvertRlxToLinalgPass().apply(c, m)


def test_plan_memory_errors_and_views() -> None:
    m, c = lower(_block(1), plan=False)
    with pytest.raises(PassFailedException, match="power of two"):
        PlanMemoryPass(alignment=24).apply(c, m)
    PlanMemoryPass(alignment=128).apply(c, m)
    main = next(o for o in m.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main")
    assert not any(isinstance(o, memref.AllocOp | memref.DeallocOp) for o in main.walk())
    views = [o for o in main.walk() if isinstance(o, memref.ViewOp)]
    assert views and all(o.byte_shift.owner.value.value.data % 128 == 0 for o in views)  # type: ignore[union-attr]
    assert (
        main.attributes["rlx.arena_bytes"].value.data
        == main.function_type.inputs.data[-1].get_shape()[0]
    )  # type: ignore[union-attr]


def test_rng_zero_backend_fills_zeros() -> None:
    c, m = parse(
        "func.func @main() -> tensor<5xf32> {\n  %u = rlx.rng_normal : tensor<5xf32>\n  func.return %u : tensor<5xf32>\n}\n"
    )
    ConvertRlxToLinalgPass(rng_backend="zero").apply(c, m)
    text = str(m)
    assert "linalg.fill" in text and "i128" not in text
    with pytest.raises(PassFailedException, match="rng-backend"):
        ConvertRlxToLinalgPass(rng_backend="mt").apply(
            *parse("func.func @main() {\n  func.return\n}\n")
        )


def test_rng_module_attributes_take_precedence() -> None:
    c, m = parse(
        'builtin.module attributes {rlx.rng_seed = -3 : i64, rlx.rng_backend = "zero"} {\n'
        "  func.func @main() -> tensor<5xf32> {\n    %u = rlx.rng_uniform : tensor<5xf32>\n"
        "    func.return %u : tensor<5xf32>\n  }\n}\n"
    )
    ConvertRlxToLinalgPass(rng_backend="philox").apply(c, m)
    assert "i128" not in str(m) and "linalg.fill" in str(m)
