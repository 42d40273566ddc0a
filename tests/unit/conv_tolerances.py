"""The relative tolerances of the conv tests against the reference interpreter (`assert_close`),
by case and element type, in one table (`CONV_TOL`), so the conv test files do not each keep
their own. The compiled kernels sum the taps in another order than the reference (blocked,
vectorized, split), and f16 / bf16 values round to the element type after each op:

* "conv": one convolution (direct, im2col / GEMM, pointwise);
* "blocked": the NCHWc kernels (channels summed block by block);
* "rounded twice": a convolution whose inputs or result are rounded again in the element type
  (a fused plane mean, an input scale, a residual chain of two convolutions).
"""

from __future__ import annotations

CONV_TOL: dict[str, dict[str, float]] = {
    "conv": {"f32": 2e-5, "f64": 1e-12, "f16": 2e-3, "bf16": 1.6e-2},
    "blocked": {"f32": 3e-5, "f64": 1e-12, "f16": 3e-3, "bf16": 2e-2},
    "rounded twice": {"f32": 2e-5, "f64": 1e-12, "f16": 4e-3, "bf16": 3e-2},
}
