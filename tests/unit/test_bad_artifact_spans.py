"""`.rlx` headers that lie about where sections are, with a valid header checksum (docs/
fuzzing.md, session 9): every span past the end, inside the preamble / header, unaligned,
negative or overlapping another section is refused (`ArtifactError`) with and without
`verify`, before any code is mapped. Was: with `verify=False` (weights not hashed) a
weight pointing into the code section loaded the code's bytes as its values, silently.
Identical spans of one kind stay legal (equal weights are stored once)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from test_bake_header import _header, _with_header, base  # noqa: F401  (fixture)

import rlx
import rlx.bake
from rlx.bake.artifact import ArtifactError

X = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)


def _lies(h: dict) -> dict[str, tuple[str, int, int, str]]:
    """label -> (section path, offset, nbytes, expected message)."""
    w0, w1, c0, m = h["weights"][0], h["weights"][1], h["code"][0], h["module"]
    return {
        "weight into code": ("weights.0", c0["offset"], w0["nbytes"], "overlaps code section 0"),
        "weight into weight": ("weights.0", w0["offset"], w0["nbytes"] + 64, "overlaps weight"),
        "code into weight": ("code.0", w1["offset"], c0["nbytes"], "overlaps weight"),
        "module over code": ("module", c0["offset"], m["nbytes"], "overlaps module"),
        "code into module": ("code.0", m["offset"], c0["nbytes"], "overlaps module"),
        "weight in header": ("weights.0", 64, w0["nbytes"], "spans bytes 64.."),
        "code at 0": ("code.0", 0, c0["nbytes"], "spans bytes 0.."),
        "module past end": ("module", 1 << 40, m["nbytes"], "truncated or corrupted"),
        "negative": ("weights.1", -64, w1["nbytes"], "out of range"),
    }


def _section(h: dict, path: str) -> dict:
    for k in path.split("."):
        h = h[int(k) if k.isdigit() else k]
    return h


@pytest.mark.parametrize("verify", [True, False])
def test_lying_spans_are_refused(base: Path, tmp_path: Path, verify: bool) -> None:  # noqa: F811
    h0 = _header(base)
    h0.pop("pad")
    for path, off, nbytes, message in _lies(h0).values():
        h = copy.deepcopy(h0)
        s = _section(h, path)
        s["offset"], s["nbytes"] = off, nbytes
        bad = _with_header(base, tmp_path / "bad.rlx", h)
        with pytest.raises(ArtifactError, match=message):
            rlx.load(bad, verify=verify)


def test_equal_weights_may_share_one_span(base: Path, tmp_path: Path) -> None:  # noqa: F811
    """A dedupe-like header (two weights on one span) is structurally fine: it then fails
    only on the values (the checksum of the weight), not as an overlap."""
    h = _header(base)
    h.pop("pad")
    b1, b2 = h["weights"][1], h["weights"][3]
    b2["offset"], b2["nbytes"] = b1["offset"], b1["nbytes"]
    bad = _with_header(base, tmp_path / "dup.rlx", h)
    with pytest.raises(ArtifactError) as e:
        rlx.load(bad)
    assert "overlaps" not in str(e.value)


GATHER = """func.func @main(%x: tensor<4xf32>, %i: tensor<2xi64> {{rlx.name = "{arg}"}}) -> tensor<2xf32> {{
  %g = rlx.gather %x, %i : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32> loc("{node}")
  func.return %g : tensor<2xf32>
}}
"""


def test_long_error_site_bakes_into_a_loadable_artifact(tmp_path: Path) -> None:
    """A 5,000-character location (an ONNX node name) was stored whole in the signature's
    error sites: the artifact had a header string over its 4,096 limit, which `rlx.load`
    refused. Sites are capped (`traps.MAX_WHERE`)."""
    src = GATHER.format(arg="idx", node="n" * 5000)
    path = rlx.bake.bake(src, {}, "exact", tmp_path / "long.rlx")
    g = rlx.load(path)
    with pytest.raises(IndexError, match=r"n\.\.\.: rlx.gather: index 7 .* \[from input 'idx'\]$"):
        g.run(np.arange(4, dtype=np.float32), np.array([7, 0]))


def test_header_rlx_load_would_refuse_is_not_written(tmp_path: Path) -> None:
    """An input named with 2,000 characters (the header allows 1,024) was baked into an
    artifact that `rlx.load` refused; `write` checks its header with the reader's rules."""
    src = GATHER.format(arg="i" * 2000, node="n")
    with pytest.raises(ArtifactError, match="cannot write an artifact rlx.load would refuse"):
        rlx.bake.bake(src, {}, "exact", tmp_path / "name.rlx")
    assert not (tmp_path / "name.rlx").exists()
