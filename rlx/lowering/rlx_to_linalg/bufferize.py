"""`convert-rlx-to-linalg`: bufferize a tensor-level rlx function into destination-passing
style on memrefs, with every rlx op lowered to a call of a deduplicated private kernel.

The converted function's signature (inputs, params, outputs, status: the ABI the runtime
codes against) is `rlx_to_linalg.signature`'s. Intermediates are `memref.alloc`s
(freed at the end; `plan-memory` turns them into views of one arena); a returned value is
computed straight into its output buffer when possible, otherwise copied.

Compile time scales with distinct kernels: each rlx op becomes `func.call @rlx_k<N>(ins...,
outs...)`, and ops with the same structural key (name, attributes, types, region body) share
one kernel.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.control import IfOp, ScanOp, YieldOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dialects.rlx.shape import ReshapeOp
from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.rlx_to_linalg import parallel, signature, streaming, traps
from rlx.lowering.rlx_to_linalg.cond import lower_if
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
from rlx.lowering.rlx_to_linalg.kernels import Kernels, copy_kernel, op_key
from rlx.lowering.rlx_to_linalg.registry import LOWERINGS
from rlx.lowering.rlx_to_linalg.scan import lower_scan
from rlx.lowering.rlx_to_linalg.shape_ops import reshape_view
from rlx.lowering.rlx_to_linalg.signature import PASS
from rlx.lowering.rlx_to_linalg.types import memref_of as _memref_of
from rlx.lowering.rlx_to_linalg.types import shape

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
        signature.check_static(f)
        if len(f.body.blocks) != 1:
            raise PassFailedException(f"{PASS}: @{f.sym_name.data} must have a single block")
        old = f.body.block
        ret = old.last_op
        if not isinstance(ret, func.ReturnOp):
            raise PassFailedException(f"{PASS}: @{f.sym_name.data} must end with func.return")
        params = signature.collect_params(old)
        for v in (*old.args, *ret.operands):
            if not isinstance(v.type, TensorType):
                raise PassFailedException(
                    f"{PASS}: {signature.describe(v)} of @{f.sym_name.data} must be a tensor, got {v.type}"
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
        signature.name_args(old, new, list(params), len(out_types), bool(self.sites))
        self.mb = KernelBuilder(new)
        self.lower_ops([o for o in old.ops if o is not ret], vmap)
        for v, o in zip(ret.operands, outs, strict=True):
            if self.dest.get(v) is not o:
                self.call(copy_kernel(self.kernels, memref_of(v.type)), [vmap[v], o])
        for a in self.allocs:
            self.mb.add(_dealloc_op(a))
        self.mb.add(func.ReturnOp())
        signature.install(f, new, params, len(ret.operands), list(self.sites.values()))

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
