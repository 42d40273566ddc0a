"""Per-kernel timing of the thread pool: `RLX_POOL_PROFILE=1` (a measuring aid, off by default).

With the variable set when the pool is first built, the JIT-compiled `rlx_parallel_for`
becomes a wrapper around the pool's entry that records, for each call, into a fixed
buffer of `CAPACITY` records (later calls are counted, not stored):

    task    the task function's address (one per kernel: identical ops share it)
    tasks   the op's task count; max_threads its cap
    start / mid / end   CLOCK_MONOTONIC ns: entry, the moment the calling thread ran out
                        of chunks (its own share done), return (every chunk done)
    chunks  chunks the job was cut into (0: ran serially on the caller, `t <= 1`)
    mine    chunks the calling thread ran itself

So `end - start` is the kernel's wall time, `end - mid` the caller's wait for the other
threads (imbalance / hand-off), `mine / chunks` how the work was shared, and the gaps
between one record's end and the next one's start the serial kernels between them (GEMMs
below the parallel threshold, copies, the graph function's own work). Stored code
(`rlx.load`) keeps its own, unprofiled pool unless the pool was already built here.
`bench/kernel_profile.py` prints the table per kernel at 1 and N threads.

The records are written by the calling thread only: with two Python threads running
graphs at once they interleave (still one record per call). Reading: `records()`;
`reset()` empties the buffer.
"""

from __future__ import annotations

import ctypes
from typing import Any

from rlx.env import env_flag

ENV = "RLX_POOL_PROFILE"
CAPACITY = 1 << 16
FIELDS = ("task", "tasks", "max_threads", "start", "mid", "end", "chunks", "mine")

RECORD_VALUES = ("%fn", "%n", "%maxt", "%t0", "%mid", "%t1", "%chunks", "%mine")
"""The wrapper's IR values stored as one record, in `FIELDS` order."""


def _record_stores() -> str:
    """The wrapper's stores of `RECORD_VALUES` into the record at %f0 (field k at %fk)."""
    lines = [f"  store i64 {RECORD_VALUES[0]}, ptr %f0, align 8"]
    for k, v in enumerate(RECORD_VALUES[1:], 1):
        lines += [f"  %f{k} = getelementptr i64, ptr %f0, i64 {k}",
                  f"  store i64 {v}, ptr %f{k}, align 8"]  # fmt: skip
    return "\n".join(lines)


WRAPPER_IR = r"""
@rlx_prof_buf = global [@CAP@ x [8 x i64]] zeroinitializer, align 64
@rlx_prof_count = global i64 0, align 8
@rlx_prof_mid = internal global i64 0, align 8
@rlx_prof_chunks = internal global i64 0, align 8
@rlx_prof_mine = internal global i64 0, align 8

declare i32 @clock_gettime(i32, ptr)

define internal i64 @rlx_prof_now() {
  %ts = alloca [2 x i64], align 8
  %rc = call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts, align 8
  %p = getelementptr [2 x i64], ptr %ts, i64 0, i64 1
  %ns = load i64, ptr %p, align 8
  %a = mul i64 %s, 1000000000
  %r = add i64 %a, %ns
  ret i64 %r
}

define internal void @rlx_prof_mark(i64 %mine, i64 %chunks) {
  %t = call i64 @rlx_prof_now()
  store i64 %t, ptr @rlx_prof_mid, align 8
  store i64 %mine, ptr @rlx_prof_mine, align 8
  store i64 %chunks, ptr @rlx_prof_chunks, align 8
  ret void
}

define void @rlx_parallel_for(ptr %task, ptr %ctx, i64 %n, i64 %maxt) {
entry:
  %t0 = call i64 @rlx_prof_now()
  store i64 %t0, ptr @rlx_prof_mid, align 8
  store i64 0, ptr @rlx_prof_chunks, align 8
  store i64 0, ptr @rlx_prof_mine, align 8
  call void @rlx_pf_core(ptr %task, ptr %ctx, i64 %n, i64 %maxt)
  %t1 = call i64 @rlx_prof_now()
  %i = atomicrmw add ptr @rlx_prof_count, i64 1 monotonic, align 8
  %fits = icmp slt i64 %i, @CAP@
  br i1 %fits, label %rec, label %out
rec:
  %mid = load i64, ptr @rlx_prof_mid, align 8
  %chunks = load i64, ptr @rlx_prof_chunks, align 8
  %mine = load i64, ptr @rlx_prof_mine, align 8
  %fn = ptrtoint ptr %task to i64
  %f0 = getelementptr [@CAP@ x [8 x i64]], ptr @rlx_prof_buf, i64 0, i64 %i, i64 0
@STORES@
  br label %out
out:
  ret void
}
""".replace("@CAP@", str(CAPACITY)).replace("@STORES@", _record_stores())

MARK_CALL = "  call void @rlx_prof_mark(i64 %mine, i64 %chunks)"
"""The call the pool's entry makes when its own share is done (profiling only)."""


def enabled() -> bool:
    """Whether `RLX_POOL_PROFILE` asks for the profiling pool."""
    return env_flag(ENV)


def _buffers() -> tuple[Any, Any]:
    from rlx.runtime import parallel

    parallel.register()
    state = parallel._STATE
    if "profile" not in state:
        raise RuntimeError(
            f"pool profiling is off: set {ENV}=1 before the first compile or load of the process"
        )
    return state["profile"]


def records() -> list[dict[str, int]]:
    """The stored calls in order, one dict of `FIELDS` each (times in ns)."""
    count, buf = _buffers()
    n = min(int(count.value), CAPACITY)
    flat = buf[: n * 8]
    return [dict(zip(FIELDS, flat[i * 8 : i * 8 + 8], strict=True)) for i in range(n)]


def dropped() -> int:
    """Calls made while the buffer was full (counted, not stored)."""
    count, _ = _buffers()
    return max(0, int(count.value) - CAPACITY)


def reset() -> None:
    """Empty the buffer (call it between runs)."""
    count, _ = _buffers()
    count.value = 0


def attach(engine: Any) -> dict[str, Any]:
    """ctypes views of the JIT-compiled profiling globals of `engine` (for `_STATE`)."""
    count = ctypes.c_int64.from_address(engine.get_global_value_address("rlx_prof_count"))
    buf = (ctypes.c_int64 * (CAPACITY * 8)).from_address(
        engine.get_global_value_address("rlx_prof_buf")
    )
    return {"profile": (count, buf)}


__all__ = ["CAPACITY", "ENV", "FIELDS", "dropped", "enabled", "records", "reset"]
