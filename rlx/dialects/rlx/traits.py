"""Op traits of the rlx dialect that passes read instead of name tables.

`PrecisionClass` says how `precision` / `precision-policy` treat an op: the class a policy
assigns an element type to (compute, reduction, elementwise, data-movement), or never
retyped (boundary: leaves whose type the user fixed; pinned: ops with fixed-width
semantics, e.g. scaled quantization, or regions). An op without the trait is pinned.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.traits import OpTrait

from rlx.dialects.rlx.precision_classes import (
    BOUNDARY,
    COMPUTE,
    DATA_MOVEMENT,
    ELEMENTWISE,
    PINNED,
    PRECISION_CLASSES,
    REDUCTION,
)


@dataclass(frozen=True)
class PrecisionClass(OpTrait):
    """The precision class of an op (one of `PRECISION_CLASSES`)."""

    kind: str

    def __post_init__(self) -> None:
        if self.kind not in PRECISION_CLASSES:
            raise ValueError(f"unknown precision class '{self.kind}'")


def precision_class(op: Operation | type[Operation]) -> str:
    """The precision class of an op (or op class); `pinned` when it declares none."""
    t = op.get_trait(PrecisionClass)
    return t.kind if t is not None else PINNED


Compute = PrecisionClass(COMPUTE)
Reduction = PrecisionClass(REDUCTION)
Elementwise = PrecisionClass(ELEMENTWISE)
DataMovement = PrecisionClass(DATA_MOVEMENT)
Boundary = PrecisionClass(BOUNDARY)
Pinned = PrecisionClass(PINNED)
