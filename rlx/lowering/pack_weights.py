"""`pack-weights`: pack the weight operand of matmuls once, in `@prepare` (data tiling).

A `rlx.matmul` or `rlx.fused_matmul_bias_act` of `@main` whose right operand `w [K, N]`
is a weight -- an `rlx.param` / `rlx.constant` of `@main`, a value `@prepare` computes
(an argument of kind `prepared`, see `hoist-param-invariant`), or a concat / transpose /
reshape of those (moved into `@prepare`) -- becomes

    @prepare:  %p = rlx.pack_rhs %w {width = nr}      (returned as a new prepared value)
    @main:     %y = rlx.packed_matmul %x, %p[, %bias] {n = N, activation = ...}

so the runtime packs the weight into register-tile panels when its params change
(`set_params`), not at every run, and the generated GEMM reads the panels directly.
`@prepare` is created (as `hoist-param-invariant` would) when there is none; a weight
used by several matmuls is packed once. With `RLX_BLAS=1` (OpenBLAS wherever it applies)
nothing is packed; tiny matmuls (fewer than `MIN_MNK` multiply-adds), non-float ones and
weights computed in `@main` are left alone. In the default mode a packed weight also takes
the generated GEMM where an unpacked one of the same small shape would take OpenBLAS
(`matmul.prefer_blas`): pre-packing removes most of the generated GEMM's per-call cost.

Every other `rlx.concat` of weights only left in `@main` (the concatenated q/k/v bias of
`shared_input_matmul`, which runs after `hoist-param-invariant`; its weight when not
packed) moves into `@prepare` as well, so no weight copy runs per call.

Option `width`: the panel width; 0 (default) takes the host tile's `nr`
(`rlx.lowering.gemm.target`). Panels of another width still lower correctly (unpacked
into a scratch buffer), only without the benefit.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.fused import FusedMatmulBiasActOp
from rlx.dialects.rlx.gemm import PackedMatmulOp, PackRhsOp
from rlx.ir_checks import graph_block
from rlx.lowering.gemm.driver import eligible_types
from rlx.lowering.rlx_to_linalg.kernel_builder import memref_of
from rlx.transforms.prepare_func import PrepareFunc, erase_dead

_MATMULS = ("rlx.matmul", "rlx.fused_matmul_bias_act")


def _wanted(op: Operation) -> bool:
    """A matmul with a rank-2 weight that the generated GEMM would run (its own
    eligibility rule: f32/f16/bf16, enough work, 32-bit sizes; never f64 or fp8, which the
    packed f32 panels would silently narrow)."""
    if op.name not in _MATMULS or len(op.operands) < 2:
        return False
    types = [v.type for v in (*op.operands[:2], op.results[0])]
    if not all(isinstance(t, TensorType) for t in types) or len(types[1].get_shape()) != 2:
        return False
    a, b, out = (memref_of(t) for t in types)  # type: ignore[arg-type]
    return eligible_types(a, b, out)


class _Packer:
    """Packs each weight once: `pack_rhs` of it in `@prepare`, read by `@main` as a new
    prepared argument."""

    def __init__(self, prep: PrepareFunc, width: int) -> None:
        self.prep, self.width = prep, width
        self.packed: dict[SSAValue, BlockArgument] = {}

    def pack(self, w: SSAValue) -> BlockArgument | None:
        """The prepared argument of `@main` holding pack_rhs(w), or None."""
        if w in self.packed:
            return self.packed[w]
        src = self.prep.source(w)
        if src is None:
            return None
        packed = self.prep.insert(PackRhsOp(src, width=self.width))
        arg = self.prep.add_output(packed.results[0], f"packed{self.prep.n_prepared()}")
        self.packed[w] = arg
        return arg


def _activation(op: Operation) -> str:
    """The activation of a fused matmul ("none" for a plain one)."""
    return str(op.activation) if isinstance(op, FusedMatmulBiasActOp) else "none"


def pack_weights(module: builtin.ModuleOp, width: int, entry: str = "main") -> int:
    """Rewrite the matmuls of `@entry` (module docstring); returns how many."""
    from rlx.lowering.blas_abi import gemm_mode

    main = next(
        (f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == entry), None
    )
    if main is None or main.is_declaration:
        return 0
    block = graph_block(main, "pack-weights")
    packer = _Packer(PrepareFunc(module, main, "pack-weights"), width)
    if gemm_mode() == "blas":
        return hoist_weight_concats(packer.prep)
    done = 0
    for op in list(block.ops):
        if not _wanted(op):
            continue
        x, w = op.operands[0], op.operands[1]
        arg = packer.pack(w)
        if arg is None:
            continue
        n = w.type.get_shape()[1]  # type: ignore[attr-defined]
        new = PackedMatmulOp(
            x,
            arg,
            *op.operands[2:3],
            result_types=[op.results[0].type],
            n=n,
            activation=_activation(op),
        )
        Rewriter.replace_op(op, new)
        erase_dead(w)
        done += 1
    return done + hoist_weight_concats(packer.prep)


def hoist_weight_concats(prep: PrepareFunc) -> int:
    """Move every `rlx.concat` of `@main` over weights only into `@prepare` (one new prepared
    value each); returns how many. These are the concatenated q/k/v biases (and, when the
    matmul is not packed: tiny, RLX_BLAS=1, the weights) that `shared_input_matmul` makes
    after `hoist-param-invariant` ran: without this they would be copied at every run."""
    concats = [op.results[0] for op in prep.main.body.block.ops if op.name == "rlx.concat"]
    return sum(prep.move(c, f"prep{prep.n_prepared()}") for c in concats if c.uses)


@dataclass(frozen=True)
class PackWeights(ModulePass):
    """Pack matmul weights once in @prepare into the generated GEMM's register panels."""

    name = "pack-weights"

    width: int = 0
    """Panel width (columns of B per microkernel tile); 0: the host tile's nr."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.width < 0:
            raise PassFailedException(f"pack-weights: width must be >= 0, got {self.width}")
        from rlx.lowering.gemm.target import host_tile

        pack_weights(op, self.width or host_tile().nr)
