"""A plugin as a single .py file: `rlx-opt --load-pass-plugin=tiny_plugin.py`."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition
from xdsl.passes import ModulePass
from xdsl.universe import Universe


@dataclass(frozen=True)
class TagModule(ModulePass):
    """Set a `tiny.tag` attribute on the module."""

    name = "tiny-tag"

    tag: str = "hello"
    """the attribute's value"""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes["tiny.tag"] = StringAttr(self.tag)


@irdl_op_definition
class NopOp(IRDLOperation):
    """`tiny.nop`: does nothing."""

    name = "tiny.nop"
    assembly_format = "attr-dict"


TINY = Universe(
    all_passes={"tiny-tag": lambda: TagModule},
    all_dialects={"tiny": lambda: Dialect("tiny", [NopOp])},
)
