"""scaled-quant: op counts (1 matmul -> 1 scaled_matmul + 2 quantize + 2 scale + 1
transpose; shared operands quantized once), accuracy of the rewritten graph under the
reference interpreter (cosine similarity vs the f32 graph), and option errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from graphgen import apply, op_names
from xdsl.utils.exceptions import PassFailedException

from rlx.builder import Graph
from rlx.interpreter import run
from rlx.transforms.scaled_quant import ScaledQuant, parse_formats


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _matmul_graph(m: int, k: int, n: int) -> Graph:
    g = Graph()
    x, w = g.input("x", (m, k)), g.param("w", (k, n))
    g.output(g.matmul(x, w))
    return g


def test_one_matmul_counts() -> None:
    m = apply(ScaledQuant(formats="fp8-e4m3"), _matmul_graph(2, 64, 3).module)
    c = Counter(op_names(m))
    assert c == Counter(
        {
            "rlx.param": 1,
            "rlx.transpose": 1,
            "rlx.scaled_quant_scale": 2,
            "rlx.scaled_quantize": 2,
            "rlx.scaled_matmul": 1,
        }
    )


def test_shared_lhs_quantized_once() -> None:
    g = Graph()
    x = g.input("x", (2, 32))
    g.output(g.matmul(x, g.param("w", (32, 4))), g.matmul(x, g.param("v", (32, 5))))
    c = Counter(op_names(apply(ScaledQuant(formats="mxfp8"), g.module)))
    assert c["rlx.scaled_quantize"] == 3 and c["rlx.scaled_quant_scale"] == 3
    assert c["rlx.scaled_matmul"] == 2 and c["rlx.transpose"] == 2 and "rlx.matmul" not in c


@pytest.mark.parametrize(
    ("formats", "dist", "bound"),
    [
        ("fp8-e4m3", "normal", 0.999),
        ("f8e4m3", "uniform", 0.999),
        ("mxfp8", "normal", 0.999),
        ("f4e3m0,layout=mx", "uniform", 0.99),
        # Zero-mean Gaussian data cannot reach 0.99 with f4e3m0 (see the pass docs).
        ("f4e3m0,layout=mx", "normal", 0.95),
        ("f8e4m3,f8e5m2,layout=mx", "normal", 0.995),
        ("f4e2m1,layout=nvfp4", "normal", 0.98),
    ],
)
def test_cosine_vs_f32(formats: str, dist: str, bound: float) -> None:
    rng = np.random.default_rng(7)
    draw = rng.standard_normal if dist == "normal" else (lambda s: rng.uniform(0, 1, s))
    x = draw((256, 256)).astype(np.float32)
    w = draw((256, 256)).astype(np.float32)
    g = _matmul_graph(256, 256, 256)
    (want,) = run(g.module, {"x": x}, {"w": w})
    m = apply(ScaledQuant(formats=formats), g.module.clone())
    assert "rlx.scaled_matmul" in op_names(m)
    (got,) = run(m, {"x": x}, {"w": w})
    cos = _cos(got, want)
    print(f"{formats} {dist}: cosine {cos:.5f}")
    assert got.dtype == np.float32 and cos >= bound


def test_parse_formats() -> None:
    lhs, rhs, lay = parse_formats("f8e4m3,f8e5m2,layout=nvfp4/16")
    assert (str(lhs), str(rhs), str(lay)) == ("f8e4m3", "f8e5m2", "nvfp4")
    lhs, rhs, lay = parse_formats("F4E3M0, layout=mx/64")
    assert (str(lhs), str(rhs), str(lay)) == ("f4e3m0", "f4e3m0", "mx/64")
    assert str(parse_formats("mxfp8")[2]) == "mx"
    # The string form of CompileOptions' ScaledQuantConfig parses to the same config.
    lhs, rhs, lay = parse_formats("f4e3m0,rhs=f8e5m2,layout=mx/64")
    assert (str(lhs), str(rhs), str(lay)) == ("f4e3m0", "f8e5m2", "mx/64")


@pytest.mark.parametrize(
    ("formats", "match"),
    [
        ("", "needs formats: a preset"),
        ("f9e4m4", "unknown low-precision format 'f9e4m4'"),
        ("fp8", "the option takes a preset"),
        ("f8e4m3,layout=tile", "unknown scale layout 'tile'"),
        ("a,b,c", "malformed scaled-quant formats"),
        ("f8e4m3,scale=2", "malformed scaled-quant formats"),
        ("f8e4m3,layout=mx,layout=nvfp4", "malformed scaled-quant formats"),
    ],
)
def test_bad_formats(formats: str, match: str) -> None:
    with pytest.raises(PassFailedException, match=match):
        apply(ScaledQuant(formats=formats), _matmul_graph(2, 4, 3).module)
