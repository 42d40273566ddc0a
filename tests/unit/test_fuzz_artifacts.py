"""Corrupt `.rlx` artifacts and compile-cache entries, byte range by byte range: a flipped
bit or a truncation anywhere that is executed, mapped or parsed (preamble, header,
module text, object code, runtime objects, weights) is refused before anything runs
(`ArtifactError`; a cache entry is discarded and rebuilt); a flip in zero padding loads
and computes the same values. Covers every region the header lists plus the padding
between them, at the first, middle and last byte, with low and high bits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlx
import rlx.bake
from rlx.bake import artifact
from rlx.bake.artifact import ArtifactError
from rlx.runtime import cache

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.mlir"
X = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
BITS = (0x01, 0x80)


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("RLX_CACHE", raising=False)
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path / "cache"))
    cache.CACHE.clear_memory()
    cache.CACHE.stats = cache.CacheStats()
    return tmp_path / "cache"


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shapes = {"w1": (64, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
    return {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    path = rlx.bake.bake(MLP, _weights(), "exact", tmp_path_factory.mktemp("fz") / "m.rlx")
    return path, rlx.load(path).run(X)[0]


def regions(path: Path) -> list[tuple[str, int, int, bool]]:
    """(label, start, end, checked) of every byte range of the file, padding included."""
    art = artifact.read(path)
    h, size = art.header, art.size
    hlen, base = artifact.PREAMBLE.unpack_from(path.read_bytes())[3:5]
    out = [("preamble", 0, artifact.PREAMBLE_SIZE, True),
           ("header", artifact.PREAMBLE_SIZE, artifact.PREAMBLE_SIZE + hlen, True),
           ("header padding", artifact.PREAMBLE_SIZE + hlen, base, False)]  # fmt: skip
    spans = [("module", h["module"])]
    for i, c in enumerate(h.get("code", [])):
        spans.append((f"code {i}", c))
        spans += [(f"runtime {r['name']}", r) for r in c.get("runtime", [])]
    spans += [(f"weight {w['name']}", w) for w in h["weights"]]
    spans = sorted({s["offset"]: (n, s) for n, s in spans}.values(), key=lambda t: t[1]["offset"])
    pos = base
    for name, s in spans:
        o, n = s["offset"], s["nbytes"]
        if o > pos:
            out.append((f"padding before {name}", pos, o, False))
        out.append((name, o, o + n, True))
        pos = max(pos, o + n)
    if size > pos:
        out.append(("trailing padding", pos, size, False))
    assert {r[0] for r in out} >= {"module", "code 0", "weight w1"}, out
    return [r for r in out if r[2] > r[1]]


def _mutants(path: Path) -> list[tuple[str, bytes, bool]]:
    """(what, file bytes, must be refused)."""
    raw = path.read_bytes()
    out = []
    for label, a, b, checked in regions(path):
        for at in sorted({a, (a + b) // 2, b - 1}):
            for bit in BITS:
                data = bytearray(raw)
                data[at] ^= bit
                out.append((f"{label}: byte {at} ^ {bit:#x}", bytes(data), checked))
        if checked:
            out.append((f"{label}: truncated at {b - 1}", raw[: b - 1], True))
    return out


def test_regions_cover_the_file(baked: tuple[Path, np.ndarray]) -> None:
    path, _ = baked
    rs = regions(path)
    assert rs[0][1] == 0 and rs[-1][2] == path.stat().st_size
    assert all(x[2] == y[1] for x, y in zip(rs, rs[1:], strict=False)), rs


def test_every_checked_byte_is_refused_padding_is_harmless(
    baked: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    path, want = baked
    bad = tmp_path / "bad.rlx"
    for what, data, refused in _mutants(path):
        bad.write_bytes(data)
        if refused:
            with pytest.raises(ArtifactError, match="bad.rlx"):
                rlx.load(bad)
            continue
        np.testing.assert_array_equal(rlx.load(bad).run(X)[0], want, err_msg=what)


def test_without_verify_only_weights_go_unchecked(
    baked: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    """`verify=False` skips the weight checksums (docs/artifact.md), never the module's,
    the code's or the runtime objects'."""
    path, _ = baked
    bad = tmp_path / "bad.rlx"
    for label, a, b, checked in regions(path):
        if not checked or label.startswith("weight"):
            continue
        data = bytearray(path.read_bytes())
        data[(a + b) // 2] ^= 0x01
        bad.write_bytes(bytes(data))
        with pytest.raises(ArtifactError):
            rlx.load(bad, verify=False)


GRAPH = """func.func @main(%x: tensor<16xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  %e = rlx.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %g = rlx.gather %e, %i : (tensor<16xf32>, tensor<4xi64>) -> tensor<4xf32>
  func.return %g : tensor<4xf32>
}
"""


def test_corrupt_cache_entries_are_rebuilt(fresh_cache: Path) -> None:
    """Every file of a disk entry (manifest, LLVM IR, object code), flipped at its first,
    middle and last byte or truncated: the next compile discards it and rebuilds."""
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    i = np.array([0, 15, -1, 3])
    rlx.compile(GRAPH)
    files = sorted(p for p in fresh_cache.rglob("*") if p.is_file() and not p.name.startswith("."))
    assert {p.suffix for p in files} == {".json", ".ll", ".o"}
    good = {p: p.read_bytes() for p in files}
    for p, raw in good.items():
        cases = [raw[: len(raw) - 1], raw[: len(raw) // 2]]
        for at in (0, len(raw) // 2, len(raw) - 1):
            data = bytearray(raw)
            data[at] ^= 0x04
            cases.append(bytes(data))
        for data in cases:
            for q, r in good.items():
                q.write_bytes(r)
            p.write_bytes(data)
            cache.CACHE.clear_memory()
            before = cache.CACHE.stats.disk_errors
            g = rlx.compile(GRAPH)
            assert not g.cache_hit and cache.CACHE.stats.disk_errors == before + 1, p.name
            np.testing.assert_allclose(g.run(x, i)[0], np.exp(x)[i], rtol=1e-6)
            with pytest.raises(IndexError, match="index 16 is out of range"):
                g.run(x, np.array([0, 16, 0, 0]))
