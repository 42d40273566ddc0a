"""Ahead-of-time code in `.rlx` artifacts (issue 16): a load links the stored object code
without compiling (counted by `rlx.runtime.counters`), weights stay memory-mapped, and
every path that cannot use the code (another CPU, other options, allow_native=False, a
flipped byte) is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rlx
import rlx.bake
from rlx import interpreter
from rlx.bake import artifact
from rlx.runtime import aot, counters

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.mlir"


def _weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"w1": (64, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
    return {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}


X = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rlx.bake.bake(MLP, _weights(), "exact", tmp_path_factory.mktemp("aot") / "mlp.rlx")


@pytest.fixture(scope="module")
def unbaked() -> np.ndarray:
    g = rlx.compile(MLP)
    g.set_params(_weights())
    return g.run(X)[0]


CHILD = """
import json, mmap, sys
import numpy as np
def root(a):
    while isinstance(a, np.ndarray):
        a = a.base
    return a.obj if isinstance(a, memoryview) else a
import rlx
from rlx.runtime import counters
g = rlx.load(sys.argv[1])
y = g.run(np.load(sys.argv[2]))[0]
np.save(sys.argv[3], y)
print(json.dumps({"counts": counters.snapshot(), "xdsl": "xdsl" in sys.modules,
                  "params": list(g.params), "writable": bool(g._params["__rlx_weight.w1"].flags.writeable),
                  "misaligned": [n for n, a in g._params.items() if a.ctypes.data % 64],
                  "mapped": all(isinstance(root(a), mmap.mmap) for a in g._params.values())}))
"""


def test_fresh_process_links_without_compiling(
    baked: Path, unbaked: np.ndarray, tmp_path: Path
) -> None:
    np.save(tmp_path / "x.npy", X)
    cache = tmp_path / "cache"
    env = {**os.environ, "RLX_CACHE_DIR": str(cache), "RLX_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(baked), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["counts"] == {"pipeline": 0, "llvm": 0}  # nothing compiled
    assert r["xdsl"] is False and r["params"] == [] and r["writable"] is False  # mmap, read-only
    assert r["misaligned"] == [] and r["mapped"]  # 64-byte aligned views, not copies
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))
    assert "warning" not in out.stderr.lower()
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), unbaked)


def test_flipped_code_byte_is_refused(baked: Path, tmp_path: Path) -> None:
    raw = bytearray(baked.read_bytes())
    (code,) = artifact.read(baked).code
    raw[code["offset"] + code["nbytes"] // 2] ^= 0x40
    bad = tmp_path / "flip.rlx"
    bad.write_bytes(bytes(raw))
    before = counters.snapshot()
    for verify in (True, False):  # the code checksum is checked even without verify
        with pytest.raises(artifact.ArtifactError, match="checksum mismatch in code section 0"):
            rlx.load(bad, verify=verify)
    assert counters.snapshot() == before


def test_code_rewritten_after_read_is_refused(baked: Path, tmp_path: Path) -> None:
    """The linked bytes are a copy checked after copying: a code section changed in place
    after `read` (its pages are shared with the file) is refused, not linked."""
    path = tmp_path / "rewritten.rlx"
    path.write_bytes(baked.read_bytes())
    art = artifact.read(path)
    (code,) = art.code
    assert len(art.code_bytes(code)) == code["nbytes"]
    with open(path, "r+b") as f:
        f.seek(code["offset"] + code["nbytes"] // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(artifact.ArtifactError, match="the file changed after it was read"):
        art.code_bytes(code)


def test_other_cpu_recompiles_with_one_warning(
    baked: Path,
    unbaked: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A host lacking a CPU feature the code was compiled for (here: one without SSE2,
    seen by CPUID and by LLVM) compiles the IR instead."""
    from rlx import host_cpu

    triple, _, features = aot.host()
    have = dict(host_cpu.features() or {}, sse2=False)
    monkeypatch.setattr(host_cpu, "features", lambda: have)
    monkeypatch.setattr(aot, "host", lambda: (triple, "some-other-cpu",
                                              features.replace("+sse2", "-sse2")))  # fmt: skip
    before = counters.snapshot()["pipeline"]
    with pytest.warns(RuntimeWarning, match="stored code not used.*lacks .*sse2") as rec:
        g = rlx.load(baked)
    assert len(rec) == 1 and "compiling from the IR" in str(rec[0].message)
    assert counters.snapshot()["pipeline"] >= before  # compiled (or a cache hit of that compile)
    assert "compiling mlp.rlx" in capsys.readouterr().err  # progress
    np.testing.assert_array_equal(g.run(X)[0], unbaked)


def test_other_cpu_name_with_the_features_links(
    baked: Path, unbaked: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored feature set decides, not the CPU name: another CPU with every feature
    links the stored code."""
    triple, _, features = aot.host()
    monkeypatch.setattr(aot, "host", lambda: (triple, "some-other-cpu", features))
    monkeypatch.setenv(aot.LOADER_ENV, "mcjit")  # the LLVM path too
    before = counters.snapshot()
    g = rlx.load(baked)
    assert counters.snapshot() == before and g._art.jit.loader == "mcjit"
    np.testing.assert_array_equal(g.run(X)[0], unbaked)


def test_allow_native_false_compiles_ir(
    baked: Path, unbaked: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    before = counters.snapshot()
    g = rlx.load(baked, allow_native=False)
    after = counters.snapshot()
    assert after["pipeline"] == before["pipeline"] + 1 and after["llvm"] == before["llvm"] + 1
    assert g.params == {}
    np.testing.assert_array_equal(g.run(X)[0], unbaked)


def test_other_options_recompile(baked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    with pytest.warns(RuntimeWarning, match="other CompileOptions"):
        g = rlx.load(baked, rlx.CompileOptions(fusion_target="none"))
    ref = interpreter.run(rlx.bake.materialize(baked), [X])[0]
    np.testing.assert_allclose(g.run(X)[0], ref, rtol=1e-5, atol=1e-6)


def test_code_key_mismatch_reasons() -> None:
    here = aot.host_key()
    assert here.mismatch(here) is None
    fields = here.to_json()
    for k, v, why in (("abi", 99, "ABI"), ("triple", "riscv64-unknown-linux-gnu", "riscv64"),
                      ("features", here.features + ",+madeup", "madeup"),
                      ("options", "0" * 64, "CompileOptions")):  # fmt: skip
        got = aot.CodeKey(**{**fields, k: v}).mismatch(here)
        assert got is not None and why in got, (k, got)
    generic = aot.CodeKey(**{**fields, "cpu": "x86-64", "features": ""})
    assert generic.mismatch(here) is None
    # a named CPU stored without features (older bakes) needs that very CPU name
    legacy = aot.CodeKey(**{**fields, "cpu": "other", "features": ""})
    assert "CPU other" in str(legacy.mismatch(here))
    assert aot.CodeKey(**{**fields, "cpu": "other"}).mismatch(here) is None  # features decide
    for k in ("abi", "options"):
        assert aot.runs_here(aot.CodeKey(**{**fields, k: fields[k] * 2})) is not None
    assert aot.runs_here(here) is None


def test_runtime_memory_mode(unbaked: np.ndarray, tmp_path: Path) -> None:
    path, rep = rlx.bake.bake_with_report(
        MLP, _weights(), "exact", tmp_path / "rt.rlx", memory="runtime"
    )
    art = artifact.read(path)
    assert art.memory == "runtime" and len(art.code) == 1
    assert {e["name"]: e["nbytes"] for e in art.weights} == dict.fromkeys(_weights(), 0)
    assert art.size < 24000  # graph, code and runtime pieces (pool, BLAS wrappers) only
    g = rlx.load(path)
    assert set(g.params) == set(_weights())
    with pytest.raises(ValueError, match="param"):
        g.run(X)
    g.set_params(_weights())
    np.testing.assert_array_equal(g.run(X)[0], unbaked)
    assert "set at run time" in str(rlx.bake.inspect(path))


def test_duplex_code_uses_the_table(unbaked: np.ndarray, tmp_path: Path) -> None:
    path = rlx.bake.bake(MLP, _weights(), "merge", tmp_path / "d.rlx")
    before = counters.snapshot()
    g = rlx.load(path)
    assert counters.snapshot() == before and g.params == {}
    np.testing.assert_array_equal(g.run(X)[0], unbaked)


def test_ir_only_artifact_loads(unbaked: np.ndarray, tmp_path: Path) -> None:
    path = rlx.bake.bake(MLP, _weights(), "exact", tmp_path / "ir.rlx", targets=())
    assert artifact.read(path).code == []
    g = rlx.load(path, quiet=True)
    np.testing.assert_array_equal(g.run(X)[0], unbaked)


def test_inspect_and_cli(baked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rlx.tools import rlx_bake, rlx_run

    assert rlx_bake.main(["inspect", str(baked)]) == 0
    out = capsys.readouterr().out
    assert "code sections: 1" in out and f"cpu {aot.host()[1]}" in out and "abi 1" in out
    assert "kept dense: w1: not ternary" in out and "w2" in out and "decisions:" in out
    assert rlx_run.main([str(baked), "--no-native"]) == 0
    assert "out0: shape (8, 10)" in capsys.readouterr().out
    w = tmp_path / "w.npz"
    np.savez(w, **_weights())  # type: ignore[arg-type]
    out_path = tmp_path / "generic.rlx"
    assert (
        rlx_bake.main([str(MLP), "-w", str(w), "-o", str(out_path), "--target-cpu", "x86-64", "-q"])
        == 0
    )
    (code,) = artifact.read(out_path).code
    assert code["cpu"] == "x86-64"
    assert rlx_bake.main([str(MLP), "-w", str(w), "-o", str(out_path), "--no-code", "-q"]) == 0
    assert artifact.read(out_path).code == []
    assert rlx_bake.main([str(MLP), "-o", str(out_path), "--memory", "runtime", "-q"]) == 0
    assert artifact.read(out_path).memory == "runtime"  # no --weights needed
    capsys.readouterr()
    assert rlx_bake.main([str(MLP), "-w", str(w), "-o", str(out_path), "--target-cpu", "foo"]) == 1
    err = capsys.readouterr().err  # LLVM would abort the process on an unknown CPU
    assert "rlx-bake: error: bake: unknown target CPU 'foo'" in err and "Traceback" not in err


def _object(ir: str) -> bytes:
    import llvmlite.binding as llvm

    from rlx.runtime.llvm_host import _LOCK, _initialise

    triple, cpu, features = aot.host()
    with _LOCK:
        _initialise()
        tm = llvm.Target.from_triple(triple).create_target_machine(
            cpu=cpu, features=features, codemodel="jitdefault", jit=True
        )
        mod = llvm.parse_assembly(ir)
        mod.triple = tm.triple
        return bytes(tm.emit_object(mod))


def test_unresolved_symbol_is_refused_not_fatal() -> None:
    from rlx.runtime.elf_symbols import undefined_symbols

    data = _object(
        "declare void @rlx_no_such_symbol()\n"
        "define void @main() {\n  call void @rlx_no_such_symbol()\n  ret void\n}\n"
    )
    assert undefined_symbols(data) == ["rlx_no_such_symbol"]
    with pytest.raises(aot.LinkError, match="unresolved symbol.*rlx_no_such_symbol"):
        aot.LinkedCode(data)  # MCJIT would abort the process on it
    assert undefined_symbols(b"not an object") is None
