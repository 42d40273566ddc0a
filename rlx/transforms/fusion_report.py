"""The fusion report: op counts before/after the `fusion` pass and every near miss
(a leftover pattern that did not fuse), with the reason and a hint.

`analyze_fusion(before, after)` builds it (`before` may be the `fusion_counts` of the module
taken before the pass instead of a clone of it: all the report needs of it is counts);
`FusionReport.format()` renders it:

    fusion report:
      nodes=6→4 matmul=1→0 fused_mm_act=1 fused_swiglu=0 elementwise_region=0 attention=0 missed=0
      fused: fused_matmul_bias_act=1
      missed patterns:
        matmul_bias_act @ f.mlir:3:10 (rlx.matmul) — matmul has several users → ...
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.dialects import math as mathd
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import PassFailedException

from rlx.diagnostics import OpError, loc_from_attr
from rlx.dialects.rlx.base import shape_of
from rlx.dialects.rlx.compute import MatmulOp, ReduceOp
from rlx.dialects.rlx.control import ElementwiseRegionOp
from rlx.dialects.rlx.elementwise import AddOp, MaxOp, MinOp, MulOp, UnaryOp
from rlx.dialects.rlx.fused import FusedMatmulBiasActOp
from rlx.dialects.rlx.shape import ConcatOp, SliceOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.transforms.fusion.common import float_tensor
from rlx.transforms.fusion.conv_bias_act import (
    CONV_EPILOGUES,
    channel_bias,
    clip_chain,
    residual_operand,
)
from rlx.transforms.fusion.conv_pool import AnyConv, pooled_conv, spatial_reduce
from rlx.transforms.fusion.matmul_bias_act import FUSABLE_ACTIVATIONS
from rlx.transforms.fusion.shared_input_matmul import shared_group
from rlx.transforms.fusion.swiglu import dual_matmuls

FUSED_KINDS = (
    "fused_matmul_bias_act",
    "fused_swiglu",
    "fused_residual_layer_norm",
    "fused_residual_rms_norm",
    "attention",
    "elementwise_region",
)

REASONS = {
    "several_users": (
        "matmul has several users",
        "give the matmul a single consumer (e.g. one matmul per user) so its epilogue can fuse",
    ),
    "not_add": (
        "matmul's single user is not an add",
        "follow the matmul with rlx.add of a rank <= 1 bias to get rlx.fused_matmul_bias_act",
    ),
    "bias_rank": ("bias rank > 1", "make the bias rank <= 1 (shape [N]) so it can be fused"),
    "left_unfused": (
        "matmul + bias left unfused",
        "enable the matmul-bias-act pattern (floating-point operands only)",
    ),
    "activation": ("activation not fusable", "only relu, gelu, gelu_tanh and silu epilogues fuse"),
    "shared": (
        "shared-input matmuls left unfused",
        "enable shared-input-matmul; weights must be rank 2 with static shapes",
    ),
    "swiglu_input": (
        "swiglu operands not sharing their input",
        "compute the gate and up projections from the same input value",
    ),
    "conv_users": (
        "conv2d has several users",
        "give the convolution a single consumer so its bias and activation can fuse",
    ),
    "conv_bias_shape": (
        "add is neither a per-channel bias nor a residual",
        "add a [F, 1, 1] (or [1, F, 1, 1]) bias, or a tensor of the convolution's type "
        "(a residual), to fuse it into the convolution",
    ),
    "conv_activation": (
        "activation not fusable into conv2d",
        "only relu, gelu, gelu_tanh, silu, sigmoid, hard_swish and clip epilogues fuse",
    ),
    "conv_clip": (
        "clip not fusable into conv2d",
        "a clip fuses as max by a scalar constant, then min by a scalar constant >= it",
    ),
    "pool_users": (
        "convolution under a global mean has several users",
        'the mean over H, W fuses into the convolution (reduce = "mean") only when it '
        "is the convolution's only user",
    ),
    "pool_left": (
        "global mean left unfused",
        "enable the conv-global-pool pattern (floating-point convolutions)",
    ),
}
"""Miss kind -> (reason, hint)."""


@dataclass(frozen=True)
class Miss:
    """One near miss: `pattern` did not fire at the op at `location` because of `reason`."""

    pattern: str
    location: str
    label: str
    reason: str
    hint: str
    op: Operation | None = field(default=None, compare=False, repr=False)

    def format(self) -> str:
        return f"    {self.pattern} @ {self.location} ({self.label}) — {self.reason} → {self.hint}"


@dataclass
class FusionReport:
    """Counts before → after fusion, fused ops by kind, and the near misses."""

    nodes_before: int = 0
    nodes_after: int = 0
    matmul_before: int = 0
    matmul_after: int = 0
    fused: dict[str, int] = field(default_factory=dict[str, int])
    missed: list[Miss] = field(default_factory=list[Miss])

    def count(self, kind: str) -> int:
        return self.fused.get(kind, 0)

    def summary_line(self) -> str:
        return (
            f"nodes={self.nodes_before}→{self.nodes_after} matmul={self.matmul_before}→{self.matmul_after}"
            f" fused_mm_act={self.count('fused_matmul_bias_act')} fused_swiglu={self.count('fused_swiglu')}"
            f" elementwise_region={self.count('elementwise_region')} attention={self.count('attention')}"
            f" missed={len(self.missed)}"
        )

    def format(self) -> str:
        lines = ["fusion report:", "  " + self.summary_line()]
        kinds = [f"{k}={n}" for k, n in self.fused.items() if n]
        if kinds:
            lines.append("  fused: " + " ".join(kinds))
        if self.missed:
            lines.append("  missed patterns:")
            lines.extend(m.format() for m in self.missed)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()

    def contract_error(self) -> PassFailedException:
        """The `assert_clean` failure, located at the first missed op when possible."""
        msg = f"fusion contract violated: {len(self.missed)} missed patterns\n{self.format()}"
        op = next((m.op for m in self.missed if m.op is not None), None)
        if op is not None:
            return OpError(op, msg)
        return PassFailedException(msg)


# ----------------------------------------------------------------------------- analysis


def _bodies(module: Operation) -> Iterator[func.FuncOp]:
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks:
            yield op


def _top_ops(module: Operation) -> Iterator[Operation]:
    for f in _bodies(module):
        for block in f.body.blocks:
            for op in block.ops:
                if not isinstance(op, func.ReturnOp):
                    yield op


def _count_nodes(module: Operation) -> int:
    args = sum(len(b.args) for f in _bodies(module) for b in f.body.blocks)
    return args + sum(1 for _ in _top_ops(module))


def _names(module: Operation) -> dict[SSAValue, str]:
    printer = Printer(stream=io.StringIO())
    printer.print_op(module)
    return dict(printer._ssa_values)  # pyright: ignore[reportPrivateUsage]


class _Scanner:
    """Finds the near misses in a fused module."""

    def __init__(self, module: Operation) -> None:
        self.module = module
        self.missed: list[Miss] = []
        self.claimed: set[int] = set()

    @functools.cached_property
    def names(self) -> dict[SSAValue, str]:
        """The printer's SSA names (a whole-module print: only for a miss without a location)."""
        return _names(self.module)

    def where(self, op: Operation) -> str:
        try:
            loc = loc_from_attr(op.location)
        except ImportError:
            loc = None
        if loc is not None:
            return str(loc)
        if op.results:
            r = op.results[0]
            return "%" + self.names.get(r, r.name_hint or "?")
        return op.name

    def miss(self, pattern: str, op: Operation, kind: str, detail: str = "") -> None:
        reason, hint = REASONS[kind]
        self.missed.append(Miss(pattern, self.where(op), op.name, reason + detail, hint, op))
        self.claimed.add(id(op))

    def scan(self) -> list[Miss]:
        ops = list(_top_ops(self.module))
        for op in ops:
            if isinstance(op, MulOp):
                self.swiglu(op)
            elif isinstance(op, ElementwiseRegionOp):
                self.swiglu_region(op)
        self.shared(ops)
        for op in ops:
            if isinstance(op, MatmulOp) and id(op) not in self.claimed:
                self.matmul(op)
            elif isinstance(op, FusedMatmulBiasActOp):
                self.epilogue(op)
            elif isinstance(op, Conv2dOp) and float_tensor(op.result):
                self.conv(op)
            if isinstance(op, ReduceOp):
                self.global_pool(op)
        order = {id(op): i for i, op in enumerate(ops)}
        self.missed.sort(key=lambda m: order.get(id(m.op), -1))
        return self.missed

    def swiglu(self, mul: MulOp) -> None:

        found = dual_matmuls(mul)
        if found is None or found[1].a is found[2].a:
            return
        _, gate, up = found
        self.miss("swiglu_dual_matmul", mul, "swiglu_input")
        self.claimed.update((id(gate), id(up)))

    def swiglu_region(self, region: ElementwiseRegionOp) -> None:
        """A region computing silu(a) * b where a, b are matmuls with different lhs."""
        for i, j in _scalar_swiglus(region):
            gate, up = region.inputs[i].owner, region.inputs[j].owner
            if isinstance(gate, MatmulOp) and isinstance(up, MatmulOp) and gate.a is not up.a:
                self.miss("swiglu_dual_matmul", region, "swiglu_input")
                self.claimed.update((id(gate), id(up)))
                return

    def shared(self, ops: list[Operation]) -> None:

        done: set[int] = set()
        for op in ops:
            if not isinstance(op, MatmulOp) or id(op) in done:
                continue
            group = [m for m in shared_group(op) if id(m) not in self.claimed]
            done.update(id(m) for m in group)
            if len(group) >= 2:
                self.miss("shared_input_matmul", group[0], "shared", f" ({len(group)} matmuls)")
                self.claimed.update(id(m) for m in group)

    def matmul(self, mm: MatmulOp) -> None:
        uses = [u.operation for u in mm.result.uses]
        if not uses:
            return
        if isinstance(mm.b.owner, ConcatOp) and all(isinstance(u, SliceOp) for u in uses):
            return  # the product of shared_input_matmul
        if len(uses) > 1:
            self.miss("matmul_bias_act", mm, "several_users")
            return
        user = uses[0]
        if isinstance(user, func.ReturnOp):
            return
        if not isinstance(user, AddOp):
            self.miss("matmul_bias_act", mm, "not_add")
            return
        bias = user.rhs if user.lhs is mm.result else user.lhs
        rank = len(shape_of(bias.type))
        if rank > 1:
            self.miss("matmul_bias_act", mm, "bias_rank", f" (rank {rank})")
        else:
            self.miss("matmul_bias_act", mm, "left_unfused")

    def conv(self, conv: Conv2dOp) -> None:
        """Why a float convolution kept a following add or activation."""
        uses = [u.operation for u in conv.result.uses]
        followers = [u for u in uses if isinstance(u, AddOp | UnaryOp | MaxOp | MinOp)]
        if not followers:
            return
        if len(uses) > 1:
            self.miss("conv_bias_act", conv, "conv_users")
        elif isinstance(uses[0], AddOp) and conv.activation == "none":
            fits = residual_operand(conv.result, uses[0]) is not None or (
                conv.bias is None and channel_bias(conv, uses[0]) is not None
            )
            if not fits:
                self.miss("conv_bias_act", conv, "conv_bias_shape")
        elif conv.activation != "none":
            return
        elif isinstance(uses[0], MaxOp | MinOp):
            if clip_chain(conv.result) is None:
                self.miss("conv_bias_act", uses[0], "conv_clip", f" ({uses[0].name})")
        elif isinstance(uses[0], UnaryOp) and uses[0].name not in CONV_EPILOGUES:
            self.miss("conv_bias_act", uses[0], "conv_activation", f" ({uses[0].name})")

    def global_pool(self, red: ReduceOp) -> None:
        """Why a reduce over H, W of a float convolution stayed a separate op."""
        conv = red.x.owner
        if not isinstance(conv, AnyConv) or not spatial_reduce(red) or conv.reduce != "none":
            return
        if not float_tensor(conv.result) or red.kind != "mean":
            return
        if pooled_conv(red) is None:
            self.miss("conv_global_pool", red, "pool_users")
        else:
            self.miss("conv_global_pool", red, "pool_left")

    def epilogue(self, fused: FusedMatmulBiasActOp) -> None:
        if fused.activation != "none":
            return
        user = fused.result.get_user_of_unique_use()
        if isinstance(user, UnaryOp) and type(user) not in FUSABLE_ACTIVATIONS:
            self.miss("matmul_bias_act", user, "activation", f" ({user.name})")


def _is_exp_of_minus_abs(v: SSAValue, x: SSAValue) -> bool:
    """`v` is exp(-|x|) (the logistic formula's exponential)."""
    e = v.owner
    n = e.operand.owner if isinstance(e, mathd.ExpOp) else None
    a = n.operand.owner if isinstance(n, arith.NegfOp) else None
    return isinstance(a, mathd.AbsFOp) and a.operand is x


def _scalar_silu_arg(v: SSAValue) -> int | None:
    """Block-arg index i when `v` is the scalar silu expansion x · sigmoid(x), sigmoid as
    its formula builds it: select(x < 0, e · r, r), r = 1 / (1 + e), e = exp(-|x|)."""
    op = v.owner
    if not isinstance(op, arith.MulfOp):
        return None
    for x, sig in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        sel = sig.owner
        if not isinstance(x, BlockArgument) or not isinstance(sel, arith.SelectOp):
            continue
        div = sel.rhs.owner  # the value where x >= 0: r
        add = div.rhs.owner if isinstance(div, arith.DivfOp) else None
        if isinstance(add, arith.AddfOp) and any(_is_exp_of_minus_abs(o, x) for o in add.operands):
            return x.index
    return None


def _scalar_swiglus(region: ElementwiseRegionOp) -> Iterator[tuple[int, int]]:
    """(gate input, up input) for each scalar silu(arg_i) * arg_j in the region body."""
    for op in region.body.block.ops:
        if not isinstance(op, arith.MulfOp):
            continue
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            i = _scalar_silu_arg(a)
            if i is not None and isinstance(b, BlockArgument):
                yield i, b.index


@dataclass(frozen=True)
class FusionCounts:
    """What the report needs of the module before `fusion`: node, matmul and fused-op counts."""

    nodes: int
    matmuls: int
    fused: dict[str, int]


def fusion_counts(module: Operation) -> FusionCounts:
    """The counts of `module` that `analyze_fusion` compares (one walk of the top-level ops;
    taking them instead of a clone of the module is what makes the report cheap)."""
    fused = {k: 0 for k in FUSED_KINDS}
    matmuls = 0
    for op in _top_ops(module):
        kind = op.name.removeprefix("rlx.")
        if kind in fused:
            fused[kind] += 1
        matmuls += isinstance(op, MatmulOp)
    return FusionCounts(_count_nodes(module), matmuls, fused)


def analyze_fusion(before: Operation | FusionCounts, after: Operation) -> FusionReport:
    """Compare a module before (or its `fusion_counts`) and after `fusion` and scan `after`
    for near misses."""
    was = before if isinstance(before, FusionCounts) else fusion_counts(before)
    now = fusion_counts(after)
    # ops already fused in the input are not fusion's work
    fused = {k: max(now.fused[k] - was.fused[k], 0) for k in FUSED_KINDS}
    return FusionReport(
        nodes_before=was.nodes,
        nodes_after=now.nodes,
        matmul_before=was.matmuls,
        matmul_after=now.matmuls,
        fused=fused,
        missed=_Scanner(after).scan(),
    )
