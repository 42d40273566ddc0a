"""rlx.compile + CompiledGraph: examples vs the reference interpreter, errors, threads, cache.

Every test runs on the STUB backend (see test_runtime_stub.py) and, through the `backend`
fixture, on the real lowering + JIT once it is registered (skipped until then).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from test_runtime_stub import backend_fixture, stub_fixture  # noqa: F401  (fixtures)

import rlx
from rlx.runtime import cache, pipeline
from rlx.runtime.reference import run as reference_run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ADD = (
    'func.func @main(%x: tensor<2x3xf32> {rlx.name = "x"}, %y: tensor<3xf32>) -> tensor<2x3xf32> {\n'
    '  %w = rlx.param "w" : tensor<3xf32>\n'
    "  %a = rlx.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
    "  %b = rlx.mul %a, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
    "  func.return %b : tensor<2x3xf32>\n}\n"
)


def _params(g: rlx.CompiledGraph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: (rng.standard_normal(s) * 0.1).astype(d) for n, (s, d) in g.params.items()}


@pytest.mark.parametrize("name", ["mlp", "transformer_block"])
def test_examples_match_reference(backend: str, name: str) -> None:
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


def test_two_threads_share_one_graph(backend: str) -> None:
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


def test_second_compile_hits_the_cache(backend: str) -> None:
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


def test_corrupt_json_is_ignored_and_cache_can_be_off(
    stub: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rlx.compile(ADD)
    cache.CACHE.clear_memory()
    for f in Path(cache.cache_dir()).rglob("*.json"):
        f.write_text("{not json")
    assert not rlx.compile(ADD).cache_hit and cache.CACHE.stats.disk_errors == 1
    assert rlx.compile(ADD).cache_hit
    monkeypatch.setenv("RLX_CACHE", "0")  # turns both levels off
    assert not rlx.compile(ADD).cache_hit


def test_run_errors_name_the_problem(stub: str) -> None:
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
    assert g.inputs == [("x", (2, 3), np.float32), ("arg1", (3,), np.float32)]
    assert list(g.params) == ["w"] and g.outputs[0][1:] == ((2, 3), np.float32)


def test_parse_and_verify_errors_are_located(stub: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(ADD.replace("rlx.mul", "rlx.mull"))
    with pytest.raises(ValueError, match=r"bad\.mlir:4:\d+: error: .*rlx\.mull"):
        rlx.compile(bad)
    wrong = ADD.replace("-> tensor<2x3xf32>\n  %b", "-> tensor<2x4xf32>\n  %b")
    with pytest.raises(ValueError, match=r"<string>:\d+:\d+: error:"):
        rlx.compile(wrong)
    verify = ADD.replace("rlx.add %x, %y", "rlx.add %x, %y {foo = 1 : i64}")
    with pytest.raises(ValueError, match=r"<string>:3:\d+: error: unknown attribute 'foo'"):
        rlx.compile(verify)
    with pytest.raises(ValueError, match=r"no function @nope .*@main"):
        rlx.compile(ADD, entry="nope")
    with pytest.raises(ValueError, match="cannot read"):
        rlx.compile(tmp_path / "missing.mlir")
    with pytest.raises(TypeError, match="expected MLIR text"):
        rlx.compile(42)


def test_sources_verbose_report_and_stages(
    stub: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # pretend the precision pass is missing, to see "accepted, not yet applied"
    full = pipeline.pass_registry
    monkeypatch.setattr(
        pipeline, "pass_registry", lambda: {k: v for k, v in full().items() if k != "precision"}
    )
    b = rlx.Graph()
    x = b.input("x", (2, 3))
    b.output(b.relu(b.add(x, b.param("unused_not", (3,)))))
    g1 = rlx.compile(
        b, rlx.CompileOptions(verbose=True, policy="auto-mixed", disable_mpsgraph=True)
    )
    err = capsys.readouterr().err
    assert "[rlx] pass dce:" in err and " ops, " in err and " ms" in err
    assert "[rlx] arena: " in err and " unplanned), alignment 64" in err
    assert "policy = 'auto-mixed': accepted, not yet applied" in err
    assert "disable_mpsgraph = True: no effect" in err and "CPU" in err
    assert "accepted, not yet applied" in g1.pipeline_report()
    g2 = rlx.compile(b.module)  # a ModuleOp is cloned, not consumed
    assert g2.cache_hit is False and capsys.readouterr().err == ""
    assert rlx.compile(b.module).cache_hit
    for stage in ("input", "rlx", "linalg", "loops", "llvm", "llvm-ir", "asm"):
        assert isinstance(g2.ir(stage), str) and g2.ir(stage)
    assert "rlx.add" in g2.ir("input")
    with pytest.raises(ValueError, match="unknown IR stage 'mlir'"):
        g2.ir("mlir")
    assert g2.arena_bytes >= 0 and g2.unplanned_bytes >= 0


def test_dead_params_are_accepted(stub: str) -> None:
    src = ADD.replace(
        '  %w = rlx.param "w"', '  %d = rlx.param "dead" : tensor<5xf32>\n  %w = rlx.param "w"'
    )
    g = rlx.compile(src)
    assert list(g.params) == ["w"]  # dce removed "dead" from the ABI
    g.set_param("dead", np.zeros(5, np.float32))  # accepted and ignored, as RLX
    with pytest.raises(ValueError, match="param 'dead'"):
        g.set_param("dead", np.zeros(4, np.float32))
    assert "dead" in rlx.compile(src, rlx.CompileOptions(dce=False)).params
