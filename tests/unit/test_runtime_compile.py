"""rlx.compile + CompiledGraph on the real pipeline: examples vs the reference interpreter,
errors, threads, cache, verbose output, reports."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import rlx
from rlx.interpreter import run as reference_run
from rlx.runtime import cache, entry_call
from rlx.runtime.entry_call import CTYPES_MAX_ARGS, entry_caller
from rlx.runtime.jit import JitModule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ADD = (
    'func.func @main(%x: tensor<2x3xf32> {rlx.name = "x"}, %y: tensor<3xf32>) -> tensor<2x3xf32> {\n'
    '  %w = rlx.param "w" : tensor<3xf32>\n'
    "  %a = rlx.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
    "  %b = rlx.mul %a, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
    "  func.return %b : tensor<2x3xf32>\n}\n"
)


ENV = ("RLX_CACHE", "RLX_VERBOSE", "RLX_DISPATCH_REPORT", "RLX_FUSION_REPORT",
       "RLX_KERNEL_DISPATCH", "RLX_CACHE_PARAM_INVARIANT")  # fmt: skip


@pytest.fixture(name="fresh", autouse=True)
def fresh_fixture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty compile cache (memory and disk) and no RLX_* environment."""
    for k in ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path / "rlx-cache"))
    cache.CACHE.clear_memory()
    cache.CACHE.stats = cache.CacheStats()
    return tmp_path


def _params(g: rlx.CompiledGraph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: (rng.standard_normal(s) * 0.1).astype(d) for n, (s, d) in g.params.items()}


@pytest.mark.parametrize("name", ["mlp", "transformer_block"])
def test_examples_match_reference(name: str) -> None:
    path = EXAMPLES / f"{name}.mlir"
    g = rlx.compile(path)
    ((xname, xshape, xdtype),) = g.inputs
    assert xname == "x" and xdtype == np.float32
    params = _params(g)
    g.set_params(params)
    x = np.random.default_rng(1).standard_normal(xshape).astype(np.float32)
    (got,) = g.run(x)
    (want,) = reference_run(path.read_text(), [x], params)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    (again,) = g.run(x=x)  # by name, repeated run reuses the arena
    np.testing.assert_array_equal(again, got)


def test_two_threads_share_one_graph() -> None:
    g = rlx.compile(EXAMPLES / "mlp.mlir")
    g.set_params(_params(g))
    xs = [np.random.default_rng(s).standard_normal((8, 64)).astype(np.float32) for s in (2, 3)]
    want = [g.run(x)[0] for x in xs]
    errors: list[str] = []

    def worker(i: int) -> None:
        for _ in range(15):
            (y,) = g.run(xs[i])
            if not np.array_equal(y, want[i]):
                errors.append(f"thread {i}: wrong result")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_second_compile_hits_the_cache() -> None:
    path = EXAMPLES / "mlp.mlir"
    g1 = rlx.compile(path)
    assert not g1.cache_hit and cache.CACHE.stats.misses == 1
    g2 = rlx.compile(path.read_text())  # same module text -> same key
    assert g2.cache_hit and cache.CACHE.stats.memory_hits == 1
    cache.CACHE.clear_memory()
    g3 = rlx.compile(path)
    assert g3.cache_hit and cache.CACHE.stats.disk_hits == 1
    params = _params(g1)
    x = np.ones((8, 64), np.float32)
    for g in (g1, g3):
        g.set_params(params)
    np.testing.assert_array_equal(g1.run(x)[0], g3.run(x)[0])
    assert g3.ir("input") == g1.ir("input") and "rlx." in g3.ir("rlx")
    # the key covers the options (verbose aside) and the entry
    text, o = g1.ir("input"), rlx.CompileOptions()
    key = cache.make_key(text, o, "main", "b")
    assert key == cache.make_key(text, o.with_verbose(True), "main", "b")
    assert key != cache.make_key(text, o.arena_alignment(128), "main", "b")
    assert key != cache.make_key(text, o, "other", "b")
    # a corrupt disk entry is ignored and rebuilt
    cache.CACHE.clear_memory()
    for f in Path(cache.cache_dir()).rglob("*.ll"):
        f.write_text("garbage")
    g4 = rlx.compile(path)
    assert not g4.cache_hit and cache.CACHE.stats.disk_errors >= 1
    g4.set_params(params)
    np.testing.assert_array_equal(g4.run(x)[0], g1.run(x)[0])


def test_corrupt_json_is_ignored_and_cache_can_be_off(monkeypatch: pytest.MonkeyPatch) -> None:
    rlx.compile(ADD)
    cache.CACHE.clear_memory()
    for f in Path(cache.cache_dir()).rglob("*.json"):
        f.write_text("{not json")
    assert not rlx.compile(ADD).cache_hit and cache.CACHE.stats.disk_errors == 1
    assert rlx.compile(ADD).cache_hit
    monkeypatch.setenv("RLX_CACHE", "0")  # turns both levels off
    assert not rlx.compile(ADD).cache_hit


def test_run_errors_name_the_problem() -> None:
    g = rlx.compile(ADD)
    x, y, w = np.ones((2, 3), np.float32), np.ones(3, np.float32), np.full(3, 2, np.float32)
    with pytest.raises(ValueError, match=r"param\(s\) not set: w"):
        g.run(x, y)
    with pytest.raises(ValueError, match="unknown param 'v'; params: w"):
        g.set_param("v", w)
    with pytest.raises(
        ValueError,
        match=r"param 'w': expected float32 array of shape \(3,\), got float32 array of shape \(4,\)",
    ):
        g.set_param("w", np.ones(4, np.float32))
    g.set_param("w", w)
    w[:] = 100  # set_param copied the weights
    cases = [
        ((x,), {}, "missing input"),
        ((x, y, y), {}, "takes 2 input"),
        ((x,), {"z": y}, "unknown input 'z'"),
        ((x, y), {"x": x}, "'x' given both"),
        ((x.astype(np.float64), y), {}, "input 'x': expected float32 .* got float64"),
        ((np.ones((3, 2), np.float32), y), {}, r"input 'x': expected .*\(2, 3\).*\(3, 2\)"),
        (([[1.0] * 3] * 2, y), {}, "input 'x'"),
    ]
    for args, kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            g.run(*args, **kw)
    (out,) = g.run(arg1=y, x=np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.testing.assert_array_equal(out, (np.arange(6).reshape(2, 3) + 1) * 2)
    raw = np.zeros(25, np.uint8)
    raw[1:] = np.arange(6, dtype=np.float32).view(np.uint8)
    misaligned = np.frombuffer(raw.data, np.float32, 6, 1).reshape(2, 3)
    assert not misaligned.flags.aligned
    sliced = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]  # strided view
    for xs in (misaligned, sliced, np.arange(6, dtype=np.float32).reshape(2, 3)):
        np.testing.assert_array_equal(g.run(xs, y)[0], (np.array(xs) + 1) * 2)
    assert g.inputs == [("x", (2, 3), np.float32), ("arg1", (3,), np.float32)]
    assert list(g.params) == ["w"] and g.outputs[0][1:] == ((2, 3), np.float32)


def test_parse_and_verify_errors_are_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(ADD.replace("rlx.mul", "rlx.mull"))
    with pytest.raises(ValueError, match=r"bad\.mlir:4:\d+: error: .*rlx\.mull"):
        rlx.compile(bad)
    wrong = ADD.replace("-> tensor<2x3xf32>\n  %b", "-> tensor<2x4xf32>\n  %b")
    with pytest.raises(ValueError, match=r"<string>:\d+:\d+: error:"):
        rlx.compile(wrong)
    verify = ADD.replace("rlx.add %x, %y", "rlx.add %x, %y {foo = 1 : i64}")
    with pytest.raises(
        ValueError, match=r"<string>:3:\d+: error: 'rlx.add' op unknown attribute 'foo'"
    ):
        rlx.compile(verify)
    with pytest.raises(ValueError, match=r"no function @nope .*@main"):
        rlx.compile(ADD, entry="nope")
    with pytest.raises(ValueError, match="cannot read"):
        rlx.compile(tmp_path / "missing.mlir")
    with pytest.raises(TypeError, match="expected MLIR text"):
        rlx.compile(42)


def test_verbose_logs_passes_reports_and_stages(capsys: pytest.CaptureFixture[str]) -> None:
    b = rlx.Graph()
    x = b.input("x", (2, 3))
    b.output(b.relu(b.add(x, b.param("unused_not", (3,)))))
    opts = rlx.CompileOptions(verbose=True, policy="auto-mixed", disable_mpsgraph=True)
    g1 = rlx.compile(b, opts)
    err = capsys.readouterr().err
    assert "[rlx] pass dce:" in err and " ops, " in err and " ms" in err
    assert "[rlx] pass precision:" in err and "[rlx] pass plan-memory:" in err
    assert "[rlx] arena: " in err and " unplanned), alignment 64" in err
    assert "disable_mpsgraph = True: no effect" in err and "CPU" in err
    assert "rlx dispatch report" in err and "fusion report:" in err
    assert "policy = 'auto-mixed': applied (by pass 'precision')" in g1.pipeline_report()
    assert "not yet applied" not in g1.pipeline_report()
    g2 = rlx.compile(b.module)  # a ModuleOp is cloned, not consumed
    assert g2.cache_hit is False and capsys.readouterr().err == ""
    assert rlx.compile(b.module).cache_hit
    for stage in ("input", "rlx", "linalg", "loops", "llvm", "llvm-ir", "asm"):
        assert isinstance(g2.ir(stage), str) and g2.ir(stage)
    assert "rlx.add" in g2.ir("input") and "llvm.func" in g2.ir("llvm")
    with pytest.raises(ValueError, match="unknown IR stage 'mlir'"):
        g2.ir("mlir")
    assert g2.arena_bytes >= 0 and g2.unplanned_bytes >= 0


def test_reports_api_and_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    g = rlx.compile(EXAMPLES / "mlp.mlir")
    assert capsys.readouterr().err == ""
    d, f = g.dispatch_report(), g.fusion_report()
    assert d.startswith('rlx dispatch report — backend "cpu", policy prefer-native')
    assert "compile-ready: yes" in d and "softmax" in d
    assert f.startswith("fusion report:") and "fused_matmul_bias_act=2" in f
    common = rlx.compile(EXAMPLES / "mlp.mlir", rlx.CompileOptions(kernel_dispatch="common"))
    assert (
        "common-ir lowering" in common.dispatch_report() and "softmax" in common.dispatch_report()
    )
    # printed on stderr when asked, also on a cache hit (the passes did not run then)
    for env, words in (
        ("RLX_DISPATCH_REPORT", "rlx dispatch report"),
        ("RLX_FUSION_REPORT", "fusion report:"),
    ):
        monkeypatch.setenv(env, "1")
        rlx.compile(EXAMPLES / "mlp.mlir")
        err = capsys.readouterr().err
        assert err.count(words) == 1, err
        monkeypatch.delenv(env)
    none = rlx.compile(EXAMPLES / "mlp.mlir", rlx.CompileOptions(fusion_target="none"))
    assert "did not run" in none.fusion_report()


def test_cache_hit_from_disk_keeps_reports_and_prepare() -> None:
    o = rlx.CompileOptions(cache_param_invariant=True)
    g1 = rlx.compile(HOIST, o)
    cache.CACHE.clear_memory()
    g2 = rlx.compile(HOIST, o)
    assert g2.cache_hit and cache.CACHE.stats.disk_hits == 1
    assert g2.fusion_report() == g1.fusion_report() and g2.dispatch_report()
    assert g2.prepare_signature == g1.prepare_signature
    p = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "scale": np.float32(0.5)}
    x = np.ones((2, 4), np.float32)
    for g in (g1, g2):
        g.set_params(p)
    np.testing.assert_array_equal(g1.run(x)[0], g2.run(x)[0])


HOIST = """func.func @main(%x: tensor<2x4xf32> {rlx.name = "x"}) -> tensor<2x3xf32> {
  %w = rlx.param "w" : tensor<3x4xf32>
  %s = rlx.param "scale" : tensor<f32>
  %t = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %ws = rlx.mul %t, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %y = rlx.matmul %x, %ws : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


def test_cache_param_invariant_runs_prepare_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE_PARAM_INVARIANT", "1")
    g = rlx.compile(HOIST)
    assert "func.func @prepare() -> tensor<4x3xf32> attributes {rlx.prepare_for" in g.ir("rlx")
    assert g.inputs == [("x", (2, 4), np.float32)]  # prepared values are not inputs
    assert set(g.params) == {"w", "scale"}
    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal((3, 4)).astype(np.float32), "scale": np.float32(2.0)}
    g.set_params(p)
    assert g.prepare_runs == 0  # lazily, at the first run
    x = rng.standard_normal((2, 4)).astype(np.float32)
    for _ in range(10):
        (y,) = g.run(x)
    assert g.prepare_runs == 1
    np.testing.assert_allclose(y, reference_run(HOIST, [x], p)[0], rtol=1e-5, atol=1e-6)
    p["scale"] = np.float32(-3.0)
    g.set_param("scale", p["scale"])
    (y,) = g.run(x)
    assert g.prepare_runs == 2
    np.testing.assert_allclose(y, reference_run(HOIST, [x], p)[0], rtol=1e-5, atol=1e-6)
    g.run(x)
    assert g.prepare_runs == 2
    with pytest.raises(ValueError, match="unknown input '__rlx_prep_0'"):
        g.run(x, __rlx_prep_0=np.zeros((4, 3), np.float32))
    # after set_param, concurrent first runs share one prepare
    g.set_param("scale", np.float32(1.0))
    p["scale"] = np.float32(1.0)
    want = reference_run(HOIST, [x], p)[0]
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(g.run(x)[0])) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert g.prepare_runs == 3 and len(results) == 4
    for r in results:
        np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-6)
    plain = rlx.compile(HOIST, rlx.CompileOptions(cache_param_invariant=False))
    assert "@prepare" not in plain.ir("rlx") and plain.prepare_signature is None


def test_prepare_and_main_share_a_param() -> None:
    src = HOIST.replace(
        "func.return %y : tensor<2x3xf32>",
        "%z = rlx.mul %y, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>\n"
        "  func.return %z : tensor<2x3xf32>",
    )
    g = rlx.compile(src, rlx.CompileOptions(cache_param_invariant=True))
    assert [a.name for a in g.signature.of("param")] == ["scale"]
    p = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "scale": np.float32(2.0)}
    g.set_params(p)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(g.run(x)[0], reference_run(src, [x], p)[0], rtol=1e-6)
    p["scale"] = np.float32(0.25)
    g.set_param("scale", p["scale"])
    np.testing.assert_allclose(g.run(x)[0], reference_run(src, [x], p)[0], rtol=1e-6)
    assert g.prepare_runs == 2


def test_prepare_hoists_weight_quantization() -> None:
    """scaled_quant + cache_param_invariant: the weight-side transpose/quantize run once."""
    o = rlx.CompileOptions(cache_param_invariant=True, scaled_quant="fp8-e4m3")
    g = rlx.compile(HOIST, o)
    assert g.prepare_signature is not None
    assert "uint8" in [a.dtype for a in g.prepare_signature.of("output")]
    p = {"w": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "scale": np.float32(0.5)}
    g.set_params(p)
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    ys = [g.run(x)[0] for _ in range(3)]
    assert g.prepare_runs == 1 and all(np.array_equal(y, ys[0]) for y in ys)
    # the reference: the interpreter on the same graph after scaled-quant (exact semantics)
    from xdsl.context import Context

    from rlx.interpreter import parse_module
    from rlx.transforms.scaled_quant import ScaledQuant

    quantized = parse_module(HOIST)
    ScaledQuant(formats="fp8-e4m3").apply(Context(), quantized)
    np.testing.assert_allclose(ys[0], reference_run(quantized, [x], p)[0], rtol=1e-6, atol=1e-7)


def test_dead_params_are_accepted() -> None:
    src = ADD.replace(
        '  %w = rlx.param "w"', '  %d = rlx.param "dead" : tensor<5xf32>\n  %w = rlx.param "w"'
    )
    g = rlx.compile(src)
    assert list(g.params) == ["w"]  # dce removed "dead" from the ABI
    g.set_param("dead", np.zeros(5, np.float32))  # accepted and ignored, as RLX
    with pytest.raises(ValueError, match="param 'dead'"):
        g.set_param("dead", np.zeros(4, np.float32))
    assert "dead" in rlx.compile(src, rlx.CompileOptions(dce=False)).params


def test_entry_with_more_arguments_than_ctypes_allows() -> None:
    """ctypes calls take at most 1024 arguments: a function of 1100 pointers (each
    stores its index through its own pointer) runs through the pointer-array trampoline."""
    n = CTYPES_MAX_ARGS + 76
    params = ", ".join(f"ptr %a{i}" for i in range(n))
    stores = "\n".join(f"  store i64 {i}, ptr %a{i}, align 8" for i in range(n))
    ir = f"define void @wide({params}) {{\n{stores}\n  ret void\n}}\n"
    code = JitModule(ir, opt_level=0)
    out = np.full(n, -1, np.int64)
    entry_caller(code.address("wide"), n)(*(out.ctypes.data + 8 * i for i in range(n)))
    np.testing.assert_array_equal(out, np.arange(n))
    with pytest.raises(TypeError, match=f"takes {n} pointer arguments, got 3"):
        entry_caller(code.address("wide"), n)(1, 2, 3)


def test_graph_runs_through_the_trampoline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trampoline path of `CompiledGraph` (run and @prepare), with the ctypes limit
    lowered to 2 so a small graph takes it, against the reference interpreter."""
    monkeypatch.setattr(entry_call, "CTYPES_MAX_ARGS", 2)
    monkeypatch.setenv("RLX_CACHE_PARAM_INVARIANT", "1")
    g = rlx.compile(HOIST)
    assert g.prepare_signature is not None
    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal((3, 4)).astype(np.float32), "scale": np.float32(2.0)}
    g.set_params(p)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(g.run(x)[0], reference_run(HOIST, [x], p)[0], rtol=1e-5, atol=1e-6)
    assert g.prepare_runs == 1


def test_unbound_dynamic_dims_are_named() -> None:
    src = (
        'func.func @main(%x: tensor<?x?xf32> {rlx.dims = ["batch", "seq"]}) -> tensor<?x?xf32> {\n'
        "  %y = rlx.exp %x : (tensor<?x?xf32>) -> tensor<?x?xf32>\n"
        "  func.return %y : tensor<?x?xf32>\n}\n"
    )
    with pytest.raises(ValueError, match=r"unbound dynamic dims: batch, seq; .*dim_binding"):
        rlx.compile(src)
    g = rlx.compile(src, rlx.CompileOptions(dim_binding={"batch": 2, "seq": 3}))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(g.run(x)[0], np.exp(x), rtol=1e-6)
