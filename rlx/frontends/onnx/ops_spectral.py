"""DFT (opsets 17-25: forward, inverse, onesided, irfft, dft_length) and STFT (17-25)
as matmuls with constant transform matrices.

A DFT along one axis is linear in the real and imaginary parts of its input, so its four
real matrices (real/imag in -> real/imag out) are computed at import time by applying
NumPy's FFT to identity matrices; the transform is then `rlx.matmul`s with the axis moved
last. STFT gathers the frames with constant indices, applies the window and takes the
onesided (or full) DFT of each frame.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from rlx.frontends.onnx.node import Node, dims_text, is_static, shape
from rlx.frontends.onnx.registry import converter


def _matrices(n_in: int, length: int, inverse: bool, onesided: bool):  # noqa: ANN202
    """[(real-in matrix, imag-in matrix)] mapping `n_in` samples to the output axis."""

    def f(z: np.ndarray) -> np.ndarray:
        if inverse and onesided:
            return np.fft.irfft(z, n=length, axis=-1).astype(complex)
        if inverse:
            return np.fft.ifft(z, n=length, axis=-1)
        out = np.fft.fft(z, n=length, axis=-1)
        return out[..., : length // 2 + 1] if onesided else out

    eye = np.eye(n_in)
    return f(eye.astype(complex)), f(1j * eye)


def _along(n: Node, x: SSAValue, axis: int, m: np.ndarray) -> SSAValue:
    """`x` with `axis` mapped by the matrix `m` ([in, out])."""
    rank = len(shape(x))
    perm = [a for a in range(rank) if a != axis] + [axis]
    xt = n.emit("transpose", x, permutation=perm) if perm != list(range(rank)) else x
    y = n.emit("matmul", xt, n.constant(m, x))
    inv = [perm.index(a) for a in range(rank)]
    return n.emit("transpose", y, permutation=inv) if inv != list(range(rank)) else y


def dft(
    n: Node, x: SSAValue, axis: int, length: int | None, inverse: bool, onesided: bool
) -> SSAValue:
    """The DFT of `x` (`[..., 1 | 2]`, the last axis real/imag) along `axis`."""
    xs = shape(x)
    if not is_static(xs):
        raise n.error("DFT needs a static shape")
    rank = len(xs)
    axis %= rank
    if axis == rank - 1:
        raise n.error("the DFT axis cannot be the real/imaginary axis")
    n_in = xs[axis]
    if length is None:
        length = 2 * (n_in - 1) if inverse and onesided else n_in
    a_re, a_im = _matrices(n_in, length, inverse, onesided)

    def part(k: int) -> SSAValue:
        return n.reshape(
            n.emit("slice", x, starts=[0] * (rank - 1) + [k], limits=[*xs[:-1], k + 1]), xs[:-1]
        )

    xr = part(0)
    xi = part(1) if xs[-1] == 2 else None
    outs = []
    for comp in (np.real, np.imag):
        y = _along(n, xr, axis, comp(a_re))
        if xi is not None:
            y = n.emit("add", y, _along(n, xi, axis, comp(a_im)))
        outs.append(y)
        if inverse and onesided:
            break
    s = list(shape(outs[0]))
    rs = [n.reshape(o, [*s, 1]) for o in outs]
    return rs[0] if len(rs) == 1 else n.emit("concat", *rs, axis=rank - 1)


@converter("DFT", attrs=("axis", "inverse", "onesided"))
def dft_op(n: Node) -> list[SSAValue]:
    x = n.input(0)
    ln = n.const(1, "dft_length ")
    length = None if ln is None else int(np.asarray(ln).reshape(-1)[0])
    if n.ctx.opset >= 20:
        a = n.const(2, "axis ")
        axis = -2 if a is None else int(np.asarray(a).reshape(-1)[0])
    else:
        axis = n.attr("axis", 1)
    return [dft(n, x, axis, length, bool(n.attr("inverse", 0)), bool(n.attr("onesided", 0)))]


@converter("STFT", attrs=("onesided",))
def stft(n: Node) -> list[SSAValue]:
    x = n.input(0)
    xs = shape(x)
    if not is_static(xs):
        raise n.error("STFT needs a static shape")
    step = int(np.asarray(n.const(1, "frame_step ")).reshape(-1)[0])
    window = n.opt(2)
    fl = n.const(3, "frame_length ")
    length = int(np.asarray(fl).reshape(-1)[0]) if fl is not None else shape(window)[0]
    frames = (xs[1] - length) // step + 1
    idx = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    fr = n.emit("gather", x, n.constant(idx, "i64"), axis=1)  # [B, F, L, C]
    if window is not None:
        fr = n.emit("mul", fr, n.reshape(n.cast(window, fr.type.element_type), [1, 1, length, 1]))  # type: ignore[attr-defined]
    return [dft(n, fr, 2, length, False, bool(n.attr("onesided", 1)))]


@converter("Col2Im", attrs=("dilations", "pads", "strides"))
def col2im(n: Node) -> list[SSAValue]:
    """Col2Im (opsets 18-25): the column blocks summed into the image through a constant
    0/1 matrix `[kernel positions x blocks, pixels]` (one `rlx.matmul`)."""
    import itertools

    x = n.input(0)
    xs = shape(x)
    image = [int(v) for v in n.const(1, "image_shape ")]
    block = [int(v) for v in n.const(2, "block_shape ")]
    d = len(image)
    dil = list(n.attr("dilations", [1] * d))
    st = list(n.attr("strides", [1] * d))
    pads = list(n.attr("pads", [0] * 2 * d))
    nb = [
        (image[i] + pads[i] + pads[d + i] - (dil[i] * (block[i] - 1) + 1)) // st[i] + 1
        for i in range(d)
    ]
    k, blocks, pixels = int(np.prod(block)), int(np.prod(nb)), int(np.prod(image))
    if not is_static(xs) or xs[2] != blocks or xs[1] % k:
        raise n.error(
            f"input of shape {dims_text(xs)} does not hold {k}-position blocks x {blocks} columns"
        )
    m = np.zeros((k * blocks, pixels))
    for ki, kk in enumerate(itertools.product(*(range(b) for b in block))):
        for bi, bb in enumerate(itertools.product(*(range(b) for b in nb))):
            c = [bb[i] * st[i] - pads[i] + kk[i] * dil[i] for i in range(d)]
            if all(0 <= c[i] < image[i] for i in range(d)):
                m[ki * blocks + bi, int(np.ravel_multi_index(c, image))] += 1
    ch = xs[1] // k
    y = n.emit("matmul", n.reshape(x, [xs[0], ch, k * blocks]), n.constant(m, x))
    return [n.reshape(y, [xs[0], ch, *image])]


MAX_MEL_ELEMENTS = 1 << 24
"""Largest MelWeightMatrix (bins x mel bins) built at import time."""


@converter("MelWeightMatrix", attrs=("output_datatype",))
def mel_weight_matrix(n: Node) -> list[np.ndarray]:
    """The `[dft_length // 2 + 1, num_mel_bins]` triangular filterbank, a constant of the
    (constant) inputs: mel(f) = 2595 log10(1 + f / 700); edges k = 0 .. num_mel_bins + 1
    at mel(lower) + k (mel(upper) - mel(lower)) / (num_mel_bins + 2), each mapped to the
    spectrogram bin floor((dft_length + 1) f / sample_rate), in the edge inputs' type.
    The spec leaves the placement open; this is onnx.reference's and onnxruntime's, which
    the backend test data use (the step divides by num_mel_bins + 2, so the last edge
    stays below upper_edge_hertz; TensorFlow's divides by num_mel_bins + 1). Filter i
    rises from edge i to a peak of 1 at edge i + 1 and falls to edge i + 2 (a zero-width
    rise is a single 1 at its centre)."""
    from onnx import helper

    vals = []
    for i, w in enumerate(("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                           "upper_edge_hertz")):  # fmt: skip
        v = np.asarray(n.const(i, w + " "))
        if v.size != 1:
            raise n.error(f"{w} must be a scalar, got shape {list(v.shape)}")
        vals.append(v.reshape(()))
    mel_bins, length, rate = (int(v) for v in vals[:3])
    lo_v, hi_v = vals[3:]  # keep their type (T2): the bin placement depends on its rounding
    lo, hi = float(lo_v), float(hi_v)
    bins = length // 2 + 1
    if mel_bins < 1 or length < 1 or rate < 1:
        raise n.error(
            f"num_mel_bins, dft_length and sample_rate must be positive, got {mel_bins}, "
            f"{length}, {rate}"
        )
    if not 0 <= lo <= hi <= rate / 2:
        raise n.error(
            f"need 0 <= lower_edge_hertz <= upper_edge_hertz <= sample_rate / 2, got {lo}, "
            f"{hi}, {rate}"
        )
    if bins * mel_bins > MAX_MEL_ELEMENTS:
        raise n.error(f"a {bins}x{mel_bins} MelWeightMatrix is over {MAX_MEL_ELEMENTS} elements")

    ln10 = np.log(10)
    low, high = (2595 * np.log1p(v / 700) / ln10 for v in (lo_v, hi_v))  # in T2
    edges_mel = np.arange(mel_bins + 2) * ((high - low) / (mel_bins + 2)) + low
    edges_hz = 700 * np.expm1(edges_mel / 2595 * ln10)
    edge = ((length + 1) * edges_hz // rate).astype(np.int64)
    out = np.zeros((bins, mel_bins))
    j = np.arange(bins)
    for i in range(mel_bins):
        left, centre, right = edge[i], edge[i + 1], edge[i + 2]
        if centre == left:
            out[min(centre, bins - 1), i] = 1.0
        else:
            rise = (j >= left) & (j <= centre)
            out[rise, i] = (j[rise] - left) / (centre - left)
        if right > centre:
            fall = (j >= centre) & (j < right)
            out[fall, i] = (right - j[fall]) / (right - centre)
    return [out.astype(helper.tensor_dtype_to_np_dtype(n.attr("output_datatype", 1)))]
