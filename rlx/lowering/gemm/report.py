"""Which GEMM implementation each matmul of a graph-level module gets, as lines appended
to the dispatch report (`rlx-opt --dispatch-report`, `CompiledGraph.dispatch_report()`).

The prediction applies the lowering's own rule (`matmul.path_for_types`) to the memref
types the ops will have, so it names the path `convert-rlx-to-linalg` takes: `openblas`,
`generated <isa> <mr>x<nr>` (with packed weights for `rlx.packed_matmul`) or `loops`.
"""

from __future__ import annotations

from collections import Counter

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from rlx.lowering.gemm.target import host_tile

_MATMULS = ("rlx.matmul", "rlx.fused_matmul_bias_act", "rlx.fused_swiglu", "rlx.packed_matmul")


def predicted_path(op: Operation) -> str | None:
    """The GEMM path of a matmul-family op (None for other ops)."""
    from rlx.lowering.rlx_to_linalg.kernel_builder import memref_of
    from rlx.lowering.rlx_to_linalg.matmul import path_for_types

    if op.name not in _MATMULS or len(op.operands) < 2:
        return None
    types = [v.type for v in (*op.operands[:2], op.results[0])]
    if not all(isinstance(t, TensorType) for t in types):
        return None
    a, b, out = (memref_of(t) for t in types)  # type: ignore[arg-type]
    tile = host_tile()
    if op.name == "rlx.packed_matmul":
        if b.get_shape()[2] == tile.nr:
            return f"generated {tile.name}, weights packed in @prepare"
        return "panels of another width: unpacked, then a matmul"
    if op.name == "rlx.fused_swiglu" and len(op.operands) != 3:
        return None
    path = path_for_types(a, b, out)
    return {"blas": "openblas", "generated": f"generated {tile.name}"}.get(path, path)


def gemm_lines(module: Operation) -> str:
    """`  gemm:` and one `    - <kind> ×<n>: <path>` line per kind and path ("" if none)."""
    counts = Counter(
        (op.name.removeprefix("rlx."), path)
        for op in module.walk()
        if (path := predicted_path(op)) is not None
    )
    from rlx.lowering.rlx_to_linalg.conv import conv_lines  # conv-gemm's hook

    if not counts:
        return conv_lines(module)
    from rlx.lowering.blas_abi import gemm_mode

    lines = [f"  gemm (mode {gemm_mode()}: RLX_BLAS=1 openblas, 0 generated, unset auto):"]
    for (kind, path), n in sorted(counts.items()):
        lines.append(f"    - {kind} ×{n}: {path}")
    return "\n".join(lines) + "\n" + conv_lines(module)
