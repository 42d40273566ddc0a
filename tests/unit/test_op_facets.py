"""Every op of the rlx dialect has its full set of facets.

A facet is what one layer needs to know about an op, keyed by the op class:
  * verifier: an `infer` that computes the result types (region ops check theirs
    against the body in `verify_`, and their `infer` says so);
  * reference: an implementation in the reference interpreter (`rlx.interpreter`);
  * lowering: a kernel emitter of `convert-rlx-to-linalg` (or bufferizer-structural), or a
    decomposition that legalization applies;
  * precision: a `PrecisionClass` trait;
  * docs: a section (or anchor) in docs/dialect.md;
  * round-trip: a case in tests/filecheck/dialects/rlx/ops.mlir.
Deleting any facet of any op fails `test_every_op_has_every_facet`; the self-test below
shows the checker notices each kind of removal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.ir import Operation

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.base import RlxOp
from rlx.dialects.rlx.traits import PrecisionClass
from rlx.interpreter import STRUCTURAL as INTERPRETED_STRUCTURALLY
from rlx.interpreter.ops import REGISTRY
from rlx.lowering.rlx_to_linalg.bufferize import STRUCTURAL as LOWERED_STRUCTURALLY
from rlx.lowering.rlx_to_linalg.registry import LOWERINGS
from rlx.transforms.decompositions import LOGICAL, PRIMITIVE

ROOT = Path(__file__).resolve().parents[2]
DIALECT_DOC = (ROOT / "docs" / "dialect.md").read_text()
ROUND_TRIP = (ROOT / "tests" / "filecheck" / "dialects" / "rlx" / "ops.mlir").read_text()

OpClass = type[Operation]


def _verifier(cls: OpClass) -> bool:
    return issubclass(cls, RlxOp) and cls.infer.__func__ is not RlxOp.infer.__func__  # type: ignore[attr-defined]


def _reference(cls: OpClass) -> bool:
    return cls in REGISTRY or cls in INTERPRETED_STRUCTURALLY


def _lowering(cls: OpClass) -> bool:
    return cls in LOWERINGS or cls in LOWERED_STRUCTURALLY or cls in LOGICAL or cls in PRIMITIVE


def _precision(cls: OpClass) -> bool:
    return cls.get_trait(PrecisionClass) is not None


def _docs(cls: OpClass) -> bool:
    short = cls.name.removeprefix("rlx.")
    return f"### {cls.name}\n" in DIALECT_DOC or f'<a id="rlx{short}"></a>' in DIALECT_DOC


def _round_trip(cls: OpClass) -> bool:
    return f"{cls.name} " in ROUND_TRIP or f'"{cls.name}"' in ROUND_TRIP


FACETS: dict[str, Callable[[OpClass], bool]] = {
    "verifier": _verifier,
    "reference": _reference,
    "lowering": _lowering,
    "precision": _precision,
    "docs": _docs,
    "round-trip": _round_trip,
}


def missing_facets(cls: OpClass) -> list[str]:
    return [name for name, has in FACETS.items() if not has(cls)]


def test_the_dialect_has_ops() -> None:
    assert len(OPS_BY_NAME) >= 62


@pytest.mark.parametrize("name", sorted(OPS_BY_NAME))
def test_every_op_has_every_facet(name: str) -> None:
    assert missing_facets(OPS_BY_NAME[name]) == []


def test_removing_a_facet_is_noticed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Take one facet away at a time from rlx.softmax: the checker names exactly it."""
    from rlx.dialects.rlx.compute import SoftmaxOp

    assert missing_facets(SoftmaxOp) == []
    removals: dict[str, Callable[[pytest.MonkeyPatch], object]] = {
        "reference": lambda m: m.delitem(REGISTRY, SoftmaxOp),
        "lowering": lambda m: (m.delitem(LOWERINGS, SoftmaxOp), m.delitem(LOGICAL, SoftmaxOp)),
        "precision": lambda m: m.setattr(SoftmaxOp, "get_trait", classmethod(lambda c, t: None)),
        "docs": lambda m: m.setitem(globals(), "DIALECT_DOC", ""),
        "round-trip": lambda m: m.setitem(globals(), "ROUND_TRIP", ""),
        "verifier": lambda m: m.setattr(SoftmaxOp, "infer", RlxOp.infer),
    }
    for facet, remove in removals.items():
        with monkeypatch.context() as m:
            remove(m)
            assert missing_facets(SoftmaxOp) == [facet], facet
    assert missing_facets(SoftmaxOp) == []
