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


def test_wrapper_ir_limits_only_small_gemms() -> None:
    """The wrapper template itself, JIT-compiled against recording stand-ins for the GEMM
    and `openblas_set_num_threads_local`: below THREADED_MACS it sets one thread, calls the
    GEMM, and restores the previous count; at or above it only calls the GEMM."""
    import llvmlite.binding as llvm

    from rlx.runtime.jit import _initialise, _target_machine

    calls: list[tuple[str, int]] = []
    set_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
    gemm_t = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 13))

    def set_local(n: int) -> int:
        calls.append(("set", n))
        return 7 if n == 1 else 1  # "previous" count

    def gemm(*_args: object) -> None:
        calls.append(("gemm", 0))

    set_cb, gemm_cb = set_t(set_local), gemm_t(gemm)
    llvm.add_symbol("test_blas_set_local", ctypes.cast(set_cb, ctypes.c_void_p).value)
    llvm.add_symbol("rlx_blas_testgemm_impl", ctypes.cast(gemm_cb, ctypes.c_void_p).value)
    ir = "declare i32 @test_blas_set_local(i32)\n" + blas._WRAPPER_IR.replace(
        "@T@", "test"
    ).replace("@THRESHOLD@", str(blas.THREADED_MACS)).replace(
        "rlx_openblas_set_num_threads_local", "test_blas_set_local"
    )
    _initialise()
    mod = llvm.parse_assembly(ir)
    mod.verify()
    tm = _target_machine(0, llvm.get_host_cpu_name(), "", True)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    wrapper = gemm_t(engine.get_function_address("rlx_blas_testgemm"))

    def run(m: int, n: int, k: int) -> list[tuple[str, int]]:
        calls.clear()
        dims = [ctypes.c_int(v) for v in (m, n, k)]
        args: list[int | None] = [None] * 13
        for i, d in zip((2, 3, 4), dims, strict=True):
            args[i] = ctypes.addressof(d)
        wrapper(*args)
        return list(calls)

    side = round(blas.THREADED_MACS ** (1 / 3))
    assert run(8, 8, 8) == [("set", 1), ("gemm", 0), ("set", 7)]
    assert run(side * 2, side, side) == [("gemm", 0)]
    assert run(blas.THREADED_MACS, 1, 1) == [("gemm", 0)]  # exactly the threshold: threaded
    assert run(blas.THREADED_MACS - 1, 1, 1)[0] == ("set", 1)
