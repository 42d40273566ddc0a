"""The platform BLAS (sgemm/dgemm) for generated code.

`register()` takes the Fortran-ABI `sgemm`/`dgemm` that SciPy exports for Cython
(`scipy.linalg.cython_blas.__pyx_capi__`, i.e. SciPy's bundled OpenBLAS) and publishes their
addresses as the JIT symbols `rlx_blas_sgemm`/`rlx_blas_dgemm` (llvmlite `add_symbol`);
the matmul lowering then calls them (`rlx.lowering.rlx_to_linalg.matmul.blas_gemm`).

Where SciPy's OpenBLAS exports `openblas_set_num_threads_local`, the published symbols are
small JIT-compiled wrappers (`_WRAPPER_IR`) that run every GEMM on one OpenBLAS thread and
split those of at least `THREADED_MACS` multiply-adds over RLX's own pool: one pool, no
OpenBLAS threads competing with it.

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
from rlx.runtime import parallel
from rlx.runtime.llvm_host import _initialise, _target_machine, host_target

__all__ = ["SYMBOLS", "THREADED_MACS", "available", "enabled", "register"]

_LOCK = threading.Lock()
_ADDRESSES: dict[str, int] | None = None

THREADED_MACS = 1 << 23
"""GEMMs with fewer multiply-adds (about 0.3 ms on one core) run whole on the calling
thread; larger ones are split over RLX's pool (`_WRAPPER_IR`). Measured on the 2-core
bench machine with OpenBLAS's threads (before the split): a BERT layer (seq 128, hidden
384) took 5.5 ms at 2^23, 6.1-6.4 ms at 2^26 and 8.0 ms with every GEMM on one thread."""

SPLIT_TASKS = 8
"""Most pool tasks one large GEMM is split into (each packs its own slice of the split
operand and all of the other one; 8 keeps that duplicated packing small and balances two
or four threads, one of them possibly descheduled)."""

SPLIT_MIN = 64
"""Fewest rows (columns) of C per task."""

_WRAPPER_IR = r"""
%ctx = type { [13 x ptr], i64, i64, i1 }

declare void @rlx_blas_@T@gemm_impl(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)

define internal i64 @rlx_blas_@T@_ld(ptr %p) {
  %v = load i32, ptr %p, align 4
  %w = sext i32 %v to i64
  ret i64 %w
}

define internal i1 @rlx_blas_@T@_plain(ptr %flag) {
  %c = load i8, ptr %flag, align 1
  %up = icmp eq i8 %c, 78
  %lo = icmp eq i8 %c, 110
  %r = or i1 %up, %lo
  ret i1 %r
}

define internal void @rlx_blas_@T@gemm_task(ptr %cx, i64 %begin, i64 %end) {
entry:
  %cnt = alloca i32, align 4
  %prev = call i32 @rlx_openblas_set_num_threads_local(i32 1)
  %args = getelementptr %ctx, ptr %cx, i32 0, i32 0
  %ga = getelementptr [13 x ptr], ptr %args, i64 0, i64 0
  %ta = load ptr, ptr %ga
  %gb = getelementptr [13 x ptr], ptr %args, i64 0, i64 1
  %tb = load ptr, ptr %gb
  %gm = getelementptr [13 x ptr], ptr %args, i64 0, i64 2
  %m = load ptr, ptr %gm
  %gn = getelementptr [13 x ptr], ptr %args, i64 0, i64 3
  %n = load ptr, ptr %gn
  %gk = getelementptr [13 x ptr], ptr %args, i64 0, i64 4
  %k = load ptr, ptr %gk
  %gal = getelementptr [13 x ptr], ptr %args, i64 0, i64 5
  %al = load ptr, ptr %gal
  %gA = getelementptr [13 x ptr], ptr %args, i64 0, i64 6
  %a = load ptr, ptr %gA
  %glda = getelementptr [13 x ptr], ptr %args, i64 0, i64 7
  %lda = load ptr, ptr %glda
  %gB = getelementptr [13 x ptr], ptr %args, i64 0, i64 8
  %b = load ptr, ptr %gB
  %gldb = getelementptr [13 x ptr], ptr %args, i64 0, i64 9
  %ldb = load ptr, ptr %gldb
  %gbe = getelementptr [13 x ptr], ptr %args, i64 0, i64 10
  %be = load ptr, ptr %gbe
  %gC = getelementptr [13 x ptr], ptr %args, i64 0, i64 11
  %c = load ptr, ptr %gC
  %gldc = getelementptr [13 x ptr], ptr %args, i64 0, i64 12
  %ldc = load ptr, ptr %gldc
  %gch = getelementptr %ctx, ptr %cx, i32 0, i32 1
  %chunk = load i64, ptr %gch
  %gto = getelementptr %ctx, ptr %cx, i32 0, i32 2
  %total = load i64, ptr %gto
  %gby = getelementptr %ctx, ptr %cx, i32 0, i32 3
  %by_m = load i1, ptr %gby
  %lda64 = call i64 @rlx_blas_@T@_ld(ptr %lda)
  %ldb64 = call i64 @rlx_blas_@T@_ld(ptr %ldb)
  %ldc64 = call i64 @rlx_blas_@T@_ld(ptr %ldc)
  %pa = call i1 @rlx_blas_@T@_plain(ptr %ta)
  %pb = call i1 @rlx_blas_@T@_plain(ptr %tb)
  %sa = select i1 %pa, i64 1, i64 %lda64
  %sb = select i1 %pb, i64 %ldb64, i64 1
  br label %loop
loop:
  %t = phi i64 [ %begin, %entry ], [ %t1, %body ]
  %more = icmp slt i64 %t, %end
  br i1 %more, label %body, label %exit
body:
  %j0 = mul i64 %t, %chunk
  %left = sub i64 %total, %j0
  %short = icmp slt i64 %left, %chunk
  %len = select i1 %short, i64 %left, i64 %chunk
  %len32 = trunc i64 %len to i32
  store i32 %len32, ptr %cnt, align 4
  %mp = select i1 %by_m, ptr %cnt, ptr %m
  %np = select i1 %by_m, ptr %n, ptr %cnt
  %oa = mul i64 %j0, %sa
  %a1 = getelementptr @E@, ptr %a, i64 %oa
  %ap = select i1 %by_m, ptr %a1, ptr %a
  %ob = mul i64 %j0, %sb
  %b1 = getelementptr @E@, ptr %b, i64 %ob
  %bp = select i1 %by_m, ptr %b, ptr %b1
  %ocn = mul i64 %j0, %ldc64
  %oc = select i1 %by_m, i64 %j0, i64 %ocn
  %cp = getelementptr @E@, ptr %c, i64 %oc
  call void @rlx_blas_@T@gemm_impl(ptr %ta, ptr %tb, ptr %mp, ptr %np, ptr %k, ptr %al, ptr %ap,
                                   ptr %lda, ptr %bp, ptr %ldb, ptr %be, ptr %cp, ptr %ldc)
  %t1 = add i64 %t, 1
  br label %loop
exit:
  %back = call i32 @rlx_openblas_set_num_threads_local(i32 %prev)
  ret void
}

define void @rlx_blas_@T@gemm(ptr %ta, ptr %tb, ptr %m, ptr %n, ptr %k, ptr %al, ptr %a,
                              ptr %lda, ptr %b, ptr %ldb, ptr %be, ptr %c, ptr %ldc) {
entry:
  %m64 = call i64 @rlx_blas_@T@_ld(ptr %m)
  %n64 = call i64 @rlx_blas_@T@_ld(ptr %n)
  %k64 = call i64 @rlx_blas_@T@_ld(ptr %k)
  %mn = mul i64 %m64, %n64
  %macs = mul i64 %mn, %k64
  %small = icmp slt i64 %macs, @THRESHOLD@
  br i1 %small, label %one, label %split
one:
  %prev = call i32 @rlx_openblas_set_num_threads_local(i32 1)
  call void @rlx_blas_@T@gemm_impl(ptr %ta, ptr %tb, ptr %m, ptr %n, ptr %k, ptr %al, ptr %a,
                                   ptr %lda, ptr %b, ptr %ldb, ptr %be, ptr %c, ptr %ldc)
  %back = call i32 @rlx_openblas_set_num_threads_local(i32 %prev)
  ret void
split:
  ; split the larger of (Fortran) M and N: the other operand is re-packed by every task
  %by_m = icmp sgt i64 %m64, %n64
  %total = select i1 %by_m, i64 %m64, i64 %n64
  %most0 = sdiv i64 %total, @MIN@
  %few = icmp slt i64 %most0, 1
  %most1 = select i1 %few, i64 1, i64 %most0
  %many = icmp sgt i64 %most1, @TASKS@
  %tasks0 = select i1 %many, i64 @TASKS@, i64 %most1
  %up = add i64 %total, %tasks0
  %up1 = sub i64 %up, 1
  %chunk0 = sdiv i64 %up1, %tasks0
  %chunk1 = add i64 %chunk0, 15
  %chunk = and i64 %chunk1, -16
  %up2 = add i64 %total, %chunk
  %up3 = sub i64 %up2, 1
  %tasks = sdiv i64 %up3, %chunk
  %cx = alloca %ctx, align 8
  %args = getelementptr %ctx, ptr %cx, i32 0, i32 0
  @STORES@
  %gch = getelementptr %ctx, ptr %cx, i32 0, i32 1
  store i64 %chunk, ptr %gch
  %gto = getelementptr %ctx, ptr %cx, i32 0, i32 2
  store i64 %total, ptr %gto
  %gby = getelementptr %ctx, ptr %cx, i32 0, i32 3
  store i1 %by_m, ptr %gby
  call void @rlx_parallel_for(ptr @rlx_blas_@T@gemm_task, ptr %cx, i64 %tasks, i64 %tasks)
  ret void
}
"""
"""`rlx_blas_<t>gemm`: SciPy's GEMM on one OpenBLAS thread, split over RLX's pool.

OpenBLAS's own threads would compete with RLX's pool (two pools on the same cores, each
waiting for the other's descheduled workers under load: a 128^3 GEMM took 0.09 ms on
one thread, 33 ms on two at load 9). So every call runs with one OpenBLAS thread
(`openblas_set_num_threads_local`, OpenBLAS >= 0.3.27, exported by SciPy's wheels: the
calling thread only, restored after the call), and a GEMM of at least `THREADED_MACS`
multiply-adds is cut along the larger of C's dimensions into at most `SPLIT_TASKS` blocks
of at least `SPLIT_MIN` (multiples of 16) that `rlx_parallel_for` runs on RLX's pool. A
call from inside a pool task (attention heads, convolution batches) finds the pool busy
and runs its blocks on its own thread: never more threads than the pool has."""

_STORES = "\n  ".join(
    f"%s{i} = getelementptr [13 x ptr], ptr %args, i64 0, i64 {i}\n  store ptr %{a}, ptr %s{i}"
    for i, a in enumerate(
        ("ta", "tb", "m", "n", "k", "al", "a", "lda", "b", "ldb", "be", "c", "ldc")
    )
)

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


def _wrappers_ir(kinds: list[str]) -> str:
    """The IR of the wrappers of the GEMMs `kinds` ("s", "d"): `_WRAPPER_IR` filled in."""
    ir = "declare i32 @rlx_openblas_set_num_threads_local(i32)\n"
    ir += "declare void @rlx_parallel_for(ptr, ptr, i64, i64)\n"
    for t in kinds:
        subst = {"@T@": t, "@THRESHOLD@": str(THREADED_MACS), "@TASKS@": str(SPLIT_TASKS),
                 "@MIN@": str(SPLIT_MIN), "@E@": "float" if t == "s" else "double",
                 "@STORES@": _STORES}  # fmt: skip
        text = _WRAPPER_IR
        for k, v in subst.items():
            text = text.replace(k, v)
        ir += text.replace("%ctx", f"%ctx_{t}")
    return ir


def _kind(symbol: str) -> str:
    return symbol.removeprefix("rlx_blas_").removesuffix("gemm")


def wrapper_ir() -> str:
    """The IR of the wrappers of every GEMM (`rlx-bake` stores its object code next to code
    that calls BLAS, so that a load needs no LLVM: `stored_gemms`)."""
    return _wrappers_ir([_kind(sym) for sym in SYMBOLS.values()])


_STORED: dict[str, int] = {}


def stored_gemms(wrapper_object: bytes | None, pool_object: bytes | None = None) -> dict[str, int]:
    """{`rlx_blas_<t>gemm`: address} for stored code, without LLVM: the wrappers of
    `wrapper_object` (compiled from `wrapper_ir` at bake time) linked to SciPy's OpenBLAS by
    `rlx.runtime.elf_loader` where it has `openblas_set_num_threads_local`, else the GEMMs
    themselves (what `register` publishes then too). Without `wrapper_object` (an artifact
    of an older bake), the JIT-compiled wrappers of `register`. Empty without SciPy. Once
    per process. The wrappers split large GEMMs over the process's pool
    (`parallel.stored_entry(pool_object)`: `pool_object` is the artifact's stored pool)."""
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
                ext["rlx_parallel_for"] = parallel.stored_entry(pool_object)
                image = elf_loader.Image(wrapper_object, ext)  # type: ignore[arg-type]
                _ENGINES.append(image)
                _STORED.update({s: image.address(s) for s in SYMBOLS.values()})
            else:
                _STORED.update({SYMBOLS[d]: a for d, a in found.items()})
        return dict(_STORED)


def _publish(found: dict[str, int]) -> None:
    """Publish `rlx_blas_<t>gemm`: the one-pool wrapper where SciPy's OpenBLAS has
    `openblas_set_num_threads_local`, else the GEMM itself."""
    import llvmlite.binding as llvm

    local = _set_threads_local()
    if not local:
        for dtype, addr in found.items():
            llvm.add_symbol(SYMBOLS[dtype], addr)
        return

    _initialise()
    parallel.register()  # the wrapper splits large GEMMs with `rlx_parallel_for`
    llvm.add_symbol("rlx_openblas_set_num_threads_local", local)
    for dtype, addr in found.items():
        llvm.add_symbol(f"{SYMBOLS[dtype]}_impl", addr)
    ir = _wrappers_ir([_kind(SYMBOLS[d]) for d in found])
    mod = llvm.parse_assembly(ir)
    mod.verify()
    tm = _target_machine(2, *host_target(), True)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    for dtype in found:
        llvm.add_symbol(SYMBOLS[dtype], engine.get_function_address(SYMBOLS[dtype]))
    _ENGINES.append((engine, mod))


def cache_key() -> str:
    """What of the GEMM choice compiled code depends on (part of the compile-cache key):
    BLAS availability, the mode (`gemm_mode`), the generated GEMM's tile ISA and its
    minimum task count (`RLX_GEMM_TASKS`), whether it may read A in place
    (`RLX_GEMM_DIRECT_A`), whether 3x3 convs may take Winograd (`RLX_CONV_WINOGRAD`)."""
    from rlx.env import winograd_enabled
    from rlx.lowering.blas_abi import gemm_mode
    from rlx.lowering.gemm.target import direct_a, isa, min_tasks

    return (f"blas={available('f32')},{available('f64')},{gemm_mode()},{isa()},t{min_tasks()}"
            f",da{int(direct_a())},wg{int(winograd_enabled())}")  # fmt: skip


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
