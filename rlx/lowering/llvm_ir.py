"""LLVM-dialect module -> LLVM IR text (`to_llvm_ir`), the last step of the lowering.

A direct text emitter: xDSL's ``convert_module`` (llvmlite.ir builder) drops fast-math flags
on intrinsic calls, has no ``noalias``/``align``/``dereferenceable`` argument attributes, no
dense global initialisers and is several times slower. Emitting text also keeps the output
stable and greppable. The JIT (`rlx.runtime.jit`) compiles its output. The spelling of
types, literals, flags and attributes and the op -> instruction tables are in
`rlx.lowering.llvm_ir_spelling`; this module is the structure (module, functions, blocks,
phis, instructions).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from rlx.lowering.llvm_common import intrinsic_suffix
from rlx.lowering.llvm_ir_spelling import (
    BINOPS,
    CASTS,
    INTRINSIC_OPS,
    LITERAL_OPS,
    arg_attrs_text,
    cast_flags,
    fastmath_flags,
    global_text,
    scalar_literal,
    type_text,
)
from rlx.lowering.loop_hints import interleave_of

__all__ = ["to_llvm_ir"]


# ----------------------------------------------------------------------------------------
# Emitter


class _ModuleEmitter:
    """Accumulates the text of one module plus the intrinsic declarations it needs."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.defined: set[str] = set()
        self.declares: dict[str, str] = {}
        self.needs_nontemporal = False
        self.loop_metadata: list[str] = []
        """`!llvm.loop` nodes of hinted back edges (`loop_hints`), numbered from 1."""
        for op in module.body.block.ops:
            sym = op.properties.get("sym_name")
            if sym is not None:
                self.defined.add(sym.data)  # pyright: ignore[reportAttributeAccessIssue]

    def declare_intrinsic(self, name: str, ret: str, arg_types: list[str]) -> None:
        if name not in self.declares and name not in self.defined:
            self.declares[name] = f"declare {ret} @{name}({', '.join(arg_types)})"

    def emit(self) -> str:
        parts: list[str] = ["; ModuleID = 'rlx'"]
        for op in self.module.body.block.ops:
            if isinstance(op, llvm.FuncOp):
                parts.append(_FunctionEmitter(self, op).emit())
            elif isinstance(op, llvm.GlobalOp):
                parts.append(global_text(op))
            else:
                raise ValueError(
                    f"to_llvm_ir: unsupported top-level operation '{op.name}' "
                    "(is the module fully lowered to the llvm dialect?)"
                )
        parts.extend(self.declares.values())
        if self.needs_nontemporal:
            parts.append("!0 = !{i32 1}")
        parts.extend(self.loop_metadata)
        return "\n\n".join(parts) + "\n"


def _loop_node(n: int, interleave: int) -> str:
    """The distinct `!llvm.loop` node !n (and its property !n+1) of an interleave hint."""
    return (f"!{n} = distinct !{{!{n}, !{n + 1}}}\n"
            f'!{n + 1} = !{{!"llvm.loop.interleave.count", i32 {interleave}}}')  # fmt: skip


class _FunctionEmitter:
    """Emits one ``llvm.func``: numbered values, labelled blocks, phis for block arguments."""

    def __init__(self, parent: _ModuleEmitter, func: llvm.FuncOp) -> None:
        self.parent = parent
        self.func = func
        self.names: dict[SSAValue, str] = {}
        self.labels: dict[Block, str] = {}
        self.lines: list[str] = []
        self.counter = 0

    # -- values -------------------------------------------------------------------------

    def fresh(self, value: SSAValue) -> str:
        name = f"%v{self.counter}"
        self.counter += 1
        self.names[value] = name
        return name

    def ref(self, value: SSAValue) -> str:
        name = self.names.get(value)
        if name is not None:
            return name
        owner = value.owner
        if isinstance(owner, llvm.ConstantOp):
            if isinstance(owner.value, DenseIntOrFPElementsAttr):
                raise ValueError("to_llvm_ir: vector constants are not supported")
            name = scalar_literal(owner.value, value.type)
        elif isinstance(owner, llvm.AddressOfOp):
            name = f"@{owner.global_name.root_reference.data}"
        elif isinstance(owner, llvm.ZeroOp):
            name = "null" if isinstance(value.type, llvm.LLVMPointerType) else "zeroinitializer"
        elif isinstance(owner, llvm.UndefOp):
            name = "undef"
        else:
            raise ValueError(
                f"to_llvm_ir: value defined by '{getattr(owner, 'name', owner)}' used before "
                "its definition or not lowered"
            )
        self.names[value] = name
        return name

    def typed(self, value: SSAValue) -> str:
        return f"{type_text(value.type)} {self.ref(value)}"

    # -- function -----------------------------------------------------------------------

    def emit(self) -> str:
        func = self.func
        ftype = func.function_type
        ret = type_text(ftype.output)
        name = func.sym_name.data
        arg_types = [type_text(t) for t in ftype.inputs.data]
        variadic = ", ..." if ftype.is_variadic else ""
        if not func.body.blocks:
            return f"declare {ret} @{name}({', '.join(arg_types)}{variadic})"
        linkage = func.linkage.linkage.data
        prefix = "" if linkage == "external" else f"{linkage} "
        entry = func.body.blocks.first
        assert entry is not None
        arg_attrs: list[Attribute | None] = (
            list(func.arg_attrs.data) if isinstance(func.arg_attrs, ArrayAttr) else []
        )
        params: list[str] = []
        for i, (arg, t) in enumerate(zip(entry.args, arg_types, strict=True)):
            attrs = arg_attrs[i] if i < len(arg_attrs) else None
            attr_str = arg_attrs_text(attrs) if isinstance(attrs, DictionaryAttr) else ""
            params.append(f"{t}{attr_str} {self.fresh(arg)}")
        for i, block in enumerate(func.body.blocks):
            self.labels[block] = f"bb{i}"
        incoming = self._incoming()
        # name every block argument and op result up front so that forward references
        # (phis of loop headers, values defined in later-listed blocks) resolve
        for block in func.body.blocks:
            if block is not entry:
                for arg in block.args:
                    self.fresh(arg)
            for op in block.ops:
                if not isinstance(op, LITERAL_OPS):
                    for res in op.results:
                        self.fresh(res)
        lines = self.lines
        fn_attrs = "nounwind"
        if isinstance(func.passthrough, ArrayAttr):
            for attr in func.passthrough.data:
                if isinstance(attr, StringAttr):
                    fn_attrs += f" {attr.data}"
                elif isinstance(attr, ArrayAttr) and len(attr.data) == 2:
                    key, value = attr.data
                    if isinstance(key, StringAttr) and isinstance(value, StringAttr):
                        fn_attrs += f' "{key.data}"="{value.data}"'
        lines.append(f"define {prefix}{ret} @{name}({', '.join(params)}{variadic}) {fn_attrs} {{")
        for block in func.body.blocks:
            lines.append(f"{self.labels[block]}:")
            if block is not entry and block.args:
                preds = incoming.get(block, [])
                for i, arg in enumerate(block.args):
                    srcs = ", ".join(f"[ {self.ref(vals[i])}, %{lbl} ]" for lbl, vals in preds)
                    lines.append(f"  {self.names[arg]} = phi {type_text(arg.type)} {srcs}")
            for op in block.ops:
                self.op(op)
        lines.append("}")
        return "\n".join(lines)

    def _incoming(self) -> dict[Block, list[tuple[str, list[SSAValue]]]]:
        """For each block, (predecessor label, branch operands) of every branch into it."""
        incoming: dict[Block, list[tuple[str, list[SSAValue]]]] = {}
        for block in self.func.body.blocks:
            term = block.last_op
            edges: list[tuple[Block, list[SSAValue]]] = []
            if isinstance(term, llvm.BrOp):
                edges.append((term.successor, list(term.arguments)))
            elif isinstance(term, llvm.CondBrOp):
                edges.append((term.then_block, list(term.then_arguments)))
                edges.append((term.else_block, list(term.else_arguments)))
            label = self.labels[block]
            for succ, vals in edges:
                preds = incoming.setdefault(succ, [])
                if any(lbl == label for lbl, _ in preds):
                    if any(lbl == label and v != vals for lbl, v in preds):
                        raise ValueError(
                            "to_llvm_ir: llvm.cond_br passes different values to the same block"
                        )
                    continue
                preds.append((label, vals))
        return incoming

    # -- operations ---------------------------------------------------------------------

    def op(self, op: Operation) -> None:
        kind = type(op)
        lines = self.lines
        if isinstance(op, LITERAL_OPS):
            return
        if (binop := BINOPS.get(kind)) is not None:
            opc, flags = binop
            lhs, rhs = op.operands
            lines.append(
                f"  {self.names[op.results[0]]} = {opc}{flags(op)} {self.typed(lhs)}, {self.ref(rhs)}"
            )
        elif (opc := CASTS.get(kind)) is not None:
            (arg,) = op.operands
            res = op.results[0]
            lines.append(
                f"  {self.names[res]} = {opc}{cast_flags(op)} {self.typed(arg)} to "
                f"{type_text(res.type)}"
            )
        elif isinstance(op, llvm.ICmpOp):
            pred = llvm.ICmpPredicateFlag.from_int(op.predicate.value.data).value
            lines.append(
                f"  {self.names[op.res]} = icmp {pred} {self.typed(op.lhs)}, {self.ref(op.rhs)}"
            )
        elif isinstance(op, llvm.FCmpOp):
            pred = llvm.FCmpPredicateFlag.from_int(op.predicate.value.data).value.lstrip("_")
            lines.append(
                f"  {self.names[op.res]} = fcmp{fastmath_flags(op)} {pred} {self.typed(op.lhs)}, "
                f"{self.ref(op.rhs)}"
            )
        elif isinstance(op, llvm.SelectOp):
            lines.append(
                f"  {self.names[op.res]} = select{fastmath_flags(op)} {self.typed(op.cond)}, "
                f"{self.typed(op.lhs)}, {self.typed(op.rhs)}"
            )
        elif isinstance(op, llvm.FNegOp):
            lines.append(f"  {self.names[op.res]} = fneg{fastmath_flags(op)} {self.typed(op.arg)}")
        elif isinstance(op, llvm.GEPOp):
            self._gep(op)
        elif isinstance(op, llvm.LoadOp):
            align = f", align {op.alignment.value.data}" if op.alignment is not None else ""
            lines.append(
                f"  {self.names[op.dereferenced_value]} = load "
                f"{type_text(op.dereferenced_value.type)}, {self.typed(op.ptr)}{align}"
            )
        elif isinstance(op, llvm.StoreOp):
            align = f", align {op.alignment.value.data}" if op.alignment is not None else ""
            volatile = "volatile " if op.volatile_ is not None else ""
            nt = ""
            if op.nontemporal is not None:
                nt = ", !nontemporal !0"
                self.parent.needs_nontemporal = True
            lines.append(
                f"  store {volatile}{self.typed(op.value)}, {self.typed(op.ptr)}{align}{nt}"
            )
        elif isinstance(op, llvm.CallIntrinsicOp):
            self._call(op, op.intrin.data, list(op.args), op.ress, intrinsic=True)
        elif (name := INTRINSIC_OPS.get(kind)) is not None:
            res = op.results[0]
            self._call(
                op, f"{name}.{intrinsic_suffix(res.type)}", list(op.operands), res, intrinsic=True
            )
        elif isinstance(op, llvm.CallOp):
            if op.callee is None:
                raise ValueError("to_llvm_ir: indirect calls are not supported")
            self._call(op, op.callee.root_reference.data, list(op.args), op.returned)
        elif isinstance(op, llvm.AllocaOp):
            align = f", align {op.alignment.value.data}" if op.alignment is not None else ""
            lines.append(
                f"  {self.names[op.res]} = alloca {type_text(op.elem_type)}, "
                f"{self.typed(op.size)}{align}"
            )
        elif isinstance(op, llvm.BrOp):
            lines.append(f"  br label %{self.labels[op.successor]}{self._loop_hint(op)}")
        elif isinstance(op, llvm.CondBrOp):
            lines.append(
                f"  br {self.typed(op.cond)}, label %{self.labels[op.then_block]}, "
                f"label %{self.labels[op.else_block]}"
            )
        elif isinstance(op, llvm.ReturnOp):
            lines.append(f"  ret {self.typed(op.arg)}" if op.arg is not None else "  ret void")
        elif isinstance(op, llvm.ExtractValueOp):
            pos = ", ".join(str(p) for p in op.position.iter_values())
            lines.append(f"  {self.names[op.res]} = extractvalue {self.typed(op.container)}, {pos}")
        elif isinstance(op, llvm.InsertValueOp):
            pos = ", ".join(str(p) for p in op.position.iter_values())
            lines.append(
                f"  {self.names[op.res]} = insertvalue {self.typed(op.container)}, "
                f"{self.typed(op.value)}, {pos}"
            )
        elif isinstance(op, llvm.InsertElementOp):
            lines.append(
                f"  {self.names[op.res]} = insertelement {self.typed(op.vector)}, "
                f"{self.typed(op.value)}, {self.typed(op.index)}"
            )
        elif isinstance(op, llvm.ShuffleVectorOp):
            mask = [f"i32 {m}" for m in op.mask.iter_values()]
            lines.append(
                f"  {self.names[op.res]} = shufflevector {self.typed(op.v1)}, "
                f"{self.typed(op.v2)}, <{len(mask)} x i32> <{', '.join(mask)}>"
            )
        elif isinstance(op, llvm.UnreachableOp):
            lines.append("  unreachable")
        else:
            hint = ""
            if op.name == "builtin.unrealized_conversion_cast":
                hint = " (run reconcile-unrealized-casts; is every op lowered to llvm?)"
            raise ValueError(f"to_llvm_ir: unsupported operation '{op.name}'{hint}")

    def _gep(self, op: llvm.GEPOp) -> None:
        ssa = iter(op.ssa_indices)
        current: Attribute = op.elem_type
        parts: list[str] = []
        for pos, raw in enumerate(op.rawConstantIndices.iter_values()):
            in_struct = pos > 0 and isinstance(current, llvm.LLVMStructType)
            if raw == llvm.GEP_USE_SSA_VAL:
                parts.append(self.typed(next(ssa)))
            else:
                parts.append(f"{'i32' if in_struct else 'i64'} {raw}")
            if pos > 0:
                if isinstance(current, llvm.LLVMArrayType):
                    current = current.type
                elif isinstance(current, llvm.LLVMStructType) and raw != llvm.GEP_USE_SSA_VAL:
                    current = current.types.data[raw]
        inbounds = " inbounds" if op.inbounds is not None else ""
        self.lines.append(
            f"  {self.names[op.result]} = getelementptr{inbounds} {type_text(op.elem_type)}, "
            f"{self.typed(op.ptr)}, {', '.join(parts)}"
        )

    def _loop_hint(self, op: llvm.BrOp) -> str:
        """`, !llvm.loop !n` for a back edge hinted by `loop_hints`, else nothing."""
        try:
            count = interleave_of(op)
        except ValueError as e:
            raise ValueError(f"to_llvm_ir: {e}") from None
        if count is None:
            return ""
        meta = self.parent.loop_metadata
        n = 1 + 2 * len(meta)
        meta.append(_loop_node(n, count))
        return f", !llvm.loop !{n}"

    def _call(
        self,
        op: Operation,
        callee: str,
        args: list[SSAValue],
        result: SSAValue | None,
        intrinsic: bool = False,
    ) -> None:
        ret = type_text(result.type) if result is not None else "void"
        if intrinsic:
            self.parent.declare_intrinsic(callee, ret, [type_text(a.type) for a in args])
        arg_str = ", ".join(self.typed(a) for a in args)
        prefix = f"{self.names[result]} = " if result is not None else ""
        self.lines.append(f"  {prefix}call{fastmath_flags(op)} {ret} @{callee}({arg_str})")


def to_llvm_ir(module: ModuleOp) -> str:
    """LLVM IR text of a module containing only ``llvm.func`` and ``llvm.mlir.global`` ops."""
    return _ModuleEmitter(module).emit()
