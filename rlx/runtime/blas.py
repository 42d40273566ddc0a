"""The platform BLAS (sgemm/dgemm) for generated code.

`register()` takes the Fortran-ABI `sgemm`/`dgemm` that SciPy exports for Cython
(`scipy.linalg.cython_blas.__pyx_capi__`, i.e. SciPy's bundled OpenBLAS) and publishes their
addresses as the JIT symbols `rlx_blas_sgemm`/`rlx_blas_dgemm` (llvmlite `add_symbol`);
the matmul lowering then calls them (`rlx.lowering.rlx_to_linalg.matmul.blas_gemm`).

On by default when SciPy is installed; `RLX_BLAS=0` turns it off (the loop-nest matmul is
used). MCJIT cannot load code that references a symbol nobody published (every external of
the module, `malloc` included, is then left unresolved), so both loaders (`JitModule` and
the compile cache's `ObjectModule`) call `register()` first, and the compile-cache key
records whether BLAS was available, so cached code is never loaded where it is not.
"""

from __future__ import annotations

import ctypes
import os
import threading

SYMBOLS: dict[str, str] = {"f32": "rlx_blas_sgemm", "f64": "rlx_blas_dgemm"}
"""JIT symbol of the GEMM of each element type."""

_CAPI = {"f32": "sgemm", "f64": "dgemm"}
_LOCK = threading.Lock()
_ADDRESSES: dict[str, int] | None = None


def enabled() -> bool:
    """False when `RLX_BLAS` is 0/false/no/off; on by default."""
    return os.environ.get("RLX_BLAS", "1").strip().lower() not in ("0", "false", "no", "off")


def _capsule_pointer(capsule: object) -> int:
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return int(api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule)) or 0)


def _lookup() -> dict[str, int]:
    try:
        from scipy.linalg import cython_blas  # type: ignore[import-untyped]
    except ImportError:
        return {}
    capi = getattr(cython_blas, "__pyx_capi__", {})
    out: dict[str, int] = {}
    for dtype, name in _CAPI.items():
        if name in capi:
            addr = _capsule_pointer(capi[name])
            if addr:
                out[dtype] = addr
    return out


def register() -> dict[str, int]:
    """Publish the BLAS GEMMs to the JIT (once per process, whether or not enabled);
    {dtype: address}, empty when SciPy is missing."""
    global _ADDRESSES
    with _LOCK:
        if _ADDRESSES is None:
            import llvmlite.binding as llvm

            found = _lookup()
            for dtype, addr in found.items():
                llvm.add_symbol(SYMBOLS[dtype], addr)
            _ADDRESSES = found
        return dict(_ADDRESSES)


def available(dtype: str) -> bool:
    """True when new code may call the GEMM of `dtype` ("f32"/"f64"): enabled and found."""
    return enabled() and dtype in register()
