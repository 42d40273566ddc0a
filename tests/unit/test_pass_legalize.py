"""legalize: unclaimed kinds are rewritten into claimed ones with equal numerics, or the
pass fails with a report of what is left. Tolerance: rtol=1e-4, atol=1e-4 (f32 steps vs
the f64-accumulating native reference)."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, op_names, parse, random_graph
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.utils.exceptions import PassFailedException

from rlx.builder import Graph
from rlx.diagnostics import OpError
from rlx.interpreter import run
from rlx.transforms.legalize import LegalizePass

TOL = {"rtol": 1e-4, "atol": 1e-4}
BASIC = (
    "add", "sub", "mul", "div", "max", "min", "neg", "abs", "exp", "tanh", "erf", "sin", "sqrt",
    "matmul", "reduce", "transpose", "reshape", "broadcast_to", "slice", "concat", "where", "compare",
)  # fmt: skip


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_legalize_to_basic_ops(seed: int) -> None:
    rg = random_graph(seed)
    ref = rg.run()
    apply(LegalizePass(supported_ops=BASIC), rg.module)
    assert {n.removeprefix("rlx.") for n in op_names(rg.module)} <= {*BASIC, "param", "constant"}
    for a, b in zip(ref, rg.run(), strict=True):
        np.testing.assert_allclose(b, a, **TOL)


def test_fused_op_unfused_one_level_then_decomposed() -> None:
    g = Graph()
    x = g.input("x", (3, 4))
    g.output(
        g.fused_matmul_bias_act(x, g.param("w", (4, 5)), g.param("b", (5,)), activation="gelu")
    )
    params = {"w": np.ones((4, 5), np.float32) * 0.1, "b": np.arange(5, dtype=np.float32)}
    xv = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    native = run(g.module, [xv], params)
    m = apply(LegalizePass(supported_ops=("matmul", "add", "gelu")), g.module)
    assert op_names(m) == ["rlx.param", "rlx.param", "rlx.matmul", "rlx.add", "rlx.gelu"]
    np.testing.assert_allclose(run(m, [xv], params)[0], native[0], **TOL)


def test_elementwise_region_unfused() -> None:
    g = Graph()
    x, y = g.input("x", (2, 3)), g.input("y", (3,))

    def body(a, b):  # type: ignore[no-untyped-def]
        s = arith.AddfOp(a, b).result
        e = math.ExpOp(s).result
        c = arith.ConstantOp(FloatAttr(0.5, f32)).result
        cmp = arith.CmpfOp(e, c, "ogt").result
        return arith.SelectOp(cmp, e, arith.MulfOp(s, c).result).result

    g.output(g.elementwise_region([x, y], body))
    vals = [
        np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3),
        np.array([0.1, -0.3, 0.7], np.float32),
    ]
    native = run(g.module, vals)
    m = apply(LegalizePass(supported_ops=BASIC), g.module)
    assert "rlx.elementwise_region" not in op_names(m)
    np.testing.assert_allclose(run(m, vals)[0], native[0], **TOL)


def test_empty_claim_accepts_everything() -> None:
    m = random_graph(1).module
    before = str(m)
    assert str(apply(LegalizePass(), m)) == before


def test_failure_lists_kinds_and_counts() -> None:
    m = parse(
        """
        func.func @main(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
          %a = rlx.conv2d %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
          %b = rlx.conv2d %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
          %c = rlx.cumsum %a : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
          %d = rlx.add %c, %b : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
          func.return %d : tensor<1x1x2x2xf32>
        }
        """
    )
    with pytest.raises(OpError) as info:
        apply(LegalizePass(supported_ops=("add",)), m)
    msg = str(info.value)
    assert msg.startswith(
        "legalization failed: 2 op kinds not supported by the backend: rlx.conv2d (2 ops), rlx.cumsum (1 op)"
    )
    assert "hint: claim the kind" in msg
    assert info.value.op.name == "rlx.conv2d"


def test_failure_report_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    g = Graph()
    g.output(g.cumsum(g.softmax(g.input("x", (2, 3)))))
    monkeypatch.setenv("RLX_VERBOSE", "1")
    with pytest.raises(PassFailedException):
        apply(LegalizePass(supported_ops=("reduce", "exp", "sub", "div")), g.module)
    err = capsys.readouterr().err
    assert "rewritten:\n    - softmax ×1 op logical" in err
    assert "unsupported:\n    - cumsum ×1 op" in err
    assert "still unsupported after rewrite (1 op(s)) — compile will fail:" in err


@pytest.mark.parametrize(
    ("ops", "match"),
    [
        (
            ("add", "matmull"),
            r"unknown op kind in supported-ops 'matmull' \(did you mean 'matmul'\?\)",
        ),
        (("add", ""), r"unknown op kind in supported-ops ''"),
        (("add matmul",), r"unknown op kind in supported-ops 'add matmul'"),
    ],
)
def test_malformed_supported_ops(ops: tuple[str, ...], match: str) -> None:
    with pytest.raises(PassFailedException, match=match):
        apply(LegalizePass(supported_ops=ops), random_graph(0).module)


@pytest.mark.parametrize(
    "name", ["dce", "constant-folding", "canonicalize", "kernel-dispatch", "legalize"]
)
def test_registered_with_cli_contract(name: str) -> None:
    """Registry name == pass name; one-line description; main option is a field."""
    import dataclasses

    from rlx.transforms import get_all_passes

    cls = get_all_passes()[name]()
    assert cls.name == name
    doc = (cls.__doc__ or "").strip().splitlines()
    assert doc and 10 < len(doc[0]) <= 100
    main = getattr(cls, "main_option", None)
    assert main is None or main in {f.name for f in dataclasses.fields(cls)}
