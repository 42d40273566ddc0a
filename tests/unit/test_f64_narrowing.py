"""f64 -> f16 / bf16 conversions are rounded once, in every path, and never call
`__truncdfhf2` (a libcall the JIT process may lack: a fused region that truncated f64 to
f16 used to segfault at run time). Checked bit for bit against NumPy / ml_dtypes, whose
f64 conversions are correctly rounded."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import rlx
from rlx.interpreter import parse_module, run

# halfway cases that a plain f64 -> f32 -> f16/bf16 rounding gets wrong, plus ordinary
# values, signed zeros, overflow, subnormals, inf and NaN
TRICKY = np.array(
    [1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40, -(1 + 2**-11 + 2**-40), 1 + 2**-11, 0.1, -0.0,
     0.0, 70000.0, 1e-7, 3e38, 1e300, -np.inf, np.inf, np.nan, 65504.0, 65520.0, 2**-24 * 0.5000001],
)  # fmt: skip
TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _region(to: str, n: int) -> str:
    return f"""func.func @main(%x: tensor<{n}xf64>) -> tensor<{n}x{to}> {{
  %r = rlx.elementwise_region %x : (tensor<{n}xf64>) -> tensor<{n}x{to}> {{
  ^bb0(%a: f64):
    %t = arith.truncf %a : f64 to {to}
    rlx.yield %t : {to}
  }}
  func.return %r : tensor<{n}x{to}>
}}
"""


def _cast(to: str, n: int) -> str:
    return f"""func.func @main(%x: tensor<{n}xf64>) -> tensor<{n}x{to}> {{
  %r = rlx.cast %x : (tensor<{n}xf64>) -> tensor<{n}x{to}>
  func.return %r : tensor<{n}x{to}>
}}
"""


@pytest.mark.parametrize("to", list(TYPES))
@pytest.mark.parametrize("make", [_region, _cast], ids=["region-truncf", "rlx.cast"])
def test_f64_narrowing_is_rounded_once(to: str, make) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    x = np.concatenate([TRICKY, rng.standard_normal(64) * 10.0 ** rng.integers(-8, 6, 64)])
    got = rlx.compile(make(to, x.size)).run(x)[0]
    with np.errstate(over="ignore"):
        want = x.astype(TYPES[to])
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


FUSED_MOD = """func.func @main(%x: tensor<67xf16>, %y: tensor<67xf16>) -> tensor<67xf16> {
  %a = rlx.cast %x : (tensor<67xf16>) -> tensor<67xf64>
  %b = rlx.cast %y : (tensor<67xf16>) -> tensor<67xf64>
  %d = rlx.div %a, %b : (tensor<67xf64>, tensor<67xf64>) -> tensor<67xf64>
  %f = rlx.floor %d : (tensor<67xf64>) -> tensor<67xf64>
  %m = rlx.mul %f, %b : (tensor<67xf64>, tensor<67xf64>) -> tensor<67xf64>
  %s = rlx.sub %a, %m : (tensor<67xf64>, tensor<67xf64>) -> tensor<67xf64>
  %r = rlx.cast %s : (tensor<67xf64>) -> tensor<67xf16>
  func.return %r : tensor<67xf16>
}
"""


def test_fused_f16_to_f64_chain_runs_and_matches_the_reference() -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(67) * 4).astype(np.float16)
    y = (rng.random(67) + 0.5).astype(np.float16)
    g = rlx.compile(FUSED_MOD)
    assert "elementwise_region" in g.ir("rlx")  # the chain is fused into one region
    (want,) = run(parse_module(FUSED_MOD), [x, y])
    np.testing.assert_array_equal(g.run(x, y)[0], want)
