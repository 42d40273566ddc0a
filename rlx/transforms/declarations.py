"""The option vocabularies of the passes, declared once and importable without xDSL.

`precision`, `rng`, `fusion` and `kernel-dispatch` take their accepted values (and fusion
its pattern toggles) from here, and `CompileOptions` validates its fields against the same
declarations; keeping them free of xDSL lets `rlx.load` check a stored artifact's options
without importing the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from rlx.dialects.rlx.precision_classes import COMPUTE, DATA_MOVEMENT, ELEMENTWISE, REDUCTION

# ----------------------------------------------------------------------------- precision

PRECISIONS = ("f32", "f16", "bf16")
"""Element types `precision` can run a graph in."""

RETYPED_CLASSES = (COMPUTE, REDUCTION, ELEMENTWISE, DATA_MOVEMENT)
"""The op precision classes a policy assigns a type to (boundary and pinned ops are never
retyped); each op declares its class with the `PrecisionClass` trait."""

_H, _B, _F = "f16", "bf16", "f32"
POLICIES: dict[str, dict[str, str]] = {
    "always-f32": dict.fromkeys(RETYPED_CLASSES, _F),
    "always-f16": dict.fromkeys(RETYPED_CLASSES, _H),
    "always-bf16": dict.fromkeys(RETYPED_CLASSES, _B),
    "auto-mixed": dict.fromkeys(RETYPED_CLASSES, _H),
    "auto-mixed-conservative": {**dict.fromkeys(RETYPED_CLASSES, _H), REDUCTION: _F},
    "auto-mixed-bf16": dict.fromkeys(RETYPED_CLASSES, _B),
}
"""`precision-policy` policy name -> class -> element type (`custom` is built from the
pass's `custom` option)."""

# ----------------------------------------------------------------------------- rng

RNG_BACKENDS = ("philox", "zero")
"""Random backends: Philox4x64-10 streams, or all zeros (for debugging)."""
DEFAULT_SEED, DEFAULT_BACKEND = 42, "philox"

# ----------------------------------------------------------------------------- fusion

FUSION_TARGETS = ("cpu", "none")
"""`fusion` targets: the CPU patterns, or none (every pattern off)."""


@dataclass(frozen=True)
class FusionPatterns:
    """One toggle per `fusion` pattern, in application order."""

    matmul_bias_act: bool = True
    residual_layer_norm: bool = True
    residual_rms_norm: bool = True
    rms_norm_reshape: bool = True
    swiglu_dual_matmul: bool = True
    shared_input_matmul: bool = True
    swiglu: bool = True
    attention: bool = True
    conv_bias_act: bool = True
    conv_global_pool: bool = True
    conv_input_scale: bool = True
    elementwise_region: bool = True


PATTERN_ORDER: tuple[str, ...] = tuple(f.name for f in fields(FusionPatterns))
"""Fusion pattern names in application order (each also names the option toggling it)."""


@dataclass(frozen=True)
class FusionToggles(FusionPatterns):
    """The `fusion` pass's pattern toggles and region limits (the pass inherits them;
    `FusionOptions` in `CompileOptions` is generated from them)."""

    max_steps: int = 0
    max_inputs: int = 0
    report: bool = False


# ----------------------------------------------------------------------------- dispatch

DISPATCH_POLICIES = ("prefer-native", "common", "native")
"""`kernel-dispatch` policies: native kernel where the backend has one, always the common
decomposition, or never."""

# ----------------------------------------------------------------------------- blocked layout

BLOCKED_LAYOUT_BLOCKS = (0, 8, 16, 32, 64)
"""`blocked-layout` `block` values: 0 (auto: the host's f32 vector lanes, 16 with AVX-512,
else 8) or the largest block to use, a power of two >= 8."""


@dataclass(frozen=True)
class BlockedLayoutOptions:
    """The `blocked-layout` pass's options (the pass inherits them)."""

    block: int = 0
    """largest channel block B (0: auto, 16 with AVX-512, else 8)"""
    min_convs: int = 2
    """blockable convolutions a region needs to be converted"""
    fold_weights: bool = True
    """fold the reorder of constant conv weights into blocked constants now"""
    prepare_weights: bool = False
    """move the reorder of param weights of @main into @prepare (cache_param_invariant)"""
    narrow_convs: bool = True
    """convs whose input channels are not a multiple of 8 (stems) read x blocked by 1"""
    winograd_weights: bool = True
    """with prepare-weights: the Winograd weight transform of 3x3 convs in @prepare too"""

    def check(self) -> None:
        """ValueError naming the option for an invalid value."""
        if self.block not in BLOCKED_LAYOUT_BLOCKS:
            raise ValueError(
                f"blocked-layout: block must be one of {', '.join(map(str, BLOCKED_LAYOUT_BLOCKS))}"
                f" (0: auto), got {self.block}"
            )
        if self.min_convs < 1:
            raise ValueError(f"blocked-layout: min-convs must be >= 1, got {self.min_convs}")
