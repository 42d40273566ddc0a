"""The GEMM wrapper of `rlx.runtime.blas`: GEMMs below `THREADED_MACS` run on one OpenBLAS
thread (set thread-locally and restored), larger ones on OpenBLAS's threads; both give
NumPy's result."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
import scipy

import rlx
from rlx.runtime import blas


def _openblas() -> ctypes.CDLL:
    libs = Path(scipy.__file__).resolve().parent.parent / "scipy.libs"
    paths = sorted(libs.glob("libscipy_openblas*.so*"))
    if not paths:
        pytest.skip("this SciPy build does not bundle OpenBLAS (the wrapper is not used)")
    return ctypes.CDLL(str(paths[0]))


@pytest.mark.parametrize("m", [48, 512])  # 48^3 below THREADED_MACS, 512^3 above
def test_gemm_sizes_around_the_threshold(m: int) -> None:
    assert (m**3 < blas.THREADED_MACS) == (m == 48)
    get = _openblas().scipy_openblas_get_num_threads
    get.restype = ctypes.c_int
    before = get()
    g = rlx.Graph("main")
    g.output(g.matmul(g.input("x", (m, m)), g.param("w", (m, m))))
    compiled = rlx.compile(g)
    rng = np.random.default_rng(m)
    x, w = (rng.standard_normal((m, m)).astype(np.float32) for _ in range(2))
    compiled.set_params({"w": w})
    (y,) = compiled.run(x=x)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-4)
    assert get() == before  # the thread-local count is restored after a small GEMM


def test_wrapper_is_published_where_openblas_has_local_threads() -> None:
    _openblas()
    assert blas.register()
    assert blas._set_threads_local() != 0
    assert blas._ENGINES, "rlx_blas_sgemm should be the thread-limiting wrapper"


_STAND_INS: list[object] = []
"""ctypes callbacks registered with `llvm.add_symbol`: never freed."""


def test_wrapper_ir_runs_every_gemm_on_one_openblas_thread() -> None:
    """The wrapper template, JIT-compiled against recording stand-ins for the GEMM,
    `openblas_set_num_threads_local` and the pool's `rlx_parallel_for` (run serially here):
    below THREADED_MACS it sets one thread, calls the GEMM and restores the count; at or
    above it the pool's tasks each do so on a block of C's larger dimension, and the blocks
    (multiples of 16, at most SPLIT_TASKS) cover it exactly once."""
    import llvmlite.binding as llvm

    from rlx.runtime.jit import _initialise, _target_machine

    calls: list[tuple[str, int, int]] = []
    set_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
    gemm_t = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 13))
    task_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
    pfor_t = ctypes.CFUNCTYPE(
        None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64
    )

    def set_local(n: int) -> int:
        calls.append(("set", n, 0))
        return 7 if n == 1 else 1  # "previous" count

    def gemm(*args: int | None) -> None:
        m, n = (ctypes.c_int.from_address(args[i]).value for i in (2, 3))  # type: ignore[arg-type]
        calls.append(("gemm", m, n))

    def pfor(task: int, ctx: int, tasks: int, _max: int) -> None:
        run_task = task_t(task)
        for t in range(tasks):
            run_task(ctx, t, t + 1)

    # Test-only symbol names: `add_symbol` is process-wide and permanent, so a stand-in
    # under a real name (`rlx_blas_sgemm_impl`) would be what every later JIT module of
    # this process calls; and the callbacks stay alive for the process (`_STAND_INS`).
    cbs = (set_t(set_local), gemm_t(gemm), pfor_t(pfor))
    _STAND_INS.extend(cbs)
    for name, cb in zip(
        ("test_blas_set_local", "test_blas_sgemm_impl", "test_parallel_for"), cbs, strict=True
    ):
        llvm.add_symbol(name, ctypes.cast(cb, ctypes.c_void_p).value)
    ir = blas._wrappers_ir(["s"]).replace("rlx_blas_", "test_blas_")
    ir = ir.replace("rlx_openblas_set_num_threads_local", "test_blas_set_local")
    ir = ir.replace("rlx_parallel_for", "test_parallel_for")
    _initialise()
    mod = llvm.parse_assembly(ir)
    mod.verify()
    tm = _target_machine(0, llvm.get_host_cpu_name(), "", True)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    wrapper = gemm_t(engine.get_function_address("test_blas_sgemm"))
    no = ctypes.c_char(b"N")

    def run(m: int, n: int, k: int) -> list[tuple[str, int, int]]:
        calls.clear()
        ints = [ctypes.c_int(v) for v in (m, n, k, m, k, m)]  # m, n, k, lda, ldb, ldc
        args: list[int | None] = [ctypes.addressof(no), ctypes.addressof(no)] + [None] * 11
        for i, d in zip((2, 3, 4, 7, 9, 12), ints, strict=True):
            args[i] = ctypes.addressof(d)
        wrapper(*args)
        return list(calls)

    assert run(8, 8, 8) == [("set", 1, 0), ("gemm", 8, 8), ("set", 7, 0)]
    assert run(blas.THREADED_MACS - 1, 1, 1) == [
        ("set", 1, 0),
        ("gemm", blas.THREADED_MACS - 1, 1),
        ("set", 7, 0),
    ]
    for m, n in ((4096, 64), (64, 4096), (1000, 999)):
        k = -(-blas.THREADED_MACS // (m * n))  # at least the threshold
        got = run(m, n, k)
        gemms = [c for c in got if c[0] == "gemm"]
        sets = [c for c in got if c[0] == "set"]
        assert len(sets) == 2 * len(gemms) and all(c[1] in (1, 7) for c in sets)
        assert 1 < len(gemms) <= blas.SPLIT_TASKS
        split = 1 if m > n else 2  # the larger dimension is cut, the other stays whole
        assert all(g[3 - split] == (n if split == 1 else m) for g in gemms)
        sizes = [g[split] for g in gemms]
        assert sum(sizes) == max(m, n) and all(s % 16 == 0 for s in sizes[:-1])
