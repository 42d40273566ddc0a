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

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IndexType,
    MemRefType,
    NoneAttr,
    i8,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.fused import FusedMatmulBiasActOp, FusedSwigluOp
from rlx.lowering.blas_abi import SYMBOLS, available
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
from rlx.lowering.rlx_to_linalg.kernels import Kernels

BLAS_MIN_MNK = 32 * 32 * 32
"""Smallest M*N*K (per GEMM) sent to BLAS; below it the loop nest is cheaper."""


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


def _blas_dtype(*vals: SSAValue) -> str | None:
    """Element type "f32"/"f64" when every buffer has that element type and an identity layout."""
    kinds = set()
    for v in vals:
        t = v.type
        if not isinstance(t, MemRefType) or not isinstance(t.layout, NoneAttr):
            return None
        e = t.element_type
        kinds.add(
            "f32" if isinstance(e, Float32Type) else "f64" if isinstance(e, Float64Type) else ""
        )
    return kinds.pop() if len(kinds) == 1 and "" not in kinds else None


def _declare(
    kb: KernelBuilder, name: str, ins: Sequence[Attribute], outs: Sequence[Attribute]
) -> bool:
    """Declare external function `name` in the kernel's module (False if no module)."""
    owner = getattr(kb._globals, "__self__", None)  # the Kernels registry building this kernel
    if not isinstance(owner, Kernels):
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


def emit_matmul(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    out = outs[0]
    if blas_gemm(kb, ins[0], ins[1], out):
        return
    acc = accumulator(kb, out)
    matmul_into(kb, ins[0], ins[1], acc)
    if acc is not out:
        n = len(shape(out))
        kb.generic([acc], [out], [identity(n)] * 2, [PARALLEL] * n, lambda v, _o: [v])


def emit_fused_matmul_bias_act(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    act = op.activation
    assert act is not None
    x, w, bias = ins
    out = outs[0]
    acc = accumulator(kb, out)
    if not (acc is out and blas_gemm(kb, x, w, out)):
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
        gate, up = (first, second) if op.gate_first else (second, first)
        kb.generic([gate, up], [out], [identity(n)] * 3, [PARALLEL] * n,
                   lambda g, u, _o: [kb.mulf(activation(kb, "silu", g), u)])  # fmt: skip
        return
    x, wg, wu = ins
    ag = accumulator(kb, out)
    au = kb.scratch(shape(out), elem(ag))
    if not (ag is out and blas_gemm(kb, x, wg, ag) and blas_gemm(kb, x, wu, au)):
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


LOWERINGS: dict[type[Operation], Emitter] = {
    MatmulOp: emit_matmul,
    FusedMatmulBiasActOp: emit_fused_matmul_bias_act,
    FusedSwigluOp: emit_fused_swiglu,
}
