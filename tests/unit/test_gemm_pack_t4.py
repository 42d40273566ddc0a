"""The 4 x 4-transpose packing of full f32 A panels (`rlx.lowering.gemm.pack_t4`) against
the reference interpreter: K % 4 of 0..3 (the scalar k tail), K < 4, M a multiple of the
panel height and one more (a full panel plus the clamped scalar one), on the tiles whose
`mr` is a multiple of 4 (avx512 12, generic 4) and on avx2 (mr 6: always scalar)."""

from __future__ import annotations

import numpy as np
import pytest
from test_rlx_to_linalg_harness import Compiled, rand, t

from rlx.host_cpu import host_vector_isa
from rlx.interpreter import run
from rlx.lowering.gemm import target


@pytest.fixture(autouse=True)
def _generated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_BLAS", "0")
    monkeypatch.setenv("RLX_CACHE", "0")
    monkeypatch.setenv(target.DIRECT_A_ENV, "0")  # these small f32 A would be read in place


def _mm(m: int, k: int, n: int) -> str:
    a, b, o = (m, k), (k, n), (m, n)
    return f"""
func.func @main(%a: {t(a)}, %b: {t(b)}) -> {t(o)} {{
  %y = rlx.matmul %a, %b : ({t(a)}, {t(b)}) -> {t(o)}
  func.return %y : {t(o)}
}}
"""


@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])
@pytest.mark.parametrize(
    "m,k,n",
    [(24, 256, 40), (13, 257, 64), (25, 258, 33), (12, 259, 70), (49, 3, 900), (1, 600, 64)],
)
def test_pack_matches_reference(
    monkeypatch: pytest.MonkeyPatch, isa: str, m: int, k: int, n: int
) -> None:
    if isa == "avx512" and host_vector_isa() != "avx512":
        pytest.skip("host has no AVX-512")
    monkeypatch.setenv(target.ENV, isa)
    text = _mm(m, k, n)
    ins = [rand((m, k), seed=1), rand((k, n), seed=2)]
    (ref,) = run(text, ins)
    c = Compiled(text)
    if target.TILES[isa].mr % 4 == 0 and m >= target.TILES[isa].mr:
        assert "<4 x i32> <i32 0, i32 4, i32 1, i32 5>" in c.jit.llvm_ir  # the transposes
    (got,) = c(ins)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * max(1.0, float(np.abs(ref).max())))
