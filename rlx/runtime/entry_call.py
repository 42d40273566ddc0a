"""Python callables for a compiled entry function, at any argument count.

The lowered entry takes one pointer per input, prepared value, param, output, status record
and the arena (bare-pointer convention). `ctypes` caps a foreign function type at 1024
arguments, so a graph with more buffers (a model whose >1000 initializers stay separate
params) is called through a trampoline instead: `void rlx_call(void **args)` loads each
pointer from one array and calls the entry. The trampoline is a few instructions of LLVM
IR, JIT-compiled once per entry address in this process: the compiled code, the compile
cache and `.rlx` artifacts are unchanged.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

CTYPES_MAX_ARGS = 1024
"""ctypes refuses function types with more arguments than this."""


def entry_caller(address: int, n: int) -> Callable[..., Any]:
    """A callable taking `n` pointers (ints) and calling the function at `address`."""
    if n <= CTYPES_MAX_ARGS:
        fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n))(address)
        fn.argtypes = [ctypes.c_void_p] * n
        return fn
    return _trampoline(address, n)


@functools.lru_cache(maxsize=64)
def _trampoline(address: int, n: int) -> _Trampoline:
    """One trampoline per entry address and arity in this process (every CompiledGraph
    of one cached artifact shares it)."""
    return _Trampoline(address, n)


def trampoline_ir(address: int, n: int) -> str:
    """LLVM IR of `void rlx_call(ptr %args)`: `args[0..n)` passed to the function at
    `address` (opaque pointers, as llvmlite's LLVM prints them)."""
    body = [
        line
        for i in range(n)
        for line in (
            f"  %p{i} = getelementptr inbounds ptr, ptr %args, i64 {i}",
            f"  %a{i} = load ptr, ptr %p{i}, align 8",
        )
    ]
    args = ", ".join(f"ptr %a{i}" for i in range(n))
    return "\n".join(
        [
            "define void @rlx_call(ptr %args) {",
            "entry:",
            *body,
            f"  %f = inttoptr i64 {address} to ptr",
            f"  call void %f({args})",
            "  ret void",
            "}",
            "",
        ]
    )


class _Trampoline:
    """Calls an entry with more than `CTYPES_MAX_ARGS` pointers through one pointer array."""

    def __init__(self, address: int, n: int) -> None:
        from rlx.runtime.jit import JitModule

        self._n = n
        self._array = ctypes.c_void_p * n
        self._jit = JitModule(trampoline_ir(address, n), opt_level=1)  # owns the code
        call = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self._jit.address("rlx_call"))
        call.argtypes = [ctypes.c_void_p]
        self._call = call

    def __call__(self, *ptrs: int | None) -> None:
        if len(ptrs) != self._n:
            raise TypeError(f"this entry takes {self._n} pointer arguments, got {len(ptrs)}")
        args = self._array(*ptrs)
        self._call(ctypes.addressof(args))
