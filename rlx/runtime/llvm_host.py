"""Process-wide LLVM host setup shared by the JIT and the object-code loader.

The lock serialising llvmlite calls (llvmlite shares one LLVM context), native target
initialisation, host target machines, and the compiler-runtime helpers generated code may
call (bf16 truncation; the thread pool via `rlx.runtime.parallel`). It imports no xDSL, and
llvmlite only inside the functions that use it (start-up laziness: stored object code
linked by `rlx.runtime.elf_loader` never loads LLVM).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from dataclasses import dataclass
from typing import Any

from rlx.runtime import object_bundle, parallel

_LOCK = threading.RLock()
_INITIALISED = False


def _llvm() -> Any:
    """`llvmlite.binding`, imported on first use."""
    import llvmlite.binding

    return llvmlite.binding


def _initialise() -> None:
    global _INITIALISED
    if _INITIALISED:
        return
    llvm_binding = _llvm()
    llvm_binding.initialize_native_target()
    llvm_binding.initialize_native_asmprinter()
    llvm_binding.initialize_native_asmparser()
    _INITIALISED = True


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

    ensure_bf16_helpers()
    parallel.register()  # `rlx_rt.parallel_call` lowers to calls of `rlx_parallel_for`


def ensure_bf16_helpers() -> None:
    """JIT and publish `__truncsfbf2` / `__truncdfbf2` once per process."""
    global _SUPPORT_ENGINE
    with _LOCK:
        if _SUPPORT_ENGINE is None:
            _initialise()
            _SUPPORT_ENGINE = _compile_support_runtime(*host_target())


def _compile_support_runtime(cpu: str, features: str) -> Any:
    llvm_binding = _llvm()
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


def _target_machine(opt_level: int, cpu: str, features: str, jit: bool) -> Any:
    llvm_binding = _llvm()
    target = llvm_binding.Target.from_default_triple()
    return target.create_target_machine(
        cpu=cpu, features=features, opt=opt_level, codemodel="jitdefault", jit=jit
    )


def parse_for(text: str, tm: Any) -> Any:
    """LLVM IR `text` parsed and verified, with `tm`'s triple and data layout: how every
    module is prepared for `llvm_worker`'s pipeline (`JitModule`, `parallel_build`)."""
    mod = _llvm().parse_assembly(text)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return mod


HOST_TUNING = "-prefer-256-bit"
"""Appended to the host's features where it has AVX-512 (`host_target`)."""


@functools.cache
def host_target() -> tuple[str, str]:
    """The host CPU name and the feature string RLX generates its code with (queried once:
    ~0.5 ms a time; each engine gets a target machine of its own: MCJIT takes ownership).

    LLVM's host features, plus `HOST_TUNING` where AVX-512 is present: LLVM's tuning of
    Intel's AVX-512 cores (Skylake-X to Ice Lake) caps the loop and SLP vectorizers at
    256-bit vectors, which left the row kernels (softmax, norms, elementwise chains) at half
    the width of the GEMM's explicit 512-bit tiles and of onnxruntime's AVX-512 kernels
    (1 thread on an Ice Lake server: gelu chain -13 %, layer_norm -15 %, softmax -5 % with
    it; AMD's Zen 4 has no such cap). Part of the compile cache key (`cache.host_cpu`)."""
    llvm_binding = _llvm()
    with _LOCK:
        _initialise()
        cpu, features = llvm_binding.get_host_cpu_name(), llvm_binding.get_host_cpu_features()
    flat = features.flatten()
    return cpu, f"{flat},{HOST_TUNING}" if features.get("avx512f") else flat


@dataclass(frozen=True)
class Codegen:
    """How LLVM optimises a module and generates its code (`JitModule`'s settings).

    Why one value: a parallel build (`rlx.runtime.parallel_build`) optimises and generates
    the code of some parts in forked children before the `JitModule` that loads them
    exists; the children and that `JitModule` must use the same setting (one program).
    `cpu` / `features` None: the host's."""

    opt_level: int = 3
    cpu: str | None = None
    features: str | None = None
    unroll: bool = False

    def for_host(self) -> Codegen:
        """This setting with the host's CPU name and features where it names none."""
        cpu, features = host_target()
        return dataclasses.replace(
            self,
            cpu=cpu if self.cpu is None else self.cpu,
            features=features if self.features is None else self.features,
        )


class ObjectEngine:
    """Object code linked into an MCJIT engine for this host, without code generation:
    what cached code (`cache.ObjectModule`) and stored code (`aot.LinkedCode`) share.
    Keep it alive while its functions may run."""

    what = "object code"
    """How `address` names the code in its error."""

    def __init__(self, data: bytes) -> None:
        with _LOCK:
            _initialise()
            llvm_binding = _llvm()
            tm = _target_machine(0, *host_target(), jit=True)
            empty = llvm_binding.parse_assembly("")
            empty.triple = tm.triple
            self._engine = llvm_binding.create_mcjit_compiler(empty, tm)  # owns tm
            for obj in object_bundle.unpack(data):  # one object, or a parallel compile's
                self._engine.add_object_file(llvm_binding.ObjectFileRef.from_data(obj))
            self._engine.finalize_object()

    @property
    def engine(self) -> Any:
        """The MCJIT engine holding the code (`JitModule` of a parallel build uses it)."""
        return self._engine

    def address(self, name: str) -> int:
        """The entry address of function `name` (KeyError when the code has none)."""
        with _LOCK:
            addr = self._engine.get_function_address(name)
        if not addr:
            raise KeyError(f"{self.what} has no function named {name!r}")
        return int(addr)
