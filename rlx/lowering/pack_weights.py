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

Option `width`: the panel width; 0 (default) takes the host tile's `nr`
(`rlx.lowering.gemm.target`). Panels of another width still lower correctly (unpacked
into a scratch buffer), only without the benefit.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr, TensorType
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.fused import FusedMatmulBiasActOp
from rlx.dialects.rlx.gemm import PackedMatmulOp, PackRhsOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.ir_checks import graph_block
from rlx.lowering.gemm.driver import eligible_types
from rlx.lowering.rlx_to_linalg.kernel_builder import memref_of
from rlx.transforms.hoist_param_invariant import KIND_ATTR, LINK_ATTR, PREP_PREFIX, PREPARED

_MATMULS = ("rlx.matmul", "rlx.fused_matmul_bias_act")
_LAYOUT = ("rlx.concat", "rlx.transpose", "rlx.reshape")
"""Ops of `@main` over weights that `@prepare` computes too (the concatenated q/k/v weights
of `shared_input_matmul`): cloned there, so the packed weight is computed once."""


def _func(module: builtin.ModuleOp, pred: object) -> func.FuncOp | None:
    return next((f for f in module.ops if isinstance(f, func.FuncOp) and pred(f)), None)  # type: ignore[operator]


def _arg_attr(fn: func.FuncOp, i: int, key: str) -> str | None:
    if fn.arg_attrs is None:
        return None
    a = fn.arg_attrs.data[i].data.get(key)
    return a.data if isinstance(a, StringAttr) else None


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


class _Prepare:
    """`@prepare` of the entry (created on first use), grown by one output per weight."""

    def __init__(self, module: builtin.ModuleOp, main: func.FuncOp) -> None:
        self.module, self.main = module, main
        self.fn = _func(module, lambda f: _link(f) == main.sym_name.data)
        self.packed: dict[SSAValue, BlockArgument] = {}

    def _ensure(self) -> func.FuncOp:
        if self.fn is None:
            if _func(self.module, lambda f: f.sym_name.data == "prepare") is not None:
                raise PassFailedException(
                    "pack-weights: the module has a @prepare of another function"
                )
            block = Block()
            block.add_op(func.ReturnOp())
            self.fn = func.FuncOp("prepare", func.FunctionType.from_lists([], []), Region(block))
            self.fn.attributes[LINK_ATTR] = StringAttr(self.main.sym_name.data)
            Rewriter.insert_op(self.fn, InsertPoint.before(self.main))
        return self.fn

    def source(self, w: SSAValue) -> SSAValue | None:
        """The weight as a value of `@prepare` (cloning a param/constant), or None."""
        owner = w.owner
        main_block = self.main.body.block
        if isinstance(owner, ParamOp | ConstantOp) and owner.parent is main_block:
            prep = self._ensure()
            ret = prep.body.block.last_op
            assert ret is not None
            clone = owner.clone()
            Rewriter.insert_op(clone, InsertPoint.before(ret))
            return clone.results[0]
        if isinstance(owner, Operation) and owner.parent is main_block and owner.name in _LAYOUT:
            srcs = [self.source(v) for v in owner.operands]  # a weight-only concat/transpose
            if owner.regions or any(v is None for v in srcs):
                return None
            ret = self._ensure().body.block.last_op
            assert ret is not None
            clone = owner.clone(value_mapper=dict(zip(owner.operands, srcs, strict=True)))
            Rewriter.insert_op(clone, InsertPoint.before(ret))
            return clone.results[0]
        if isinstance(w, BlockArgument) and w.owner is main_block and self.fn is not None:
            name = _arg_attr(self.main, w.index, "rlx.name") or ""
            if _arg_attr(self.main, w.index, KIND_ATTR) == PREPARED and name.startswith(
                PREP_PREFIX
            ):
                ret = self.fn.body.block.last_op
                idx = int(name[len(PREP_PREFIX) :])
                if isinstance(ret, func.ReturnOp) and idx < len(ret.arguments):
                    return ret.arguments[idx]
        return None

    def pack(self, w: SSAValue, width: int) -> BlockArgument | None:
        """A new prepared argument of `@main` holding pack_rhs(w), or None."""
        if w in self.packed:
            return self.packed[w]
        src = self.source(w)
        if src is None:
            return None
        prep = self.fn
        assert prep is not None
        ret = prep.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        packed = PackRhsOp(src, width=width)
        Rewriter.insert_op(packed, InsertPoint.before(ret))
        outs = [*ret.arguments, packed.results[0]]
        Rewriter.replace_op(ret, func.ReturnOp(*outs))
        prep.function_type = func.FunctionType.from_lists([], [v.type for v in outs])
        main, block = self.main, self.main.body.block
        n_prep = sum(1 for i in range(len(block.args)) if _arg_attr(main, i, KIND_ATTR) == PREPARED)
        old = (
            list(main.arg_attrs.data)
            if main.arg_attrs is not None
            else [DictionaryAttr({})] * len(block.args)
        )
        arg = block.insert_arg(packed.results[0].type, len(block.args))
        arg.name_hint = f"packed{n_prep}"
        attrs = {
            KIND_ATTR: StringAttr(PREPARED),
            "rlx.name": StringAttr(f"{PREP_PREFIX}{len(outs) - 1}"),
        }
        main.arg_attrs = ArrayAttr([*old, DictionaryAttr(attrs)])
        main.function_type = func.FunctionType.from_lists(
            [a.type for a in block.args], list(main.function_type.outputs.data)
        )
        self.packed[w] = arg
        return arg


def _erase_dead(w: SSAValue) -> None:
    """Erase the weight's producer in `@main` once unused (and so on up a weight-only chain)."""
    owner = w.owner
    if not isinstance(owner, ParamOp | ConstantOp) and not (
        isinstance(owner, Operation) and owner.name in _LAYOUT
    ):
        return
    if any(r.uses for r in owner.results):
        return
    operands = list(owner.operands)
    Rewriter.erase_op(owner)
    for v in operands:
        _erase_dead(v)


def _link(f: func.FuncOp) -> str | None:
    a = f.attributes.get(LINK_ATTR)
    return a.data if isinstance(a, StringAttr) else None


def _activation(op: Operation) -> str:
    """The activation of a fused matmul ("none" for a plain one)."""
    return str(op.activation) if isinstance(op, FusedMatmulBiasActOp) else "none"


def pack_weights(module: builtin.ModuleOp, width: int, entry: str = "main") -> int:
    """Rewrite the matmuls of `@entry` (module docstring); returns how many."""
    from rlx.lowering.blas_abi import gemm_mode

    main = _func(module, lambda f: f.sym_name.data == entry)
    if main is None or main.is_declaration or gemm_mode() == "blas":
        return 0
    block = graph_block(main, "pack-weights")
    prep = _Prepare(module, main)
    done = 0
    for op in list(block.ops):
        if not _wanted(op):
            continue
        x, w = op.operands[0], op.operands[1]
        arg = prep.pack(w, width)
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
        _erase_dead(w)
        done += 1
    return done


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
