"""`convert-rlx-to-linalg`: bufferize a tensor-level rlx function into destination-passing
style on memrefs, with every rlx op lowered to a call of a deduplicated private kernel.

ABI of each converted function (the runtime codes against it):
  (inputs..., params..., outputs...) -> ()
  * inputs: the original tensor arguments as memrefs, same order
    (`rlx.kind = "input"`, `rlx.name` = the argument's `rlx.name` or `arg<i>`);
  * params: one memref per distinct `rlx.param` name, in order of first appearance
    (`rlx.kind = "param"`, `rlx.name` = the param name);
  * outputs: one memref per original result, written by the function
    (`rlx.kind = "output"`, `rlx.name` = the result's `rlx.name` result attribute when every
    result has a distinct plain one, as ONNX imports do, else `"out<i>"`);
  * status (only when an op checks its data at run time, `traps.needs_status`): the
    status record `memref<5xi64>` (`rlx.kind = "status"`); the function attribute
    `rlx.error_sites` names each checked op (its location and name), by site number.
Integer buffers are signless (ui8 data is stored as i8). Intermediates are `memref.alloc`s
(freed at the end; `plan-memory` turns them into views of one arena); a returned value is
computed straight into its output buffer when possible, otherwise copied.

Compile time scales with distinct kernels: each rlx op becomes `func.call @rlx_k<N>(ins...,
outs...)`, and ops with the same structural key (name, attributes, types, region body) share
one kernel.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import DYN
from rlx.dialects.rlx.control import IfOp, ScanOp, YieldOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dialects.rlx.shape import ReshapeOp
from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.rlx_to_linalg import parallel, streaming, traps
from rlx.lowering.rlx_to_linalg.cond import lower_if
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, shape
from rlx.lowering.rlx_to_linalg.kernel_builder import memref_of as _memref_of
from rlx.lowering.rlx_to_linalg.kernels import Kernels, copy_kernel, op_key
from rlx.lowering.rlx_to_linalg.registry import LOWERINGS
from rlx.lowering.rlx_to_linalg.scan import lower_scan
from rlx.lowering.rlx_to_linalg.shape_ops import reshape_view

PASS = "convert-rlx-to-linalg"

STRUCTURAL: frozenset[type[Operation]] = frozenset(
    {ParamOp, ConstantOp, ReshapeOp, ScanOp, IfOp, YieldOp}
)
"""Ops the bufferizer lowers itself instead of through a kernel emitter (`LOWERINGS`):
params are ABI arguments, constants globals or fills, reshapes views, scans loops over
their body (whose `rlx.yield` becomes the loop's carried values), ifs `scf.if`s."""

_memref_memo = functools.lru_cache(maxsize=4096)(_memref_of)


def memref_of(t: Attribute) -> MemRefType:
    """`types.memref_of`, memoized: building a MemRefType verifies it (~0.5 ms a call)."""
    try:
        return _memref_memo(t)
    except TypeError:  # an unhashable type parameter
        return _memref_of(t)


_ALLOC_PROPS = dict(memref.AllocOp.get(IntegerType(8), 64, [1]).properties)
"""Properties of `memref.alloc {alignment = 64}` without dynamic sizes (shared, immutable)."""


def _alloc_op(t: MemRefType) -> memref.AllocOp:
    """`memref.alloc() {alignment = 64} : t`, as `AllocOp.get` builds it, without re-deriving
    the op layout (xDSL's generated constructors cost ~1 ms each)."""
    if not isinstance(t.layout, NoneAttr) or not isinstance(t.memory_space, NoneAttr):
        return memref.AllocOp.get(t.element_type, 64, t.get_shape())  # as before: plain type
    return memref.AllocOp.create(result_types=[t], properties=dict(_ALLOC_PROPS))


def _dealloc_op(v: SSAValue) -> memref.DeallocOp:
    return memref.DeallocOp.create(operands=[v])


# ----------------------------------------------------------------------------- functions


def _describe(v: SSAValue) -> str:
    if v.name_hint:
        return f"%{v.name_hint}"
    if isinstance(v, OpResult):
        return f"result #{v.index} of {v.op.name}"
    assert isinstance(v, BlockArgument)
    return f"argument #{v.index}"


def check_static(f: func.FuncOp) -> None:
    """Every tensor in the function must have a static shape."""
    values: list[SSAValue] = [a for b in f.body.blocks for a in b.args]
    for o in f.body.walk():
        values.extend(o.results)
        for r in o.regions:
            for b in r.blocks:
                values.extend(b.args)
    for v in values:
        if isinstance(v.type, TensorType) and DYN in v.type.get_shape():
            raise PassFailedException(
                f"{PASS}: {_describe(v)} in @{f.sym_name.data} has dynamic shape {v.type}; run `bind-dims` "
                "(dim_binding) to give every dimension a static size first"
            )


def _arg_dict(old: DictionaryAttr | None, kind: str, name: str) -> DictionaryAttr:
    entries: dict[str, Attribute] = {"rlx.kind": StringAttr(kind), "rlx.name": StringAttr(name)}
    if old is not None:
        entries.update((k, v) for k, v in old.data.items() if k not in entries)
    return DictionaryAttr(entries)


class FuncLowering:
    """Converts one function: signature, buffers, kernel calls."""

    def __init__(
        self,
        f: func.FuncOp,
        kernels: Kernels,
        rng: tuple[int, str],
        parallel: bool = True,
        stream_bytes: int = 0,
    ) -> None:
        self.f = f
        self.parallel = parallel
        self.stream_bytes = stream_bytes
        """Results of at least this many bytes are stored non-temporally (0: never)."""
        self.kernels = kernels
        self.rng = rng
        self.allocs: list[SSAValue] = []
        self.alloc_point: InsertPoint | None = None
        self.dest: dict[SSAValue, SSAValue] = {}
        self.params: dict[str, SSAValue] = {}
        self._callee_props: dict[str, dict[str, Attribute]] = {}
        self.sites: dict[Operation, str] = {}
        """Checked ops (`traps.needs_status`) -> their description, in site-number order."""
        self.site_no: dict[Operation, int] = {}
        self.status: SSAValue | None = None

    def run(self) -> None:
        f = self.f
        check_static(f)
        if len(f.body.blocks) != 1:
            raise PassFailedException(f"{PASS}: @{f.sym_name.data} must have a single block")
        old = f.body.block
        ret = old.last_op
        if not isinstance(ret, func.ReturnOp):
            raise PassFailedException(f"{PASS}: @{f.sym_name.data} must end with func.return")
        params = self._collect_params(old)
        for v in (*old.args, *ret.operands):
            if not isinstance(v.type, TensorType):
                raise PassFailedException(
                    f"{PASS}: {_describe(v)} of @{f.sym_name.data} must be a tensor, got {v.type}"
                )
        in_types = [memref_of(a.type) for a in old.args]
        out_types = [memref_of(v.type) for v in ret.operands]
        self.sites = traps.find_sites(f)
        self.site_no = {o: i for i, o in enumerate(self.sites)}
        st_types = [traps.STATUS_TYPE] if self.sites else []
        new = Block(
            arg_types=[*in_types, *(memref_of(t) for t in params.values()), *out_types, *st_types]
        )
        n_in, n_p, n_o = len(in_types), len(params), len(out_types)
        self.params = dict(zip(params, new.args[n_in : n_in + n_p], strict=True))
        outs = list(new.args[n_in + n_p : n_in + n_p + n_o])
        self.status = new.args[-1] if self.sites else None
        vmap: dict[SSAValue, SSAValue] = dict(zip(old.args, new.args[:n_in], strict=True))
        for v, o in zip(ret.operands, outs, strict=True):
            if (
                isinstance(v, OpResult)
                and v.op.parent_block() is old
                and v not in self.dest
                and self.owns_buffer(v.op)
            ):
                self.dest[v] = o
        _name_args(old, new, list(params), len(out_types), bool(self.sites))
        self.mb = KernelBuilder(new)
        self.lower_ops([o for o in old.ops if o is not ret], vmap)
        for v, o in zip(ret.operands, outs, strict=True):
            if self.dest.get(v) is not o:
                self.call(copy_kernel(self.kernels, memref_of(v.type)), [vmap[v], o])
        for a in self.allocs:
            self.mb.add(_dealloc_op(a))
        self.mb.add(func.ReturnOp())
        self._install(new, params, len(ret.operands))

    def _collect_params(self, block: Block) -> dict[str, Attribute]:
        params: dict[str, Attribute] = {}
        for o in block.walk():
            if not isinstance(o, ParamOp):
                continue
            name = StringAttr(o.param_name)
            t = o.results[0].type
            if name.data in params and params[name.data] != t:
                raise PassFailedException(
                    f"{PASS}: param '{name.data}' is used with two types: {params[name.data]} and {t}"
                )
            params[name.data] = t
        return params

    def _install(self, new: Block, params: dict[str, Attribute], n_out: int) -> None:
        f = self.f
        old = f.body.block
        n_in = len(old.args)
        old_attrs = list(f.arg_attrs.data) if f.arg_attrs is not None else [None] * n_in
        attrs = []
        for i, d in enumerate(old_attrs):
            name = d.data.get("rlx.name") if d is not None else None
            # values hoisted into @prepare (`hoist-param-invariant`) stay "prepared"
            kind = (
                "prepared"
                if d is not None and d.data.get("rlx.kind") == StringAttr("prepared")
                else "input"
            )
            attrs.append(
                _arg_dict(d, kind, name.data if isinstance(name, StringAttr) else f"arg{i}")
            )
        attrs += [_arg_dict(None, "param", p) for p in params]
        attrs += [_arg_dict(None, "output", o) for o in output_names(f, n_out)]
        if self.sites:
            attrs.append(_arg_dict(None, "status", "status"))
            f.attributes[traps.SITES_ATTR] = ArrayAttr([StringAttr(s) for s in self.sites.values()])
        f.body.detach_block(old)
        for o in reversed(list(old.walk())):
            o.drop_all_references()
        f.body.add_block(new)
        f.function_type = FunctionType.from_lists([a.type for a in new.args], [])
        f.arg_attrs = ArrayAttr(attrs)
        f.res_attrs = None

    # -- emission --------------------------------------------------------------------

    @staticmethod
    def owns_buffer(op: Operation) -> bool:
        """Ops whose result gets a fresh buffer (so it can be the output buffer itself)."""
        if isinstance(op, ParamOp | ReshapeOp):
            return False
        if isinstance(op, ConstantOp):
            return _is_splat(op)
        return True

    def alloc(self, t: MemRefType) -> SSAValue:
        op = _alloc_op(t)
        Rewriter.insert_op(op, self.alloc_point or self.mb.ip)
        self.allocs.append(op.memref)
        return op.memref

    def result_buffer(self, r: SSAValue) -> SSAValue:
        d = self.dest.get(r)
        return d if d is not None else self.alloc(memref_of(r.type))

    def call(self, name: str, args: Sequence[SSAValue]) -> None:
        """`func.call @name(args) : (...) -> ()` (the first per callee is built by
        `func.CallOp`, the others copy its properties: same op, ~20x cheaper)."""
        props = self._callee_props.get(name)
        if props is None:
            op = func.CallOp(name, list(args), [])
            self._callee_props[name] = dict(op.properties)
        else:
            op = func.CallOp.create(operands=list(args), properties=dict(props))
        self.mb.add(op)

    def lower_ops(self, ops: Sequence[Operation], vmap: dict[SSAValue, SSAValue]) -> None:
        for op in ops:
            self.lower_op(op, vmap)

    def lower_op(self, op: Operation, vmap: dict[SSAValue, SSAValue]) -> None:
        name = op.name
        if isinstance(op, ParamOp):
            vmap[op.results[0]] = self.params[op.param_name]
        elif isinstance(op, ConstantOp) and not _is_splat(op):
            value = op.value
            assert isinstance(value, DenseIntOrFPElementsAttr)
            sym, t = self.kernels.constant(value)
            vmap[op.results[0]] = self.mb.v(memref.GetGlobalOp(sym, t))
        elif isinstance(op, ConstantOp):
            self._splat(op, vmap)
        elif isinstance(op, ReshapeOp):
            vmap[op.results[0]] = reshape_view(
                self, vmap[op.operands[0]], memref_of(op.results[0].type)
            )
        elif isinstance(op, ScanOp):
            lower_scan(self, op, vmap)
        elif isinstance(op, IfOp):
            lower_if(self, op, vmap)
        elif type(op) in LOWERINGS:
            self._kernel_call(op, vmap)
        else:
            raise PassFailedException(
                f"{PASS}: cannot lower op '{name}' (not an rlx op with a lowering)"
            )

    def _kernel_call(self, op: Operation, vmap: dict[SSAValue, SSAValue]) -> None:
        emit = LOWERINGS[type(op)]
        ins = [vmap[o] for o in op.operands]
        outs = [self.result_buffer(r) for r in op.results]
        if op.results and all(0 in shape(r) for r in op.results):
            vmap.update(zip(op.results, outs, strict=True))
            return  # nothing to compute (a conv with 0 output channels divided by 0)
        n = len(ins)
        extra = self.rng if op.name.startswith("rlx.rng_") else None
        stream = streaming.wants(op, self.stream_bytes)
        chunking = parallel.plan(op, stream) if self.parallel else None
        kernel_op = op if chunking is None else parallel.chunk_op(op, chunking)

        checked = op in self.sites
        st = [self.status] if checked and self.status is not None else []

        def build(kb: KernelBuilder, args: list[SSAValue]) -> None:
            kb.rng_seed, kb.rng_backend = self.rng
            kb.stream_stores = stream
            if checked:
                kb.status = args.pop()
            emit(kb, kernel_op, args[:n], args[n:])

        if chunking is None:
            arg_types = [v.type for v in (*ins, *outs, *st)]
        else:
            types = (*chunking.operand_types, *chunking.result_types)
            arg_types = [*(memref_of(t) for t in types), *(v.type for v in st)]
        key = op_key(kernel_op, (extra, "stream") if stream else extra)
        name = self.kernels.kernel(key, arg_types, build, op.name, noalias=chunking is not None)
        if st:
            traps.set_site(self.mb, st[0], self.site_no[op])
        if chunking is None:
            self.call(name, [*ins, *outs, *st])
        else:
            parallel.discard(kernel_op)
            self.mb.add(
                ParallelCallOp(
                    name, [*ins, *outs, *st], chunking.tasks,
                    [*chunking.strides, *(0 for _ in st)], chunking.max_threads,
                )
            )  # fmt: skip
        for r, b in zip(op.results, outs, strict=True):
            vmap[r] = b

    def _splat(self, op: ConstantOp, vmap: dict[SSAValue, SSAValue]) -> None:
        value = op.value
        assert isinstance(value, DenseIntOrFPElementsAttr)
        r = op.results[0]
        out = self.result_buffer(r)
        t = memref_of(r.type)
        size = len(value.data.data) // len(value)
        first = DenseIntOrFPElementsAttr(
            TensorType(value.get_element_type(), [1]), BytesAttr(value.data.data[:size])
        )
        v = first.get_values()[0]

        def build(kb: KernelBuilder, args: list[SSAValue]) -> None:
            kb.fill(args[0], v if not isinstance(v, tuple) else 0)

        self.call(
            self.kernels.kernel(("splat", str(t), repr(v)), [t], build, "rlx.constant"), [out]
        )
        vmap[r] = out


def _hint(name: str) -> str | None:
    h = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return h if h and not h[0].isdigit() else None


_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def output_names(f: func.FuncOp, n_out: int) -> list[str]:
    """The names of a function's results: their `rlx.name` result attributes (the ONNX
    importer keeps the model's output names there) when every one is a distinct, plain
    name, else `out<i>`."""
    default = [f"out{i}" for i in range(n_out)]
    if f.res_attrs is None or len(f.res_attrs.data) != n_out:
        return default
    names = []
    for d in f.res_attrs.data:
        a = d.data.get("rlx.name") if isinstance(d, DictionaryAttr) else None
        if not isinstance(a, StringAttr) or not _OUTPUT_NAME.fullmatch(a.data):
            return default
        names.append(a.data)
    return names if len(set(names)) == n_out else default


def _name_args(
    old: Block, new: Block, params: Sequence[str], n_out: int, status: bool = False
) -> None:
    """Readable SSA names: the original argument names, the param names, out<i>, status."""
    names = (
        [a.name_hint for a in old.args]
        + [_hint(p) for p in params]
        + [f"out{i}" for i in range(n_out)]
        + (["status"] if status else [])
    )
    for a, n in zip(new.args, names, strict=True):
        a.name_hint = n


def _is_splat(op: Operation) -> bool:
    """A dense constant whose elements are all equal (lowered to a fill kernel)."""
    value = op.value if isinstance(op, ConstantOp) else None
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return False
    n = int(np.prod(shape(op.results[0]), dtype=np.int64))
    raw, count = value.data.data, len(value)
    if n <= 1 or count == 0:
        return False
    size = len(raw) // count
    return raw == raw[:size] * count


def _needs_conversion(f: func.FuncOp) -> bool:
    if f.is_declaration or "rlx.kernel" in f.attributes:
        return False
    types = [*f.function_type.inputs.data, *f.function_type.outputs.data]
    return any(isinstance(t, TensorType) for t in types) or any(
        o.name.startswith("rlx.") for o in f.body.walk()
    )


@dataclass(frozen=True)
class ConvertRlxToLinalgPass(ModulePass):
    """Lower rlx tensor functions to memref functions calling linalg/scf kernels.

    `rng-seed` (a u64) and `rng-backend` ("philox": rlx.formats.philox, bit-exact; "zero":
    all zeros) configure the `rlx.rng_*` ops; the module attributes `rlx.rng_seed` and
    `rlx.rng_backend` recorded by the `rng` pass take precedence. `parallel` (on by
    default) lowers large row-parallel ops to `rlx_rt.parallel_call` over row chunks
    (`rlx_to_linalg.parallel`). Results of at least `stream-bytes` bytes are written
    with non-temporal stores by the kernels that support it (`rlx_to_linalg.streaming`;
    -1, the default: half the host's last-level cache on x86-64, never elsewhere; 0:
    never)."""

    name = "convert-rlx-to-linalg"

    rng_seed: int = 42
    rng_backend: str = "philox"
    parallel: bool = True
    """Chunk large row-parallel ops into `rlx_rt.parallel_call` (threads, cache blocking)."""
    stream_bytes: int = -1
    """Results of at least this many bytes use non-temporal stores (-1: host default)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 0 <= self.rng_seed < 2**64:  # as the rng pass (a negative one was accepted)
            raise PassFailedException(
                f"{PASS}: rng-seed must be in [0, 2**64), got {self.rng_seed}"
            )
        seed, backend = self.rng_seed, self.rng_backend
        seed_attr, backend_attr = (
            op.attributes.get("rlx.rng_seed"),
            op.attributes.get("rlx.rng_backend"),
        )
        if isinstance(seed_attr, IntegerAttr):
            seed = seed_attr.value.data % 2**64
        if isinstance(backend_attr, StringAttr):
            backend = backend_attr.data
        if backend not in ("philox", "zero"):
            raise PassFailedException(
                f"{PASS}: rng-backend must be philox or zero, got {backend!r}"
            )
        if self.stream_bytes < -1:
            raise PassFailedException(
                f"{PASS}: stream-bytes must be >= -1, got {self.stream_bytes}"
            )
        stream = streaming.threshold(self.stream_bytes)
        kernels = Kernels(op)
        for f in [o for o in op.ops if isinstance(o, func.FuncOp)]:
            if _needs_conversion(f):
                FuncLowering(f, kernels, (seed, backend), self.parallel, stream).run()
        _mark_shared_kernels(op)


def _mark_shared_kernels(module: ModuleOp) -> None:
    """Kernels called from several places get `passthrough = ["noinline"]` (the llvm.func
    attribute), so LLVM compiles each once instead of inlining a copy per call site."""
    calls: dict[str, int] = {}
    for o in module.walk():
        if isinstance(o, func.CallOp):
            name = o.callee.root_reference.data
            calls[name] = calls.get(name, 0) + 1
    for f in module.ops:
        if (
            isinstance(f, func.FuncOp)
            and "rlx.kernel" in f.attributes
            and calls.get(f.sym_name.data, 0) > 1
        ):
            f.attributes["passthrough"] = ArrayAttr([StringAttr("noinline")])
