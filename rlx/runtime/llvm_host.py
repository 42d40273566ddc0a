"""The host's LLVM: one-time native-target initialisation and target machines for it.

Shared by the JIT (`rlx.runtime.jit`), the thread pool's runtime module
(`rlx.runtime.parallel`) and the BLAS wrappers (`rlx.runtime.blas`), which each compile
a small module for the host.
"""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm_binding

_INITIALISED = False


def _initialise() -> None:
    global _INITIALISED
    if _INITIALISED:
        return
    llvm_binding.initialize_native_target()
    llvm_binding.initialize_native_asmprinter()
    llvm_binding.initialize_native_asmparser()
    _INITIALISED = True


def _target_machine(opt_level: int, cpu: str, features: str, jit: bool) -> Any:
    target = llvm_binding.Target.from_default_triple()
    return target.create_target_machine(
        cpu=cpu, features=features, opt=opt_level, codemodel="jitdefault", jit=jit
    )
