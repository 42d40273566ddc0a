"""The register tile of the generated GEMM, chosen from the host CPU.

A microkernel keeps an `mr x nr` block of C in `mr * nr / lanes` vector registers, with
`nr / lanes` vector loads of B and `mr` broadcasts of A per step of k; the tile is the
largest that leaves registers for those (x86: 16 vector registers with AVX2, 32 with
AVX-512). `kc` bounds the k-slice of one call so that an A micro-panel (`mr x kc`) and a
B micro-panel (`kc x nr`) stay in L1 while the kernel runs.

`RLX_GEMM_ISA` (`avx512`, `avx2`, `generic`) overrides the host's choice, e.g. to test the
portable tile on an AVX-512 machine; it is part of the compile-cache key
(`rlx.runtime.blas.cache_key`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlx.env import FALSY, env_count
from rlx.host_cpu import ISA_ENV as ENV
from rlx.host_cpu import VECTOR_ISAS
from rlx.host_cpu import vector_isa as isa

__all__ = ["DIRECT_A_ENV", "ENV", "MIN_MNK", "MIN_TASKS", "TASKS_ENV", "TASK_MACS", "TILES", "Tile",
           "direct_a", "host_tile", "isa", "min_tasks"]  # fmt: skip

MIN_MNK = 32 * 32 * 32
"""Smallest M*N*K (per GEMM) for the generated GEMM and for OpenBLAS (`matmul.BLAS_MIN_MNK`
is this value): below it the plain loop nest costs about as much as packing."""


@dataclass(frozen=True)
class Tile:
    """Register tile and cache blocking of one instruction set."""

    isa: str
    lanes: int
    """f32 lanes of one vector register."""
    mr: int
    """Rows of C per microkernel call (broadcasts of A per k)."""
    nr: int
    """Columns of C per microkernel call (a multiple of `lanes`)."""
    kc: int
    """Largest k-slice of one microkernel call (L1 blocking)."""
    mc: int
    """Rows of A per task block (an `mc x kc` block of packed A stays in L2)."""
    nc: int
    """Columns of B per task block."""

    @property
    def name(self) -> str:
        return f"{self.isa} {self.mr}x{self.nr}"


TILES = {
    # 32 zmm: 24 accumulators, 2 of B, 1 broadcast of A.
    "avx512": Tile("avx512", 16, 12, 32, 256, 96, 256),
    # 16 ymm: 12 accumulators, 2 of B, 1 broadcast of A.
    "avx2": Tile("avx2", 8, 6, 16, 256, 120, 256),
    # 16 xmm (SSE, NEON has 32): 8 accumulators.
    "generic": Tile("generic", 4, 4, 8, 256, 128, 256),
}
assert tuple(TILES) == VECTOR_ISAS  # `isa()` (rlx.host_cpu: the plans below transforms use it)


def host_tile() -> Tile:
    """The tile generated code uses on this host."""
    return TILES[isa()]


TASKS_ENV = "RLX_GEMM_TASKS"
MIN_TASKS = 16
"""Tasks a GEMM is cut into at least (`RLX_GEMM_TASKS` overrides; 1: blocks of the tile's
`mc x nc` only): a 128 x 384 output has only 4 `mc x nc` blocks, so two threads split it
2 + 2 at best and 3 + 1 whenever one of them starts late. The pool hands out about four
chunks per thread (rlx/runtime/parallel.py); 16 tasks keep two to four threads busy."""

TASK_MACS = 1 << 18
"""No task is made smaller than this many multiply-adds by `driver._split` (a few microseconds)."""


def min_tasks() -> int:
    """`RLX_GEMM_TASKS` (a positive integer) or `MIN_TASKS`; compiled code depends on it
    (part of the compile-cache key, `rlx.runtime.blas.cache_key`)."""
    return env_count(TASKS_ENV, lambda: MIN_TASKS)


DIRECT_A_ENV = "RLX_GEMM_DIRECT_A"
"""`RLX_GEMM_DIRECT_A=0` makes the shape-generic GEMM pack every A (`generic.in_place`
never holds): for A/B measurements and tests of the packing task."""


def direct_a() -> bool:
    """Whether the generated GEMM may read an f32 A in place (`generic.in_place`): unless
    `RLX_GEMM_DIRECT_A` is 0 / false / off / no. Read at compile time; compiled code
    depends on it, so it is part of the compile-cache key (`rlx.runtime.blas.cache_key`),
    which must not import xDSL, hence here and not in `generic.py`."""
    raw = os.environ.get(DIRECT_A_ENV, "").strip().lower()
    return raw == "" or raw not in FALSY
