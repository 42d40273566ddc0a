"""The platform BLAS (sgemm/dgemm) for generated code.

`register()` takes the Fortran-ABI `sgemm`/`dgemm` that SciPy exports for Cython
(`scipy.linalg.cython_blas.__pyx_capi__`, i.e. SciPy's bundled OpenBLAS) and publishes their
addresses as the JIT symbols `rlx_blas_sgemm`/`rlx_blas_dgemm` (llvmlite `add_symbol`);
the matmul lowering then calls them (`rlx.lowering.rlx_to_linalg.matmul.blas_gemm`).

Where SciPy's OpenBLAS exports `openblas_set_num_threads_local`, the published symbols are
small JIT-compiled wrappers that run GEMMs under `THREADED_MACS` multiply-adds on one
OpenBLAS thread (see `_WRAPPER_IR`).

On by default when SciPy is installed; `RLX_BLAS=0` turns it off (the loop-nest matmul is
used). MCJIT cannot load code that references a symbol nobody published (every external of
the module, `malloc` included, is then left unresolved), so both loaders (`JitModule` and
the compile cache's `ObjectModule`) call `register()` first, and the compile-cache key
records whether BLAS was available, so cached code is never loaded where it is not.
"""

from __future__ import annotations

import ctypes
import threading

from rlx.lowering.blas_abi import SYMBOLS, available, enabled, lookup
from rlx.runtime.llvm_host import _initialise, _target_machine

__all__ = ["SYMBOLS", "THREADED_MACS", "available", "enabled", "register"]

_LOCK = threading.Lock()
_ADDRESSES: dict[str, int] | None = None

THREADED_MACS = 1 << 23
"""GEMMs with fewer multiply-adds (about 0.3 ms on one core) run on one OpenBLAS thread.
Measured on the 2-core bench machine, idle: a BERT layer (seq 128, hidden 384) took 5.5 ms
at 2^23, 6.1-6.4 ms at 2^26 and 8.0 ms with every GEMM on one thread; under load, fewer
threaded calls is better (each waits for a descheduled worker)."""

_WRAPPER_IR = r"""
declare void @rlx_blas_@T@gemm_impl(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)

define void @rlx_blas_@T@gemm(ptr %ta, ptr %tb, ptr %m, ptr %n, ptr %k, ptr %al, ptr %a,
                              ptr %lda, ptr %b, ptr %ldb, ptr %be, ptr %c, ptr %ldc) {
entry:
  %m32 = load i32, ptr %m, align 4
  %n32 = load i32, ptr %n, align 4
  %k32 = load i32, ptr %k, align 4
  %m64 = sext i32 %m32 to i64
  %n64 = sext i32 %n32 to i64
  %k64 = sext i32 %k32 to i64
  %mn = mul i64 %m64, %n64
  %macs = mul i64 %mn, %k64
  %small = icmp slt i64 %macs, @THRESHOLD@
  br i1 %small, label %one, label %all
one:
  %prev = call i32 @rlx_openblas_set_num_threads_local(i32 1)
  call void @rlx_blas_@T@gemm_impl(ptr %ta, ptr %tb, ptr %m, ptr %n, ptr %k, ptr %al, ptr %a,
                                   ptr %lda, ptr %b, ptr %ldb, ptr %be, ptr %c, ptr %ldc)
  %back = call i32 @rlx_openblas_set_num_threads_local(i32 %prev)
  ret void
all:
  call void @rlx_blas_@T@gemm_impl(ptr %ta, ptr %tb, ptr %m, ptr %n, ptr %k, ptr %al, ptr %a,
                                   ptr %lda, ptr %b, ptr %ldb, ptr %be, ptr %c, ptr %ldc)
  ret void
}
"""
"""`rlx_blas_<t>gemm`: SciPy's GEMM, on one OpenBLAS thread below `THREADED_MACS`.

OpenBLAS splits every GEMM over its threads; for the many mid-sized GEMMs of a transformer
layer the hand-off costs more than it saves, and on a busy machine each call waits for a
descheduled worker (measured: a 128^3 GEMM 0.09 ms on one thread, 33 ms on two at load 9).
`openblas_set_num_threads_local` (OpenBLAS >= 0.3.27, exported by SciPy's wheels) sets the
count for the calling thread only, so the wrapper sets it around small calls and restores
it; large GEMMs keep OpenBLAS's threads (`OPENBLAS_NUM_THREADS`)."""

_ENGINES: list[object] = []


def _set_threads_local() -> int:
    """Address of SciPy's `openblas_set_num_threads_local`, or 0 if it has none."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("scipy")  # its location, without importing SciPy
    if spec is None or not spec.submodule_search_locations:
        return 0
    libs = Path(next(iter(spec.submodule_search_locations))).resolve().parent / "scipy.libs"
    for path in sorted(libs.glob("libscipy_openblas*.so*")):
        try:
            lib = ctypes.CDLL(str(path))
            return ctypes.cast(lib.openblas_set_num_threads_local, ctypes.c_void_p).value or 0
        except (OSError, AttributeError):
            continue
    return 0


def wrapper_ir() -> str:
    """The IR of the thread-limiting wrappers of every GEMM (`rlx-bake` stores its object
    code next to code that calls BLAS, so that a load needs no LLVM: `stored_gemms`)."""
    ir = "declare i32 @rlx_openblas_set_num_threads_local(i32)\n"
    for sym in SYMBOLS.values():
        t = sym.removeprefix("rlx_blas_").removesuffix("gemm")
        ir += _WRAPPER_IR.replace("@T@", t).replace("@THRESHOLD@", str(THREADED_MACS))
    return ir


_STORED: dict[str, int] = {}


def stored_gemms(wrapper_object: bytes | None) -> dict[str, int]:
    """{`rlx_blas_<t>gemm`: address} for stored code, without LLVM: the wrappers of
    `wrapper_object` (compiled from `wrapper_ir` at bake time) linked to SciPy's OpenBLAS by
    `rlx.runtime.elf_loader` where it has `openblas_set_num_threads_local`, else the GEMMs
    themselves (what `register` publishes then too). Without `wrapper_object` (an artifact
    of an older bake), the JIT-compiled wrappers of `register`. Empty without SciPy. Once
    per process."""
    from rlx.runtime import elf_loader

    if wrapper_object is None and not _STORED:
        import llvmlite.binding as llvm

        register()
        return {s: int(llvm.address_of_symbol(s) or 0) for s in SYMBOLS.values()}
    with _LOCK:
        if not _STORED:
            found = dict(lookup())
            local = _set_threads_local()
            if local and len(found) == len(SYMBOLS):
                ext = {f"{SYMBOLS[d]}_impl": a for d, a in found.items()}
                ext["rlx_openblas_set_num_threads_local"] = local
                image = elf_loader.Image(wrapper_object, ext)  # type: ignore[arg-type]
                _ENGINES.append(image)
                _STORED.update({s: image.address(s) for s in SYMBOLS.values()})
            else:
                _STORED.update({SYMBOLS[d]: a for d, a in found.items()})
        return dict(_STORED)


def _publish(found: dict[str, int]) -> None:
    """Publish `rlx_blas_<t>gemm`: the thread-limiting wrapper where SciPy's OpenBLAS has
    `openblas_set_num_threads_local`, else the GEMM itself."""
    import llvmlite.binding as llvm

    local = _set_threads_local()
    if not local:
        for dtype, addr in found.items():
            llvm.add_symbol(SYMBOLS[dtype], addr)
        return

    _initialise()
    llvm.add_symbol("rlx_openblas_set_num_threads_local", local)
    ir = "declare i32 @rlx_openblas_set_num_threads_local(i32)\n"
    for dtype, addr in found.items():
        t = SYMBOLS[dtype].removeprefix("rlx_blas_").removesuffix("gemm")
        llvm.add_symbol(f"rlx_blas_{t}gemm_impl", addr)
        ir += _WRAPPER_IR.replace("@T@", t).replace("@THRESHOLD@", str(THREADED_MACS))
    mod = llvm.parse_assembly(ir)
    mod.verify()
    tm = _target_machine(2, llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(), True)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    for dtype in found:
        llvm.add_symbol(SYMBOLS[dtype], engine.get_function_address(SYMBOLS[dtype]))
    _ENGINES.append((engine, mod))


def cache_key() -> str:
    """What of the GEMM choice compiled code depends on (part of the compile-cache key):
    BLAS availability, the mode (`gemm_mode`) and the generated GEMM's tile ISA."""
    from rlx.lowering.blas_abi import gemm_mode
    from rlx.lowering.gemm.target import isa

    return f"blas={available('f32')},{available('f64')},{gemm_mode()},{isa()}"


def register() -> dict[str, int]:
    """Publish the BLAS GEMMs to the JIT (once per process, whether or not enabled);
    {dtype: address of the GEMM}, empty when SciPy is missing."""
    global _ADDRESSES
    with _LOCK:
        if _ADDRESSES is None:
            found = dict(lookup())
            if found:
                _publish(found)
            _ADDRESSES = found
        return dict(_ADDRESSES)
