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
