"""The direct conv kernel (depthwise, grouped, small and low-precision convs; row loops
and the flat padded-plane loop of small planes) against the reference interpreter: strides 1/2, padding (asymmetric), dilation 2, groups (2,
depthwise, depthwise multiplier 2), odd sizes and kernels (7×7, 5×3), batch > 1,
f32 / f16 / bf16 / i32, with and without bias and activation, serial and on the pool."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conv_tolerances import CONV_TOL
from reference_helpers import assert_close

import rlx
from rlx.interpreter import parse_module, run

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i32": np.int32}


def _case(x, w, attrs, dtype, bias=True, act=None):  # type: ignore[no-untyped-def]
    g = rlx.Graph()
    gx = g.input("x", x, dtype=dtype)
    gw = g.input("w", w, dtype=dtype)
    args = [gx, gw]
    if bias:
        args.append(g.input("b", (w[0],), dtype=dtype))
    if act:
        attrs = {**attrs, "activation": act}
    g.output(g.conv2d(*args, **attrs))
    rng = np.random.default_rng(sum(x) + sum(w))
    shapes = [x, w, (w[0],)][: len(args)]
    if dtype == "i32":
        vals = [rng.integers(-4, 5, s).astype(np.int32) for s in shapes]
    else:
        vals = [rng.standard_normal(s).astype(DTYPES[dtype]) for s in shapes]
    return str(g.module), vals


CASES = [
    # (x shape, w shape, attrs)
    ((2, 8, 12, 12), (8, 1, 3, 3), {"groups": 8, "padding": [1, 1, 1, 1]}),
    ((1, 6, 13, 11), (6, 1, 3, 3), {"groups": 6, "strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((1, 4, 17, 19), (4, 1, 3, 3), {"groups": 4, "dilations": [2, 2], "padding": [2, 2, 2, 2]}),
    ((2, 4, 11, 13), (8, 1, 5, 3), {"groups": 4, "padding": [2, 0, 1, 1], "strides": [1, 2]}),
    ((1, 3, 19, 23), (3, 1, 7, 7), {"groups": 3, "padding": [3, 3, 3, 3], "strides": [2, 2]}),
    ((3, 4, 7, 5), (6, 2, 3, 3), {"groups": 2, "padding": [1, 2, 0, 1]}),
    ((1, 2, 5, 3), (2, 1, 7, 7), {"groups": 2, "padding": [3, 3, 3, 3]}),  # kernel > input
    ((1, 32, 40, 40), (32, 1, 3, 3), {"groups": 32, "padding": [1, 1, 1, 1]}),  # on the pool
    ((2, 16, 9, 37), (16, 1, 3, 3), {"groups": 16, "strides": [2, 2], "padding": [0, 1, 2, 1]}),
    ((1, 6, 8, 8), (6, 1, 3, 3), {"groups": 6, "dilations": [2, 2], "padding": [2, 2, 2, 2]}),
    ((2, 24, 1, 1), (8, 24, 1, 1), {}),  # squeeze-excitation 1×1 on a 1×1 map: pointwise
    ((1, 12, 2, 3), (6, 4, 1, 1), {"groups": 3}),
]

TOL = CONV_TOL["conv"]


def _check(text: str, vals: list, dtype: str) -> None:  # type: ignore[type-arg]
    (want,) = run(parse_module(text), vals)
    (got,) = rlx.compile(text).run(*vals)
    if dtype == "i32":
        np.testing.assert_array_equal(got, want)
        return
    assert_close(got, want, TOL[dtype])


@pytest.mark.parametrize("case", range(len(CASES)))
def test_direct_f32(case: int) -> None:
    x, w, attrs = CASES[case]
    _check(*_case(x, w, attrs, "f32", bias=case % 2 == 0), "f32")


@pytest.mark.parametrize("dtype", ["f16", "bf16", "i32"])
@pytest.mark.parametrize("case", [0, 3, 5, 10])
def test_direct_low_precision_and_int(case: int, dtype: str) -> None:
    x, w, attrs = CASES[case]
    _check(*_case(x, w, attrs, dtype), dtype)


@pytest.mark.parametrize("act", ["relu", "hard_swish", "gelu"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_direct_activation(act: str, dtype: str) -> None:
    x, w, attrs = CASES[1]
    _check(*_case(x, w, attrs, dtype, act=act), dtype)


def test_small_planes_and_rows_both_taken() -> None:
    """Planes of <= 32 output columns take the flat padded-plane loop, wider ones rows."""
    small, _ = _case((1, 8, 7, 7), (8, 1, 3, 3), {"groups": 8, "padding": [1, 1, 1, 1]}, "f32")
    wide, _ = _case((1, 4, 9, 40), (4, 1, 3, 3), {"groups": 4, "padding": [1, 1, 1, 1]}, "f32")
    assert "conv direct small planes" in rlx.compile(small).ir("linalg")
    se, _ = _case((1, 32, 1, 1), (8, 32, 1, 1), {}, "f32")
    assert "conv direct pointwise" in rlx.compile(se).ir("linalg")
    ir = rlx.compile(wide).ir("linalg")
    assert "conv direct" in ir and "small planes" not in ir


def test_small_regular_f16_conv_takes_direct_path() -> None:
    text, vals = _case((2, 3, 6, 5), (4, 3, 3, 3), {"padding": [1, 1, 1, 1]}, "f16")
    ir = rlx.compile(text).ir("linalg")
    assert "conv direct" in ir and "rlx_blas" not in ir
    _check(text, vals, "f16")
