"""Value types and validators of `CompileOptions` fields (split from `options.py`).

Sub-configurations (`RngOptions`, `FusionOptions`, `ScaledQuantConfig`,
`KernelDispatchConfig`) and `CHECKS`: field name -> validator returning the normalised
value or raising ValueError naming the field and the accepted values.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any

from rlx.dialects import rlx as rlx_dialect  # the package: its op classes load on first use
from rlx.formats.lowp import parse_format, parse_layout
from rlx.runtime.extra_passes import check_extra_passes
from rlx.transforms import declarations as passes

PRECISIONS = passes.PRECISIONS
_PRECISION_ALIASES = {
    "float32": "f32",
    "float": "f32",
    "float16": "f16",
    "half": "f16",
    "bfloat16": "bf16",
}
POLICIES = tuple(passes.POLICIES)
"""Precision policies: those the `precision-policy` pass declares (`rlx.transforms.declarations`)."""
POLICY_CLASSES = tuple(c.replace("-", "_") for c in passes.RETYPED_CLASSES)
RNG_BACKENDS = passes.RNG_BACKENDS
FUSION_TARGETS = passes.FUSION_TARGETS
DISPATCH_POLICIES = passes.DISPATCH_POLICIES
_DISPATCH_ALIASES = {
    "prefer-native": "prefer-native", "prefer_native": "prefer-native", "prefernative": "prefer-native",
    "common": "common", "force_common": "common", "force-common": "common", "forcecommon": "common",
    "native": "native", "force_native": "native", "force-native": "native", "forcenative": "native",
}  # fmt: skip


def _bad(field_name: str, value: Any, accepted: str) -> ValueError:
    return ValueError(f"CompileOptions.{field_name}: invalid value {value!r}; accepted: {accepted}")


def _bool(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise _bad(name, v, "True or False")
    return v


def _names(name: str, v: Any) -> tuple[str, ...]:
    if isinstance(v, str) or not isinstance(v, Iterable) or not all(isinstance(x, str) for x in v):
        raise _bad(name, v, "a list of op names")
    return tuple(v)


@dataclass(frozen=True)
class RngOptions:
    """Random-op configuration: global seed (u64) and backend ("philox" or "zero")."""

    seed: int = 42
    backend: str = "philox"

    def __post_init__(self) -> None:
        if (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not 0 <= self.seed < 2**64
        ):
            raise _bad("rng.seed", self.seed, "an integer in [0, 2**64)")
        if self.backend not in RNG_BACKENDS:
            raise _bad("rng.backend", self.backend, ", ".join(RNG_BACKENDS))


class _FusionOptionsBase:
    """Validation and construction shared by the generated `FusionOptions`."""

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if f.name.startswith("max_"):
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise _bad(f"fusion_opts.{f.name}", v, "a non-negative integer (0 = unbounded)")
            else:
                _bool(f"fusion_opts.{f.name}", v)

    @classmethod
    def from_value(cls, v: Any) -> Any:
        if isinstance(v, cls):
            return v
        if not isinstance(v, Mapping):
            raise _bad("fusion_opts", v, "a FusionOptions or a dict of its fields")
        known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        unknown = [k for k in v if k not in known]
        if unknown:
            raise _bad("fusion_opts", unknown[0], ", ".join(known))
        return cls(**v)


FusionOptions = make_dataclass(
    "FusionOptions",
    [("skip_fusion", bool, field(default=False))]
    + [(f.name, f.type, field(default=f.default)) for f in fields(passes.FusionToggles)],
    bases=(_FusionOptionsBase,),
    frozen=True,
)
FusionOptions.__module__ = __name__
FusionOptions.__doc__ = """Fusion pattern toggles and elementwise-region limits: the `fusion` pass's
options (one bool per pattern, `max_steps`, `max_inputs`, `report`; generated from the pass's
declaration, so they cannot drift), plus `skip_fusion`, RLX's switch that disables every
pattern (the pass then sees target "none")."""


@dataclass(frozen=True)
class ScaledQuantConfig:
    """Low-precision GEMM config: operand formats and scale layout (see rlx.formats.lowp)."""

    lhs_format: str = "f8e4m3"
    rhs_format: str = "f8e4m3"
    scale_layout: str = "per_tensor"

    def __post_init__(self) -> None:
        for n in ("lhs_format", "rhs_format"):
            try:
                object.__setattr__(self, n, str(parse_format(getattr(self, n))))
            except ValueError as e:
                raise ValueError(f"CompileOptions.scaled_quant.{n}: {e}") from None
        try:
            object.__setattr__(self, "scale_layout", str(parse_layout(self.scale_layout)))
        except ValueError as e:
            raise ValueError(f"CompileOptions.scaled_quant.scale_layout: {e}") from None

    @classmethod
    def parse(cls, s: str) -> ScaledQuantConfig:
        """ "fp8-e4m3", "mxfp8", or "FMT[,layout=L][,rhs=FMT]" (e.g. "f4e3m0,layout=mx")."""
        presets = {"fp8-e4m3": cls(), "fp8_e4m3": cls(), "mxfp8": cls(scale_layout="mx"),
                   "mxfp8-e4m3": cls(scale_layout="mx"), "mxfp8_e4m3": cls(scale_layout="mx")}  # fmt: skip
        key = s.strip().lower()
        if key in presets:
            return presets[key]
        head, *rest = [p.strip() for p in key.split(",")]
        kw: dict[str, str] = {"lhs_format": head, "rhs_format": head}
        for part in rest:
            k, sep, v = part.partition("=")
            if not sep or k not in ("layout", "rhs", "lhs"):
                raise _bad("scaled_quant", s, "'fp8-e4m3', 'mxfp8' or 'FMT[,layout=L][,rhs=FMT]'")
            kw[{"layout": "scale_layout", "rhs": "rhs_format", "lhs": "lhs_format"}[k]] = v
        return cls(**kw)

    def __str__(self) -> str:
        s = self.lhs_format + (
            "" if self.rhs_format == self.lhs_format else f",rhs={self.rhs_format}"
        )
        return s + f",layout={self.scale_layout}"


@dataclass(frozen=True)
class KernelDispatchConfig:
    """Logical-kernel dispatch: policy plus per-kind overrides (force_native beats force_common)."""

    policy: str = "prefer-native"
    force_common_kinds: tuple[str, ...] = ()
    force_native_kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        p = (
            _DISPATCH_ALIASES.get(str(self.policy).lower())
            if isinstance(self.policy, str)
            else None
        )
        if p is None:
            raise _bad("kernel_dispatch", self.policy, ", ".join(DISPATCH_POLICIES))
        object.__setattr__(self, "policy", p)
        object.__setattr__(
            self, "force_common_kinds", _names("force_common_kinds", self.force_common_kinds)
        )
        object.__setattr__(
            self, "force_native_kinds", _names("force_native_kinds", self.force_native_kinds)
        )

    @classmethod
    def from_env(cls) -> KernelDispatchConfig:
        """RLX_KERNEL_DISPATCH; unknown values mean prefer-native, as in RLX."""
        v = os.environ.get("RLX_KERNEL_DISPATCH", "").strip().lower()
        return cls(_DISPATCH_ALIASES.get(v, "prefer-native"))


def _path_or_map(name: str, v: Any) -> Any:
    if v is None or isinstance(v, Mapping):
        return None if v is None else dict(v)
    if isinstance(v, str | Path):
        if not Path(v).is_file():
            raise ValueError(f"CompileOptions.{name}: no such file: {v}")
        return Path(v)
    raise _bad(name, v, "None, a dict name -> array, or a path to a .npz/.safetensors file")


def _check_policy(v: Any) -> Any:
    if v is None or (isinstance(v, str) and v in POLICIES):
        return v
    if isinstance(v, Mapping) and v:
        for k, p in v.items():
            op = isinstance(k, str) and f"rlx.{k.removeprefix('rlx.')}" in rlx_dialect.OPS_BY_NAME
            if not (op or k in POLICY_CLASSES) or p not in PRECISIONS:
                raise _bad("policy", {k: p}, "a dict {op name or class: precision}; classes: "
                           f"{', '.join(POLICY_CLASSES)}; precisions: {', '.join(PRECISIONS)}")  # fmt: skip
        return dict(v)
    raise _bad("policy", v, "None, " + ", ".join(POLICIES) + ", or a dict op/class -> precision")


def _check_dims(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, Mapping) and all(
        isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 0
        for k, n in v.items()
    ):
        return dict(v)
    raise _bad("dim_binding", v, "None or a dict symbol name -> non-negative int")


def _check_precision(v: Any) -> str:
    p = _PRECISION_ALIASES.get(v, v) if isinstance(v, str) else v
    if p not in PRECISIONS:
        raise _bad("precision", v, ", ".join(PRECISIONS))
    return p


def _check_scaled_quant(v: Any) -> ScaledQuantConfig | None:
    if v is None or isinstance(v, ScaledQuantConfig):
        return v
    if isinstance(v, str):
        return ScaledQuantConfig.parse(v)
    raise _bad("scaled_quant", v, "None, a string like 'fp8-e4m3', or a ScaledQuantConfig")


def _check_rng(v: Any) -> RngOptions:
    if v is None:
        return RngOptions()
    if isinstance(v, Mapping):
        return RngOptions(**v)
    if not isinstance(v, RngOptions):
        raise _bad("rng", v, "an RngOptions(seed, backend)")
    return v


def _check_fusion_target(v: Any) -> str | None:
    if v not in (None, *FUSION_TARGETS):
        raise _bad(
            "fusion_target", v, "None (the device's target: cpu), " + ", ".join(FUSION_TARGETS)
        )
    return v


MAX_ARENA_ALIGNMENT = 4096
"""A page: larger alignments only waste memory (2**40 asked for a 1 TiB allocation)."""


def _check_alignment(a: Any) -> int:
    if (
        isinstance(a, bool)
        or not isinstance(a, int)
        or not 1 <= a <= MAX_ARENA_ALIGNMENT
        or a & (a - 1)
    ):
        raise _bad(
            "arena_alignment", a, f"a power of two from 1 to {MAX_ARENA_ALIGNMENT} (64, 128, ...)"
        )
    return a


def _check_scan(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < 2**32:
        raise _bad("scan_unroll_max_length", n, "an integer in [0, 2**32) (0 disables unrolling)")
    return n


def _check_dispatch(v: Any) -> KernelDispatchConfig:
    return v if isinstance(v, KernelDispatchConfig) else KernelDispatchConfig(v)


def _flag(name: str) -> Any:
    return lambda v: _bool(name, v)


_CHECKS: dict[str, Any] = {
    "precision": _check_precision,
    "policy": _check_policy,
    "scaled_quant": _check_scaled_quant,
    "rng": _check_rng,
    "dce": _flag("dce"),
    "constant_folding": _flag("constant_folding"),
    "verbose": _flag("verbose"),
    "fusion_target": _check_fusion_target,
    "fusion_opts": lambda v: FusionOptions() if v is None else FusionOptions.from_value(v),
    "arena_alignment": _check_alignment,
    "assert_fusion_clean": _flag("assert_fusion_clean"),
    "supported_ops": lambda v: None if v is None else _supported(v),
    "dim_binding": _check_dims,
    "param_bindings": lambda v: _path_or_map("param_bindings", v),
    "quant_param_bindings": lambda v: _path_or_map("quant_param_bindings", v),
    "kernel_dispatch": _check_dispatch,
    "disable_mpsgraph": _flag("disable_mpsgraph"),
    "scan_unroll_max_length": _check_scan,
    "cache_param_invariant": _flag("cache_param_invariant"),
    "extra_passes": check_extra_passes,
    "check_equivalence": _flag("check_equivalence"),
    "blocked_layout": lambda v: None if v is None else _bool("blocked_layout", v),
}
"""Knob name (RLX field name, in RLX order) -> validator returning the normalised value."""
_PLAIN = ("dce", "constant_folding", "verbose")
"""Knobs stored under their own name (their builders are the `with_*` methods)."""


def _supported(ops: Iterable[str]) -> tuple[str, ...]:
    """Op kinds (`matmul` or `rlx.matmul`) checked against the dialect; stored without `rlx.`."""
    names = _names("supported_ops", ops)

    out = []
    for n in names:
        kind = n.removeprefix("rlx.")
        if f"rlx.{kind}" not in rlx_dialect.OPS_BY_NAME:
            raise _bad("supported_ops", n, "rlx op names such as 'matmul' or 'rlx.matmul'")
        out.append(kind)
    return tuple(out)
