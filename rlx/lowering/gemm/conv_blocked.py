"""Register-tile microkernel of the blocked-layout (NCHWc) direct convolution, and the
small llvm-dialect vector helpers the blocked kernels share.

    func.func private @rlx_k<N>(%x, %xs_cb, %xs_row, %ncb, %nkh, %w, %ws_cb, %ws_blk, %tile)
        attributes {rlx.kernel = "conv nchwc ukernel 14x2x16"}

computes `u` output pixels of one output row times `nblk` output-channel blocks of `B`
channels, each pixel and block one `vector<B x f32>` accumulator (oneDNN / MLAS style):

    for cb < ncb, kh < nkh, kw < KW, i < Bx, p < u (unrolled):
        acc[b, p] += broadcast(x[cb·xs_cb + kh·xs_row + (p·sw + kw·dw)·Bx + i])
                     · w[b·ws_blk + cb·ws_cb + (kh·KW + kw)·Bx·B + i·B : +B]

`x` is a zero-padded f32 slab of input rows (the caller's), so no tap is bounds-tested,
its channels in blocks of Bx (B, or 1: the stem form, an NCHW input, where every tap is
one weight vector and `u` broadcasts); `w` the f32 blocked weights `[F/B, C/Bx, KH, KW,
Bx, B]` at the first block and kernel row; the tile `[nblk, u, B]` (f32) is written at `tile`. Addresses are byte addresses,
strides are in f32 elements. Per step of `i` the kernel loads `nblk` weight vectors and
broadcasts `u` inputs for `nblk · u` FMAs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, IndexType, VectorType, f32, i32, i64
from xdsl.ir import SSAValue

from rlx.conv_plan import VECTOR_REGISTERS
from rlx.host_cpu import vector_isa
from rlx.lowering.gemm.conv import _if
from rlx.lowering.gemm.vector_act import ACTIVATIONS, activation, fma, intrinsic2

if TYPE_CHECKING:  # the rlx_to_linalg package imports this module (no cycle at run time)
    from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
    from rlx.lowering.rlx_to_linalg.kernels import Kernels

ARGS = ("x", "xs_cb", "xs_row", "ncb", "nkh", "w", "ws_cb", "ws_blk", "dst", "valid", "os_blk",
        "bias", "res")  # fmt: skip
"""The microkernel's arguments (all `index`); `valid`, `os_blk`, `bias` and `res` are read
by the fused-epilogue variant only."""


@dataclass(frozen=True)
class VectorEpilogue:
    """An epilogue the microkernel applies in registers before storing straight into an
    f32 output: `+ bias`, `+ residual`, then the activation: relu (max with 0) or clip
    (min(max(v, lo), hi)), as `conv.epilogue` computes them (`llvm.maximum` /
    `llvm.minimum`, like `arith.maximumf` / `minimumf`), or one of
    `vector_act.ACTIVATIONS` (sigmoid, silu, hard_swish, gelu_tanh)."""

    bias: bool
    residual: bool
    act: str
    """"none", "relu", "clip" or one of `vector_act.ACTIVATIONS`."""
    lo: float = 0.0
    hi: float = 0.0


# -- llvm-dialect vector helpers --------------------------------------------------------


def ptr(kb: KernelBuilder, addr: SSAValue) -> SSAValue:
    """An llvm pointer from a byte address (index)."""
    return kb.v(llvm.IntToPtrOp(kb.convert(addr, i64)))


def at(kb: KernelBuilder, base: SSAValue, offset: int | SSAValue) -> SSAValue:
    """`base + offset` f32 elements (a constant, or an index / i64 value)."""
    if isinstance(offset, int):
        return base if offset == 0 else kb.v(llvm.GEPOp(base, [offset], f32))
    off = kb.convert(offset, i64)
    return kb.v(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], f32, ssa_indices=[off]))


def vload(kb: KernelBuilder, p: SSAValue, lanes: int) -> SSAValue:
    return kb.v(llvm.LoadOp(p, VectorType(f32, [lanes]), alignment=4))


def vstore(kb: KernelBuilder, v: SSAValue, p: SSAValue) -> None:
    kb.add(llvm.StoreOp(v, p, alignment=4))


def broadcast(kb: KernelBuilder, s: SSAValue, lanes: int) -> SSAValue:
    vt = VectorType(f32, [lanes])
    undef = kb.v(llvm.UndefOp(vt))
    one = kb.v(llvm.InsertElementOp(undef, s, kb.const(0, i32)))
    splat = DenseArrayBase.from_list(i32, [0] * lanes)
    return kb.v(llvm.ShuffleVectorOp(one, undef, splat, vt))


def vector_epilogue(kb: KernelBuilder, v: SSAValue, bias: SSAValue | None,
                    res: SSAValue | None, epi: VectorEpilogue, lo: SSAValue | None = None,
                    hi: SSAValue | None = None) -> SSAValue:  # fmt: skip
    """`epi` on one accumulator vector: + the bias vector, + the residual vector at the
    pointer `res`, then the activation (`lo`, `hi`: relu / clip's broadcast bounds from
    `bounds`, made here when not given)."""
    if epi.act in ("relu", "clip") and (lo is None or hi is None):
        lo, hi = bounds(kb, epi, v.type.get_shape()[0])  # type: ignore[attr-defined]
    if bias is not None:
        v = kb.v(llvm.FAddOp(v, bias))
    if res is not None:
        v = kb.v(llvm.FAddOp(v, vload(kb, res, v.type.get_shape()[0])))  # type: ignore[attr-defined]
    if epi.act in ("relu", "clip"):
        v = intrinsic2(kb, "maximum", v, lo)
    if epi.act == "clip":
        v = intrinsic2(kb, "minimum", v, hi)
    if epi.act in ACTIVATIONS:
        v = activation(kb, epi.act, v)
    return v


def epilogue_lanes(b: int) -> int:
    """Lanes of the vectors an L1 tile loop runs the exp-based activations on for block
    size `b`: the host's vector width when it is a multiple of `b` (AVX-512 with B = 8:
    two pixels per 16-lane vector, half the instructions of one 8-lane vector per pixel;
    the activation is ~20 instructions and a division per vector), else `b`."""
    lanes = VECTOR_REGISTERS[vector_isa()][1]
    return lanes if lanes > b and lanes % b == 0 else b


def widen(kb: KernelBuilder, v: SSAValue, lanes: int) -> SSAValue:
    """`v` (B lanes) repeated to `lanes` lanes (a per-channel bias for several pixels)."""
    b = v.type.get_shape()[0]  # type: ignore[attr-defined]
    if lanes == b:
        return v
    mask = DenseArrayBase.from_list(i32, list(range(b)) * (lanes // b))
    return kb.v(llvm.ShuffleVectorOp(v, v, mask, VectorType(f32, [lanes])))


def bounds(kb: KernelBuilder, epi: VectorEpilogue, b: int) -> tuple[SSAValue, SSAValue]:
    """The broadcast lower / upper bounds of `epi`'s relu / clip."""
    lo = broadcast(kb, kb.const(epi.lo if epi.act == "clip" else 0.0, f32), b)
    return lo, broadcast(kb, kb.const(epi.hi, f32), b)


def _store_fused(kb: KernelBuilder, acc: list[SSAValue], args: list[SSAValue], u: int,
                 nblk: int, b: int, epi: VectorEpilogue) -> None:  # fmt: skip
    """dst[j·os_blk + p·B : +B] = act(acc + bias[j·B:] + res[j·os_blk + p·B:]) for the
    `valid` pixels p."""
    dst, valid, os_blk, bias, res = args[8:]
    pd, pb, pr = ptr(kb, dst), ptr(kb, bias), ptr(kb, res)
    blk = kb.convert(os_blk, i64)
    lo, hi = bounds(kb, epi, b)
    for j in range(nblk):
        off = kb.v(llvm.MulOp(blk, kb.const(j, i64)))
        dj, rj = at(kb, pd, off), at(kb, pr, off)
        bv = vload(kb, at(kb, pb, j * b), b) if epi.bias else None
        for p in range(u):

            def store(p: int = p, j: int = j, dj: SSAValue = dj, rj: SSAValue = rj,
                      bv: SSAValue | None = bv) -> None:  # fmt: skip
                # inside the pixel test: a pixel past the row reads no residual either
                res_p = at(kb, rj, p * b) if epi.residual else None
                v = vector_epilogue(kb, acc[j * u + p], bv, res_p, epi, lo, hi)
                vstore(kb, v, at(kb, dj, p * b))

            if p == 0:
                store()
            else:
                _if(kb, kb.cmpi("ult", kb.idx(p), valid), store)


def _body(kb: KernelBuilder, args: list[SSAValue], u: int, nblk: int, b: int, kw_: int,
          sw: int, dw: int, epi: VectorEpilogue | None, xb: int) -> None:  # fmt: skip
    x, xs_cb, xs_row, ncb, nkh, w, ws_cb, ws_blk, tile = args[:9]
    px, pw, pt = ptr(kb, x), ptr(kb, w), ptr(kb, tile)
    blk64 = kb.convert(ws_blk, i64)
    wb = [pw] + [at(kb, pw, kb.v(llvm.MulOp(blk64, kb.const(j, i64)))) for j in range(1, nblk)]
    zero = broadcast(kb, kb.const(0.0, f32), b)

    def over_cb(cb: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        xc = at(kb, px, kb.muli(cb, xs_cb))
        woff = kb.muli(cb, ws_cb)

        def over_kh(kh: SSAValue, acc2: list[SSAValue]) -> list[SSAValue]:
            xr = at(kb, xc, kb.muli(kh, xs_row))
            wo = kb.addi(woff, kb.imul(kh, kw_ * xb * b))

            def over_kw(kw: SSAValue | int, acc3: list[SSAValue]) -> list[SSAValue]:
                if isinstance(kw, int):
                    xk, wk = at(kb, xr, kw * dw * xb), kw * xb * b
                else:
                    xk, wk = at(kb, xr, kb.imul(kw, dw * xb)), kb.imul(kw, xb * b)
                wrow = [at(kb, wbj, kb.iadd(wo, wk)) for wbj in wb]

                def over_i(i: SSAValue | int, acc4: list[SSAValue]) -> list[SSAValue]:
                    # one input lane: nblk weight vectors, u broadcasts, nblk·u FMAs (a
                    # loop, not unrolled: LLVM would hoist all B·u broadcasts and spill)
                    xi = at(kb, xk, i)
                    wv = [vload(kb, at(kb, r, i * b if isinstance(i, int) else kb.imul(i, b)), b)
                          for r in wrow]  # fmt: skip
                    out = list(acc4)
                    for p in range(u):
                        s = kb.v(llvm.LoadOp(at(kb, xi, p * sw * xb), f32, alignment=4))
                        bs = broadcast(kb, s, b)
                        for j in range(nblk):
                            out[j * u + p] = fma(kb, bs, wv[j], out[j * u + p])
                    return out

                if xb == 1:
                    return over_i(0, acc3)
                return kb.loop_carry(xb, acc3, over_i)

            if kw_ == 1 or xb == 1 and kw_ <= 3:  # stem form, 3x3: taps unrolled (7x7 spilled)
                for kw in range(kw_):
                    acc2 = over_kw(kw, acc2)
                return acc2
            return kb.loop_carry(kw_, acc2, over_kw)

        return kb.loop_carry(nkh, acc, over_kh)

    final = kb.loop_carry(ncb, [zero] * (nblk * u), over_cb)
    if epi is not None:
        _store_fused(kb, final, args, u, nblk, b, epi)
        return
    for k, v in enumerate(final):
        vstore(kb, v, at(kb, pt, k * b))


def conv_blocked_microkernel(kernels: Kernels, u: int, nblk: int, b: int, kw: int, sw: int,
                             dw: int, epi: VectorEpilogue | None = None,
                             xb: int = 0) -> str:  # fmt: skip
    """Symbol of the blocked-conv register tile (built on first use): the accumulators
    stored to the f32 tile at `dst` (`[nblk, u, B]`), or with `epi` the epilogue applied
    and the `valid` pixels stored into the output at `dst` (block stride `os_blk`). `xb`:
    x's block (0: `b`; 1: the stem form)."""
    xb = xb or b
    return kernels.kernel(
        ("conv-nchwc-ukernel", u, nblk, b, kw, sw, dw, epi, xb),
        [IndexType()] * len(ARGS),
        lambda kb, args: _body(kb, args, u, nblk, b, kw, sw, dw, epi, xb),
        f"conv nchwc ukernel {u}x{nblk}x{b}"
        + (f" x{xb}" if xb != b else "")
        + (" fused" if epi else ""),
    )
