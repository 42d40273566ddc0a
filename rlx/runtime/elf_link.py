"""Linking stored object code into this process: `LinkedCode` (re-exported by
`rlx.runtime.aot`).

By default on x86-64 Linux the object is linked by `rlx.runtime.elf_loader`, its undefined
symbols resolved by `runtime_symbols` from the runtime pieces the artifact stores next to
it (thread pool, BLAS wrappers, bf16 helpers, linked once per process) and the process's
libraries: no LLVM is loaded. Elsewhere, with `RLX_AOT_LOADER=mcjit`, or for an object the
loader refuses as unsupported (said once on stderr), an MCJIT engine links it after
`prepare_runtime` published the JIT-compiled pieces.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from rlx import host_cpu
from rlx.runtime import blas, elf_loader, parallel
from rlx.runtime.elf_symbols import undefined_symbols
from rlx.runtime.llvm_host import _LOCK, ObjectEngine, _initialise, _llvm, ensure_bf16_helpers

__all__ = ["LOADER_ENV", "LinkError", "LinkedCode", "prepare_runtime", "runtime_symbols",
           "use_elf_loader"]  # fmt: skip


def _providers() -> tuple[tuple[str, Callable[[], Any]], ...]:
    return (("rlx_blas_", blas.register), ("rlx_parallel_for", parallel.register),
            ("__trunc", ensure_bf16_helpers))  # fmt: skip


def prepare_runtime(symbols: list[str] | None = None) -> None:
    """Publish to LLVM what code linked by MCJIT may call: the BLAS GEMMs, the thread pool,
    the bf16 helpers (only those `symbols` need, when given), once per process. With
    `symbols`, raises LinkError naming any this process cannot resolve (MCJIT would abort
    the process on it). Stored code linked by `rlx.runtime.elf_loader` (the default on
    x86-64 Linux) needs none of it: `runtime_symbols` links the stored runtime pieces."""
    llvm = _llvm()
    _initialise()
    for prefix, register in _providers():
        if symbols is None or any(x.startswith(prefix) for x in symbols):
            register()
    missing = [x for x in symbols or () if not llvm.address_of_symbol(x)]
    if missing:
        raise LinkError(f"unresolved symbol(s) {', '.join(sorted(missing)[:8])}")


_BF16: dict[str, int] = {}
_BF16_IMAGES: list[Any] = []


def _bf16_symbols(obj: bytes | None) -> dict[str, int]:
    """The bf16 helpers: the stored object linked once per process, else JIT-compiled."""
    with _LOCK:
        if not _BF16:
            if obj is not None:
                image = elf_loader.Image(obj, {})
                _BF16_IMAGES.append(image)
                _BF16.update(image.symbols)
            else:
                ensure_bf16_helpers()
                llvm = _llvm()
                _BF16.update(
                    {n: llvm.address_of_symbol(n) for n in ("__truncsfbf2", "__truncdfbf2")}
                )
        return dict(_BF16)


def runtime_symbols(names: list[str], runtime: Mapping[str, bytes]) -> dict[str, int]:
    """{name: address} of the undefined symbols `names` of stored code, without LLVM where
    the artifact stores the runtime pieces (`runtime`: name -> object code): the thread pool
    (the process's one pool), the BLAS GEMMs (only when called), the bf16 helpers, then
    what the process's libraries export (libc, libm). LinkError for a symbol nobody has."""
    out: dict[str, int] = {}
    rest = []
    for x in names:
        if x == "rlx_parallel_for":
            out[x] = parallel.stored_entry(runtime.get("pool"))
        elif x.startswith("rlx_blas_"):
            out.update(blas.stored_gemms(runtime.get("blas"), runtime.get("pool")))
        elif x.startswith("__trunc") and x.endswith("bf2"):
            out.update(_bf16_symbols(runtime.get("bf16")))
        else:
            rest.append(x)
    out.update(elf_loader.process_symbols(rest))
    missing = sorted(x for x in names if not out.get(x))
    if missing:
        raise LinkError(f"unresolved symbol(s) {', '.join(missing[:8])}")
    return out


class LinkError(RuntimeError):
    """Stored object code needs a symbol this process does not provide."""


LOADER_ENV = "RLX_AOT_LOADER"
"""`mcjit`: link stored code with an MCJIT engine (LLVM) instead of `rlx.runtime.elf_loader`."""

_SAID: set[str] = set()


def _say_once(msg: str) -> None:
    if msg not in _SAID:
        _SAID.add(msg)
        sys.stderr.write(f"rlx.aot: {msg}\n")


def use_elf_loader() -> bool:
    """Whether stored code is linked without LLVM here: x86-64 Linux, and not
    `RLX_AOT_LOADER=mcjit`."""
    return host_cpu.is_x86_64_linux() and os.environ.get(LOADER_ENV, "").strip().lower() != "mcjit"


class LinkedCode:
    """Stored object code linked into this process (the `JitModule` interface: `address`,
    `llvm_ir`, `asm`): by `rlx.runtime.elf_loader` (no LLVM), or by an MCJIT engine where
    that loader does not apply (not x86-64 Linux, `RLX_AOT_LOADER=mcjit`, or an object
    using something it refuses: said once on stderr). Keep it alive while its functions
    may run."""

    what = "stored object code"

    llvm_ir = (
        "; LLVM IR is not stored in artifacts: rlx.load(path, allow_native=False) compiles it\n"
    )

    def __init__(
        self, data: bytes | memoryview, runtime: Mapping[str, bytes] | None = None
    ) -> None:
        data = bytes(data)
        imports = undefined_symbols(data)  # ELF: only what the code imports
        self.loader = "mcjit"
        self._code: Any = None
        if imports is not None and use_elf_loader():
            ext = runtime_symbols(imports, runtime or {})
            try:
                self._code = elf_loader.Image(data, ext)
                self.loader = "elf"
            except elf_loader.Unsupported as e:
                _say_once(f"stored code linked with MCJIT instead ({e})")
        if self._code is None:
            prepare_runtime(imports)
            self._code = ObjectEngine(data)

    def address(self, name: str) -> int:
        """The entry address of function `name` (KeyError when the code has none)."""
        if self.loader == "mcjit":
            return self._code.address(name)
        addr = self._code.symbols.get(name)
        if not addr:
            raise KeyError(f"{self.what} has no function named {name!r}")
        return int(addr)

    @property
    def asm(self) -> str:
        return "; assembly is not available for stored object code (load with allow_native=False)"
