"""Which kernel each rlx.attention of a graph-level module gets, as lines appended to the
dispatch report (`rlx-opt --dispatch-report`, `CompiledGraph.dispatch_report()`), next to
the GEMM lines of `rlx.lowering.gemm.report`.

The prediction applies the lowering's own rules (`attention_flash.fits`,
`attention.blas_fits`, BLAS availability) to the buffer types the op will have, so it
names the kernel `convert-rlx-to-linalg` emits: `flash <isa> <mr>x<nr> bq=.. bk=..`,
`openblas` or `loops`.
"""

from __future__ import annotations

from collections import Counter

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation

from rlx.lowering.blas_abi import available
from rlx.lowering.rlx_to_linalg import attention, attention_flash
from rlx.lowering.rlx_to_linalg.types import memref_of


def predicted_path(op: Operation) -> str | None:
    """The kernel of an rlx.attention op (None for other ops or non-static types)."""
    if op.name != "rlx.attention":
        return None
    types = [v.type for v in (*op.operands, op.results[0])]
    if not all(isinstance(t, TensorType) and -1 not in t.get_shape() for t in types):
        return None
    block = Block(arg_types=[memref_of(t) for t in types])
    at = attention._Attn(op, block.args[:-1], block.args[-1:])
    if attention.FLASH and attention_flash.fits(at):
        p = attention_flash.plan(at)
        return f"flash {p.tile.name} bq={p.bq} bk={p.bk}"
    dtype = attention.blas_fits(at)
    return "openblas" if dtype is not None and available(dtype) else "loops"


def attention_lines(module: Operation) -> str:
    """`  attention:` and one `    - ×<n>: <kernel>` line per kernel ("" if none)."""
    counts = Counter(path for op in module.walk() if (path := predicted_path(op)) is not None)
    if not counts:
        return ""
    lines = ["  attention kernels:"]
    for path, n in sorted(counts.items()):
        lines.append(f"    - ×{n}: {path}")
    return "\n".join(lines) + "\n"
