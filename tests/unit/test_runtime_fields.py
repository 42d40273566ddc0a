"""Each CompileOptions field changes what `rlx.compile` runs (checked on `ir("rlx")` /
`ir("linalg")`) and the compiled code still matches `rlx.reference.run`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import rlx
from rlx.interpreter import run as reference_run
from rlx.runtime import cache
from rlx.runtime.compiler import CompileError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MLP = EXAMPLES / "mlp.mlir"


@pytest.fixture(autouse=True, scope="module")
def module_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One compile cache for the module (the default MLP compiles once), no RLX_* env."""
    with pytest.MonkeyPatch.context() as mp:
        for k in ("RLX_CACHE", "RLX_VERBOSE", "RLX_KERNEL_DISPATCH", "RLX_CACHE_PARAM_INVARIANT"):
            mp.delenv(k, raising=False)
        mp.setenv("RLX_CACHE_DIR", str(tmp_path_factory.mktemp("rlx-cache")))
        cache.CACHE.clear_memory()
        yield
        cache.CACHE.clear_memory()


def _mlp_data(seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    shapes = {"w1": (64, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
    params = {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}
    return rng.standard_normal((8, 64)).astype(np.float32), params


def _run_mlp(opts: rlx.CompileOptions) -> tuple[rlx.CompiledGraph, np.ndarray, np.ndarray]:
    g = rlx.compile(MLP, opts)
    x, params = _mlp_data()
    g.set_params({k: v for k, v in params.items() if k in g.params})
    (want,) = reference_run(MLP.read_text(), [x], params)
    return g, g.run(x)[0], want


def test_precision_and_policy_insert_casts() -> None:
    for opts in (rlx.CompileOptions(precision="f16"), rlx.CompileOptions(policy="auto-mixed")):
        g, got, want = _run_mlp(opts)
        assert "rlx.cast" in g.ir("rlx") and "f16" in g.ir("rlx")
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-3)
    g, _, _ = _run_mlp(rlx.CompileOptions())
    assert "rlx.cast" not in g.ir("rlx")


def test_dim_binding_compiles_a_dynamic_graph() -> None:
    src = (
        'func.func @main(%x: tensor<?x4xf32> {rlx.name = "x", rlx.dims = ["batch", 4]}) '
        "-> tensor<?x4xf32> {\n"
        "  %y = rlx.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>\n"
        "  func.return %y : tensor<?x4xf32>\n}\n"
    )
    with pytest.raises(ValueError, match="dynamic"):
        rlx.compile(src)
    for n in (1, 3):
        g = rlx.compile(src, rlx.CompileOptions(dim_binding={"batch": n}))
        assert g.inputs == [("x", (n, 4), np.float32)]
        x = np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(n, 4)
        np.testing.assert_array_equal(g.run(x)[0], np.maximum(x, 0))


def test_param_bindings_fold_weights(tmp_path: Path) -> None:
    x, params = _mlp_data()
    g, got, want = _run_mlp(rlx.CompileOptions(param_bindings={"w1": params["w1"]}))
    assert 'rlx.param "w1"' not in g.ir("rlx") and "w1" not in g.params
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    np.savez(tmp_path / "w.npz", **params)
    g = rlx.compile(MLP, rlx.CompileOptions(param_bindings=tmp_path / "w.npz"))
    assert g.params == {} and "rlx.param" not in g.ir("rlx")
    np.testing.assert_allclose(g.run(x)[0], want, rtol=1e-4, atol=1e-6)


SCALAR_PARAM = """func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %lo = rlx.param "lo" : tensor<f32>
  %y = rlx.max %x, %lo : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
"""


def test_param_bindings_keep_rank_zero_values(tmp_path: Path) -> None:
    """A 0-d binding (a scalar ONNX initializer, e.g. Clip's min in torch's dynamo export)
    stays 0-d through the dict -> .npz hand-over (it became shape [1]: bind-params failed)."""
    x = np.array([-1.0, 0.25, 3.0], np.float32)
    for value in (np.array(0.5, np.float32), np.float32(0.5)):
        g = rlx.compile(SCALAR_PARAM, rlx.CompileOptions(param_bindings={"lo": value}))
        assert "rlx.param" not in g.ir("rlx")
        np.testing.assert_array_equal(g.run(x)[0], np.maximum(x, 0.5))
    with pytest.raises(
        CompileError, match=r"param 'lo' has shape \[\], the binding has shape \[1\]"
    ):
        rlx.compile(
            SCALAR_PARAM, rlx.CompileOptions(param_bindings={"lo": np.array([0.5], np.float32)})
        )


def test_scaled_quant_produces_scaled_matmul() -> None:
    g, got, want = _run_mlp(rlx.CompileOptions(scaled_quant="fp8-e4m3"))
    assert "rlx.scaled_matmul" in g.ir("rlx") and "rlx.matmul " not in g.ir("rlx")
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, atol=0.05)  # softmax probabilities, fp8 operands


def test_kernel_dispatch_common_decomposes_softmax() -> None:
    g, got, want = _run_mlp(rlx.CompileOptions(kernel_dispatch="common"))
    assert "rlx.softmax" not in g.ir("rlx") and "rlx.exp" in g.ir("rlx")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    g, _, _ = _run_mlp(rlx.CompileOptions(force_common_kinds=["softmax"]))
    assert "rlx.softmax" not in g.ir("rlx")
    g, _, _ = _run_mlp(rlx.CompileOptions())
    assert "rlx.softmax" in g.ir("rlx")


def test_supported_ops_legalize() -> None:
    claim = ["matmul", "add", "gelu", "softmax"]
    g, got, want = _run_mlp(rlx.CompileOptions(supported_ops=claim))
    assert "fused_matmul_bias_act" not in g.ir("rlx") and "rlx.gelu" in g.ir("rlx")
    assert "supported_ops claim=4" in g.dispatch_report()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="softmax"):
        rlx.compile(MLP, rlx.CompileOptions(supported_ops=["matmul", "add", "gelu"]))


def test_fusion_opts_toggle_a_pattern() -> None:
    g, _, _ = _run_mlp(rlx.CompileOptions())
    assert g.ir("rlx").count("rlx.fused_matmul_bias_act") == 2
    g, got, want = _run_mlp(rlx.CompileOptions(fusion_opts={"matmul_bias_act": False}))
    assert "fused_matmul_bias_act" not in g.ir("rlx")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    g, _, _ = _run_mlp(rlx.CompileOptions(fusion_target="none"))
    assert "rlx.fused" not in g.ir("rlx")


def test_assert_fusion_clean_lists_misses() -> None:
    src = (
        'func.func @main(%x: tensor<2x4xf32> {rlx.name = "x"}) -> (tensor<2x3xf32>, tensor<2x3xf32>) {\n'
        '  %w = rlx.param "w" : tensor<4x3xf32>\n'
        '  %b = rlx.param "b" : tensor<3xf32>\n'
        "  %m = rlx.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>\n"
        "  %a = rlx.add %m, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
        "  func.return %a, %m : tensor<2x3xf32>, tensor<2x3xf32>\n}\n"
    )
    g = rlx.compile(src)
    assert "missed=1" in g.fusion_report()
    with pytest.raises(
        ValueError, match=r"(?s)fusion contract violated: 1 missed.*matmul has several users"
    ):
        rlx.compile(src, rlx.CompileOptions(assert_fusion_clean=True))
    rlx.compile(MLP, rlx.CompileOptions(assert_fusion_clean=True))  # clean: compiles


RNG = (
    "func.func @main() -> (tensor<64xf32>, tensor<8xf32>) {\n"
    "  %u = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<64xf32>\n"
    "  %n = rlx.rng_normal {seed_offset = 2 : i64} : tensor<8xf32>\n"
    "  func.return %u, %n : tensor<64xf32>, tensor<8xf32>\n}\n"
)


def test_rng_seed_matches_the_reference_bit_for_bit() -> None:
    outs = {}
    for seed in (7, 8):
        g = rlx.compile(RNG, rlx.CompileOptions().rng_seed(seed))
        u, n = g.run()
        assert "rlx.rng_seed = " + str(seed) in g.ir("rlx")
        np.testing.assert_array_equal(g.run()[0], u)  # deterministic
        ru, rn = reference_run(RNG, [], {}, rng_seed=seed)
        np.testing.assert_array_equal(u, ru)  # uniform: bit for bit
        np.testing.assert_allclose(n, rn, rtol=1e-5, atol=1e-6)
        outs[seed] = u
    assert not np.array_equal(outs[7], outs[8])
    zero = rlx.compile(RNG, rlx.CompileOptions().rng_backend("zero"))
    assert not zero.run()[0].any()


def test_scan_unroll_max_length() -> None:
    src = (
        "func.func @main(%init: tensor<4xf32>, %xs: tensor<3x4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {\n"
        "  %c, %ys = rlx.scan (%init) over (%xs) {length = 3 : i64} : (tensor<4xf32>), (tensor<3x4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {\n"
        "  ^bb0(%carry: tensor<4xf32>, %x: tensor<4xf32>):\n"
        "    %n = rlx.add %carry, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "    rlx.yield %n, %n : tensor<4xf32>, tensor<4xf32>\n"
        "  }\n"
        "  func.return %c, %ys : tensor<4xf32>, tensor<3x4xf32>\n}\n"
    )
    init, xs = np.ones(4, np.float32), np.arange(12, dtype=np.float32).reshape(3, 4)
    want = np.cumsum(xs, axis=0) + 1
    for n, unrolled in ((64, True), (2, False), (0, False)):
        g = rlx.compile(src, rlx.CompileOptions(scan_unroll_max_length=n))
        assert ("rlx.scan" not in g.ir("rlx")) is unrolled
        c, ys = g.run(init, xs)
        np.testing.assert_array_equal(ys, want)
        np.testing.assert_array_equal(c, want[-1])


def test_arena_alignment() -> None:
    src = (
        'func.func @main(%x: tensor<5xf32> {rlx.name = "x"}) -> tensor<5xf32> {\n'
        "  %a = rlx.exp %x : (tensor<5xf32>) -> tensor<5xf32>\n"
        "  %b = rlx.neg %a : (tensor<5xf32>) -> tensor<5xf32>\n"
        "  %c = rlx.mul %a, %b : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>\n"
        "  func.return %c : tensor<5xf32>\n}\n"
    )
    x = np.arange(5, dtype=np.float32)
    for a in (64, 256):
        g = rlx.compile(src, rlx.CompileOptions(arena_alignment=a, fusion_target="none"))
        assert f"rlx.arena_alignment = {a} : i64" in g.ir("linalg")
        assert g.signature.alignment == a and g.arena_bytes % a == 0 and g.arena_bytes > 0
        np.testing.assert_allclose(g.run(x)[0], -(np.exp(x) ** 2), rtol=1e-6)


def test_dce_and_constant_folding() -> None:
    src = (
        'func.func @main(%x: tensor<3xf32> {rlx.name = "x"}) -> tensor<3xf32> {\n'
        "  %c = rlx.constant dense<2.0> : tensor<3xf32>\n"
        "  %d = rlx.add %c, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
        "  %y = rlx.mul %x, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
        "  %dead = rlx.exp %x : (tensor<3xf32>) -> tensor<3xf32>\n"
        "  func.return %y : tensor<3xf32>\n}\n"
    )
    x = np.arange(3, dtype=np.float32)
    for opts, folded, dead in (
        (rlx.CompileOptions(), True, False),
        (rlx.CompileOptions(dce=False, constant_folding=False, fusion_target="none"), False, True),
    ):
        g = rlx.compile(src, opts)
        assert ("rlx.add" not in g.ir("rlx")) is folded and ("rlx.exp" in g.ir("rlx")) is dead
        np.testing.assert_array_equal(g.run(x)[0], x * 4)
