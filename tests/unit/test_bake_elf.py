"""Stored code linked without LLVM (issue 16): a fresh process loads baked models that call
the thread pool, OpenBLAS (and, with RLX_BLAS=0, the generated GEMM), the bf16 helpers and
an error status, with `llvmlite` never imported, nothing compiled, and outputs equal to the
reference interpreter's; `--target-cpu x86-64-v3` stores its feature set and links here."""

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
from rlx import host_cpu, interpreter
from rlx.bake import artifact
from rlx.runtime import aot, counters

pytestmark = pytest.mark.skipif(not host_cpu.is_x86_64_linux(), reason="x86-64 Linux loader")

T = "tensor<{}xf32>"
MODELS = {
    # 262144 elements: the elementwise kernel runs on the thread pool
    "pool": (f"""func.func @main(%x: {T.format("256x1024")} {{rlx.name = "x"}}) -> {T.format("256x1024")} {{
  %0 = rlx.exp %x : ({T.format("256x1024")}) -> {T.format("256x1024")}
  %1 = rlx.add %0, %x : ({T.format("256x1024")}, {T.format("256x1024")}) -> {T.format("256x1024")}
  func.return %1 : {T.format("256x1024")}
}}""", {}, [(256, 1024)]),
    "matmul": (f"""func.func @main(%x: {T.format("64x256")} {{rlx.name = "x"}}) -> {T.format("64x128")} {{
  %w = rlx.param "w" : {T.format("256x128")}
  %0 = rlx.matmul %x, %w : ({T.format("64x256")}, {T.format("256x128")}) -> {T.format("64x128")}
  func.return %0 : {T.format("64x128")}
}}""", {"w": (256, 128)}, [(64, 256)]),
    "gather": ("""func.func @main(%x: tensor<2x8xf32> {rlx.name = "x"}, %i: tensor<3xi64> {rlx.name = "i"}) -> tensor<2x3xf32> {
  %0 = rlx.gather %x, %i {axis = 1 : i64} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}""", {}, [(2, 8), "i"]),
    "bf16": (f"""func.func @main(%x: {T.format("4x8")} {{rlx.name = "x"}}) -> {T.format("4x8")} {{
  %0 = rlx.cast %x : ({T.format("4x8")}) -> tensor<4x8xbf16>
  %1 = rlx.cast %0 : (tensor<4x8xbf16>) -> {T.format("4x8")}
  func.return %1 : {T.format("4x8")}
}}""", {}, [(4, 8)]),
}  # fmt: skip

CHILD = """
import json, sys
import numpy as np
import rlx
from rlx.runtime import counters, parallel
out = {"runs": []}
for path, inputs, save in json.loads(sys.argv[1]):
    g = rlx.load(path)
    args = [np.load(p) for p in inputs]
    try:
        ys = g.run(*args)
    except IndexError as e:
        out["runs"].append({"error": str(e), "loader": g._art.jit.loader})
        continue
    np.save(save, ys[0])
    out["runs"].append({"loader": g._art.jit.loader})
out["counts"] = counters.snapshot()
out["llvmlite"] = "llvmlite" in sys.modules
out["xdsl"] = "xdsl" in sys.modules
out["threads"] = parallel.get_num_threads()
print(json.dumps(out))
"""


def _inputs(name: str, tmp: Path, bad_index: bool = False) -> list[Path]:
    rng = np.random.default_rng(3)
    paths = []
    for k, spec in enumerate(MODELS[name][2]):
        if spec == "i":
            a = np.array([0, 9 if bad_index else 7, 2], np.int64)
        else:
            a = rng.standard_normal(spec).astype(np.float32)
        paths.append(tmp / f"{name}{'_bad' if bad_index else ''}_in{k}.npy")
        np.save(paths[-1], a)
    return paths


def _bake(name: str, tmp: Path, **kw: object) -> Path:
    text, shapes, _ = MODELS[name]
    rng = np.random.default_rng(5)
    w = {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}
    tag = "_".join(str(v) for v in kw.values())
    return rlx.bake.bake(text, w, "exact", tmp / f"{name}{tag}.rlx", **kw)  # type: ignore[arg-type]


def _child(jobs: list[tuple[str, list[str], str]], env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(jobs)],
                         env={**os.environ, **env}, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "warning" not in out.stderr.lower() and "mcjit" not in out.stderr.lower(), out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _reference(path: Path, inputs: list[Path]) -> np.ndarray:
    return interpreter.run(rlx.bake.materialize(path), [np.load(p) for p in inputs])[0]


def _check(results: dict, cases: list[tuple[Path, list[Path], Path]]) -> None:
    assert results["counts"] == {"pipeline": 0, "llvm": 0}
    assert results["llvmlite"] is False and results["xdsl"] is False
    for (path, inputs, save), r in zip(cases, results["runs"], strict=True):
        assert r["loader"] == "elf"
        if "bad" in inputs[-1].name:  # out of range: raised from the stored code's status
            assert "index" in r.get("error", "").lower(), r
            continue
        assert "error" not in r, r
        ref = _reference(path, inputs)
        np.testing.assert_allclose(np.load(save), ref, rtol=2e-5, atol=1e-5 * np.abs(ref).max())


def test_fresh_process_runs_stored_code_without_llvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLX_BLAS", "1")  # the matmul calls OpenBLAS
    cases = []
    for name in ("pool", "matmul", "gather"):
        path = _bake(name, tmp_path)
        cases.append((path, _inputs(name, tmp_path), tmp_path / f"{name}.npy"))
    cases.append((cases[-1][0], _inputs("gather", tmp_path, bad_index=True), tmp_path / "bad.npy"))
    art = artifact.read(cases[0][0])
    assert [r["name"] for r in art.code[0]["runtime"]] == ["pool"]
    # the BLAS wrappers split large GEMMs over RLX's pool: code calling BLAS stores both
    assert [r["name"] for r in artifact.read(cases[1][0]).code[0]["runtime"]] == ["pool", "blas"]
    jobs = [(str(p), [str(i) for i in ins], str(s)) for p, ins, s in cases]
    res = _child(jobs, {"RLX_NUM_THREADS": "2", "RLX_CACHE_DIR": str(tmp_path / "cache")})
    assert res["threads"] == 2  # the stored pool took RLX_NUM_THREADS
    _check(res, cases)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.*"))


def test_generated_gemm_and_bf16_for_a_level_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RLX_BLAS=0 (the generated GEMM on the pool) and x86-64-v3 code, whose bf16
    conversions call the stored `__truncsfbf2` helpers (no native bf16 on that level)."""
    monkeypatch.setenv("RLX_BLAS", "0")
    mm = _bake("matmul", tmp_path)
    bf = _bake("bf16", tmp_path, targets=("x86-64-v3",))
    (code,) = artifact.read(bf).code
    assert code["cpu"] == "x86-64-v3" and "+avx2" in code["features"]
    assert "+avx512f" not in code["features"]
    assert [r["name"] for r in code.get("runtime", [])] == ["bf16"]
    cases = [(mm, _inputs("matmul", tmp_path), tmp_path / "mm.npy"),
             (bf, _inputs("bf16", tmp_path), tmp_path / "bf.npy")]  # fmt: skip
    jobs = [(str(p), [str(i) for i in ins], str(s)) for p, ins, s in cases]
    _check(_child(jobs, {"RLX_NUM_THREADS": "1", "RLX_BLAS": "0"}), cases)


def test_level_cpu_keys_and_unmapped_names() -> None:
    key = aot.target_key("x86-64-v4")
    assert key.cpu == "x86-64-v4" and {"avx512f", "avx2", "sse4.2", "cx16"} <= set(key.needs())
    here = aot.host_key()
    lacking = aot.CodeKey(**{**key.to_json(), "features": key.features + ",+amx-tile"})
    assert (lacking.mismatch(here) is None) == bool((host_cpu.features() or {}).get("amx-tile"))
    with pytest.raises(ValueError, match="feature set is not known.*x86-64-v3"):
        aot.target_key("skylake")


def test_malformed_stored_object_is_refused(tmp_path: Path) -> None:
    """A code section with a valid checksum that is not a well-formed object (a bad bake
    or an edited file) is refused before anything is mapped or run."""
    src = _bake("gather", tmp_path)
    art = artifact.read(src)
    (c,) = art.code
    strip = {k: v for k, v in c.items() if k not in ("offset", "nbytes", "sha256", "runtime")}
    header = {k: v for k, v in art.header.items() if k not in ("code", "weights")}
    bad = tmp_path / "bad.rlx"
    artifact.write(bad, header, art.module_text, [], code=[(strip, art.code_bytes(c)[:200])])
    before = counters.snapshot()
    with pytest.raises(
        artifact.ArtifactError, match="malformed object code: section headers past the end"
    ):
        rlx.load(bad)
    assert counters.snapshot() == before


ONE_POOL = """
import os, sys
import numpy as np
import rlx
from rlx.runtime import elf_loader, parallel
x = np.ones((256, 1024), np.float32)
g = rlx.load(sys.argv[1])
g.run(x)
stored = parallel._STATE["address"]
tasks = len(os.listdir("/proc/self/task"))
j = rlx.compile(sys.argv[2])  # JIT-compiled code calls the same pool
np.testing.assert_array_equal(j.run(x)[0], g.run(x)[0])
assert parallel._STATE["address"] == stored
assert isinstance(parallel._STATE["owner"], elf_loader.Image)
assert len(os.listdir("/proc/self/task")) == tasks, "a second set of workers"
print("ok")
"""


def test_one_pool_per_process(tmp_path: Path) -> None:
    """The stored pool, once linked, is the process's pool: JIT code reuses it."""
    path = _bake("pool", tmp_path)
    src = tmp_path / "pool.mlir"
    src.write_text(MODELS["pool"][0])
    env = {**os.environ, "RLX_NUM_THREADS": "2", "RLX_CACHE": "0"}
    out = subprocess.run([sys.executable, "-c", ONE_POOL, str(path), str(src)], env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_unsupported_object_falls_back_to_mcjit(capfd: pytest.CaptureFixture[str]) -> None:
    """An object the ELF loader refuses (here: a COMDAT group) is linked by MCJIT, said once."""
    import llvmlite.binding as llvm

    from rlx.runtime.llvm_host import _LOCK, _initialise

    ir = "$f = comdat any\ndefine i64 @f() comdat {\n  ret i64 42\n}\n"
    with _LOCK:
        _initialise()
        tm = llvm.Target.from_default_triple().create_target_machine(
            codemodel="jitdefault", jit=True
        )
        mod = llvm.parse_assembly(ir)
        mod.triple = tm.triple
        data = bytes(tm.emit_object(mod))
    codes = [aot.LinkedCode(data) for _ in range(2)]
    assert [c.loader for c in codes] == ["mcjit", "mcjit"]
    import ctypes

    assert ctypes.CFUNCTYPE(ctypes.c_int64)(codes[0].address("f"))() == 42
    err = capfd.readouterr().err
    assert err.count("linked with MCJIT instead (section") == 1 and "COMDAT" in err


def test_flipped_runtime_object_byte_is_refused(tmp_path: Path) -> None:
    path = _bake("pool", tmp_path)
    (code,) = artifact.read(path).code
    (piece,) = code["runtime"]
    raw = bytearray(path.read_bytes())
    raw[piece["offset"] + piece["nbytes"] // 2] ^= 0x10
    bad = tmp_path / "flip.rlx"
    bad.write_bytes(bytes(raw))
    for verify in (True, False):  # checked even without verify, like the code
        with pytest.raises(
            artifact.ArtifactError, match="checksum mismatch in runtime object 'pool'"
        ):
            rlx.load(bad, verify=verify)
