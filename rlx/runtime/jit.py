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
from collections.abc import Callable, Sequence
from typing import Any

import llvmlite.binding as llvm_binding
from xdsl.dialects.builtin import (
    ModuleOp,
)

from rlx.lowering.llvm_ir import to_llvm_ir
from rlx.runtime import blas, counters, llvm_worker, object_bundle
from rlx.runtime.llvm_host import (
    _LOCK,
    ObjectEngine,
    _initialise,
    _target_machine,
    ensure_runtime_symbols,
    host_target,
    parse_for,
)

__all__ = ["JitModule", "UnresolvedSymbolError", "compile_module", "ensure_runtime_symbols",
           "to_llvm_ir"]  # fmt: skip


class UnresolvedSymbolError(ValueError):
    """The module calls functions it declares but nobody defines (MCJIT would leave each
    call at address 0: a segfault at run time, found by tools/fuzz with a lowered module
    declaring `func.func private @k1(...)` without a body)."""


def _check_resolved(mod: Any, provided: frozenset[str] = frozenset()) -> None:
    """UnresolvedSymbolError naming the declared, non-intrinsic functions of `mod` that
    neither the process (libc, libm), the JIT's published symbols nor the modules linked
    in later (`provided`) define."""
    missing = [
        f.name
        for f in mod.functions
        if f.is_declaration
        and not f.name.startswith("llvm.")
        and f.name not in provided
        and not llvm_binding.address_of_symbol(f.name)
    ]
    if missing:
        raise UnresolvedSymbolError(
            f"the module calls undefined function(s) {', '.join('@' + n for n in missing[:8])}: "
            "a declaration without a body must name a function the runtime provides"
        )


# ----------------------------------------------------------------------------------------
# JIT


Part = str | tuple[bytes, bytes]
"""A part of the program `JitModule` adds (`more`): LLVM IR text (optimised here), or
(optimised bitcode, its object code) generated elsewhere with the same pipeline and
target (the object is loaded as is; the bitcode gives the IR text)."""


class JitModule:
    """A compiled module: O3-optimised for the host and loaded by MCJIT.

    ``address(name)`` gives the entry address of a function, ``cfunc`` a ctypes callable;
    ``llvm_ir`` is the optimised IR and ``asm`` the host assembly (both computed lazily).
    The object owns the execution engine: keep it alive while its functions may run.

    ``more`` (`rlx.runtime.parallel_build`): called once this module is optimised, it
    returns the other parts of the program (`Part`), each loaded as an object of its own
    beside this module's (IR text or bitcode is compiled here first; see `_link_parts`);
    ``provided`` names the functions they define.
    """

    def __init__(
        self,
        llvm_ir: str,
        *,
        opt_level: int = 3,
        cpu: str | None = None,
        features: str | None = None,
        unroll: bool = False,
        provided: frozenset[str] = frozenset(),
        more: Callable[[], Sequence[Part]] | None = None,
    ) -> None:

        counters.bump("llvm")
        blas.register()  # generated matmuls may call the BLAS symbols: publish them first
        with _LOCK:
            _initialise()
            host_cpu, host_features = host_target()
            self.cpu = cpu if cpu is not None else host_cpu
            self.features = features if features is not None else host_features
            self.opt_level = opt_level
            ensure_runtime_symbols()
            tm = _target_machine(opt_level, self.cpu, self.features, jit=True)
            mod = parse_for(llvm_ir, tm)
            _check_resolved(mod, provided)
            if opt_level > 0:  # maybe in a helper process: llvmlite's pipeline leaks
                mod = llvm_worker.optimise(mod, tm, opt_level, self.cpu, self.features, unroll)
            if more is None:
                engine = llvm_binding.create_mcjit_compiler(mod, tm)
                objects: list[bytes] = []
                # MCJIT hands over the object code it generates: the compile cache stores
                # it, so a cold compile runs LLVM's code generator once, not twice.
                engine.set_object_cache(notify_func=lambda _m, buf: objects.append(bytes(buf)))
                engine.finalize_object()
                self._module = mod
                code = objects[0] if len(objects) == 1 else None
            else:
                self._module, code, engine = self._link_parts(mod, tm, more, unroll)
        self.object_code: bytes | None = code
        """Host object code as MCJIT generated it, or the parts' objects of a parallel
        build (`object_bundle`): what the cache stores and loads."""
        self._engine = engine
        self._tm = tm
        self._ir: str | None = None
        self._asm: str | None = None
        self._addresses: dict[str, int] = {}
        self._lock = threading.Lock()

    def _link_parts(
        self, mod: Any, tm: Any, more: Callable[[], Sequence[Part]], unroll: bool
    ) -> tuple[Any, bytes, Any]:
        """A parallel build: (the whole program's IR, the bundle of its objects, the engine).

        This part's object is generated before the other parts are waited for (they are
        still being compiled in the children); a part whose child failed is optimised and
        compiled here. Every part is one object; one engine loads them all. The IR text is
        taken before code generation, which rewrites the module it compiles."""
        text_mod = mod.clone()
        objects = [bytes(tm.emit_object(mod))]
        for part in more():
            if isinstance(part, tuple):  # (optimised bitcode, its object code)
                text_mod.link_in(self._parse_bitcode(part[0], mod))
                objects.append(part[1])
                continue
            other = parse_for(part, tm)  # IR text, not optimised yet
            if self.opt_level > 0:
                other = llvm_worker.optimise(
                    other, tm, self.opt_level, self.cpu, self.features, unroll
                )
            text_mod.link_in(other.clone())
            objects.append(bytes(tm.emit_object(other)))
        _check_resolved(text_mod)
        bundle = object_bundle.pack(objects)
        return text_mod, bundle, ObjectEngine(bundle).engine  # loads what the cache stores

    @staticmethod
    def _parse_bitcode(data: bytes, like: Any) -> Any:
        """An optimised module from bitcode, with `like`'s triple and data layout."""
        other = llvm_binding.parse_bitcode(data)
        other.triple, other.data_layout = like.triple, like.data_layout
        return other

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
