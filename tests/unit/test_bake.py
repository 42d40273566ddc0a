"""rlx-bake: profiles, options, the artifact format (refusals) and the CLI."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import rlx.bake
from rlx.bake import BakeOptions, BakeProfile, artifact
from rlx.tools import rlx_bake

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.mlir"

ALIASES = {
    "merge": "merge", "none": "merge", "raw": "merge",
    "fold": "fold", "cleanup": "fold",
    "exact": "exact", "lossless": "exact", "default": "exact", "compute": "exact",
    "size": "size", "compact": "size", "quant": "size",
}  # fmt: skip


@pytest.mark.parametrize(("name", "canonical"), sorted(ALIASES.items()))
def test_profile_names(name: str, canonical: str) -> None:
    for spelled in (name, name.upper(), f"  {name.title()}\t"):
        assert BakeProfile.parse(spelled).value == canonical


def test_profile_unknown_lists_names() -> None:
    with pytest.raises(ValueError) as e:
        BakeProfile.parse("turbo")
    for n in ALIASES:
        assert n in str(e.value)
    assert BakeProfile.all_names() == (
        "merge", "fold", "exact", "size", "none", "raw", "cleanup", "lossless", "default",
        "compute", "compact", "quant",
    )  # fmt: skip


TABLE = {
    # profile: constant_folding, dce, simplify, skip_zero, ternary, quant, memory, dedupe, keep
    "merge": (False, False, False, False, False, False, "duplex", False, True),
    "fold": (True, True, True, False, False, False, "compact", True, False),
    "exact": (True, True, True, True, True, False, "compact", True, False),
    "size": (True, True, True, True, True, True, "compact", True, False),
}


@pytest.mark.parametrize("profile", list(TABLE))
def test_options_per_profile(profile: str) -> None:
    o = BakeOptions.from_profile(profile)
    got = (o.constant_folding, o.dce, o.simplify, o.skip_zero, o.ternary, o.quant, o.memory,
           o.dedupe, o.keep_folded_bindings)  # fmt: skip
    assert got == TABLE[profile]
    assert o.unfold and o.profile is BakeProfile(profile)


def test_default_profile_and_overrides() -> None:
    assert BakeOptions() == BakeOptions.from_profile("exact")
    o = BakeOptions.from_profile("merge").replace(quant=True, memory="both")
    assert o.quant and o.memory == "duplex" and not o.skip_zero
    with pytest.raises(ValueError, match="unknown bake option"):
        o.replace(turbo=True)
    assert o.replace(memory="graph").memory == "runtime"
    with pytest.raises(ValueError, match="memory mode"):
        o.replace(memory="turbo")


def _mlp_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"w1": (64, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
    return {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bake") / "mlp.rlx"
    return rlx.bake.bake(MLP, _mlp_weights(), "exact", out)


def test_layout_and_header(baked: Path) -> None:
    raw = baked.read_bytes()
    assert raw[:8] == b"RLXBAKE1" and struct.unpack_from("<I", raw, 8)[0] == 1
    art = artifact.read(baked)
    h = art.header
    assert h["profile"] == "exact" and h["options"]["memory"] == "compact"
    assert h["meta"]["inputs"] == [{"name": "x", "shape": [8, 64], "dtype": "f32"}]
    assert h["meta"]["outputs"][0]["shape"] == [8, 10] and h["meta"]["params_remaining"] == []
    assert {w["name"] for w in art.weights} == {"w1", "b1", "w2", "b2"}
    for w in art.weights:
        assert w["offset"] % 64 == 0 and w["encoding"] == "f32"
        mm = np.memmap(baked, np.float32, "r", offset=w["offset"], shape=tuple(w["shape"]))
        np.testing.assert_array_equal(mm, _mlp_weights()[w["name"]])
    assert "__rlx_weight.w1" in art.module_text and "dense<" not in art.module_text
    info = rlx.bake.inspect(baked)
    assert "w1" in str(info) and "x: f32[8, 64]" in str(info)


def _patched(src: Path, dst: Path, offset: int, data: bytes) -> Path:
    raw = bytearray(src.read_bytes())
    raw[offset : offset + len(data)] = data
    dst.write_bytes(bytes(raw))
    return dst


@pytest.fixture
def no_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything gets parsed or compiled."""
    import rlx.runtime.compiler as c

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("compiled a refused artifact")

    monkeypatch.setattr(c, "compile", boom)
    monkeypatch.setattr(c, "load_module", boom)


def test_refuses_bad_files(baked: Path, tmp_path: Path, no_compile: None) -> None:
    raw = baked.read_bytes()
    w = artifact.read(baked).weights[-1]
    cases = {
        "magic": (_patched(baked, tmp_path / "a.rlx", 0, b"NOTRLX!!"), "not an rlx-bake artifact"),
        "future": (_patched(baked, tmp_path / "b.rlx", 8, struct.pack("<I", 7)), "newer than"),
        "weight": (_patched(baked, tmp_path / "c.rlx", w["offset"] + 3, b"\x7f"), "checksum mismatch in weight"),
        "header": (_patched(baked, tmp_path / "d.rlx", 70, b"#"), "header checksum"),
    }  # fmt: skip
    (tmp_path / "e.rlx").write_bytes(raw[: len(raw) - 100])
    cases["truncated"] = (tmp_path / "e.rlx", "truncated")
    (tmp_path / "f.rlx").write_bytes(raw[:40])
    cases["tiny"] = (tmp_path / "f.rlx", "truncated")
    (tmp_path / "g.rlx").write_bytes(b"")
    cases["empty"] = (tmp_path / "g.rlx", "not an rlx-bake artifact")
    for label, (path, msg) in cases.items():
        with pytest.raises(ValueError, match=msg):
            rlx.bake.load(path)
        assert label
    assert rlx_bake.main(["inspect", str(tmp_path / "b.rlx")]) == 1


def test_atomic_write(baked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "m.rlx"
    out.write_bytes(b"old")

    def fail(*a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(artifact.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        rlx.bake.bake(MLP, _mlp_weights(), "fold", out)
    assert out.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["m.rlx"]


def test_callable_package() -> None:
    import rlx

    assert callable(rlx.bake) and rlx.bake.bake is not None and rlx.bake.load is not None


def test_cli_bake_inspect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.npz"
    weights = _mlp_weights()
    weights["w2"] = np.zeros_like(weights["w2"])
    np.savez(w, **weights)  # type: ignore[arg-type]
    out = tmp_path / "m.rlx"
    assert rlx_bake.main([str(MLP), "--weights", str(w), "--opt", "Lossless", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "matmuls skipped (all-zero weight): 1" in text and "ops: 12 ->" in text
    assert rlx_bake.main(["inspect", str(out)]) == 0
    assert "rlx-bake artifact v1" in capsys.readouterr().out
    assert rlx_bake.main(["--list-profiles"]) == 0
    listing = capsys.readouterr().out
    assert all(p in listing for p in ("merge", "fold", "exact", "size", "keep dense GEMM"))
    args = [str(MLP), "--weights", str(w), "--opt", "merge", "--quant", "--no-dedupe",
            "--memory", "compact", "-o", str(out), "-q"]  # fmt: skip
    assert rlx_bake.main(args) == 0
    h = artifact.read(out).header
    assert h["options"]["quant"] and h["memory"] == "compact" and h["meta"]["quant_packed"] == 2


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["--opt", "turbo"], "unknown bake profile 'turbo'"),
        (["--weights", "/nonexistent.npz"], "weight file not found"),
        (["--memory", "turbo"], "unknown memory mode"),
    ],
)
def test_cli_errors(
    tmp_path: Path, argv: list[str], msg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    w = tmp_path / "w.npz"
    np.savez(w, **_mlp_weights())  # type: ignore[arg-type]
    full = [str(MLP), "--weights", str(w), "-o", str(tmp_path / "o.rlx"), *argv]
    assert rlx_bake.main(full) == 1
    err = capsys.readouterr().err
    assert err.startswith("rlx-bake: error: ") and msg in err and "Traceback" not in err


DYN = """
func.func @main(%x: tensor<?x8xf32> {rlx.name = "x", rlx.dims = ["batch", 8]}) -> tensor<?x4xf32> {
  %w = rlx.param "w" : tensor<8x4xf32>
  %y = rlx.matmul %x, %w : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
"""


def test_dim_binding_and_default_output(tmp_path: Path) -> None:
    from rlx import interpreter as reference

    w = {"w": np.arange(32, dtype=np.float32).reshape(8, 4)}
    dyn = rlx.bake.bake(DYN, w, "exact", tmp_path / "dyn.rlx")
    assert artifact.read(dyn).header["meta"]["inputs"][0]["shape"] == [-1, 8]
    out = rlx.bake.bake(DYN, w, "exact", tmp_path / "b.rlx", dim_binding={"batch": 3})
    assert artifact.read(out).header["meta"]["inputs"][0]["shape"] == [3, 8]
    x = np.ones((3, 8), np.float32)
    (y,) = reference.run(rlx.bake.materialize(out), [x])
    np.testing.assert_array_equal(y, x @ w["w"])
    src = tmp_path / "g.mlir"
    src.write_text(DYN)
    assert rlx.bake(src, w) == tmp_path / "g.rlx"  # the package itself is callable
    with pytest.raises(ValueError, match="output= is required"):
        rlx.bake.bake(DYN, w)
    assert rlx_bake.main([str(src), "--weights", str(tmp_path / "none.npz")]) == 1
