"""bind-dims, bind-params, bind-quant-params: numeric equivalence against the reference
interpreter and bad-input errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.utils.exceptions import PassFailedException

from rlx import interpreter as reference
from rlx import weights
from rlx.builder import Graph
from rlx.formats import ggml
from rlx.transforms.bind_dims import BindDims, parse_binding, unbound_dims
from rlx.transforms.bind_params import BindParams, bind_params
from rlx.transforms.bind_quant_params import BindQuantParams

RNG = np.random.default_rng(0)


def _mlp() -> Graph:
    g = Graph()
    x = g.input("x", (4, 8))
    w = g.param("w", (8, 16))
    b = g.param("b", (16,))
    g.output(
        g.gelu(
            g.add(
                g.matmul(x, g.transpose(g.transpose(w, permutation=[1, 0]), permutation=[1, 0])), b
            )
        )
    )
    return g


def test_bind_params_preserves_numbers(tmp_path: Path) -> None:
    m = _mlp().module
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    p = {
        "w": RNG.standard_normal((8, 16)).astype(np.float32),
        "b": RNG.standard_normal(16).astype(np.float32),
    }
    want = reference.run(m, [x], p)[0]
    path = tmp_path / "w.safetensors"
    weights.save(path, p)
    BindParams(path=str(path)).apply(Context(), m)
    assert "rlx.param" not in str(m)
    np.testing.assert_array_equal(reference.run(m, [x], {})[0], want)


def test_bind_params_partial_and_dict() -> None:
    m = _mlp().module
    assert bind_params(m, {"b": np.zeros(16, np.float64)}) == ["b"]  # f64 -> f32 converted
    assert str(m).count("rlx.param") == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            np.zeros((16, 8), np.float32),
            r"param 'w' has shape \[8, 16\], the binding has shape \[16, 8\]",
        ),
        (np.zeros((8, 16), np.int64), "param 'w' is f32, the binding is int64"),
    ],
)
def test_bind_params_errors(value: np.ndarray, message: str) -> None:
    with pytest.raises(PassFailedException, match=message):
        bind_params(_mlp().module, {"w": value})


def test_bind_dims_numbers_and_errors() -> None:
    g = Graph()
    x = g.input("x", (2, 8))
    g.output(g.softmax(g.mul(x, x), axis=-1))
    m = g.module
    # Make the first dim dynamic and named, as a frontend with dynamic shapes would.
    text = (
        str(m)
        .replace("tensor<2x8xf32>", "tensor<?x8xf32>")
        .replace('{rlx.name = "x"}', '{rlx.name = "x", rlx.dims = ["batch", 8]}')
    )
    mod = reference.parse_module(text)
    assert unbound_dims(mod) == ["batch"]
    BindDims(dims="batch=2").apply(Context(), mod)
    assert unbound_dims(mod) == []
    xv = RNG.standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(reference.run(mod, [xv])[0], reference.run(m, [xv])[0])
    with pytest.raises(ValueError, match="malformed dim binding"):
        parse_binding("batch=x")


def test_bind_quant_params(tmp_path: Path) -> None:
    import gguf

    wq = RNG.standard_normal((4, 64)).astype(np.float32)
    packed = ggml.quantize(wq, "q8_0")
    g = Graph()
    x = g.input("x", (2, 64))
    p = g.param("wq", (packed.size,), "ui8")
    g.output(g.dequant_matmul(x, p, scheme="q8_0", n=4, k=64))
    m = g.module
    xv = RNG.standard_normal((2, 64)).astype(np.float32)
    want = reference.run(m, [xv], {"wq": packed})[0]
    path = tmp_path / "q.gguf"
    w = gguf.GGUFWriter(str(path), "t")
    q = gguf.quants.quantize(wq, gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("wq", q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    BindQuantParams(path=str(path)).apply(Context(), m)
    assert "rlx.param" not in str(m)
    np.testing.assert_array_equal(reference.run(m, [xv])[0], want)
    # Wrong geometry is refused, naming the param.
    g2 = Graph()
    x2 = g2.input("x", (2, 32))
    p2 = g2.param("wq", (packed.size,), "ui8")
    g2.output(g2.dequant_matmul(x2, p2, scheme="q8_0", n=8, k=32))
    with pytest.raises(
        PassFailedException, match=r"param 'wq' is bound to a q8_0 \[4, 64\] tensor"
    ):
        BindQuantParams(path=str(path)).apply(Context(), g2.module)
