"""`rng`: record the run's random-number configuration (global seed and backend) on the
module, for the code generator and the reference interpreter.

The random ops themselves are left alone: each `rlx.rng_*` op draws from the Philox
stream keyed by `seed + seed_offset * 0x9E3779B97F4A7C15` (docs/dialect.md), and the
backend "zero" is implemented by the executors (they write zeros), so switching backend or
seed later never needs the graph to change. `rng_config(module)` reads the configuration
back with the defaults (42, "philox").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntegerAttr, IntegerType, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from rlx.transforms.declarations import DEFAULT_BACKEND, DEFAULT_SEED, RNG_BACKENDS

SEED_ATTR = "rlx.rng_seed"
"""Module attribute: the global seed, an i64 attribute holding the u64 seed."""
BACKEND_ATTR = "rlx.rng_backend"
"""Module attribute: the backend name, a string (one of RNG_BACKENDS)."""


def rng_config(module: builtin.ModuleOp) -> tuple[int, str]:
    """(seed, backend) recorded by the `rng` pass, else the defaults (42, "philox").

    Usage: `reference.run(m, inputs, params, rng_seed=s, rng_backend=b)` with
    `s, b = rng_config(m)`; a malformed attribute raises ValueError.
    """
    seed_attr = module.attributes.get(SEED_ATTR)
    backend_attr = module.attributes.get(BACKEND_ATTR)
    seed, backend = DEFAULT_SEED, DEFAULT_BACKEND
    if seed_attr is not None:
        if not isinstance(seed_attr, IntegerAttr):
            raise ValueError(f"module attribute {SEED_ATTR} must be an integer, got {seed_attr}")
        seed = seed_attr.value.data % 2**64
    if backend_attr is not None:
        if not isinstance(backend_attr, StringAttr) or backend_attr.data not in RNG_BACKENDS:
            raise ValueError(
                f"module attribute {BACKEND_ATTR} must be one of {', '.join(RNG_BACKENDS)}, "
                f"got {backend_attr}"
            )
        backend = backend_attr.data
    return seed, backend


def set_rng_config(module: builtin.ModuleOp, seed: int, backend: str) -> None:
    """Validate and record (seed, backend) as module attributes."""
    if not 0 <= seed < 2**64:
        raise PassFailedException(f"rng seed must be in [0, 2**64), got {seed}")
    if backend not in RNG_BACKENDS:
        raise PassFailedException(
            f"unknown rng backend '{backend}'; expected one of {', '.join(RNG_BACKENDS)}"
        )
    stored = seed - 2**64 if seed >= 2**63 else seed  # u64 bit pattern in a signless i64
    module.attributes[SEED_ATTR] = IntegerAttr(stored, IntegerType(64))
    module.attributes[BACKEND_ATTR] = StringAttr(backend)


@dataclass(frozen=True)
class RngPass(ModulePass):
    """Record the global RNG seed and backend (philox | zero) as module attributes."""

    name = "rng"
    main_option: ClassVar[str] = "seed"

    seed: int = DEFAULT_SEED
    """Global seed, an unsigned 64-bit integer."""
    backend: str = DEFAULT_BACKEND
    """philox (Philox4x64-10 streams) or zero (every random tensor is zeros)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        set_rng_config(op, self.seed, self.backend)
