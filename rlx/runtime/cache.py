"""The compile cache: in memory (per process) and on disk (per user), keyed by everything
that determines the generated code, so a second compile of a graph costs milliseconds.

Key = sha256 of: the source (MLIR text as given, or a ModuleOp's / rlx.Graph's exact
structural text, `rlx.runtime.ir_key`: neither is parsed nor printed), the options
(`options_key`), the entry name, the rlx version plus a fingerprint of the rlx sources (size + mtime of every
.py file, so edited passes never reuse stale code), the xDSL/llvmlite versions, and the host
CPU name and features. The disk entry `<dir>/<key[:2]>/<key>.json` (the manifest) holds the
signatures of the entry and of its `@prepare` (cache_param_invariant), the
pipeline/dispatch/fusion reports, the printed input and the graph-pass output text
(`ir("input")`, `ir("rlx")`); `<key>.ll`
holds the LLVM IR handed to the JIT and, when the backend can, `<key>.o` the host object
code (loading it skips LLVM optimisation and code generation, so a disk hit costs
milliseconds). `rlx.runtime.cache_store` checks every entry before use (regular files of
the recorded sizes, one checksum over all files) and caps the directory's size
(`RLX_CACHE_MAX_MB`, least recently used entries evicted first). An entry that is
unreadable, malformed, fails its checksum or fails to load is deleted and rebuilt by the
caller, never fatal. Files are written atomically (temp file + rename).

Location: `$RLX_CACHE_DIR`, else `$XDG_CACHE_HOME/rlx`, else `~/.cache/rlx`.
`RLX_CACHE=0` (or false/off/no) disables both levels.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import rlx
from rlx.runtime import blas, cache_store
from rlx.runtime.abi import Artifact, Signature
from rlx.runtime.llvm_host import (
    _LOCK,
    ObjectEngine,
    _initialise,
    _target_machine,
    ensure_runtime_symbols,
    host_target,
)

if TYPE_CHECKING:
    from rlx.runtime.options import CompileOptions

Loader = Callable[[dict[str, Any], str, bytes | None], Any]
MEMORY_ENTRIES = 64


def enabled() -> bool:
    v = os.environ.get("RLX_CACHE")
    return v is None or v.strip().lower() not in ("0", "false", "off", "no")


def cache_dir() -> Path:
    if os.environ.get("RLX_CACHE_DIR"):
        return Path(os.environ["RLX_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rlx"


def _digest_value(v: Any) -> Any:
    """A JSON-able, deterministic stand-in for an option value (arrays and files hashed)."""
    if isinstance(v, np.ndarray) or hasattr(v, "__array__"):
        a = np.asarray(v, order="C")  # 0-d stays 0-d: its shape is part of the digest
        return {
            "array": str(a.dtype),
            "shape": list(a.shape),
            "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
        }
    if isinstance(v, bytes | bytearray):
        return {"bytes": hashlib.sha256(bytes(v)).hexdigest()}
    if isinstance(v, Path):
        return {"file": str(v), "sha256": hashlib.sha256(v.read_bytes()).hexdigest()}
    if isinstance(v, dict):
        return {str(k): _digest_value(x) for k, x in sorted(v.items())}
    if isinstance(v, list | tuple):
        return [_digest_value(x) for x in v]
    if hasattr(v, "__dataclass_fields__"):
        return {type(v).__name__: {k: _digest_value(getattr(v, k)) for k in v.__dataclass_fields__}}
    return v


def options_key(opts: CompileOptions) -> str:
    """Every option except `verbose` (which changes logging, not code)."""
    d = {k: _digest_value(v) for k, v in opts.to_dict().items() if k != "verbose"}
    return json.dumps(d, sort_keys=True, default=repr)


@functools.cache
def code_fingerprint() -> str:
    """Versions of rlx, xDSL, llvmlite and the size/mtime of every rlx source file."""
    import llvmlite
    import xdsl

    root = Path(rlx.__file__).parent
    h = hashlib.sha256(f"{rlx.__version__}|{xdsl.__version__}|{llvmlite.__version__}".encode())
    for p in sorted(root.rglob("*.py")):
        st = p.stat()
        h.update(f"{p.relative_to(root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


@functools.cache
def host_cpu() -> str:
    """The host CPU name and code-generation features (`llvm_host.host_target`), as they
    enter cache keys."""
    return "|".join(host_target())


def make_key(module_text: str, opts: CompileOptions, entry: str, backend: str) -> str:
    h = hashlib.sha256()

    # Code compiled where BLAS was available calls it: never load it where it is not.
    blas_key = blas.cache_key()
    for part in (
        module_text,
        options_key(opts),
        entry,
        backend,
        code_fingerprint(),
        host_cpu(),
        blas_key,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    disk_errors: int = 0
    """Disk entries found but ignored (corrupt, stale format, failed to load)."""


class CompileCache:
    """Memory LRU of loaded artifacts in front of the on-disk store; thread-safe."""

    def __init__(self) -> None:
        self._mem: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def clear_memory(self) -> None:
        with self._lock:
            self._mem.clear()

    def get(self, key: str, load: Loader) -> tuple[Any, str] | None:
        """(artifact, "memory" | "disk") or None. `load(meta, llvm_ir, obj)` rebuilds from disk."""
        if not enabled():
            return None
        with self._lock:
            if key in self._mem:
                self._mem.move_to_end(key)
                self.stats.memory_hits += 1
                return self._mem[key], "memory"
        art = self._read_disk(key, load)
        if art is None:
            with self._lock:
                self.stats.misses += 1
            return None
        self._remember(key, art)
        with self._lock:
            self.stats.disk_hits += 1
        return art, "disk"

    def put(
        self,
        key: str,
        artifact: Any,
        meta: dict[str, Any],
        llvm_ir: str,
        make_object: Callable[[], bytes] | None = None,
    ) -> None:
        """Remember `artifact`; write the disk entry (object code too if `make_object`),
        then evict old entries beyond `RLX_CACHE_MAX_MB` (a bad value raises ValueError)."""
        if not enabled():
            return
        limit = cache_store.max_bytes()
        self._remember(key, artifact)
        files = {".ll": llvm_ir.encode()}
        if make_object is not None:
            try:
                obj = make_object()
            except Exception:
                obj = None  # object code is an optimisation: the IR alone is enough
            if obj:
                files[".o"] = obj
        try:
            root = cache_dir()
            cache_store.write_entry(root, key, meta, files)
            cache_store.after_write(root, limit, sum(map(len, files.values())))
        except OSError:
            pass  # a read-only or full cache dir must not fail the compile

    def _remember(self, key: str, art: Any) -> None:
        with self._lock:
            self._mem[key] = art
            self._mem.move_to_end(key)
            while len(self._mem) > MEMORY_ENTRIES:
                self._mem.popitem(last=False)

    def _read_disk(self, key: str, load: Loader) -> Any:
        root = cache_dir()
        try:
            entry = cache_store.read_entry(root, key)
            if entry is None:
                return None
            meta, files = entry
            return load(meta, files[".ll"].decode(), files.get(".o"))
        except Exception:
            with self._lock:
                self.stats.disk_errors += 1
            cache_store.discard(root, key)
            return None


# ----------------------------------------------------------------------------- object code


def _llvm() -> tuple[Any, Any, Any]:
    """(llvmlite.binding, the JIT's LLVM lock, a host target machine for MCJIT)."""
    import llvmlite.binding as llvm

    with _LOCK:
        _initialise()
        tm = _target_machine(3, *host_target(), jit=True)
    return llvm, _LOCK, tm


def emit_object(llvm_ir: str) -> bytes:
    """Host object code of already-optimised LLVM IR (for `ObjectModule`)."""
    llvm, lock, tm = _llvm()
    with lock:
        return bytes(tm.emit_object(llvm.parse_assembly(llvm_ir)))


class ObjectModule(ObjectEngine):
    """Code loaded from cached object bytes into MCJIT: the `JitModule` interface
    (`address`, `llvm_ir`, `asm`) without re-running LLVM. Keep it alive while calling."""

    what = "cached object code"

    def __init__(self, obj: bytes, llvm_ir: str) -> None:
        blas.register()  # cached code may call the BLAS symbols: publish them first
        super().__init__(obj)
        self.llvm_ir = llvm_ir

    @property
    def asm(self) -> str:
        llvm, lock, _ = _llvm()
        with lock:
            tm = _target_machine(3, *host_target(), jit=False)
            return tm.emit_assembly(llvm.parse_assembly(self.llvm_ir))


def load_artifact(meta: dict[str, Any], ir: str, obj: bytes | None) -> Artifact:
    """Rebuild an artifact from a disk entry: object code if it loads, else JIT the IR."""

    ensure_runtime_symbols()  # bf16 helpers the object code may call
    sig = Signature.from_json(meta["signature"])
    prep = None if meta.get("prepare") is None else Signature.from_json(meta["prepare"])
    engine = None
    if obj is not None:
        try:
            engine = ObjectModule(obj, ir)
            engine.address(sig.entry)
        except Exception:
            engine = None  # fall back to JIT-compiling the IR
    if engine is None:
        from rlx.runtime.jit import JitModule  # start-up laziness: the JIT imports xDSL

        engine = JitModule(ir)
    prep_address = 0 if prep is None else engine.address(prep.entry)
    return Artifact(sig, engine, engine.address(sig.entry), list(meta["report"]),
                    {k: str(meta[k]) for k in ("rlx", "input") if meta.get(k)}, ir,
                    prep, prep_address, dict(meta.get("reports", {})))  # fmt: skip


CACHE = CompileCache()
"""The process-wide cache used by `rlx.compile`."""
