"""Weight files: `rlx.weights.load(path)` for .safetensors, .npz and .gguf.

Dense tensors come back as NumPy arrays (safetensors through its NumPy API, no torch).
GGUF F32/F16/BF16 tensors are decoded; Q8_0 and TQ2_0 tensors stay packed as
`PackedWeight` (GGML layout: W [n, k] row-major in blocks along k), ready for the packed
operand of `rlx.dequant_matmul`. `save` writes PackedWeights to .npz too (the bytes plus a
`__rlx_packed__.<name>` = [scheme, n, k] entry that `load` turns back into a PackedWeight).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlx.formats import ggml

SUFFIXES = (".safetensors", ".npz", ".gguf")


@dataclass(frozen=True)
class PackedWeight:
    """GGML-packed matrix W [n, k]: `data` is the flat uint8 block stream of `scheme`."""

    scheme: str
    n: int
    k: int
    data: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.k)


Weight = np.ndarray | PackedWeight

PACKED_KEY = "__rlx_packed__."
"""npz entry `<PACKED_KEY><name>` = int64 [scheme index, n, k] marks `<name>` as packed."""
SCHEMES = ("q8_0", "tq2_0")


def as_packed(name: str, value: object, scheme: str, n: int, k: int) -> PackedWeight:
    """The binding of a param consumed as rlx.dequant_matmul's packed operand (`scheme`,
    W [n, k]) as a PackedWeight: a PackedWeight (whose scheme and shape must agree) or the
    raw block bytes (a uint8 array, bytes or bytearray: what `rlx.formats.ggml.quantize`
    returns) of exactly the size `scheme` needs. ValueError naming the param otherwise."""

    if isinstance(value, PackedWeight):
        if (value.scheme, value.n, value.k) != (scheme, n, k):
            raise ValueError(
                f"param '{name}' is bound to a {value.scheme} [{value.n}, {value.k}] tensor, "
                f"rlx.dequant_matmul expects {scheme} [{n}, {k}]"
            )
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        value = np.frombuffer(value, np.uint8)
    want = ggml.packed_nbytes(scheme, n, k)
    if not isinstance(value, np.ndarray) or value.dtype != np.uint8:
        got = type(value).__name__ if not isinstance(value, np.ndarray) else f"{value.dtype} array"
        raise ValueError(
            f"param '{name}' feeds rlx.dequant_matmul ({scheme} [{n}, {k}]): expected a "
            f"PackedWeight or {want} raw uint8 bytes of {scheme} blocks, got {got}"
        )
    if value.size != want:
        raise ValueError(
            f"param '{name}': {value.size} bytes of packed data, {scheme} [{n}, {k}] needs {want}"
        )
    return PackedWeight(scheme, n, k, np.ascontiguousarray(value.reshape(-1)))


def _unpack_npz(values: dict[str, np.ndarray]) -> dict[str, Weight]:
    """Turn `PACKED_KEY` entries of an .npz back into PackedWeights."""
    out: dict[str, Weight] = {k: v for k, v in values.items() if not k.startswith(PACKED_KEY)}
    for key, meta in values.items():
        if not key.startswith(PACKED_KEY):
            continue
        name = key[len(PACKED_KEY) :]
        m = np.asarray(meta).reshape(-1)
        data = out.get(name)
        if m.size != 3 or not 0 <= int(m[0]) < len(SCHEMES) or not isinstance(data, np.ndarray):
            raise WeightFileError(f"malformed packed-tensor entry '{key}'")
        try:
            out[name] = as_packed(name, data, SCHEMES[int(m[0])], int(m[1]), int(m[2]))
        except ValueError as e:
            raise WeightFileError(str(e)) from None
    return out


class WeightFileError(ValueError):
    """A weight file that cannot be used, with the reason."""


def load(path: str | Path) -> dict[str, Weight]:
    """Read every tensor of a weight file, keyed by its name in the file."""
    p = Path(path)
    if not p.is_file():
        raise WeightFileError(f"weight file not found: {p}")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                return _unpack_npz({k: np.asarray(z[k]) for k in z.files})
        if suffix == ".safetensors":
            from safetensors.numpy import load_file

            return dict(load_file(str(p)))
        if suffix == ".gguf":
            return _load_gguf(p)
    except WeightFileError:
        raise
    except Exception as e:  # corrupt or truncated files surface as many exception types
        raise WeightFileError(f"cannot read weight file {p}: {e}") from None
    raise WeightFileError(
        f"unsupported weight file '{p.name}': expected one of {', '.join(SUFFIXES)}"
    )


def save(path: str | Path, weights: Mapping[str, Any]) -> None:
    """Write weights as .npz or .safetensors (by suffix); PackedWeights (and raw bytes)
    only to .npz."""
    p = Path(path)
    arrays: dict[str, np.ndarray] = {}
    for k, v in weights.items():
        if isinstance(v, PackedWeight):
            arrays[PACKED_KEY + k] = np.array([SCHEMES.index(v.scheme), v.n, v.k], np.int64)
            v = v.data
        elif isinstance(v, bytes | bytearray | memoryview):
            v = np.frombuffer(v, np.uint8)
        # np.asarray keeps a 0-d array 0-d (np.ascontiguousarray would make it 1-d)
        arrays[k] = np.asarray(v, order="C")
    if any(k.startswith(PACKED_KEY) for k in arrays) and p.suffix != ".npz":
        raise ValueError(f"cannot save packed weights as '{p.suffix}': use .npz")
    if p.suffix == ".npz":
        np.savez(p, **arrays)  # type: ignore[arg-type]
    elif p.suffix == ".safetensors":
        from safetensors.numpy import save_file

        save_file(arrays, str(p))
    else:
        raise ValueError(f"cannot save weights as '{p.suffix}': use .npz or .safetensors")


def _load_gguf(p: Path) -> dict[str, Weight]:
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFReader

    out: dict[str, Weight] = {}
    for t in GGUFReader(p).tensors:
        dims = [int(d) for d in reversed(t.shape.tolist())]  # GGML lists the fastest dim first
        if t.tensor_type in (Q.F32, Q.F16):
            out[t.name] = np.asarray(t.data).reshape(dims).astype(np.float32)
        elif t.tensor_type == Q.BF16:
            import ml_dtypes

            raw = np.asarray(t.data).view(ml_dtypes.bfloat16)
            out[t.name] = raw.reshape(dims).astype(np.float32)
        elif t.tensor_type in (Q.Q8_0, Q.TQ2_0):
            if len(dims) != 2:
                raise WeightFileError(f"packed tensor '{t.name}' must be 2-D, got shape {dims}")
            scheme = "q8_0" if t.tensor_type == Q.Q8_0 else "tq2_0"
            data = np.ascontiguousarray(np.asarray(t.data, dtype=np.uint8).reshape(-1))
            out[t.name] = PackedWeight(scheme, dims[0], dims[1], data)
        else:
            raise WeightFileError(
                f"tensor '{t.name}' has GGML type {t.tensor_type.name}; supported: F32, F16, BF16, Q8_0, TQ2_0"
            )
    return out
