"""Weight files: `rlx.weights.load(path)` for .safetensors, .npz and .gguf.

Dense tensors come back as NumPy arrays (safetensors through its NumPy API, no torch).
GGUF F32/F16/BF16 tensors are decoded; Q8_0 and TQ2_0 tensors stay packed as
`PackedWeight` (GGML layout: W [n, k] row-major in blocks along k), ready for the packed
operand of `rlx.dequant_matmul`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

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
                return {k: np.asarray(z[k]) for k in z.files}
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


def save(path: str | Path, weights: dict[str, np.ndarray]) -> None:
    """Write dense weights as .npz or .safetensors (by suffix)."""
    p = Path(path)
    arrays = {k: np.ascontiguousarray(v) for k, v in weights.items()}
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
