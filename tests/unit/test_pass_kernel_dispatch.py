"""kernel-dispatch: every common-IR decomposition matches its native op numerically,
the native/common decision follows the policy, and bad options fail clearly.

Tolerance: decompositions evaluate step by step in f32 while the native reference ops
accumulate in f64 and round once, so outputs agree to rtol=1e-4, atol=1e-4.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from graphgen import apply, op_names, parse, random_graph
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from rlx.builder import Graph
from rlx.interpreter import run
from rlx.transforms.decompositions import LOGICAL_KERNELS
from rlx.transforms.dispatch_report import dispatch_report
from rlx.transforms.kernel_dispatch import DispatchConfig, KernelDispatchPass

TOL = {"rtol": 1e-4, "atol": 1e-4}
PRIMITIVES = {
    "rlx.matmul", "rlx.reduce", "rlx.exp", "rlx.abs", "rlx.div", "rlx.sub", "rlx.mul", "rlx.add",
    "rlx.tanh", "rlx.erf", "rlx.neg", "rlx.sqrt", "rlx.max", "rlx.relu", "rlx.broadcast_to",
    "rlx.reshape", "rlx.transpose", "rlx.slice", "rlx.concat", "rlx.where", "rlx.compare",
    "rlx.constant", "rlx.param",
}  # fmt: skip

rng = np.random.default_rng(0)


def arr(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


Build = Callable[[Graph, list[SSAValue]], SSAValue]


def check(
    kind: str, shapes: list[tuple[int, ...]], build: Build, values: list[np.ndarray] | None = None
) -> None:
    """Build `build(g, inputs)`, decompose with policy=common, compare with native."""
    g = Graph()
    xs = [g.input(f"x{i}", s) for i, s in enumerate(shapes)]
    g.output(build(g, xs))
    m = g.module
    assert f"rlx.{kind}" in op_names(m)
    vals = values if values is not None else [arr(*s) for s in shapes]
    native = run(m, vals)
    apply(KernelDispatchPass(policy="common"), m)
    names = set(op_names(m))
    assert names <= PRIMITIVES, names - PRIMITIVES
    np.testing.assert_allclose(run(m, vals)[0], native[0], **TOL)


CASES: list[tuple[str, str, list[tuple[int, ...]], Build]] = [
    ("softmax", "last", [(3, 5)], lambda g, x: g.softmax(x[0])),
    ("softmax", "axis0", [(3, 5)], lambda g, x: g.softmax(x[0], axis=0)),
    ("layer_norm", "", [(2, 3, 8), (8,), (8,)], lambda g, x: g.layer_norm(*x, epsilon=1e-5)),
    ("rms_norm", "beta", [(4, 8), (8,), (8,)], lambda g, x: g.rms_norm(*x, epsilon=1e-6)),
    ("rms_norm", "nobeta", [(4, 8), (8,)], lambda g, x: g.rms_norm(*x)),
    ("gelu", "", [(4, 7)], lambda g, x: g.gelu(x[0])),
    ("gelu_tanh", "", [(4, 7)], lambda g, x: g.gelu_tanh(x[0])),
    ("silu", "", [(4, 7)], lambda g, x: g.silu(x[0])),
    ("sigmoid", "", [(4, 7)], lambda g, x: g.sigmoid(x[0])),
    ("rope", "full", [(1, 2, 4, 8), (4, 4), (4, 4)], lambda g, x: g.rope(*x)),
    ("rope", "partial", [(1, 2, 4, 8), (4, 2), (4, 2)], lambda g, x: g.rope(*x, n_rot=4)),
    ("attention", "none", [(1, 2, 3, 4)] * 3, lambda g, x: g.attention(*x)),
    (
        "attention",
        "causal",
        [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)],
        lambda g, x: g.attention(*x, mask_kind="causal"),
    ),
    (
        "attention",
        "causal-empty-rows",
        [(1, 1, 5, 4), (1, 1, 3, 4), (1, 1, 3, 4)],
        lambda g, x: g.attention(*x, mask_kind="causal"),
    ),
    (
        "attention",
        "window",
        [(2, 1, 6, 4)] * 3,
        lambda g, x: g.attention(*x, mask_kind="sliding_window", window=2, scale=0.3),
    ),
    (
        "attention",
        "softcap",
        [(1, 2, 3, 4)] * 3,
        lambda g, x: g.attention(*x, mask_kind="causal", softcap=0.5),
    ),
    (
        "attention",
        "bias",
        [(1, 2, 3, 4)] * 3 + [(1, 1, 3, 3)],
        lambda g, x: g.attention(*x, mask_kind="bias"),
    ),
    (
        "attention",
        "gqa",
        [(2, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)],
        lambda g, x: g.attention(*x, mask_kind="causal"),
    ),
    ("fused_swiglu", "3op", [(3, 4), (4, 6), (4, 6)], lambda g, x: g.fused_swiglu(*x)),
    ("fused_swiglu", "packed", [(3, 8)], lambda g, x: g.fused_swiglu(x[0])),
    ("fused_swiglu", "gate_first", [(3, 8)], lambda g, x: g.fused_swiglu(x[0], gate_first=True)),
    (
        "fused_residual_layer_norm",
        "",
        [(3, 8), (3, 8), (8,), (8,)],
        lambda g, x: g.fused_residual_layer_norm(*x),
    ),
    (
        "fused_residual_rms_norm",
        "",
        [(3, 8), (3, 8), (8,)],
        lambda g, x: g.fused_residual_rms_norm(*x, epsilon=1e-6),
    ),
]
CASES += [
    (
        "fused_matmul_bias_act",
        act,
        [(3, 4), (4, 5), (5,)],
        lambda g, x, a=act: g.fused_matmul_bias_act(*x, activation=a),
    )
    for act in ("none", "relu", "gelu", "gelu_tanh", "silu")
]


@pytest.mark.parametrize(
    ("kind", "variant", "shapes", "build"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_decomposition_matches_native(
    kind: str, variant: str, shapes: list[tuple[int, ...]], build: Build
) -> None:
    check(kind, shapes, build)


def test_every_logical_kernel_has_a_numeric_case() -> None:
    assert {c[0] for c in CASES} | {"scaled_matmul", "dequant_matmul"} == set(LOGICAL_KERNELS)


@pytest.mark.parametrize(
    ("layout", "fa", "fb", "k"),
    [
        ("per_tensor", "f8e4m3", "f8e5m2", 40),
        ("mx", "f8e4m3", "f4e2m1", 70),
        ("nvfp4", "f4e2m1", "f4e2m1", 48),
        ("mx/16", "f6e2m3", "f8e4m3", 33),
    ],
)
def test_scaled_matmul_decomposition_is_bit_exact(layout: str, fa: str, fb: str, k: int) -> None:
    g = Graph()
    x, w, b = g.input("x", (3, k)), g.input("w", (5, k)), g.input("b", (5,))
    sx = g.scaled_quant_scale(x, format=fa, scale_layout=layout)
    sw = g.scaled_quant_scale(w, format=fb, scale_layout=layout)
    qx = g.scaled_quantize(x, sx, format=fa, scale_layout=layout)
    qw = g.scaled_quantize(w, sw, format=fb, scale_layout=layout)
    g.output(g.scaled_matmul(qx, qw, sx, sw, b, lhs_format=fa, rhs_format=fb, scale_layout=layout))
    vals = [arr(3, k), arr(5, k), arr(5)]
    native = run(g.module, vals)[0]
    m = apply(KernelDispatchPass(force_common_kinds=("scaled_matmul",)), g.module)
    assert "rlx.scaled_matmul" not in op_names(m) and "rlx.gather" in op_names(m)
    np.testing.assert_array_equal(run(m, vals)[0], native)


@pytest.mark.parametrize(("scheme", "n", "k"), [("q8_0", 3, 64), ("tq2_0", 2, 256)])
def test_dequant_matmul_decomposition_is_bit_exact(scheme: str, n: int, k: int) -> None:
    from rlx.formats import ggml

    w = arr(n, k)
    w = np.sign(w) * 0.5 if scheme == "tq2_0" else w
    w[0, :5] = 1e-6  # tiny block scales exercise the f16 subnormal decoding
    packed = ggml.quantize(w, scheme)
    g = Graph()
    x, p = g.input("x", (2, 5, k)), g.input("p", packed.shape, "ui8")
    g.output(g.dequant_matmul(x, p, scheme=scheme, n=n, k=k))
    vals = [arr(2, 5, k), packed]
    native = run(g.module, vals)[0]
    m = apply(KernelDispatchPass(policy="common"), g.module)
    assert "rlx.dequant_matmul" not in op_names(m)
    np.testing.assert_array_equal(run(m, vals)[0], native)


def test_f16_scale_tables_decode_every_finite_pattern() -> None:
    from rlx.transforms.quant_decompositions import _f16_tables

    p, q = _f16_tables()
    bits = np.arange(65536, dtype=np.uint16)
    lo, hi = (bits & 255).astype(np.float32), bits >> 8
    got = p[hi].astype(np.float32) + q[hi].astype(np.float32) * lo
    want = bits.view(np.float16).astype(np.float32)
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[fin], want[fin])
    assert not np.isfinite(got[~fin]).any()


def test_attention_bias_with_minus_inf_rows() -> None:
    """-inf bias entries get probability 0; an all -inf row is all zeros (as native)."""
    bias = np.zeros((1, 1, 3, 3), np.float32)
    bias[0, 0, 0, :] = -np.inf
    bias[0, 0, 1, 2] = -np.inf
    shapes = [(1, 2, 3, 4)] * 3 + [(1, 1, 3, 3)]
    vals = [arr(*s) for s in shapes[:3]] + [bias]
    check("attention", shapes, lambda g, x: g.attention(*x, mask_kind="bias"), vals)


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_common_policy(seed: int) -> None:
    rg = random_graph(seed)
    ref = rg.run()
    apply(KernelDispatchPass(policy="common"), rg.module)
    assert not set(op_names(rg.module)) & {f"rlx.{k}" for k in LOGICAL_KERNELS}
    for a, b in zip(ref, rg.run(), strict=True):
        np.testing.assert_allclose(b, a, **TOL)


def test_dynamic_shapes_stay_native_when_not_expressible() -> None:
    m = parse("""
    func.func @main(%q: tensor<1x2x?x4xf32>, %x: tensor<1x?x8xf32>, %c: tensor<1x4xf32>,
                    %s: tensor<?x6xf32>) -> (tensor<1x2x?x4xf32>, tensor<1x?x8xf32>, tensor<?x6xf32>) {
      %a = rlx.attention %q, %q, %q {mask_kind = "causal"} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
      %r = rlx.rope %x, %c, %c : (tensor<1x?x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x?x8xf32>
      %m = rlx.softmax %s : (tensor<?x6xf32>) -> tensor<?x6xf32>
      func.return %a, %r, %m : tensor<1x2x?x4xf32>, tensor<1x?x8xf32>, tensor<?x6xf32>
    }""")
    names = op_names(apply(KernelDispatchPass(policy="common"), m))
    assert "rlx.attention" in names and "rlx.rope" in names and "rlx.softmax" not in names


def _softmax_gelu() -> Graph:
    g = Graph()
    g.output(g.gelu(g.softmax(g.input("x", (2, 4)))))
    return g


@pytest.mark.parametrize(
    ("options", "left"),
    [
        ({}, {"rlx.softmax", "rlx.gelu"}),
        ({"supported_ops": ("softmax", "gelu", "add")}, {"rlx.softmax", "rlx.gelu"}),
        ({"supported_ops": ("softmax",)}, {"rlx.softmax"}),
        ({"policy": "common"}, set()),
        ({"policy": "common", "force_native_kinds": ("gelu",)}, {"rlx.gelu"}),
        ({"policy": "native", "force_common_kinds": ("gelu",)}, {"rlx.softmax"}),
        (
            {"force_common_kinds": ("softmax",), "force_native_kinds": ("softmax",)},
            {"rlx.softmax", "rlx.gelu"},
        ),
    ],
)
def test_policy_decision(options: dict[str, object], left: set[str]) -> None:
    m = apply(KernelDispatchPass(**options), _softmax_gelu().module)  # type: ignore[arg-type]
    assert set(op_names(m)) & {"rlx.softmax", "rlx.gelu"} == left


def test_decision_table() -> None:
    cfg = DispatchConfig.build("prefer-native", supported=("add",))
    assert cfg.is_common("softmax") and not cfg.is_common("add") and not cfg.is_common("matmul")
    assert not DispatchConfig.build().is_common("softmax")
    assert DispatchConfig.build("common").is_common("scaled_matmul")
    assert not DispatchConfig.build("common").is_common("matmul")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (
            {"policy": "fastest"},
            r"unknown kernel-dispatch policy 'fastest'.*accepted: prefer-native, common, native",
        ),
        (
            {"force_common_kinds": ("softmaxx",)},
            r"unknown logical kernel 'softmaxx' \(did you mean 'softmax'\?\)",
        ),
        (
            {"force_native_kinds": ("matmul",)},
            r"unknown logical kernel 'matmul'.*accepted: softmax",
        ),
        ({"supported_ops": ("add", "bogus")}, r"unknown op kind 'bogus'"),
    ],
)
def test_bad_options(options: dict[str, object], match: str) -> None:
    with pytest.raises(PassFailedException, match=match):
        apply(KernelDispatchPass(**options), _softmax_gelu().module)  # type: ignore[arg-type]


def test_rlx_prefix_is_accepted() -> None:
    m = apply(KernelDispatchPass(force_common_kinds=("rlx.gelu",)), _softmax_gelu().module)
    assert "rlx.gelu" not in op_names(m)


def test_dispatch_report_and_env(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    g = Graph()
    x = g.input("x", (2, 4))
    g.output(g.gelu(g.add(g.softmax(x), x)))
    m = g.module
    before = m.clone()
    monkeypatch.setenv("RLX_DISPATCH_REPORT", "1")
    apply(KernelDispatchPass(supported_ops=("add", "gelu", "reduce", "exp", "sub", "div")), m)
    err = capsys.readouterr().err
    assert "rlx dispatch report" in err and "common-ir:" in err and "- softmax ×1 op logical" in err
    rep = dispatch_report(before, m, supported_ops=("add", "gelu", "reduce", "exp", "sub", "div"))
    assert [(s.kind, s.path) for s in rep.summaries] == [
        ("add", "native"),
        ("gelu", "native"),
        ("softmax", "common-ir"),
    ]
    assert rep.compile_ready and rep.format().endswith("compile-ready: yes\n")
    monkeypatch.setenv("RLX_DISPATCH_REPORT", "0")
    apply(KernelDispatchPass(policy="common"), before)
    assert capsys.readouterr().err == ""
