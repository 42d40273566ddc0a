"""The BLAS ABI that generated code calls: JIT symbol names of the GEMMs and whether the
platform has them (SciPy's Fortran-ABI `sgemm`/`dgemm`, `scipy.linalg.cython_blas`).

The lowering decides from `available` whether to emit BLAS calls; the runtime
(`rlx.runtime.blas.register`) publishes the symbols before code that calls them is loaded.
"""

from __future__ import annotations

import ctypes
import functools
import os

SYMBOLS: dict[str, str] = {"f32": "rlx_blas_sgemm", "f64": "rlx_blas_dgemm"}
"""JIT symbol of the GEMM of each element type."""

_CAPI = {"f32": "sgemm", "f64": "dgemm"}


def enabled() -> bool:
    """False when `RLX_BLAS` is 0/false/no/off; on by default."""
    return os.environ.get("RLX_BLAS", "1").strip().lower() not in ("0", "false", "no", "off")


def gemm_mode() -> str:
    """Which GEMM a matmul prefers: "blas" (`RLX_BLAS=1`: OpenBLAS wherever it applies),
    "generated" (`RLX_BLAS=0`: never OpenBLAS) or "auto" (unset: the faster one per shape
    class, `rlx.lowering.rlx_to_linalg.matmul.prefer_blas`)."""
    raw = os.environ.get("RLX_BLAS", "").strip().lower()
    if not raw:
        return "auto"
    return "generated" if raw in ("0", "false", "no", "off") else "blas"


def _capsule_pointer(capsule: object) -> int:
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return int(api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule)) or 0)


def _lookup_direct() -> dict[str, int]:
    """The Fortran GEMMs `cython_blas` wraps, straight from SciPy's bundled OpenBLAS
    (`scipy_sgemm_`, the same ABI), without importing scipy.linalg (about 0.2 s): linking
    stored object code (rlx.runtime.aot) stays fast. Empty when SciPy has no such library."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return {}
    libs = Path(next(iter(spec.submodule_search_locations))).resolve().parent / "scipy.libs"
    for path in sorted(libs.glob("libscipy_openblas*.so*")):
        try:
            lib = ctypes.CDLL(str(path))
            found = {d: ctypes.cast(getattr(lib, f"scipy_{n}_"), ctypes.c_void_p).value or 0
                     for d, n in _CAPI.items()}  # fmt: skip
        except (OSError, AttributeError):
            continue
        if all(found.values()):
            return found
    return {}


@functools.cache
def lookup() -> dict[str, int]:
    """{dtype: address of SciPy's GEMM}, empty when SciPy is missing (looked up once)."""
    direct = _lookup_direct()
    if direct:
        return direct
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


def available(dtype: str) -> bool:
    """True when new code may call the GEMM of `dtype` ("f32"/"f64"): enabled and found."""
    return enabled() and dtype in lookup()
