"""The checked disk cache (`rlx.runtime.cache_store`): tampered, truncated or non-regular
entries are discarded and rebuilt, never loaded; a size cap with LRU eviction; stale
temporary files are removed; a bad `RLX_CACHE_MAX_MB` is a ValueError naming it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rlx
from rlx.runtime import cache, cache_store

GRAPH = """func.func @main(%x: tensor<{n}xf32>, %y: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %s = rlx.sub %x, %y : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  %e = rlx.exp %s : (tensor<{n}xf32>) -> tensor<{n}xf32>
  func.return %e : tensor<{n}xf32>
}}
"""


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for k in ("RLX_CACHE", "RLX_CACHE_MAX_MB"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path / "cache"))
    cache.CACHE.clear_memory()
    cache.CACHE.stats = cache.CacheStats()
    return tmp_path / "cache"


def entry_files(root: Path, suffix: str) -> list[Path]:
    return sorted(p for p in root.rglob(f"*{suffix}") if not p.name.startswith("."))


def check_rebuilt(n: int = 8) -> None:
    """A compile after tampering misses, counts a disk error, and computes the right thing."""
    cache.CACHE.clear_memory()
    g = rlx.compile(GRAPH.format(n=n))
    assert not g.cache_hit
    assert cache.CACHE.stats.disk_errors == 1
    x = np.linspace(-1, 1, n, dtype=np.float32)
    y = np.full(n, 0.25, np.float32)
    np.testing.assert_allclose(g.run(x, y)[0], np.exp(x - y), rtol=1e-6)
    cache.CACHE.clear_memory()
    assert rlx.compile(GRAPH.format(n=n)).cache_hit  # the rebuilt entry is good


def edit_manifest(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    (path,) = entry_files(root, ".json")
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["signature"].__setitem__("arena_bytes", 1 << 40),
        lambda d: d["signature"]["args"][-2].__setitem__("shape", [1 << 20]),
        lambda d: d["signature"]["args"].reverse(),
        lambda d: d["files"].__setitem__(".ll", 1 << 40),
        lambda d: d.__setitem__("format", 2),
    ],
    ids=["arena-size", "output-shape", "argument-order", "file-size", "format"],
)
def test_tampered_manifest_is_rebuilt(fresh_cache: Path, change) -> None:
    rlx.compile(GRAPH.format(n=8))
    edit_manifest(fresh_cache, change)
    check_rebuilt()


def test_ll_symlinked_to_dev_zero_is_not_read(fresh_cache: Path) -> None:
    rlx.compile(GRAPH.format(n=8))
    (ll,) = entry_files(fresh_cache, ".ll")
    ll.unlink()
    ll.symlink_to("/dev/zero")
    start = time.perf_counter()
    check_rebuilt()
    assert time.perf_counter() - start < 60
    assert not ll.is_symlink()


def test_truncated_object_code_is_rebuilt(fresh_cache: Path) -> None:
    rlx.compile(GRAPH.format(n=8))
    (obj,) = entry_files(fresh_cache, ".o")
    data = obj.read_bytes()
    obj.write_bytes(data[: len(data) // 2])
    check_rebuilt()


def test_flipped_byte_in_object_code_is_rebuilt(fresh_cache: Path) -> None:
    rlx.compile(GRAPH.format(n=8))
    (obj,) = entry_files(fresh_cache, ".o")
    data = bytearray(obj.read_bytes())
    data[len(data) // 2] ^= 0xFF
    obj.write_bytes(bytes(data))
    check_rebuilt()


def test_fifo_manifest_does_not_block(fresh_cache: Path) -> None:
    rlx.compile(GRAPH.format(n=8))
    (manifest,) = entry_files(fresh_cache, ".json")
    manifest.unlink()
    os.mkfifo(manifest)
    check_rebuilt()


def test_read_regular_refuses_devices_and_wrong_sizes(tmp_path: Path) -> None:
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    with pytest.raises(cache_store.CorruptEntry, match="cannot open"):
        cache_store.read_regular(link)
    with pytest.raises(cache_store.CorruptEntry, match="not a regular file"):
        cache_store.read_regular(Path("/dev/zero"))
    f = tmp_path / "f"
    f.write_bytes(b"12345")
    with pytest.raises(cache_store.CorruptEntry, match="5 bytes, the manifest says 4"):
        cache_store.read_regular(f, 4)
    assert cache_store.read_regular(f, 5) == b"12345"


def entry_keys(root: Path) -> set[str]:
    return {p.name.split(".")[0] for p in entry_files(root, ".json")}


def test_size_cap_evicts_least_recently_used(fresh_cache: Path, monkeypatch) -> None:
    rlx.compile(GRAPH.format(n=1))
    (first,) = entry_keys(fresh_cache)
    one_entry = sum(p.stat().st_size for p in fresh_cache.rglob("*") if p.is_file())
    # room for a bit more than two entries of this size
    monkeypatch.setenv("RLX_CACHE_MAX_MB", str(2.5 * one_entry / (1 << 20)))
    rlx.compile(GRAPH.format(n=2))
    time.sleep(0.02)
    cache.CACHE.clear_memory()
    assert rlx.compile(GRAPH.format(n=1)).cache_hit  # refreshes the first entry
    second = entry_keys(fresh_cache) - {first}
    time.sleep(0.02)
    rlx.compile(GRAPH.format(n=3))
    keys = entry_keys(fresh_cache)
    assert len(keys) == 2 and first in keys and not (second & keys)
    assert {p.name.split(".")[0] for p in entry_files(fresh_cache, ".ll")} == keys  # no orphans


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", "1e99"])
def test_bad_max_mb_names_the_variable(monkeypatch, value: str) -> None:
    monkeypatch.setenv("RLX_CACHE_MAX_MB", value)
    with pytest.raises(ValueError, match=r"RLX_CACHE_MAX_MB must be a positive number of MiB"):
        rlx.compile(GRAPH.format(n=5))


def test_default_and_fractional_cap(monkeypatch) -> None:
    assert cache_store.max_bytes() == cache_store.DEFAULT_MAX_MB << 20
    monkeypatch.setenv("RLX_CACHE_MAX_MB", "0.5")
    assert cache_store.max_bytes() == 1 << 19


def test_stale_temporary_files_are_removed(fresh_cache: Path) -> None:
    sub = fresh_cache / "ab"
    sub.mkdir(parents=True)
    dead = sub / ".abc.o.999999999.1.tmp"  # no such pid
    old = sub / f".abd.o.{os.getppid()}.1.tmp"
    live = sub / f".abe.o.{os.getpid()}.1.tmp"  # being written by this process
    for p in (dead, old, live):
        p.write_bytes(b"x" * 100)
    long_ago = time.time() - 2 * cache_store.STALE_TMP_SECONDS
    os.utime(old, (long_ago, long_ago))
    rlx.compile(GRAPH.format(n=4))
    assert not dead.exists() and not old.exists() and live.exists()


def test_directory_is_scanned_only_near_the_cap_or_when_stale(
    fresh_cache: Path, monkeypatch
) -> None:
    scans: list[Path] = []
    real = cache_store.enforce_limit

    def counting(root: Path, limit: int) -> int:
        scans.append(root)
        return real(root, limit)

    monkeypatch.setattr(cache_store, "enforce_limit", counting)
    for n in range(6, 10):
        rlx.compile(GRAPH.format(n=n))
    assert len(scans) == 1  # the first write of this process scans, the others add up
    monkeypatch.setattr(cache_store, "RESCAN_SECONDS", 0.0)
    rlx.compile(GRAPH.format(n=10))
    assert len(scans) == 2  # a stale estimate is refreshed by a scan
    one_entry = sum(p.stat().st_size for p in fresh_cache.rglob("*") if p.is_file()) / 5
    monkeypatch.setattr(cache_store, "RESCAN_SECONDS", 1e9)
    monkeypatch.setenv("RLX_CACHE_MAX_MB", str(5.5 * one_entry / (1 << 20)))
    rlx.compile(GRAPH.format(n=11))
    assert len(scans) == 3  # near the cap: scanned and evicted
    assert len(entry_keys(fresh_cache)) == 5
