"""The table of ONNX op converters (filled by the `ops_*` modules) and the import error."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlx.frontends.onnx.importer import Node


class OnnxImportError(ValueError):
    """An ONNX model (or one of its nodes) that the importer cannot translate."""


Converter = Callable[["Node"], Sequence[Any]]
"""`fn(node) -> one value (SSAValue, np.ndarray constant, or None) per node output`."""

CONVERTERS: dict[str, tuple[Converter, frozenset[str] | None]] = {}

DOMAINS: dict[str, str] = {}
"""The domain of each op type converted outside the default one (`converter(domain=)`,
e.g. `ai.onnx.preview`'s FlexAttention); a node of another domain is refused."""

DYNAMIC_RESULT_HOOKS: list[Callable[[Any, Any], None]] = []
"""`fn(importer, value)` called for each reshape/broadcast result with several dynamic
dims, to record their symbols (filled by `symbolic_ops`)."""

EXPANDERS: list[Callable[[Any, Any], tuple[list[Any], int] | None]] = []
"""`fn(importer, node_proto) -> (replacement nodes, their default-domain opset) | None`,
tried for op types without a converter (e.g. ONNX function bodies, filled by `subgraphs`).
The nodes are imported with that opset's semantics: a function body is written against
the opset its schema declares, which may be older than the model's."""


def converter(
    *op_types: str, attrs: Iterable[str] | None = None, domain: str = ""
) -> Callable[[Converter], Converter]:
    """Register `fn` for `op_types` of `domain` (default: ONNX's own); `attrs` lists the
    accepted ONNX attributes (None: any)."""
    allowed = None if attrs is None else frozenset(attrs)

    def deco(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = (fn, allowed)
            if domain:
                DOMAINS[t] = domain
        return fn

    return deco


def supported_ops() -> frozenset[str]:
    """ONNX op types the importer has a converter for (`DOMAINS` names those of other
    domains than the default one)."""
    import rlx.frontends.onnx  # noqa: F401  (registers the converters)

    return frozenset(CONVERTERS)
