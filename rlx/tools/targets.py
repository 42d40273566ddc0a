"""Output targets of `rlx-opt -t` beyond MLIR text: the LLVM module and host assembly.

xDSL's own `llvm`, `x86-asm`, `riscv-asm`, `arm-asm`, `mps`, `wgsl`, `wat` and `csl`
targets expect dialects rlx never produces, so rlx-opt offers only the targets below and
`mlir`. Both need the module lowered to the llvm dialect (`--lower-to-llvm`); otherwise
they raise a diagnostic naming the first op that is not llvm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target


def _llvm_ir(module: ModuleOp, flag: str) -> str:
    offender = next(
        (op for op in module.walk() if op is not module and not op.name.startswith("llvm.")),
        None,
    )
    if offender is not None:
        raise DiagnosticException(
            f"{flag} needs the llvm dialect: add --lower-to-llvm "
            f"(the module still has '{offender.name}')"
        )
    from rlx.runtime import jit  # attribute lookup at call time (tests substitute it)

    return jit.to_llvm_ir(module)


def _finish(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """The LLVM IR module (textual), as the JIT compiles it (`--emit=llvm-ir`)."""

    name: ClassVar[str] = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(_finish(_llvm_ir(module, "--emit=llvm-ir")))


@dataclass(frozen=True)
class HostAsmTarget(Target):
    """Host assembly at O3 for the host CPU (`--emit=asm`)."""

    name: ClassVar[str] = "asm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from rlx.runtime.jit import JitModule

        output.write(_finish(JitModule(_llvm_ir(module, "--emit=asm"), opt_level=3).asm))


def rlx_targets() -> dict[str, Callable[[], type[Target]]]:
    """The `-t` targets that work on rlx input (MLIR text plus the two above)."""

    def mlir() -> type[Target]:
        from xdsl.targets.mlir import MLIRTarget

        return MLIRTarget

    return {"mlir": mlir, "llvm": lambda: LLVMIRTarget, "asm": lambda: HostAsmTarget}
