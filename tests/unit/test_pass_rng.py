"""rng: the pass records (seed, backend) on the module, `rng_config` reads it back, and the
reference interpreter driven by it gives the expected streams."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, parse
from xdsl.utils.exceptions import PassFailedException

from rlx.interpreter import run
from rlx.transforms.rng import RngPass, rng_config

TEXT = """
func.func @main() -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %a = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<64xf32>
  %b = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<64xf32>
  %c = rlx.rng_uniform {seed_offset = 2 : i64} : tensor<64xf32>
  func.return %a, %b, %c : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
"""


def _run(m: object) -> list[np.ndarray]:
    seed, backend = rng_config(m)  # type: ignore[arg-type]
    return run(m, (), rng_seed=seed, rng_backend=backend)  # type: ignore[arg-type]


def test_defaults_without_attributes() -> None:
    assert rng_config(parse(TEXT)) == (42, "philox")


@pytest.mark.parametrize("seed", [0, 7, 2**63, 2**64 - 1])
def test_round_trip(seed: int) -> None:
    assert rng_config(apply(RngPass(seed=seed, backend="zero"), parse(TEXT))) == (seed, "zero")


def test_streams() -> None:
    a, b, c = _run(apply(RngPass(seed=7), parse(TEXT)))
    assert np.array_equal(a, b)  # same seed_offset: same stream
    assert not np.allclose(a, c)  # different seed_offset: different stream
    a2, _, _ = _run(apply(RngPass(seed=8), parse(TEXT)))
    assert not np.allclose(a, a2)  # different seed: different stream
    assert np.array_equal(a, _run(apply(RngPass(seed=7), parse(TEXT)))[0])  # reproducible
    d, _, _ = _run(parse(TEXT))
    assert np.array_equal(d, run(parse(TEXT), ())[0])  # no attributes: interpreter defaults


def test_zero_backend() -> None:
    outs = _run(apply(RngPass(backend="zero"), parse(TEXT)))
    assert all(not o.any() for o in outs)


@pytest.mark.parametrize(
    ("pass_", "match"),
    [
        (RngPass(backend="ort"), "unknown rng backend 'ort'"),
        (RngPass(seed=-1), r"rng seed must be in \[0, 2\*\*64\)"),
        (RngPass(seed=2**64), r"rng seed must be in \[0, 2\*\*64\)"),
    ],
)
def test_bad_options(pass_: RngPass, match: str) -> None:
    with pytest.raises(PassFailedException, match=match):
        apply(pass_, parse(TEXT))


def test_malformed_attribute() -> None:
    from xdsl.dialects.builtin import StringAttr

    m = parse(TEXT)
    m.attributes["rlx.rng_backend"] = StringAttr("ort")
    with pytest.raises(ValueError, match="must be one of philox, zero"):
        rng_config(m)
