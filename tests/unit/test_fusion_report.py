"""The fusion report (`analyze_fusion`, `FusionReport.format`), `report`/RLX_FUSION_REPORT,
`assert_clean`, the pass registration and options, and the examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_fusion_common import fuse, op_names
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from rlx.builder import Graph
from rlx.transforms import get_all_passes
from rlx.transforms.fusion import PATTERN_ORDER, FusionPass
from rlx.transforms.fusion_report import FusionReport, Miss, analyze_fusion, fusion_counts

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _mlp(act: str = "gelu") -> Graph:
    g = Graph()
    x = g.input("x", (2, 8))
    w, b = g.param("w", (8, 16)), g.param("b", (16,))
    g.output(getattr(g, act)(g.add(g.matmul(x, w), b)))
    return g


def test_report_counts_and_format() -> None:
    m = _mlp().module
    report = analyze_fusion(m, fuse(m))
    lines = report.format().splitlines()
    assert lines[0] == "fusion report:"
    assert lines[1] == (
        "  nodes=6→4 matmul=1→0 fused_mm_act=1 fused_swiglu=0 elementwise_region=0 attention=0 missed=0"
    )
    assert "missed patterns:" not in report.format()
    assert report.count("fused_matmul_bias_act") == 1 and not report.missed


def test_report_lists_misses_with_location_reason_hint() -> None:
    g = Graph()
    x = g.input("x", (2, 8))
    mm = g.matmul(x, g.param("w", (8, 16)))
    g.output(g.relu(mm), mm)
    m = g.module
    report = analyze_fusion(m, fuse(m))
    assert [(x.pattern, x.reason) for x in report.missed] == [
        ("matmul_bias_act", "matmul has several users")
    ]
    text = report.format().splitlines()
    assert text[-2] == "  missed patterns:"
    assert (
        text[-1].startswith("    matmul_bias_act @ %")
        and "(rlx.matmul) — matmul has several users → " in text[-1]
    )
    assert "missed=1" in text[1]


def test_counts_instead_of_a_clone_give_the_same_report() -> None:
    """What `rlx.compile` and the pass keep of the module before fusion (its counts, not a
    clone) gives the report a clone gives, misses and their SSA names included."""
    g = Graph()
    x = g.input("x", (2, 8))
    mm = g.matmul(x, g.param("w", (8, 16)))
    g.output(g.relu(g.add(g.matmul(x, g.param("v", (8, 16))), g.param("b", (16,)))), mm, g.tanh(mm))
    m = g.module
    before, counts = m.clone(), fusion_counts(m)
    fused = fuse(m)
    want = analyze_fusion(before, fused)
    assert want.missed and want.count("fused_matmul_bias_act") == 1
    assert analyze_fusion(counts, fused).format() == want.format()


def test_miss_prefers_location_attribute() -> None:
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

    g = Graph()
    x = g.input("x", (2, 8))
    g.output(g.tanh(g.matmul(x, g.param("w", (8, 16)))))
    m = g.module
    mm = next(op for op in m.walk() if op.name == "rlx.matmul")
    mm.location = FileLineColLoc(StringAttr("model.mlir"), IntAttr(7), IntAttr(3))
    (miss,) = analyze_fusion(m, fuse(m)).missed
    assert miss.location == "model.mlir:7:3"
    assert miss.reason == "matmul's single user is not an add"


def test_format_by_hand() -> None:
    r = FusionReport(
        5, 3, 2, 1, {"fused_swiglu": 1}, [Miss("swiglu_dual_matmul", "%m", "rlx.mul", "why", "fix")]
    )
    assert r.format().splitlines() == [
        "fusion report:",
        "  nodes=5→3 matmul=2→1 fused_mm_act=0 fused_swiglu=1 elementwise_region=0 attention=0 missed=1",
        "  fused: fused_swiglu=1",
        "  missed patterns:",
        "    swiglu_dual_matmul @ %m (rlx.mul) — why → fix",
    ]


def test_assert_clean() -> None:
    m = _mlp("tanh").module
    with pytest.raises(
        PassFailedException, match=r"fusion contract violated: 1 missed patterns\nfusion report:"
    ) as e:
        FusionPass(assert_clean=True).apply(Context(), m.clone())
    assert "activation not fusable (rlx.tanh)" in str(e.value)
    fuse(_mlp("silu").module, assert_clean=True)  # clean: no error


def test_report_option_and_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    m = _mlp().module
    monkeypatch.delenv("RLX_FUSION_REPORT", raising=False)
    fuse(m)
    assert capsys.readouterr().err == ""
    fuse(m, report=True)
    assert capsys.readouterr().err.startswith("fusion report:\n  nodes=6→4")
    for value, shown in (("1", True), ("true", True), ("0", False), ("off", False), ("", False)):
        monkeypatch.setenv("RLX_FUSION_REPORT", value)
        fuse(m)
        assert ("fusion report:" in capsys.readouterr().err) == shown


def test_registration_and_options() -> None:
    cls = get_all_passes()["fusion"]()
    assert cls is FusionPass and cls.name == "fusion"
    assert cls.__doc__ is not None and cls.__doc__.splitlines()[0].endswith(".")
    from xdsl.utils.arg_spec import parse_pipeline

    (spec,) = parse_pipeline("fusion{swiglu=false max-steps=3 matmul-bias-act=false target=none}")
    p = FusionPass.from_pass_spec(spec)
    assert (p.swiglu, p.max_steps, p.matmul_bias_act, p.target) == (False, 3, False, "none")
    assert all(hasattr(p, name) for name in PATTERN_ORDER)


def test_bad_options() -> None:
    m = _mlp().module
    with pytest.raises(PassFailedException, match="unknown target 'gpu'"):
        FusionPass(target="gpu").apply(Context(), m)
    with pytest.raises(PassFailedException, match="max-steps"):
        FusionPass(max_steps=-1).apply(Context(), m)


def _example(name: str) -> ModuleOp:
    path = EXAMPLES / name
    if not path.exists():
        pytest.skip(f"{path} not written yet")
    from rlx.interpreter import parse_module

    return parse_module(path.read_text())


def _fuse_dce(module: ModuleOp) -> ModuleOp:
    fused = fuse(module, assert_clean=True)
    dce = get_all_passes().get("dce")
    if dce is not None:
        dce()().apply(Context(), fused)
    return fused


def test_example_mlp() -> None:
    names = op_names(_fuse_dce(_example("mlp.mlir")))
    assert names.count("rlx.fused_matmul_bias_act") == 2 and "rlx.matmul" not in names
    assert "rlx.gelu" not in names and "rlx.add" not in names


def test_example_transformer_block() -> None:
    module = _example("transformer_block.mlir")
    fused = _fuse_dce(module)
    names = op_names(fused)
    # q/k/v share their input: one fused GEMM with N = 3 * 64 and three slices
    # (shared_input_matmul), then out-projection, FFN up and FFN down
    assert names.count("rlx.fused_matmul_bias_act") == 4 and "rlx.matmul" not in names
    assert names.count("rlx.slice") == 3 and "tensor<64x192xf32>" in str(fused)
    assert "rlx.attention" in names
    report = analyze_fusion(module, fused)
    assert report.matmul_before == 6 and report.matmul_after == 0 and not report.missed
