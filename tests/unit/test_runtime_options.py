"""CompileOptions (defaults, builders, env overrides, validation) and the options -> passes table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from rlx.runtime import option_pipeline
from rlx.runtime.options import (
    CompileOptions,
    FusionOptions,
    KernelDispatchConfig,
    RngOptions,
    ScaledQuantConfig,
)

ENV = ("RLX_VERBOSE", "RLX_KERNEL_DISPATCH", "RLX_CACHE_PARAM_INVARIANT")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ENV:
        monkeypatch.delenv(k, raising=False)


def test_defaults_match_rlx() -> None:
    o = CompileOptions()
    assert o.to_dict() == {
        "precision": "f32", "policy": None, "scaled_quant": None, "rng": RngOptions(42, "philox"),
        "dce": True, "constant_folding": True, "verbose": False, "fusion_target": None,
        "fusion_opts": FusionOptions(), "arena_alignment": 64, "assert_fusion_clean": False,
        "supported_ops": None, "dim_binding": None, "param_bindings": None,
        "quant_param_bindings": None, "kernel_dispatch": KernelDispatchConfig("prefer-native"),
        "disable_mpsgraph": False, "scan_unroll_max_length": 64, "cache_param_invariant": False,
    }  # fmt: skip
    assert o.dce is True and o.precision() == "f32" and o.rng_seed() == 42
    assert repr(o) == "CompileOptions()" and o.non_defaults() == {}


def test_builders_return_modified_copies() -> None:
    base = CompileOptions()
    o = (
        base.precision("f16").policy("auto-mixed").scaled_quant("mxfp8").rng_seed(7)
        .rng_backend("zero").with_dce(False).with_constant_folding(False).with_verbose(True)
        .fusion_target("none").fusion_opts({"swiglu": False, "max_steps": 8}).arena_alignment(128)
        .supported_ops(["matmul", "rlx.add"]).assert_fusion_clean(True).dim_binding({"seq": 16})
        .kernel_dispatch("common").force_common_kinds(["softmax"]).force_native_kinds(["gelu"])
        .scan_unroll_max_length(0).cache_param_invariant(True).disable_mpsgraph(True)
    )  # fmt: skip
    assert base == CompileOptions()  # untouched
    assert (o.precision(), o.policy(), o.dce, o.constant_folding, o.verbose) == (
        "f16",
        "auto-mixed",
        False,
        False,
        True,
    )
    assert o.scaled_quant() == ScaledQuantConfig("f8e4m3", "f8e4m3", "mx")
    assert o.rng() == RngOptions(7, "zero") and o.fusion_target() == "none"
    assert o.fusion_opts() == FusionOptions(swiglu=False, max_steps=8)
    assert o.arena_alignment() == 128 and o.supported_ops() == ("matmul", "add")
    assert o.dim_binding() == {"seq": 16} and o.assert_fusion_clean() is True
    assert o.kernel_dispatch() == KernelDispatchConfig("common", ("softmax",), ("gelu",))
    assert o.force_common_kinds() == ("softmax",) and o.force_native_kinds() == ("gelu",)
    assert (o.scan_unroll_max_length(), o.cache_param_invariant(), o.disable_mpsgraph()) == (
        0,
        True,
        True,
    )
    assert o.no_policy().policy() is None
    assert CompileOptions(precision="half").precision() == "f16"
    assert o.replace(precision="bf16").precision() == "bf16"
    assert o.get("arena_alignment") == 128 and "dce=False" in repr(o)
    again = CompileOptions(**{k: v for k, v in o.to_dict().items()})
    assert again == o


def test_env_overrides_and_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_VERBOSE", "1")
    monkeypatch.setenv("RLX_KERNEL_DISPATCH", "force_common")
    monkeypatch.setenv("RLX_CACHE_PARAM_INVARIANT", "yes")
    o = CompileOptions()
    assert o.verbose and o.kernel_dispatch().policy == "common" and o.cache_param_invariant()
    # explicit arguments and builders beat the environment
    e = CompileOptions(verbose=False, kernel_dispatch="native", cache_param_invariant=False)
    assert (
        not e.verbose and e.kernel_dispatch().policy == "native" and not e.cache_param_invariant()
    )
    assert not o.with_verbose(False).verbose
    # builders copy values: the env is read once, at creation
    kept = CompileOptions().arena_alignment(32)
    monkeypatch.setenv("RLX_VERBOSE", "0")
    monkeypatch.setenv("RLX_KERNEL_DISPATCH", "bogus")  # unknown -> prefer-native, as RLX
    assert kept.verbose and kept.precision("f16").verbose
    assert not CompileOptions().verbose
    assert CompileOptions().kernel_dispatch().policy == "prefer-native"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"precision": "f8"}, ["precision", "f32, f16, bf16"]),
        ({"policy": "fast"}, ["policy", "auto-mixed-conservative"]),
        ({"policy": {"compute": "f8"}}, ["policy"]),
        ({"arena_alignment": 48}, ["arena_alignment", "power of two"]),
        ({"arena_alignment": 0}, ["arena_alignment"]),
        ({"dce": 1}, ["dce", "True or False"]),
        ({"fusion_target": "metal"}, ["fusion_target", "cpu, none"]),
        ({"fusion_opts": {"bogus": True}}, ["fusion_opts", "matmul_bias_act"]),
        ({"fusion_opts": {"max_steps": -1}}, ["fusion_opts.max_steps"]),
        ({"rng": {"seed": -1}}, ["rng.seed"]),
        ({"rng": RngOptions} , ["rng"]),
        ({"kernel_dispatch": "fastest"}, ["kernel_dispatch", "prefer-native, common, native"]),
        ({"supported_ops": ["matmull"]}, ["supported_ops", "matmul"]),
        ({"supported_ops": "matmul"}, ["supported_ops"]),
        ({"dim_binding": {"n": -3}}, ["dim_binding"]),
        ({"param_bindings": "/no/such/file.npz"}, ["param_bindings", "no such file"]),
        ({"scaled_quant": "f9e9m9"}, ["scaled_quant"]),
        ({"scaled_quant": "f8e4m3,layout=weird"}, ["scaled_quant.scale_layout"]),
        ({"scan_unroll_max_length": -1}, ["scan_unroll_max_length"]),
    ],
)  # fmt: skip
def test_validation_names_field_and_accepted_values(kwargs: dict, words: list[str]) -> None:
    with pytest.raises(ValueError) as e:
        CompileOptions(**kwargs)
    for w in words:
        assert w in str(e.value)


def test_unknown_fields_and_sub_configs() -> None:
    with pytest.raises(TypeError):
        CompileOptions(bogus=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="unknown CompileOptions field"):
        CompileOptions().replace(bogus=1)
    assert str(ScaledQuantConfig.parse("f4e3m0,layout=mx")) == "f4e3m0,layout=mx"
    assert ScaledQuantConfig.parse("fp8-e4m3") == ScaledQuantConfig()
    assert KernelDispatchConfig("ForceNative").policy == "native"


# ----------------------------------------------------------------------------- the table


def _fake(name: str, **fields: object) -> type[ModulePass]:
    ns = {"__annotations__": {k: type(v) for k, v in fields.items()}, "name": name, **fields}
    ns["apply"] = lambda self, ctx, op: None
    return dataclass(frozen=True)(type(name.title().replace("-", ""), (ModulePass,), ns))


REGISTRY = {
    "canonicalize": lambda: _fake("canonicalize"),
    "dce": lambda: _fake("dce"),
    "fold-batch-norm": lambda: _fake("fold-batch-norm", fold_constants=True),
    "constant-folding": lambda: _fake("constant-folding"),
    "bind-dims": lambda: _fake("bind-dims", dims=""),
    "bind-params": lambda: _fake("bind-params", path=""),
    "fusion": lambda: _fake("fusion", target="cpu", swiglu=True, max_steps=0, assert_clean=False),
    "blocked-layout": lambda: _fake("blocked-layout", prepare_weights=False),
    "scan-unroll": lambda: _fake("scan-unroll", max_length=64),
    "pack-weights": lambda: _fake("pack-weights", width=0),
    "rng": lambda: _fake("rng", seed=42, backend="philox"),
    "convert-rlx-to-linalg": lambda: _fake("convert-rlx-to-linalg"),
    "plan-memory": lambda: _fake("plan-memory", alignment=64),
    "split-graph": lambda: _fake("split-graph", max_calls=256),
}


def _plan(o: CompileOptions, tmp_path: Path, reg: dict | None = None) -> option_pipeline.Plan:
    return option_pipeline.build_plan(o, tmp_path, REGISTRY if reg is None else reg)


def test_plan_order_and_option_mapping(tmp_path: Path) -> None:
    o = CompileOptions(
        arena_alignment=128, dim_binding={"batch": 2, "seq": 16}, rng={"seed": 5},
        fusion_opts={"swiglu": False, "max_steps": 4}, assert_fusion_clean=True,
        param_bindings={"w": np.ones((2, 2), np.float32)},
    )  # fmt: skip
    plan = _plan(o, tmp_path)
    assert [p.name for p in plan.passes] == [
        "bind-params", "bind-dims", "canonicalize", "dce", "fold-batch-norm", "constant-folding",
        "fusion", "blocked-layout",
        "scan-unroll", "rng", "convert-rlx-to-linalg", "plan-memory", "split-graph",
    ]  # fmt: skip
    by = {p.name: p.instance for p in plan.passes}
    assert by["plan-memory"].alignment == 128  # type: ignore[attr-defined]
    assert by["bind-dims"].dims == "batch=2,seq=16"  # type: ignore[attr-defined]
    assert (by["rng"].seed, by["rng"].backend) == (5, "philox")  # type: ignore[attr-defined]
    f = by["fusion"]
    assert (f.target, f.swiglu, f.max_steps, f.assert_clean) == ("cpu", False, 4, True)  # type: ignore[attr-defined]
    saved = np.load(by["bind-params"].path)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(saved["w"], np.ones((2, 2)))
    assert [p.name for p in plan.phase("lower")] == [
        "convert-rlx-to-linalg", "plan-memory", "split-graph",
    ]  # fmt: skip
    assert "plan-memory{alignment=128}" in [p.spec for p in plan.passes]


def test_every_field_has_a_registered_pass(tmp_path: Path) -> None:
    """With the real registry: every non-default field is applied by a pass (or is logging /
    a Metal-only knob), never "not yet applied"."""
    o = CompileOptions(policy="auto-mixed", rng={"backend": "zero"}, disable_mpsgraph=True,
                       precision="f16", dce=False, fusion_target="none", verbose=True,
                       kernel_dispatch="common", supported_ops=["add"], scan_unroll_max_length=3,
                       cache_param_invariant=True, dim_binding={"n": 2}, scaled_quant="mxfp8")  # fmt: skip
    plan = option_pipeline.build_plan(o, tmp_path)
    status = {r.field: r for r in plan.report}
    assert set(status) >= set(CompileOptions.KNOBS)
    for f in ("policy", "rng", "precision", "kernel_dispatch", "supported_ops", "dim_binding",
              "scan_unroll_max_length", "cache_param_invariant", "scaled_quant"):  # fmt: skip
        assert status[f].status == "applied", status[f].line()
    assert status["policy"].line() == "policy = 'auto-mixed': applied (by pass 'precision')"
    assert (
        status["disable_mpsgraph"].status == "no effect"
        and "CPU" in status["disable_mpsgraph"].detail
    )
    assert status["verbose"].status == "applied"
    assert status["dce"].status == "skipped" and status["fusion_target"].status == "skipped"
    assert status["arena_alignment"].status == "default"
    names = [p.name for p in plan.passes]
    assert "dce" not in names and "canonicalize" not in names and "fusion" not in names
    assert names == [
        "scaled-quant", "bind-dims", "fold-batch-norm", "constant-folding", "hoist-param-invariant",
        "blocked-layout", "kernel-dispatch", "legalize", "scan-unroll", "precision", "pack-weights", "rng", "convert-rlx-to-linalg",
        "plan-memory", "split-graph",
    ]  # fmt: skip
    assert all("not yet" not in r.line() for r in plan.report)


def test_plan_requires_every_pass(tmp_path: Path) -> None:
    for missing in ("plan-memory", "rng", "fusion"):
        reg = {k: v for k, v in REGISTRY.items() if k != missing}
        with pytest.raises(RuntimeError, match=f"pass '{missing}' is not registered"):
            _plan(CompileOptions(), tmp_path, reg)


def test_fake_passes_are_applicable() -> None:
    cls = REGISTRY["plan-memory"]()
    cls(alignment=8).apply(Context(), ModuleOp([]))


def test_precision_and_custom_policy_mapping(tmp_path: Path) -> None:
    reg = {
        **REGISTRY,
        "precision": lambda: _fake("precision", precision="f32", policy="", custom=""),
    }
    o = CompileOptions(precision="bf16", policy={"compute": "f16", "softmax": "f32"})
    (p,) = [p for p in _plan(o, tmp_path, reg).passes if p.name == "precision"]
    inst = p.instance
    assert (inst.precision, inst.policy, inst.custom) == (
        "bf16",
        "custom",
        "compute=f16,softmax=f32",
    )  # type: ignore[attr-defined]
    assert p.fields == ("policy", "precision")
    with pytest.raises(ValueError, match="policy"):
        CompileOptions(policy={"nonsense_op": "f16"})
