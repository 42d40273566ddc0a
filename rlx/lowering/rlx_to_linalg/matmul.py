"""Matmul family: matmul, fused_matmul_bias_act, fused_swiglu.

A matmul is `linalg.fill` + one `linalg.generic` over (batch..., i, k, j) with j innermost,
so the inner loop streams a row of b and of the output with unit stride and LLVM can
vectorize it; batch dims follow NumPy broadcasting (a size-1 batch dim maps to 0). The sum
uses reassoc+contract. f16/bf16 accumulate in an f32 scratch buffer; epilogues (bias,
activation, swiglu gating, narrowing) are one more elementwise generic.

Fast path (`blas_gemm`): an f32/f64 matmul of contiguous buffers with at least
`BLAS_MIN_MNK` multiply-adds calls the platform BLAS (`rlx.runtime.blas`: SciPy's
sgemm/dgemm, Fortran ABI, row-major via C^T = B^T A^T) once per batch, or once for all
batches when b has no batch dims. It is taken only when `rlx.runtime.blas.register()`
published the symbol (opt-in, `RLX_BLAS=1`; see there why); otherwise the loop nest.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IndexType,
    MemRefType,
    NoneAttr,
    StringAttr,
    f32,
    i8,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.fused import FusedMatmulBiasActOp, FusedSwigluOp
from rlx.dialects.rlx.gemm import PackedMatmulOp, PackRhsOp
from rlx.lowering.blas_abi import SYMBOLS, available, gemm_mode
from rlx.lowering.gemm.driver import Epilogue, eligible_types, emit_gemm
from rlx.lowering.gemm.driver import eligible as gemm_eligible
from rlx.lowering.gemm.packing import loader, pack
from rlx.lowering.gemm.target import MIN_MNK, host_tile
from rlx.lowering.rlx_to_linalg.elementwise import activation
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_RED,
    PARALLEL,
    REDUCTION,
    Emitter,
    KernelBuilder,
    amap,
    bcast_exprs,
    bcast_map,
    compute_type,
    dim,
    elem,
    identity,
    is_float_t,
    shape,
)

BLAS_MIN_MNK = MIN_MNK
"""Smallest M*N*K (per GEMM) sent to BLAS; below it the loop nest is cheaper (the same
threshold as the generated GEMM's, `gemm.target.MIN_MNK`)."""


def mm_maps(
    a: Sequence[int], b: Sequence[int], out: Sequence[int]
) -> tuple[AffineMap, AffineMap, AffineMap, list[str]]:
    """Indexing maps of out[batch, i, j] += a[batch', i, k] * b[batch'', k, j] over
    the iteration dims (batch..., i, k, j)."""
    nb = len(out) - 2
    n = nb + 3
    bo = out[:nb]
    a_map = amap(n, [*bcast_exprs(a[:-2], bo), dim(nb), dim(nb + 1)])
    b_map = amap(n, [*bcast_exprs(b[:-2], bo), dim(nb + 1), dim(nb + 2)])
    o_map = amap(n, [*(dim(i) for i in range(nb)), dim(nb), dim(nb + 2)])
    return a_map, b_map, o_map, [PARALLEL] * (nb + 1) + [REDUCTION, PARALLEL]


def mac(kb: KernelBuilder, acc: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    if is_float_t(acc.type):
        return kb.addf(acc, kb.mulf(x, y, FM_RED), FM_RED)
    return kb.addi(acc, kb.muli(x, y))


def accumulator(kb: KernelBuilder, out: SSAValue) -> SSAValue:
    """The output itself when it has the compute type, else an f32 scratch of its shape."""
    ct = compute_type(elem(out))
    return out if ct == elem(out) else kb.scratch(shape(out), ct)


def matmul_into(kb: KernelBuilder, a: SSAValue, b: SSAValue, acc: SSAValue) -> None:
    kb.fill(acc, 0.0 if is_float_t(elem(acc)) else 0)
    a_map, b_map, o_map, iters = mm_maps(shape(a), shape(b), shape(acc))
    kb.generic(
        [a, b],
        [acc],
        [a_map, b_map, o_map],
        iters,
        lambda x, y, c: [mac(kb, c, kb.convert(x, c.type), kb.convert(y, c.type))],
    )


def _blas_dtype_t(*types: Attribute) -> str | None:
    """Element type "f32"/"f64" when every type is a memref of it with an identity layout."""
    kinds = set()
    for t in types:
        if not isinstance(t, MemRefType) or not isinstance(t.layout, NoneAttr):
            return None
        e = t.element_type
        kinds.add(
            "f32" if isinstance(e, Float32Type) else "f64" if isinstance(e, Float64Type) else ""
        )
    return kinds.pop() if len(kinds) == 1 and "" not in kinds else None


def _blas_dtype(*vals: SSAValue) -> str | None:
    """`_blas_dtype_t` of the values' types."""
    return _blas_dtype_t(*(v.type for v in vals))


def shape_of_type(t: Attribute) -> tuple[int, ...]:
    return tuple(t.get_shape()) if isinstance(t, MemRefType) else ()


def _declare(
    kb: KernelBuilder, name: str, ins: Sequence[Attribute], outs: Sequence[Attribute]
) -> bool:
    """Declare external function `name` in the kernel's module (False if no module)."""
    owner = kb.kernels
    if owner is None:
        return False
    for o in owner.module.ops:
        if isinstance(o, func.FuncOp) and o.sym_name.data == name:
            return True
    owner.module.body.block.add_op(func.FuncOp.external(name, list(ins), list(outs)))
    owner.symbols.add(name)
    return True


def _ptr(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    return kb.v(memref.ExtractAlignedPointerAsIndexOp.get(mem))


def _strides(shp: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shp):
        out.append(acc)
        acc *= d
    return out[::-1]


def blas_ready(kb: KernelBuilder, dtype: str) -> bool:
    """True when generated code may call the GEMM of `dtype` ("f32"/"f64"): BLAS is
    enabled and found, and its symbol is declared in the kernel's module."""

    return available(dtype) and _declare(kb, SYMBOLS[dtype], [IndexType()] * 13, [])


Dim = int | SSAValue
"""A GEMM size or leading dimension: a constant or an index value."""


class Gemm:
    """Emits calls of the BLAS GEMM of one element type (declared by `blas_ready` first)
    on row-major matrices: C = alpha op(A) op(B) + beta C, with A, B, C given as the byte
    addresses (index values, e.g. `_ptr` plus an offset) of their first element. The
    Fortran routine is column-major, so the call is C^T = op(B)^T op(A)^T: the operands
    and the transpose flags swap places. Its scalar arguments go through small scratch
    buffers (by reference) that every call refills."""

    def __init__(self, kb: KernelBuilder, dtype: str) -> None:

        self.kb = kb
        self.symbol = SYMBOLS[dtype]
        self.et: Attribute = Float32Type() if dtype == "f32" else Float64Type()
        self.esize = 4 if dtype == "f32" else 8
        names = ("m", "n", "k", "lda", "ldb", "ldc")
        self.ints = {nm: kb.scratch([1], i32) for nm in names}
        self.scal = {nm: kb.scratch([1], self.et) for nm in ("alpha", "beta")}
        self.p = {nm: _ptr(kb, v) for nm, v in (*self.ints.items(), *self.scal.items())}
        self._trans: dict[bool, SSAValue] = {}

    def _flag(self, trans: bool) -> SSAValue:
        """Address of the character "T" or "N" (a constant table, made on first use)."""
        if trans not in self._trans:
            table = self.kb.table([ord("T" if trans else "N")], i8)
            self._trans[trans] = self.kb.hoist(memref.ExtractAlignedPointerAsIndexOp.get(table))
        return self._trans[trans]

    def __call__(
        self,
        m: Dim,
        n: Dim,
        k: Dim,
        a: SSAValue,
        lda: Dim,
        b: SSAValue,
        ldb: Dim,
        c: SSAValue,
        ldc: Dim,
        *,
        trans_a: bool = False,
        trans_b: bool = False,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> None:
        """C[m, n] = alpha op(A)[m, k] op(B)[k, n] + beta C[m, n] (row-major; op(X) is X
        or X^T, `ld*` the row strides in elements, as stored: A is [k, m] when trans_a)."""
        kb = self.kb
        for name, val in (("m", n), ("n", m), ("k", k), ("lda", ldb), ("ldb", lda), ("ldc", ldc)):
            iv = kb.const(val, i32) if isinstance(val, int) else kb.convert(val, i32)
            kb.store(iv, self.ints[name], [0])
        kb.store(kb.const(alpha, self.et), self.scal["alpha"], [0])
        kb.store(kb.const(beta, self.et), self.scal["beta"], [0])
        p = self.p
        args = [self._flag(trans_b), self._flag(trans_a),
                p["m"], p["n"], p["k"], p["alpha"], b, p["lda"], a, p["ldb"], p["beta"], c,
                p["ldc"]]  # fmt: skip
        kb.add(func.CallOp(self.symbol, args, []))


def blas_gemm(kb: KernelBuilder, a: SSAValue, b: SSAValue, out: SSAValue) -> bool:
    """Emit out = a @ b as BLAS GEMM call(s); False (nothing emitted) when the operands do
    not qualify: not all f32 or all f64, strided, too small, or BLAS not enabled/found."""
    dtype = _blas_dtype(a, b, out)
    sa, sb, so = list(shape(a)), list(shape(b)), list(shape(out))
    if dtype is None or len(sa) < 2 or len(sb) < 2:
        return False
    m, k, n = sa[-2], sa[-1], sb[-1]
    if m * n * k < BLAS_MIN_MNK or max(m * prod(so[:-2]), n, k) >= 2**31:
        return False
    if not blas_ready(kb, dtype):
        return False
    bo = so[:-2]
    nb = len(bo)
    pa, pb = [1] * (nb - len(sa) + 2) + sa[:-2], [1] * (nb - len(sb) + 2) + sb[:-2]
    collapse = all(d == 1 for d in pb) and pa == bo  # one GEMM over all rows of a
    gm = m * prod(bo) if collapse else m
    gemm = Gemm(kb, dtype)
    base = [_ptr(kb, a), _ptr(kb, b), _ptr(kb, out)]

    def call(ptrs: Sequence[SSAValue]) -> None:
        pa_, pb_, po_ = ptrs
        gemm(gm, n, k, pa_, k, pb_, n, po_, n)

    if collapse or nb == 0:
        call(base)
        return True
    strides = [
        [s if d != 1 else 0 for s, d in zip(_strides(padded), padded, strict=True)]
        for padded in (pa, pb, bo)
    ]
    mats = [m * k, k * n, m * n]
    with kb.nest(bo) as ivs:
        ptrs = []
        for ptr0, st, mat in zip(base, strides, mats, strict=True):
            off: SSAValue | int = 0
            for iv, s in zip(ivs, st, strict=True):
                if s:
                    off = kb.iadd(off, kb.imul(iv, s * mat * gemm.esize))
            ptrs.append(kb.iadd(ptr0, off))
        call(ptrs)
    return True


SMALL_GEMM_MACS = 1 << 19
"""At most this many multiply-adds (a 128x32x128 attention head, 64^3), OpenBLAS is faster."""


def prefer_blas(m: int, n: int, k: int) -> bool:
    """The measured rule of the default ("auto") mode: f32 GEMMs OpenBLAS does faster than
    the generated GEMM (docs/performance.md, "Generated GEMM"): the small ones, where
    OpenBLAS's per-call cost is lower (one thread: 64^3 61 vs 48 GFLOP/s, 128x32x128 84 vs
    69; from 128x64x128 on within +-5 %, and the generated GEMM scales better on two)."""
    return m * n * k <= SMALL_GEMM_MACS


def path_for_types(a: Attribute, b: Attribute, out: Attribute) -> str:
    """ "blas", "generated" or "loops" for out = a @ b of these memref types (the rule of
    `gemm_path`, also used by the dispatch report on tensor types via `memref_of`)."""
    mode = gemm_mode()
    sa, sb = shape_of_type(a), shape_of_type(b)
    big = len(sa) >= 2 and len(sb) >= 2 and sa[-2] * sa[-1] * sb[-1] >= BLAS_MIN_MNK
    blas_ok = big and mode != "generated" and _blas_dtype_t(a, b, out) is not None
    gen_ok = eligible_types(a, b, out)
    if blas_ok and (mode == "blas" or not gen_ok or prefer_blas(sa[-2], sb[-1], sa[-1])):
        return "blas"
    return "generated" if gen_ok else "loops"


def gemm_path(kb: KernelBuilder, a: SSAValue, b: SSAValue, out: SSAValue) -> str:
    """ "blas", "generated" or "loops": the implementation of out = a @ b."""
    path = path_for_types(a.type, b.type, out.type)
    return "loops" if path == "generated" and kb.kernels is None else path


def _record(kb: KernelBuilder, path: str) -> None:
    """Note the GEMM implementation on the kernel function (`rlx.gemm`), for reports;
    the loop nest has none."""
    fn = kb.entry.parent_op()
    if isinstance(fn, func.FuncOp) and path != "loops":
        label = f"generated {host_tile().name}" if path == "generated" else path
        fn.attributes["rlx.gemm"] = StringAttr(label)


def gemm_into(
    kb: KernelBuilder, a: SSAValue, b: SSAValue, out: SSAValue, epilogue: Epilogue | None = None
) -> bool:
    """out = epilogue(a @ b) through OpenBLAS or the generated GEMM (`gemm_path`); False
    (nothing emitted) when neither applies. With OpenBLAS the epilogue is not applied
    (the caller runs it as a separate pass) and `out` must be f32/f64."""
    path = gemm_path(kb, a, b, out)
    if path == "blas" and blas_gemm(kb, a, b, out):
        _record(kb, "openblas")
        return True
    if path == "generated" or (path == "blas" and gemm_eligible(a, b, out)):
        if emit_gemm(kb, a, b, out, epilogue):
            _record(kb, "generated")
            return True
    return False


def emit_matmul(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    out = outs[0]
    if gemm_into(kb, ins[0], ins[1], out):
        return
    _record(kb, "loops")
    acc = accumulator(kb, out)
    matmul_into(kb, ins[0], ins[1], acc)
    if acc is not out:
        n = len(shape(out))
        kb.generic([acc], [out], [identity(n)] * 2, [PARALLEL] * n, lambda v, _o: [v])


def _activation(op: Operation) -> str:
    """The `activation` attribute of a fused or packed matmul."""
    return str(op.activation)  # type: ignore[attr-defined]


def _bias_epilogue(bias: SSAValue, out_shape: Sequence[int], act: str) -> Epilogue:
    """acc + bias (NumPy-broadcast to the output), then the activation."""
    bs = shape(bias)
    off = len(out_shape) - len(bs)
    if all(d == 1 for d in bs[:-1]) and bs[-1] == out_shape[-1]:
        # a per-column bias: the GEMM passes it as [N] (shape-generic worker)
        def col(
            kb: KernelBuilder, v: SSAValue, idx: list[SSAValue], ops: list[SSAValue]
        ) -> SSAValue:
            return activation(kb, act, kb.addf(v, kb.load_c(ops[0], [idx[-1]])))

        return Epilogue(col, [bias], f"bias[N]+{act}", columns=True)

    def fn(kb: KernelBuilder, v: SSAValue, idx: list[SSAValue], ops: list[SSAValue]) -> SSAValue:
        bidx = [kb.idx(0) if d == 1 else idx[off + i] for i, d in enumerate(bs)]
        return activation(kb, act, kb.addf(v, kb.load_c(ops[0], bidx)))

    return Epilogue(fn, [bias], f"bias+{act}")


def emit_fused_matmul_bias_act(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    act = _activation(op)
    x, w, bias = ins
    out = outs[0]
    if gemm_path(kb, x, w, out) == "generated" and emit_gemm(
        kb, x, w, out, _bias_epilogue(bias, shape(out), act)
    ):
        _record(kb, "generated")
        return
    acc = accumulator(kb, out)
    if acc is out and gemm_path(kb, x, w, out) == "blas" and blas_gemm(kb, x, w, out):
        _record(kb, "openblas")
    else:
        _record(kb, "loops")
        matmul_into(kb, x, w, acc)
    n = len(shape(out))
    bmap = bcast_map(shape(bias), shape(out))
    if acc is out:
        kb.generic(
            [bias],
            [out],
            [bmap, identity(n)],
            [PARALLEL] * n,
            lambda bv, o: [activation(kb, act, kb.addf(o, bv))],
        )
    else:
        kb.generic([acc, bias], [out], [identity(n), bmap, identity(n)], [PARALLEL] * n,
                   lambda v, bv, _o: [activation(kb, act, kb.addf(v, bv))])  # fmt: skip


def emit_fused_swiglu(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    out = outs[0]
    n = len(shape(out))
    if len(ins) == 1:
        os_ = list(shape(out))
        zeros = [0] * (n - 1)
        first, second = (
            kb.subview(ins[0], [*zeros, 0], os_),
            kb.subview(ins[0], [*zeros, os_[-1]], os_),
        )
        gate, up = (
            (first, second) if op.gate_first else (second, first)  # type: ignore[attr-defined]
        )
        kb.generic([gate, up], [out], [identity(n)] * 3, [PARALLEL] * n,
                   lambda g, u, _o: [kb.mulf(activation(kb, "silu", g), u)])  # fmt: skip
        return
    x, wg, wu = ins
    ag = accumulator(kb, out)
    au = kb.scratch(shape(out), elem(ag))
    fast = (ag is out or isinstance(elem(ag), Float32Type)) and elem(ag) == elem(au)
    if not (fast and gemm_into(kb, x, wg, ag) and gemm_into(kb, x, wu, au)):
        _record(kb, "loops")
        kb.fill(ag, 0.0)
        kb.fill(au, 0.0)
        a_map, g_map, o_map, iters = mm_maps(shape(x), shape(wg), shape(out))
        u_map = mm_maps(shape(x), shape(wu), shape(out))[1]
        kb.generic([x, wg, wu], [ag, au], [a_map, g_map, u_map, o_map, o_map], iters,
                   lambda xv, g, u, agv, auv: [mac(kb, agv, xv, g), mac(kb, auv, xv, u)])  # fmt: skip
    ins2 = [ag, au] if ag is not out else [au]

    def epi(*a: SSAValue) -> list[SSAValue]:
        g, u = (a[0], a[1]) if ag is not out else (a[1], a[0])
        return [kb.mulf(activation(kb, "silu", g), u)]

    kb.generic(ins2, [out], [identity(n)] * (len(ins2) + 1), [PARALLEL] * n, epi)


def _width(op: Operation, name: str) -> int:
    """An integer attribute (`width`, `n`) of the packed ops."""
    return int(getattr(op, name))


def emit_pack_rhs(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """w [K, N] -> panels [P, K, width] (`rlx.lowering.gemm.packing.pack`)."""
    k, n = shape(ins[0])
    pack(kb, outs[0], [], n, k, _width(op, "width"), loader(ins[0], [], True))


def emit_packed_matmul(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """The generated GEMM on pre-packed panels; when their width is not the host tile's
    (a module packed for another CPU), unpack into a scratch [K, N] and lower as a
    (fused) matmul."""
    x, wp = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    out = outs[0]
    act = _activation(op)
    epi = _bias_epilogue(bias, shape(out), act) if bias is not None else None
    if epi is None and act != "none":
        epi = Epilogue(lambda kb_, v, _i, _o: activation(kb_, act, v), [], act, columns=True)
    if emit_gemm(kb, x, wp, out, epi, packed=True):
        _record(kb, "generated")
        return
    p, k, w = shape(wp)
    n = _width(op, "n")
    full = kb.scratch([k, n], f32)
    with kb.nest([k, n]) as (ki, j):
        q = kb.idiv(j, w)
        c = kb.v(arith.RemUIOp(j, kb.idx(w)))
        kb.store(kb.load(wp, [q, ki, c]), full, [ki, j])
    wide = x if isinstance(elem(x), Float32Type) else None
    if wide is None:
        wide = kb.scratch(shape(x), f32)
        nx = len(shape(x))
        kb.generic([x], [wide], [identity(nx)] * 2, [PARALLEL] * nx, lambda v, _o: [v])
    acc = out if isinstance(elem(out), Float32Type) else kb.scratch(shape(out), f32)
    if not gemm_into(kb, wide, full, acc):
        _record(kb, "loops")
        matmul_into(kb, wide, full, acc)
    nd = len(shape(out))
    ins2 = [acc] + ([bias] if bias is not None else [])
    maps = [identity(nd)] + ([bcast_map(shape(bias), shape(out))] if bias is not None else [])

    def fin(*vals: SSAValue) -> list[SSAValue]:
        v = vals[0] if bias is None else kb.addf(vals[0], vals[1])
        return [activation(kb, act, v)]

    kb.generic(ins2, [out], [*maps, identity(nd)], [PARALLEL] * nd, fin)


LOWERINGS: dict[type[Operation], Emitter] = {
    PackRhsOp: emit_pack_rhs,
    PackedMatmulOp: emit_packed_matmul,
    MatmulOp: emit_matmul,
    FusedMatmulBiasActOp: emit_fused_matmul_bias_act,
    FusedSwigluOp: emit_fused_swiglu,
}
