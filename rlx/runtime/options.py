"""`CompileOptions`: every knob of the RLX compile pipeline, with RLX 0.2.18's names and defaults.

RLX (Rust) has a field and a builder method with the same name for most knobs
(`opts.precision` / `opts.precision(p)`), which Python cannot express on one object. Here:

* construct with the RLX field names: ``CompileOptions(precision="f16", dce=False)``;
* the fluent builders keep the RLX names and return modified copies:
  ``CompileOptions().precision("f16").with_dce(False).rng_seed(7)``;
* reading a knob: ``dce``, ``constant_folding`` and ``verbose`` are plain attributes (their
  builders are the ``with_*`` methods); every other knob is read by calling its builder with
  no argument (``opts.precision() == "f16"``). ``opts.get(name)`` and ``opts.to_dict()`` read
  any knob by its RLX name; ``opts.replace(**changes)`` is the keyword form of the builders.
* storage: the dataclass fields are the knob names with a leading underscore (``_precision``)
  for the knobs whose name is taken by a builder. Every value is validated on construction
  (ValueError naming the field and the accepted values) and instances are immutable.

Environment (read only when a knob is not given explicitly, i.e. when the object is created
with that knob at its default): ``RLX_VERBOSE`` (truthy -> verbose), ``RLX_KERNEL_DISPATCH``
(``common``/``force_common`` -> "common", ``native``/``force_native`` -> "native", anything
else -> "prefer-native"), ``RLX_CACHE_PARAM_INVARIANT`` (truthy). Precedence: an explicit
constructor argument or builder call > the environment > the built-in default. Builders copy
the current values, so the environment is only consulted once, at creation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlx.env import env_flag
from rlx.runtime.option_types import (
    _CHECKS,
    _PLAIN,
    DISPATCH_POLICIES,
    FUSION_TARGETS,
    POLICIES,
    POLICY_CLASSES,
    PRECISIONS,
    RNG_BACKENDS,
    FusionOptions,
    KernelDispatchConfig,
    RngOptions,
    ScaledQuantConfig,
)

__all__ = [
    "DISPATCH_POLICIES", "FUSION_TARGETS", "POLICIES", "POLICY_CLASSES", "PRECISIONS",
    "RNG_BACKENDS", "CompileOptions", "FusionOptions", "KernelDispatchConfig", "RngOptions",
    "ScaledQuantConfig", "env_flag",
]  # fmt: skip

_UNSET: Any = object()


class _Knob:
    """Fluent builder named like its knob: `opts.NAME()` reads it, `opts.NAME(v)` returns a copy."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Callable[..., Any]:
        if obj is None:
            return self  # type: ignore[return-value]
        name = self.name

        def builder(value: Any = _UNSET) -> Any:
            return obj._knob(name, value)

        builder.__name__ = builder.__qualname__ = name
        builder.__doc__ = f"`{name}()` reads the knob; `{name}(value)` returns a modified copy."
        return builder


@dataclass(frozen=True, init=False, repr=False)
class CompileOptions:
    """Compile-time knobs (see the module docstring for the naming and env conventions)."""

    _precision: str = "f32"
    _policy: str | dict[str, str] | None = None
    _scaled_quant: ScaledQuantConfig | None = None
    _rng: RngOptions = field(default_factory=RngOptions)
    dce: bool = True
    constant_folding: bool = True
    verbose: bool = False
    _fusion_target: str | None = None
    _fusion_opts: FusionOptions = field(default_factory=FusionOptions)
    _arena_alignment: int = 64
    _assert_fusion_clean: bool = False
    _supported_ops: tuple[str, ...] | None = None
    _dim_binding: dict[str, int] | None = None
    _param_bindings: dict[str, Any] | Path | None = None
    _quant_param_bindings: dict[str, Any] | Path | None = None
    _kernel_dispatch: KernelDispatchConfig = field(default_factory=KernelDispatchConfig)
    _disable_mpsgraph: bool = False
    _scan_unroll_max_length: int = 64
    _cache_param_invariant: bool = False
    _extra_passes: tuple[tuple[str, str], ...] = ()  # see rlx.runtime.extra_passes
    _check_equivalence: bool = False  # reference interpreter before/after every pass
    _blocked_layout: bool | None = None  # NCHWc for conv-heavy regions (blocked-layout pass);
    # None: on when the weight reorders cost no run time (`blocked_layout_on`)

    def __init__(
        self,
        *,
        precision: str = "f32",
        policy: str | Mapping[str, str] | None = None,
        scaled_quant: str | ScaledQuantConfig | None = None,
        rng: RngOptions | Mapping[str, Any] | None = None,
        dce: bool = True,
        constant_folding: bool = True,
        verbose: bool = _UNSET,
        fusion_target: str | None = None,
        fusion_opts: FusionOptions | Mapping[str, Any] | None = None,
        arena_alignment: int = 64,
        assert_fusion_clean: bool = False,
        supported_ops: Iterable[str] | None = None,
        dim_binding: Mapping[str, int] | None = None,
        param_bindings: Mapping[str, Any] | str | Path | None = None,
        quant_param_bindings: Mapping[str, Any] | str | Path | None = None,
        kernel_dispatch: str | KernelDispatchConfig = _UNSET,
        force_common_kinds: Iterable[str] | None = None,
        force_native_kinds: Iterable[str] | None = None,
        disable_mpsgraph: bool = False,
        scan_unroll_max_length: int = 64,
        cache_param_invariant: bool = _UNSET,
        extra_passes: Mapping[str, str] | None = None,
        check_equivalence: bool = False,
        blocked_layout: bool | None = None,
    ) -> None:
        given = dict(locals())
        if verbose is _UNSET:
            given["verbose"] = env_flag("RLX_VERBOSE")
        if cache_param_invariant is _UNSET:
            given["cache_param_invariant"] = env_flag("RLX_CACHE_PARAM_INVARIANT")
        if kernel_dispatch is _UNSET:
            given["kernel_dispatch"] = KernelDispatchConfig.from_env()
        for name, check in _CHECKS.items():
            object.__setattr__(self, name if name in _PLAIN else "_" + name, check(given[name]))
        if force_common_kinds is not None or force_native_kinds is not None:
            kd = self._kernel_dispatch
            common = kd.force_common_kinds if force_common_kinds is None else force_common_kinds
            native = kd.force_native_kinds if force_native_kinds is None else force_native_kinds
            object.__setattr__(
                self, "_kernel_dispatch", KernelDispatchConfig(kd.policy, common, native)
            )

    # ------------------------------------------------------------------ generic access
    KNOBS = tuple(_CHECKS)

    def get(self, name: str) -> Any:
        """The value of the knob `name` (RLX field name)."""
        if name not in self.KNOBS:
            raise ValueError(
                f"unknown CompileOptions field {name!r}; fields: {', '.join(self.KNOBS)}"
            )
        return getattr(self, name if name in _PLAIN else "_" + name)

    OPTIONAL_KNOBS = ("extra_passes", "check_equivalence", "blocked_layout")
    """Knobs beyond RLX's field set (falsy default); `to_dict()` lists them only when set."""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k in self.KNOBS if (v := self.get(k)) or k not in self.OPTIONAL_KNOBS}

    def replace(self, **changes: Any) -> CompileOptions:
        """A validated copy with some knobs changed (RLX field names)."""
        kw = self.to_dict()
        unknown = [
            k
            for k in changes
            if k not in kw and k not in ("force_common_kinds", "force_native_kinds")
        ]
        if unknown:
            raise ValueError(
                f"unknown CompileOptions field {unknown[0]!r}; fields: {', '.join(self.KNOBS)}"
            )
        kw.update(changes)
        return CompileOptions(**kw)

    def non_defaults(self) -> dict[str, Any]:
        """Knobs whose value differs from the built-in default (ignoring the environment)."""
        base = CompileOptions(
            verbose=False, kernel_dispatch="prefer-native", cache_param_invariant=False
        )
        return {k: v for k, v in self.to_dict().items() if v != base.get(k)}

    def __repr__(self) -> str:
        return (
            "CompileOptions("
            + ", ".join(f"{k}={v!r}" for k, v in self.non_defaults().items())
            + ")"
        )

    def _knob(self, name: str, value: Any) -> Any:
        return self.get(name) if value is _UNSET else self.replace(**{name: value})

    # ------------------------------------------------------------------ fluent builders
    # Called with no argument, a builder returns the knob's current value.
    precision = _Knob()
    policy = _Knob()
    scaled_quant = _Knob()
    rng = _Knob()
    fusion_target = _Knob()
    fusion_opts = _Knob()
    arena_alignment = _Knob()
    supported_ops = _Knob()
    assert_fusion_clean = _Knob()
    dim_binding = _Knob()
    param_bindings = _Knob()
    quant_param_bindings = _Knob()
    disable_mpsgraph = _Knob()
    scan_unroll_max_length = _Knob()
    cache_param_invariant = _Knob()
    extra_passes = _Knob()
    check_equivalence = _Knob()
    blocked_layout = _Knob()

    def no_policy(self) -> CompileOptions:
        return self.replace(policy=None)

    def rng_seed(self, seed: int = _UNSET) -> Any:
        return (
            self._rng.seed
            if seed is _UNSET
            else self.replace(rng=RngOptions(seed, self._rng.backend))
        )

    def rng_backend(self, backend: str = _UNSET) -> Any:
        return (
            self._rng.backend
            if backend is _UNSET
            else self.replace(rng=RngOptions(self._rng.seed, backend))
        )

    def with_dce(self, b: bool) -> CompileOptions:
        return self.replace(dce=b)

    def with_constant_folding(self, b: bool) -> CompileOptions:
        return self.replace(constant_folding=b)

    def with_verbose(self, b: bool) -> CompileOptions:
        return self.replace(verbose=b)

    def kernel_dispatch(self, p: str | KernelDispatchConfig = _UNSET) -> Any:
        """Read the KernelDispatchConfig, or set its policy (a string) or the whole config."""
        if p is _UNSET or isinstance(p, KernelDispatchConfig):
            return self._knob("kernel_dispatch", p)
        kd = self._kernel_dispatch
        return self.replace(
            kernel_dispatch=KernelDispatchConfig(p, kd.force_common_kinds, kd.force_native_kinds)
        )

    def force_common_kinds(self, kinds: Iterable[str] = _UNSET) -> Any:
        if kinds is _UNSET:
            return self._kernel_dispatch.force_common_kinds
        return self.replace(force_common_kinds=tuple(kinds))

    def force_native_kinds(self, kinds: Iterable[str] = _UNSET) -> Any:
        if kinds is _UNSET:
            return self._kernel_dispatch.force_native_kinds
        return self.replace(force_native_kinds=tuple(kinds))
