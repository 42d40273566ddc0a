"""Attention (one fused scf kernel per op) and rope (linalg.generic, rotate-half).

Attention semantics (docs/dialect.md), per (b, h, i) query row, in the compute type (f32
for f32/f16/bf16):
  1. live keys j in [lo, hi): causal keeps j <= i + offset, sliding_window also
     j >= i + offset - window (offset = Sk - Sq); masked keys get probability exactly 0;
  2. s_j = (q_i . k_j) * scale [+ bias], then softcap * tanh(s_j / softcap), tracking the
     row max m over the live keys (m := 0 when not finite, as the reference does);
  3. e_j = exp(s_j - m) (a -inf score gives 0), denominator d = sum e_j; a row whose
     max is -inf has no live key and d := 0 (the f32 exp expansion clamps its argument,
     so exp(-inf) is not exactly 0);
  4. out_i = sum_j (e_j / d) v_j; a row without live keys (d == 0) is all zeros.
Grouped-query attention: q head h reads k/v head h // (H / Hkv) (`_Attn.kv_head`).

Three kernels, the first that applies:

Flash kernel (`attention_flash`, the default for f32/f16/bf16 with at least
`attention_flash.MIN_QUERY_ROWS` query rows): online softmax over key blocks on the
generated GEMM microkernel, parallel over (batch, head, query block); no BLAS call, no
Sq x Sk buffer. Faster than the BLAS path below on BERT-shaped f32 heads on one thread
(s128 D64: 345 vs 372 us for 6 heads; s512: 5.1 vs 5.5 ms) and 2.4x on f16.

Layout "bshd" ([B, S, H, D] q, k, v, out, `_Attn.ix`): the flash and loop kernels read
and write the operands in place with the seq and heads indices swapped (what a transpose
copy to [B, H, S, D] would have cost is gone); the BLAS path takes "bhsd" only.

BLAS path (f64 — and f32 when `FLASH` is off — with "bhsd", contiguous q, k, v, out, `rlx.runtime.blas` available, at least
`MIN_ROWS` query rows and `BLAS_MIN_WORK` multiply-adds per (b, h)): per (b, h) and
block of bq = min(Sq, `BLOCK_ROWS`, `BLOCK_BYTES` / row bytes) query rows, over the
block's key range [klo, khi) (the union of its rows' live ranges: causal and
sliding-window blocks skip the keys none of their rows sees):
  a. S[bq, klo:khi] = scale * Q_blk K[klo:khi]^T: one GEMM, K read in place with the
     transpose flag, scale as alpha;
  b. per row: bias, softcap and the max over [lo, hi) (one pass, in place), exp and the
     sum (one pass, in place), zeros for the block's keys outside [lo, hi);
  c. O_blk = P V[klo:khi]: one GEMM, straight into the output;
  d. each output row is scaled by 1/d (Dv multiplies per row instead of Sk), rows with
     d == 0 are set to zeros.
A block whose key range is empty (causal with Sq > Sk) skips the GEMMs and writes zeros.

Otherwise (decode steps, f64 with BLAS off or tiny problems) one scalar-loop kernel: per
row, the dot products and the weighted sum of v with the d-loop innermost (unit stride
over v and out); masked keys are never visited.
The dot products and sums use reassoc+contract so LLVM can vectorize the inner loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import math as mathd
from xdsl.dialects import scf
from xdsl.ir import Block, Operation, Region, SSAValue

from rlx.dialects.rlx.compute import AttentionOp, RopeOp, heads_first
from rlx.lowering.rlx_to_linalg import attention_flash
from rlx.lowering.rlx_to_linalg.attention_flash import _bidx
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_RED,
    PARALLEL,
    Emitter,
    KernelBuilder,
    amap,
    bcast_exprs,
    compute_type,
    elem,
    identity,
    shape,
)
from rlx.lowering.rlx_to_linalg.matmul import Dim, Gemm, _blas_dtype, _ptr, blas_ready

FLASH = True
"""f32/f16/bf16 attention takes the flash kernel (`attention_flash`); tests turn this off to
run the BLAS path (which f64 takes) on f32 too."""

BLOCK_ROWS = 128
"""Query rows per block of the BLAS path. Fewer rows make OpenBLAS re-pack K and V for
little work per call (at 16 rows a causal 1024x1024 head is 1.6x slower); more rows
waste more of the causal diagonal block and outgrow L2."""

BLOCK_BYTES = 4 << 20
"""Cap on the [rows, Sk] score block (fewer rows for very long key sequences)."""

MIN_ROWS = 32
"""Fewest query rows (Sq) for the BLAS path: decode-like attention (a few rows against a
long key sequence) is memory bound and the loop kernel streams K and V once."""

BLAS_MIN_WORK = 32 * 32 * 32
"""Smallest Sq * Sk * max(D, Dv) per (batch, head) for which the BLAS path is taken."""


class _Attn:
    """The attributes and shapes of one rlx.attention op."""

    def __init__(self, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]):
        self.q, self.k, self.v = ins[:3]
        self.bias = ins[3] if len(ins) > 3 else None
        self.out = outs[0]
        self.layout = op.layout
        self.b, self.h, self.sq, self.d = heads_first(shape(self.q), self.layout)
        self.hkv, self.sk = heads_first(shape(self.k), self.layout)[1:3]
        self.dv = shape(self.v)[3]
        self.ct = compute_type(elem(self.q))
        self.scale = op.score_scale()
        self.softcap = op.softcap
        self.kind = op.mask_kind
        self.window = op.window
        self.offset = self.sk - self.sq
        self.group = self.h // self.hkv
        """q heads per k/v head (grouped-query attention; 1 otherwise)."""

    def ix(self, b: SSAValue, h: SSAValue, s: SSAValue, d: SSAValue) -> list[SSAValue]:
        """Indices of element (b, h, s, d) of q, k, v or out in the op's layout (the
        "bshd" operands are read in place: no transpose copy)."""
        return [b, s, h, d] if self.layout == "bshd" else [b, h, s, d]

    def kv_head(self, kb: KernelBuilder, hi: SSAValue) -> SSAValue:
        """The k/v head q head `hi` reads."""
        return kb.idiv(hi, self.group) if self.group > 1 else hi

    def key_range(self, kb: KernelBuilder, i: SSAValue, last: SSAValue) -> tuple[Dim, Dim]:
        """[lo, hi) of the keys live for some query row in [i, last]."""
        lo: Dim = 0
        hi: Dim = self.sk
        if self.kind in ("causal", "sliding_window"):
            hi = kb.imax(kb.imin(kb.iadd(last, self.offset + 1), kb.idx(self.sk)), kb.idx(0))
        if self.kind == "sliding_window":
            assert self.window is not None
            lo = kb.imin(kb.imax(kb.iadd(i, self.offset - self.window), kb.idx(0)), kb.idx(hi))
        return lo, hi

    def score(
        self, kb: KernelBuilder, s: SSAValue, bi: SSAValue, hi: SSAValue, i: SSAValue, j: SSAValue
    ) -> SSAValue:
        """Bias and softcap applied to the scaled score `s` of (bi, hi, i, j)."""
        c = lambda x: kb.const(x, self.ct)  # noqa: E731
        if self.bias is not None:
            full = (self.b, self.h, self.sq, self.sk)
            s = kb.addf(s, kb.load_c(self.bias, _bidx(shape(self.bias), full, [bi, hi, i, j], kb)))
        if self.softcap is not None:
            s = kb.mulf(c(self.softcap), kb.unary(mathd.TanhOp, kb.divf(s, c(self.softcap))))
        return s


def _if(
    kb: KernelBuilder, cond: SSAValue, then: Callable[[], None], other: Callable[[], None]
) -> None:
    """`scf.if cond { then() } else { other() }` (no results)."""
    blocks = []
    for build in (then, other):
        blk = Block()
        with kb.at(blk):
            build()
            kb.add(scf.YieldOp())
        blocks.append(blk)
    kb.add(scf.IfOp(cond, [], Region(blocks[0]), Region(blocks[1])))


def _row_max(kb: KernelBuilder, at: _Attn, m: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(the max to subtract, 0 when `m` is not finite; whether `m` is -inf, i.e. the row
    has no live key). The row's denominator is forced to 0 then: exp(-inf) need not be
    exactly 0 (the f32 exp expansion clamps its argument)."""
    c = lambda x: kb.const(x, at.ct)  # noqa: E731
    finite = kb.cmpf("olt", kb.unary(mathd.AbsFOp, m), c(float("inf")))
    return kb.select(finite, m, c(0.0)), kb.cmpf("oeq", m, c(float("-inf")))


def _softmax_rows(
    kb: KernelBuilder,
    at: _Attn,
    scores: SSAValue,
    dens: SSAValue,
    bi: SSAValue,
    hi: SSAValue,
    i0: SSAValue,
    rows: Dim,
    klo: Dim,
    khi: Dim,
) -> None:
    """Step b of the BLAS path: scores[r, klo:khi] := exp(s - m) (zeros for the dead keys
    of row r), dens[r] := the row's sum."""
    c = lambda x: kb.const(x, at.ct)  # noqa: E731
    with kb.loop(rows) as r:
        i = kb.iadd(i0, r)
        lo, hi_ = at.key_range(kb, i, i)
        if at.bias is None and at.softcap is None:

            def rowmax(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
                return [kb.maxf(carried[0], kb.load(scores, [r, j]))]

        else:

            def rowmax(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
                s = at.score(kb, kb.load(scores, [r, j]), bi, hi, i, j)
                kb.store(s, scores, [r, j])
                return [kb.maxf(carried[0], s)]

        m, dead = _row_max(kb, at, kb.loop_carry(hi_, [c(float("-inf"))], rowmax, lb=lo)[0])

        def expsum(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            e = kb.unary(mathd.ExpOp, kb.subf(kb.load(scores, [r, j]), m))
            kb.store(e, scores, [r, j])
            return [kb.addf(carried[0], e, FM_RED)]

        den = kb.loop_carry(hi_, [c(0.0)], expsum, lb=lo)[0]
        kb.store(kb.select(dead, c(0.0), den), dens, [r])
        if at.kind in ("causal", "sliding_window"):
            for lb, ub in ((klo, lo), (hi_, khi)):
                if lb is ub or (isinstance(lb, int) and lb == ub):
                    continue
                with kb.loop(ub, lb=lb) as j:
                    kb.store(c(0.0), scores, [r, j])


def blas_fits(at: _Attn) -> str | None:
    """The BLAS element type ("f32"/"f64") when the BLAS path's shape and type rules hold
    (module docstring; BLAS must also be found, `blas_ready`), else None."""
    dtype = _blas_dtype(at.q, at.k, at.v, at.out) if at.layout == "bhsd" else None
    dims = (at.b, at.h, at.sq, at.sk, at.d, at.dv)
    if dtype is None or min(dims) <= 0 or at.sq < MIN_ROWS:
        return None
    if at.sq * at.sk * max(at.d, at.dv) < BLAS_MIN_WORK or max(at.sk, at.d, at.dv) >= 2**31:
        return None
    return dtype


def _emit_attention_blas(kb: KernelBuilder, at: _Attn) -> bool:
    """The GEMM-based kernel (module docstring); False (nothing emitted) when it does not apply."""
    dtype = blas_fits(at)
    if dtype is None or not blas_ready(kb, dtype):
        return False
    gemm = Gemm(kb, dtype)
    es = gemm.esize
    sq, sk, d, dv = at.sq, at.sk, at.d, at.dv
    bq = max(1, min(sq, BLOCK_ROWS, BLOCK_BYTES // (sk * es)))
    nblk = -(-sq // bq)
    scores = kb.scratch([bq, sk], at.ct)
    dens = kb.scratch([bq], at.ct)
    pq, pk, pv, po, ps = (_ptr(kb, x) for x in (at.q, at.k, at.v, at.out, scores))
    c = lambda x: kb.const(x, at.ct)  # noqa: E731
    with kb.nest([at.b, at.h, nblk]) as (bi, hi, blk):
        bh = kb.iadd(kb.imul(bi, at.h), hi)
        bhk = kb.iadd(kb.imul(bi, at.h // at.group), at.kv_head(kb, hi))
        i0 = kb.imul(blk, bq)
        rows: Dim = bq if sq % bq == 0 else kb.imin(kb.idx(bq), kb.idx(_sub(kb, sq, i0)))
        masked = at.kind in ("causal", "sliding_window")
        last = kb.iadd(i0, _sub(kb, rows, 1)) if masked else i0
        klo, khi = at.key_range(kb, i0, last)
        nk = _sub(kb, khi, klo)
        qrow = kb.imul(kb.iadd(kb.imul(bh, sq), i0), d * es)
        orow = kb.imul(kb.iadd(kb.imul(bh, sq), i0), dv * es)
        kv0 = kb.iadd(kb.imul(bhk, sk), klo)
        s0 = kb.iadd(ps, klo * es if isinstance(klo, int) else kb.imul(klo, es))

        def body() -> None:
            # a. S[:, klo:khi] = scale * Q_blk K[klo:khi]^T
            gemm(rows, nk, d, kb.iadd(pq, qrow), d, kb.iadd(pk, kb.imul(kv0, d * es)), d,
                 s0, sk, trans_b=True, alpha=at.scale)  # fmt: skip
            _softmax_rows(kb, at, scores, dens, bi, hi, i0, rows, klo, khi)
            # c. O_blk = P[:, klo:khi] V[klo:khi]
            gemm(rows, dv, nk, s0, sk, kb.iadd(pv, kb.imul(kv0, dv * es)), dv,
                 kb.iadd(po, orow), dv)  # fmt: skip
            # d. O_blk[r] *= 1 / d_r; zeros where d_r == 0
            with kb.loop(rows) as r:
                den = kb.load(dens, [r])
                pos = kb.cmpf("ogt", den, c(0.0))
                inv = kb.divf(c(1.0), kb.select(pos, den, c(1.0)))
                i = kb.iadd(i0, r)
                with kb.loop(dv) as dd:
                    o = kb.load(at.out, [bi, hi, i, dd])
                    kb.store(kb.select(pos, kb.mulf(o, inv), c(0.0)), at.out, [bi, hi, i, dd])

        def zeros() -> None:
            with kb.loop(rows) as r:
                with kb.loop(dv) as dd:
                    kb.store(c(0.0), at.out, [bi, hi, kb.iadd(i0, r), dd])

        if masked and at.offset < 0:
            # the first rows of a causal / sliding-window attention with Sq > Sk see no key
            _if(kb, kb.cmpi("sgt", kb.idx(nk), kb.idx(0)), body, zeros)
        else:
            body()
    return True


def _sub(kb: KernelBuilder, a: Dim, b: Dim) -> Dim:
    """a - b on index values (folded for constants)."""
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    if isinstance(b, int) and b == 0:
        return a
    return kb.subi(kb.idx(a), kb.idx(b))


def emit_attention(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    at = _Attn(op, ins, outs)
    if FLASH and attention_flash.applies(kb, at):
        attention_flash.emit_flash(kb, at)
        return
    if _emit_attention_blas(kb, at):
        return
    _emit_attention_loops(kb, at)


def _emit_attention_loops(kb: KernelBuilder, at: _Attn) -> None:
    """The scalar-loop kernel (f16/bf16, no BLAS, tiny problems)."""
    q, k, v, out = at.q, at.k, at.v, at.out
    b_, h_, sq, d, sk, dv, ct = at.b, at.h, at.sq, at.d, at.sk, at.dv, at.ct
    c = lambda x: kb.const(x, ct)  # noqa: E731
    scores = kb.scratch([max(sk, 1)], ct)
    acc = out if elem(out) == ct else kb.scratch([max(dv, 1)], ct)
    with kb.nest([b_, h_, sq]) as (bi, hi, i):
        lo, hi_ = at.key_range(kb, i, i)
        hk = at.kv_head(kb, hi)

        def score(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            def dot(dd: SSAValue, acc_: list[SSAValue]) -> list[SSAValue]:
                x = kb.mulf(
                    kb.load_c(q, at.ix(bi, hi, i, dd)), kb.load_c(k, at.ix(bi, hk, j, dd)), FM_RED
                )
                return [kb.addf(acc_[0], x, FM_RED)]

            s = kb.mulf(kb.loop_carry(d, [c(0.0)], dot)[0], c(at.scale))
            s = at.score(kb, s, bi, hi, i, j)
            kb.store(s, scores, [j])
            return [kb.maxf(carried[0], s)]

        m, dead = _row_max(kb, at, kb.loop_carry(hi_, [c(float("-inf"))], score, lb=lo)[0])

        def expsum(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            e = kb.unary(mathd.ExpOp, kb.subf(kb.load(scores, [j]), m))
            kb.store(e, scores, [j])
            return [kb.addf(carried[0], e, FM_RED)]

        den = kb.select(dead, c(0.0), kb.loop_carry(hi_, [c(0.0)], expsum, lb=lo)[0])
        pos = kb.cmpf("ogt", den, c(0.0))
        inv = kb.select(pos, kb.divf(c(1.0), kb.select(pos, den, c(1.0))), c(0.0))

        def at_(dd: SSAValue) -> list[SSAValue]:
            return at.ix(bi, hi, i, dd) if acc is out else [dd]

        with kb.loop(dv) as dd:
            kb.store(c(0.0), acc, at_(dd))
        with kb.loop(hi_, lb=lo) as j:
            p = kb.mulf(kb.load(scores, [j]), inv)
            with kb.loop(dv) as dd:
                cur = kb.load(acc, at_(dd))
                kb.store(
                    kb.addf(cur, kb.mulf(p, kb.load_c(v, at.ix(bi, hk, j, dd)), FM_RED), FM_RED),
                    acc,
                    at_(dd),
                )
        if acc is not out:
            with kb.loop(dv) as dd:
                kb.store_c(kb.load(acc, [dd]), out, at.ix(bi, hi, i, dd))


def emit_rope(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """out[..., i] = x_i c_i - x_{i+h} s_i and out[..., i+h] = x_{i+h} c_i + x_i s_i for
    i < h = n_rot/2: one generic over [..., h] on subviews of the two halves (two
    outputs); the dims >= n_rot are copied."""
    x, cos, sin = ins
    out = outs[0]
    xs = shape(x)
    n = len(xs)
    dd = xs[-1]
    n_rot = op.rotated_dims()
    half = n_rot // 2
    hs = [*xs[:-1], half]
    zeros = [0] * (n - 1)
    x1, x2 = kb.subview(x, [*zeros, 0], hs), kb.subview(x, [*zeros, half], hs)
    o1, o2 = kb.subview(out, [*zeros, 0], hs), kb.subview(out, [*zeros, half], hs)
    idm = identity(n)
    cmap, smap = amap(n, bcast_exprs(shape(cos), hs)), amap(n, bcast_exprs(shape(sin), hs))

    def body(
        a1: SSAValue, a2: SSAValue, cv: SSAValue, sv: SSAValue, _o1: SSAValue, _o2: SSAValue
    ) -> list[SSAValue]:
        cv, sv = kb.convert(cv, a1.type), kb.convert(sv, a1.type)
        r1 = kb.subf(kb.mulf(a1, cv), kb.mulf(a2, sv))
        r2 = kb.addf(kb.mulf(a2, cv), kb.mulf(a1, sv))
        return [r1, r2]

    kb.generic([x1, x2, cos, sin], [o1, o2], [idm, idm, cmap, smap, idm, idm], [PARALLEL] * n, body)
    if n_rot < dd:
        ts = [*xs[:-1], dd - n_rot]
        xt, ot = kb.subview(x, [*zeros, n_rot], ts), kb.subview(out, [*zeros, n_rot], ts)
        kb.generic([xt], [ot], [idm, idm], [PARALLEL] * n, lambda v, _o: [v], compute=False)


LOWERINGS: dict[type[Operation], Emitter] = {
    AttentionOp: emit_attention,
    RopeOp: emit_rope,
}
