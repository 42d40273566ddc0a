"""rlx-bake numerics: baked artifacts compute what the unbaked graph computes.

Baked outputs are compared two ways: compiled (`rlx.load` vs `rlx.compile` + set_params)
and on the reference interpreter (`rlx.reference.run` on `rlx.bake.materialize(path)` vs
the unbaked module with params). merge / fold / exact are bit-exact on both for the
examples; graphs where exact rewrites a matmul into rlx.dequant_matmul are bit-exact on
the reference interpreter (both ops accumulate in f64 and round once) and within 1e-5
relative on the compiled path (its kernels sum in a different order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlx
import rlx.bake
from rlx import interpreter as reference
from rlx.bake import artifact
from rlx.formats import ggml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _param_shapes(text: str) -> dict[str, tuple[int, ...]]:
    from rlx.dialects.rlx.base import shape_of
    from rlx.dialects.rlx.leaves import ParamOp

    m = reference.parse_module(text)
    return {op.param_name: shape_of(op.result.type) for op in m.walk() if isinstance(op, ParamOp)}


def _random_weights(text: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        n: (rng.standard_normal(s) * 0.1).astype(np.float32) for n, s in _param_shapes(text).items()
    }


def _q8_roundtrip(w: np.ndarray) -> np.ndarray:
    k, n = w.shape
    return ggml.dequantize(ggml.quantize(w.T, "q8_0"), "q8_0", n, k).T


def _run_compiled(
    src: Path, weights: dict[str, np.ndarray], x: np.ndarray, arts: list[Path]
) -> dict[str, np.ndarray]:
    """Outputs of `rlx.compile(src)` + set_params ("unbaked") and of `rlx.load(artifact)`."""
    g = rlx.compile(src)
    g.set_params(weights)
    res = {"unbaked": g.run(x)[0]}
    for a in arts:
        b = rlx.load(a)
        assert b.params == {}, b.params
        res[str(a)] = b.run(x)[0]
    return res


@pytest.mark.parametrize("example", ["mlp.mlir", "transformer_block.mlir"])
def test_examples_every_profile(example: str, tmp_path: Path) -> None:
    src = EXAMPLES / example
    text = src.read_text()
    weights = _random_weights(text, 1)
    ((_, shape),) = [(n, s) for n, s in _input_shapes(text).items()]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    (yr,) = reference.run(text, [x], weights)
    arts = {}
    for profile in ("merge", "fold", "exact", "size"):
        path = rlx.bake.bake(src, weights, profile, tmp_path / f"{profile}.rlx")
        arts[profile] = path
        (y2,) = reference.run(rlx.bake.materialize(path), [x])
        if profile != "size":
            np.testing.assert_array_equal(y2, yr, err_msg=profile)
            continue
        table = artifact.read(path).weights
        q8 = {w["name"] for w in table if w["encoding"] == "gguf_q8_0"}
        assert q8 == {n for n, w in weights.items() if w.ndim == 2}
        # exactly the unbaked graph run with Q8_0-rounded matmul weights ...
        rounded = {n: _q8_roundtrip(w) if n in q8 else w for n, w in weights.items()}
        (yq,) = reference.run(text, [x], rounded)
        np.testing.assert_array_equal(y2, yq)
        # ... and within the stated Q8_0 bound of the dense result (observed about 0.5%)
        assert np.abs(y2 - yr).max() <= 0.02 * np.abs(yr).max()
    got = _run_compiled(src, weights, x, list(arts.values()))
    y0 = got["unbaked"]
    for profile, path in arts.items():
        y1 = got[str(path)]
        if profile == "size":
            assert np.abs(y1 - y0).max() <= 0.02 * np.abs(y0).max()
        else:
            np.testing.assert_array_equal(y1, y0, err_msg=profile)


def _input_shapes(text: str) -> dict[str, tuple[int, ...]]:
    from xdsl.dialects import func

    from rlx.dialects.rlx.base import shape_of

    m = reference.parse_module(text)
    (f,) = [op for op in m.ops if isinstance(op, func.FuncOp)]
    return {f"arg{i}": shape_of(t) for i, t in enumerate(f.function_type.inputs.data)}


ZT = """
func.func @main(%x: tensor<4x256xf32> {rlx.name = "x"}) -> tensor<4x64xf32> {
  %wz = rlx.param "wz" : tensor<256x64xf32>
  %wt = rlx.param "wt" : tensor<256x64xf32>
  %wd = rlx.param "wd" : tensor<256x64xf32>
  %a = rlx.matmul %x, %wz : (tensor<4x256xf32>, tensor<256x64xf32>) -> tensor<4x64xf32>
  %b = rlx.matmul %x, %wt : (tensor<4x256xf32>, tensor<256x64xf32>) -> tensor<4x64xf32>
  %c = rlx.matmul %x, %wd : (tensor<4x256xf32>, tensor<256x64xf32>) -> tensor<4x64xf32>
  %s = rlx.add %a, %b : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %y = rlx.add %s, %c : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  func.return %y : tensor<4x64xf32>
}
"""


def _zt_weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    d = (2.0 ** -(np.arange(64) % 4)).astype(np.float32)  # per-row scale of Wᵀ, f16-exact
    wt = (rng.integers(-1, 2, (64, 256)).astype(np.float32) * d[:, None]).T.copy()
    return {
        "wz": np.zeros((256, 64), np.float32),
        "wt": wt,
        "wd": rng.standard_normal((256, 64)).astype(np.float32),
    }


def _data_bytes(path: Path) -> int:
    """Bytes of the weight section (unique blobs, each padded to 64)."""
    art = artifact.read(path)
    offsets = {w["offset"]: w["nbytes"] for w in art.weights}
    return sum(-(-n // 64) * 64 for n in offsets.values())


def test_zero_and_ternary(tmp_path: Path) -> None:
    w = _zt_weights()
    x = np.random.default_rng(4).standard_normal((4, 256)).astype(np.float32)
    (yr,) = reference.run(ZT, [x], w)
    fold, rep_fold = rlx.bake.bake_with_report(ZT, w, "fold", tmp_path / "fold.rlx")
    exact, rep = rlx.bake.bake_with_report(ZT, w, "exact", tmp_path / "exact.rlx")
    assert (rep.skipped_zero_matmuls, rep.ternary_packed, rep.quant_packed) == (1, 1, 0)
    assert (rep_fold.skipped_zero_matmuls, rep_fold.ternary_packed) == (0, 0)
    table = {e["name"]: e for e in artifact.read(exact).weights}
    assert set(table) == {"wt", "wd"} and table["wt"]["encoding"] == "gguf_tq2_0"
    assert table["wt"]["shape"] == [256, 64] and table["wt"]["nbytes"] == 64 * 66
    module = rlx.bake.materialize(exact)
    names = [op.name for op in module.walk()]
    assert names.count("rlx.matmul") == 1 and names.count("rlx.dequant_matmul") == 1
    (y2,) = reference.run(module, [x])
    np.testing.assert_array_equal(y2, yr)
    # the zero weight disappears and the ternary one shrinks from f32 to 66 bytes / 256
    f32 = 256 * 64 * 4
    saved = f32 + (f32 - 64 * 66)
    assert rep_fold.weight_bytes_after - rep.weight_bytes_after == saved
    assert _data_bytes(fold) - _data_bytes(exact) == saved
    for p in (fold, exact):
        art = artifact.read(p)
        m = art.header["module"]
        code = sum(-(-e["nbytes"] // 64) * 64  # object code sections, runtime pieces too
                   for c in art.code for e in [c, *c.get("runtime", [])])  # fmt: skip
        assert art.size == m["offset"] + -(-m["nbytes"] // 64) * 64 + code + _data_bytes(p)


def test_zero_and_ternary_compiled(tmp_path: Path) -> None:
    w = _zt_weights()
    x = np.random.default_rng(4).standard_normal((4, 256)).astype(np.float32)
    src = tmp_path / "zt.mlir"
    src.write_text(ZT)
    exact = rlx.bake.bake(src, w, "exact", tmp_path / "exact.rlx")
    got = _run_compiled(src, w, x, [exact])
    y0 = got["unbaked"]
    np.testing.assert_allclose(got[str(exact)], y0, rtol=1e-5, atol=1e-5 * np.abs(y0).max())


def test_packing_matches_gguf(tmp_path: Path) -> None:
    import gguf

    q = gguf.GGMLQuantizationType
    w = _zt_weights()
    path, rep = rlx.bake.bake_with_report(ZT, w, "size", tmp_path / "size.rlx")
    assert (rep.ternary_packed, rep.quant_packed) == (1, 1)
    art = artifact.read(path)
    table = {e["name"]: e for e in art.weights}
    for name, scheme, t in (("wt", "tq2_0", q.TQ2_0), ("wd", "q8_0", q.Q8_0)):
        e = table[name]
        assert e["encoding"] == f"gguf_{scheme}"
        blob = np.asarray(art.blob(e))
        ref = gguf.quants.quantize(np.ascontiguousarray(w[name].T), t)
        assert blob.tobytes() == ref.tobytes()
        ours = ggml.dequantize(blob, scheme, 64, 256)
        np.testing.assert_array_equal(ours, gguf.quants.dequantize(ref, t).reshape(64, 256))
    np.testing.assert_array_equal(
        ggml.dequantize(art.blob(table["wt"]), "tq2_0", 64, 256), w["wt"].T
    )


def test_unaligned_k_stays_dense(tmp_path: Path) -> None:
    text = ZT.replace("256", "96")
    w = {k: v[:96] for k, v in _zt_weights().items()}
    _, rep = rlx.bake.bake_with_report(text, w, "size", tmp_path / "u.rlx")
    assert rep.skipped_zero_matmuls == 1 and rep.ternary_packed == 0 and rep.quant_packed == 2
    assert any("wt: ternary but K=96" in r for r in rep.kept_dense)
    text = ZT.replace("256", "48")
    w = {k: v[:48] for k, v in _zt_weights().items()}
    _, rep = rlx.bake.bake_with_report(text, w, "size", tmp_path / "v.rlx")
    assert rep.quant_packed == 0 and any(
        "K=48 is not a multiple of the q8_0" in r for r in rep.kept_dense
    )


FUSED = """
func.func @main(%x: tensor<2x8xf32> {rlx.name = "x"}) -> tensor<2x4xf32> {
  %w = rlx.param "w" : tensor<8x4xf32>
  %b = rlx.param "b" : tensor<4xf32>
  %y = rlx.fused_matmul_bias_act %x, %w, %b {activation = "gelu"} : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def test_skip_zero_fused(tmp_path: Path) -> None:
    w = {"w": np.zeros((8, 4), np.float32), "b": np.array([-1, 0, 0.5, 3], np.float32)}
    x = np.ones((2, 8), np.float32)
    (yr,) = reference.run(FUSED, [x], w)
    for profile in ("exact", "merge"):
        path, rep = rlx.bake.bake_with_report(FUSED, w, profile, tmp_path / "f.rlx", skip_zero=True)
        assert rep.skipped_zero_matmuls == 1
        (y,) = reference.run(rlx.bake.materialize(path), [x])
        np.testing.assert_array_equal(y, yr)


SHARED = """
func.func @main(%x: tensor<2x8xf32> {rlx.name = "x"}) -> tensor<2x8xf32> {
  %a = rlx.param "a" : tensor<8x8xf32>
  %b = rlx.param "b" : tensor<8x8xf32>
  %t = rlx.transpose %a {permutation = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = rlx.matmul %x, %t : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %q = rlx.matmul %p, %b : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  func.return %q : tensor<2x8xf32>
}
"""


def test_dedupe_fold_and_memory_modes(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    w = {"a": a, "b": a.T.copy()}  # transpose(a) folds into a constant equal to b
    x = rng.standard_normal((2, 8)).astype(np.float32)
    (yr,) = reference.run(SHARED, [x], w)
    path, rep = rlx.bake.bake_with_report(SHARED, w, "fold", tmp_path / "fold.rlx")
    names = [e["name"] for e in artifact.read(path).weights]
    assert names == ["b"] and rep.constants_deduped == 1 and rep.folded_bindings_dropped == 1
    keep, _ = rlx.bake.bake_with_report(
        SHARED, w, "fold", tmp_path / "k.rlx", keep_folded_bindings=True
    )
    entries = {e["name"]: e for e in artifact.read(keep).weights}
    assert set(entries) == {"a", "b"} and entries["a"]["live"] is False
    merge, rep_m = rlx.bake.bake_with_report(SHARED, w, "merge", tmp_path / "merge.rlx")
    art = artifact.read(merge)
    assert [e["name"] for e in art.weights] == ["a", "b"] and "rlx.constant" in art.module_text
    assert rep_m.ops_after == rep_m.ops_before and art.header["memory"] == "duplex"
    for p in (path, keep, merge):
        (y,) = reference.run(rlx.bake.materialize(p), [x])
        np.testing.assert_array_equal(y, yr)


def test_packed_gguf_binding_and_remaining_params(tmp_path: Path) -> None:
    from rlx.weights import PackedWeight

    text = """
func.func @main(%x: tensor<2x64xf32> {rlx.name = "x"}) -> tensor<2x4xf32> {
  %p = rlx.param "p" : tensor<272xui8>
  %s = rlx.param "s" : tensor<4xf32>
  %y = rlx.dequant_matmul %x, %p {scheme = "q8_0", n = 4 : i64, k = 64 : i64} : (tensor<2x64xf32>, tensor<272xui8>) -> tensor<2x4xf32>
  %z = rlx.add %y, %s : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %z : tensor<2x4xf32>
}
"""
    rng = np.random.default_rng(6)
    wq = ggml.quantize(rng.standard_normal((4, 64)).astype(np.float32), "q8_0")
    path = rlx.bake.bake(text, {"p": PackedWeight("q8_0", 4, 64, wq)}, "exact", tmp_path / "p.rlx")
    h = artifact.read(path).header
    assert h["meta"]["params_remaining"] == ["s"]
    (e,) = h["weights"]
    assert (e["name"], e["encoding"], e["shape"]) == ("p", "gguf_q8_0", [64, 4])
    x = rng.standard_normal((2, 64)).astype(np.float32)
    s = np.arange(4, dtype=np.float32)
    (y,) = reference.run(rlx.bake.materialize(path), [x], {"s": s})
    (yr,) = reference.run(text, [x], {"p": wq, "s": s})
    np.testing.assert_array_equal(y, yr)
