"""Test-only passes and an `rlx-opt` with them registered (`ProbeOpt`, `run_main`) for the
driver tests (`test_rlx_opt*.py`): the real rlx passes are written elsewhere;
`main(..., tool_class=...)` keeps main's error handling."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.passes import ModulePass

from rlx.diagnostics import OpError, emit_warning
from rlx.tools.opt_main import RlxOptMain
from rlx.tools.rlx_opt import main

# --------------------------------------------------------------------------------------
# Test-only passes
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeStrPass(ModulePass):
    """Test pass with a string main option."""

    name = "test-probe-str"
    main_option: ClassVar[str] = "mode"

    mode: str = "default"
    max_steps: int = 8
    swiglu: bool = True

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        op.attributes["probe"] = builtin.StringAttr(f"{self.mode}/{self.max_steps}")


@dataclass(frozen=True)
class ProbeIntPass(ModulePass):
    """Test pass with an int main option."""

    name = "test-probe-int"
    main_option: ClassVar[str] = "seed"

    seed: int = 0

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class ProbeBoolPass(ModulePass):
    """Test pass with a bool main option and a tuple option."""

    name = "test-probe-bool"
    main_option: ClassVar[str] = "enabled"

    enabled: bool = False
    sizes: tuple[int, ...] = ()

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class NoMainPass(ModulePass):
    """Test pass without a main option."""

    name = "test-no-main"

    level: int = 1

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class BadMainPass(ModulePass):
    """Test pass whose main_option names no field."""

    name = "test-bad-main"
    main_option: ClassVar[str] = "missing"

    level: int = 1

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class FailAtReturnPass(ModulePass):
    """Test pass: warns at every function and fails at the first func.return."""

    name = "test-fail-at-return"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, func.FuncOp):
                emit_warning(inner, f"visiting {inner.sym_name.data}")
            if isinstance(inner, func.ReturnOp):
                raise OpError(inner, "cannot handle this return", [(inner.parent_op(), "in here")])


@dataclass(frozen=True)
class CrashPass(ModulePass):
    """Test pass that fails with an unexpected exception."""

    name = "test-crash"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        raise RuntimeError("boom")


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    """Test pass that leaves invalid IR: it retypes the function's result."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, func.FuncOp):
                inner.function_type = builtin.FunctionType.from_lists(
                    inner.function_type.inputs.data, [builtin.i64]
                )


TEST_PASSES: tuple[type[ModulePass], ...] = (
    ProbeStrPass,
    ProbeIntPass,
    ProbeBoolPass,
    NoMainPass,
    BadMainPass,
    FailAtReturnPass,
    CrashPass,
    BreakIRPass,
)


def _factory(cls: type[ModulePass]) -> Callable[[], type[ModulePass]]:
    return lambda: cls


class ProbeOpt(RlxOptMain):
    """rlx-opt plus the test-only passes above."""

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for cls in TEST_PASSES:
            self.register_pass(cls.name, _factory(cls))


FUNC = """\
func.func @f(%x: i32) -> i32 {
  %0 = arith.addi %x, %x : i32
  func.return %0 : i32
}
"""


def run_main(args: list[str]) -> int:
    return main(args, tool_class=ProbeOpt)
