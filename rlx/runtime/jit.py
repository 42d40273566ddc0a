"""LLVM IR text (`rlx.lowering.llvm_ir.to_llvm_ir`) -> O3-optimised native code (llvmlite
MCJIT).

``JitModule`` parses and verifies the IR, optimises it with the new pass manager at O3 for
the host CPU (name and features, loop and SLP vectorisation on) and JITs it with MCJIT.
Compiled functions only touch the buffers they are given (and malloc/free), so they can be
called from several threads at once; compilation itself is serialised by a process-wide
lock (llvmlite shares one LLVM context).

Calling convention of functions lowered by ``convert-func-to-llvm``: every memref argument
or result is one pointer (``ctypes.c_void_p``; pass ``ndarray.ctypes.data``: the address of
the element at all-zero indices, 64-byte aligned for public functions), ``index``/``i64``
are ``c_int64``, ``i32`` ``c_int32``, ``i8`` ``c_int8``, ``i1`` ``c_bool``, ``f32``
``c_float``, ``f64`` ``c_double``. ``f16``/``bf16`` scalars are not ctypes-callable (pass
them in memrefs).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm_binding
from xdsl.dialects.builtin import (
    ModuleOp,
)

from rlx.lowering.llvm_ir import to_llvm_ir
from rlx.runtime import blas, parallel
from rlx.runtime.llvm_host import _initialise, _target_machine

__all__ = ["JitModule", "compile_module", "ensure_runtime_symbols", "to_llvm_ir"]


# ----------------------------------------------------------------------------------------
# JIT


_LOCK = threading.RLock()


_SUPPORT_IR = r"""
define bfloat @__truncsfbf2(float %x) nounwind {
  %b = bitcast float %x to i32
  %hi = lshr i32 %b, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %rounded = add i32 %b, %bias
  %rne = lshr i32 %rounded, 16
  %quiet = or i32 %hi, 64
  %isnan = fcmp uno float %x, 0.0
  %h = select i1 %isnan, i32 %quiet, i32 %rne
  %t = trunc i32 %h to i16
  %f = bitcast i16 %t to bfloat
  ret bfloat %f
}

define bfloat @__truncdfbf2(double %d) nounwind {
  %r = fptrunc double %d to float
  %back = fpext float %r to double
  %ad = call double @llvm.fabs.f64(double %d)
  %ab = call double @llvm.fabs.f64(double %back)
  %away = fcmp ogt double %ab, %ad
  %bits = bitcast float %r to i32
  %dec = sub i32 %bits, 1
  %tz = select i1 %away, i32 %dec, i32 %bits
  %inexact = fcmp one double %back, %d
  %odd = or i32 %tz, 1
  %ro = select i1 %inexact, i32 %odd, i32 %tz
  %f = bitcast i32 %ro to float
  %res = call bfloat @__truncsfbf2(float %f)
  ret bfloat %res
}

declare double @llvm.fabs.f64(double)
"""
"""Compiler-runtime helpers LLVM calls for bf16 truncation on hosts without native bf16
conversions (libgcc < 13 lacks them): round-to-nearest-even, NaN kept quiet; f64 goes
through a round-to-odd f32 so that it is rounded only once."""

_SUPPORT_ENGINE: Any = None


def ensure_runtime_symbols() -> None:
    """JIT the compiler-runtime helpers once per process and publish their addresses.

    ``JitModule`` calls this itself; code that loads object files compiled from our IR into
    its own MCJIT engine must call it first (bf16 truncations call ``__truncsfbf2``; parallel
    kernels call ``rlx_parallel_for``, see ``rlx.runtime.parallel``).
    """
    global _SUPPORT_ENGINE

    with _LOCK:
        if _SUPPORT_ENGINE is None:
            _initialise()
            cpu = llvm_binding.get_host_cpu_name()
            features = llvm_binding.get_host_cpu_features().flatten()
            _SUPPORT_ENGINE = _compile_support_runtime(cpu, features)
    parallel.register()  # `rlx_rt.parallel_call` lowers to calls of `rlx_parallel_for`


def _compile_support_runtime(cpu: str, features: str) -> Any:
    mod = llvm_binding.parse_assembly(_SUPPORT_IR)
    mod.verify()
    tm = _target_machine(2, cpu, features, jit=True)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    engine = llvm_binding.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    for name in ("__truncsfbf2", "__truncdfbf2"):
        llvm_binding.add_symbol(name, engine.get_function_address(name))
    return engine


class JitModule:
    """A compiled module: O3-optimised for the host and loaded by MCJIT.

    ``address(name)`` gives the entry address of a function, ``cfunc`` a ctypes callable;
    ``llvm_ir`` is the optimised IR and ``asm`` the host assembly (both computed lazily).
    The object owns the execution engine: keep it alive while its functions may run.
    """

    def __init__(
        self,
        llvm_ir: str,
        *,
        opt_level: int = 3,
        cpu: str | None = None,
        features: str | None = None,
        unroll: bool = False,
    ) -> None:

        blas.register()  # generated matmuls may call the BLAS symbols: publish them first
        with _LOCK:
            _initialise()
            self.cpu = cpu if cpu is not None else llvm_binding.get_host_cpu_name()
            self.features = (
                features if features is not None else llvm_binding.get_host_cpu_features().flatten()
            )
            self.opt_level = opt_level
            ensure_runtime_symbols()
            mod = llvm_binding.parse_assembly(llvm_ir)
            mod.verify()
            tm = _target_machine(opt_level, self.cpu, self.features, jit=True)
            mod.triple = tm.triple
            mod.data_layout = str(tm.target_data)
            if opt_level > 0:
                pto = llvm_binding.create_pipeline_tuning_options(speed_level=opt_level)
                pto.loop_vectorization = opt_level >= 2
                pto.slp_vectorization = opt_level >= 2
                pto.loop_interleaving = opt_level >= 2
                pto.loop_unrolling = unroll and opt_level >= 2
                pb = llvm_binding.create_pass_builder(tm, pto)
                pb.getModulePassManager().run(mod, pb)
            engine = llvm_binding.create_mcjit_compiler(mod, tm)
            objects: list[bytes] = []
            # MCJIT hands over the object code it generates: the compile cache stores it,
            # so a cold compile runs LLVM's code generator once, not twice.
            engine.set_object_cache(notify_func=lambda _m, buf: objects.append(bytes(buf)))
            engine.finalize_object()
        self.object_code: bytes | None = objects[0] if len(objects) == 1 else None
        """Host object code of the module as MCJIT generated it (loadable by the cache)."""
        self._module = mod
        self._engine = engine
        self._tm = tm
        self._ir: str | None = None
        self._asm: str | None = None
        self._addresses: dict[str, int] = {}
        self._lock = threading.Lock()

    def address(self, name: str) -> int:
        """Entry address of function ``name``; KeyError if it is not defined."""
        addr = self._addresses.get(name)
        if addr is not None:
            return addr
        with self._lock, _LOCK:
            addr = self._engine.get_function_address(name)
        if not addr:
            raise KeyError(f"JitModule: no function named {name!r}")
        self._addresses[name] = addr
        return addr

    def global_address(self, name: str) -> int:
        """Address of global variable ``name``; KeyError if it is not defined."""
        with self._lock, _LOCK:
            addr = self._engine.get_global_value_address(name)
        if not addr:
            raise KeyError(f"JitModule: no global named {name!r}")
        return addr

    def cfunc(self, name: str, restype: Any, *argtypes: Any) -> Callable[..., Any]:
        """ctypes callable for function ``name`` (keeps this module alive)."""
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))
        fn._rlx_jit_module = self  # pyright: ignore[reportFunctionMemberAccess]
        return fn

    @property
    def llvm_ir(self) -> str:
        """The optimised LLVM IR."""
        if self._ir is None:
            with self._lock, _LOCK:
                self._ir = str(self._module)
        return self._ir

    @property
    def asm(self) -> str:
        """Host assembly of the optimised module (compiled again, without the JIT)."""
        if self._asm is None:
            text = self.llvm_ir
            with self._lock, _LOCK:
                tm = _target_machine(self.opt_level, self.cpu, self.features, jit=False)
                mod = llvm_binding.parse_assembly(text)
                self._asm = tm.emit_assembly(mod)
        return self._asm


def compile_module(module: ModuleOp, *, opt_level: int = 3) -> JitModule:
    """JIT a module already lowered to the llvm dialect."""
    return JitModule(to_llvm_ir(module), opt_level=opt_level)
