"""The thread pool behind `rlx_rt.parallel_call`: the JIT symbol `rlx_parallel_for`.

    void rlx_parallel_for(void (*task)(void **ctx, i64 begin, i64 end), void **ctx,
                          i64 tasks, i64 max_threads)

runs `task` over `[0, tasks)`. With `t = min(num_threads, max_threads, tasks)` it calls
`task(ctx, 0, tasks)` on the calling thread when `t <= 1`. Otherwise it publishes the job
to a persistent pool of `t - 1` worker threads (pthreads started on first use, never per
run) and works on it itself: the tasks are cut into about `4 t` chunks that every thread
claims from a shared ticket (dynamic schedule), and the caller returns once every chunk is
done. Only chunks that were claimed are waited for, so a worker the OS has not scheduled
yet (a busy machine) delays nothing: the caller simply does its share.

Idle workers spin for tens of microseconds (the next kernel usually follows at once), then
sleep on a futex. A second caller that finds the pool busy (two Python threads running
graphs at once) runs its tasks on its own thread. After `fork()` the child has no workers
and its callers do all chunks themselves.

The pool is a small LLVM IR module, once per process: JIT-compiled (`register()`, which
the loaders of generated code, `JitModule` and the compile cache's `ObjectModule`, call
before loading) or, for stored code, the object compiled from it at bake time and linked
without LLVM (`stored_entry`, `rlx.runtime.elf_loader`). Whichever comes first is the one
pool of the process; the other path reuses it. Off Linux (no futex) the same symbol runs
every task on the calling thread.

Thread count: `RLX_NUM_THREADS` (a positive integer) at first use, else the CPUs this
process may run on; `set_num_threads(n)` changes it at any time. It is read at run time,
so compiled code and the compile cache do not depend on it.
"""

from __future__ import annotations

import ctypes
import platform
import sys
import threading
from typing import Any

from rlx.env import env_count, usable_cpus
from rlx.runtime import (
    llvm_host,  # a module: llvm_host imports this one
    pool_profile,
)

ENV = "RLX_NUM_THREADS"

_COMMON_IR = r"""
@rlx_num_threads = global i64 1, align 8

define internal i64 @rlx_pf_min(i64 %a, i64 %b) alwaysinline {
  %lt = icmp slt i64 %a, %b
  %m = select i1 %lt, i64 %a, i64 %b
  ret i64 %m
}
"""

_POOL_IR = (
    _COMMON_IR
    + r"""
@rlx_pool_gen = internal global i32 0, align 64
@rlx_pool_ticket = internal global i64 0, align 64
@rlx_pool_done = internal global i64 0, align 64
@rlx_pool_lock = internal global i32 0, align 64
@rlx_pool_workers = internal global i64 0, align 8
@rlx_pool_task = internal global ptr null, align 8
@rlx_pool_ctx = internal global ptr null, align 8
@rlx_pool_tasks = internal global i64 0, align 8
@rlx_pool_grain = internal global i64 0, align 8
@rlx_pool_chunks = internal global i64 0, align 8

declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
@RELAX_DECL@

define internal void @rlx_pool_relax() alwaysinline {
@RELAX_CALL@
  ret void
}

; Claim the next chunk of job %g: its index, or -1 when the job is done or superseded.
define internal i64 @rlx_pool_claim(i64 %g) {
entry:
  %t0 = load atomic i64, ptr @rlx_pool_ticket acquire, align 8
  br label %loop
loop:
  %t = phi i64 [ %t0, %entry ], [ %seen, %cas ]
  %tg = lshr i64 %t, 32
  %same = icmp eq i64 %tg, %g
  br i1 %same, label %check, label %none
check:
  %i = and i64 %t, 4294967295
  %n = load atomic i64, ptr @rlx_pool_chunks monotonic, align 8
  %has = icmp slt i64 %i, %n
  br i1 %has, label %cas, label %none
cas:
  %t1 = add i64 %t, 1
  %r = cmpxchg ptr @rlx_pool_ticket, i64 %t, i64 %t1 acq_rel acquire, align 8
  %seen = extractvalue { i64, i1 } %r, 0
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %won, label %loop
won:
  ret i64 %i
none:
  ret i64 -1
}

; Run chunks of job %g until none is left. A claimed chunk pins the job's fields: the
; caller rewrites them only after every chunk is done.
define internal i64 @rlx_pool_run(i64 %g) {
entry:
  br label %loop
loop:
  %ran = phi i64 [ 0, %entry ], [ %ran1, %work ]
  %i = call i64 @rlx_pool_claim(i64 %g)
  %neg = icmp slt i64 %i, 0
  br i1 %neg, label %done, label %work
work:
  %ran1 = add i64 %ran, 1
  %task = load atomic ptr, ptr @rlx_pool_task monotonic, align 8
  %ctx = load atomic ptr, ptr @rlx_pool_ctx monotonic, align 8
  %tasks = load atomic i64, ptr @rlx_pool_tasks monotonic, align 8
  %grain = load atomic i64, ptr @rlx_pool_grain monotonic, align 8
  %b = mul i64 %i, %grain
  %e0 = add i64 %b, %grain
  %e = call i64 @rlx_pf_min(i64 %e0, i64 %tasks)
  call void %task(ptr %ctx, i64 %b, i64 %e)
  %old = atomicrmw add ptr @rlx_pool_done, i64 1 release, align 8
  br label %loop
done:
  ret i64 %ran
}

; A worker: spin briefly for a new job generation, then sleep on the futex.
define internal ptr @rlx_pool_worker(ptr %arg) {
entry:
  %myp = alloca i32, align 4
  %init = load atomic i32, ptr @rlx_pool_gen acquire, align 4
  store i32 %init, ptr %myp, align 4
  br label %outer
outer:
  br label %spin
spin:
  %k = phi i32 [ 0, %outer ], [ %k1, %relax ]
  %my = load i32, ptr %myp, align 4
  %g = load atomic i32, ptr @rlx_pool_gen acquire, align 4
  %new = icmp ne i32 %g, %my
  br i1 %new, label %run, label %count
count:
  %k1 = add i32 %k, 1
  %more = icmp slt i32 %k1, @SPIN@
  br i1 %more, label %relax, label %sleep
relax:
  call void @rlx_pool_relax()
  br label %spin
sleep:
  %s = call i64 (i64, ...) @syscall(i64 @FUTEX@, ptr @rlx_pool_gen, i32 128, i32 %my, ptr null)
  br label %outer
run:
  store i32 %g, ptr %myp, align 4
  %g64 = zext i32 %g to i64
  %ran = call i64 @rlx_pool_run(i64 %g64)
  br label %outer
}

; Start workers until there are %need of them (called under the pool lock).
define internal void @rlx_pool_grow(i64 %need) {
entry:
  %tid = alloca i64, align 8
  br label %loop
loop:
  %have = load i64, ptr @rlx_pool_workers, align 8
  %enough = icmp sge i64 %have, %need
  br i1 %enough, label %done, label %make
make:
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @rlx_pool_worker, ptr null)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %detach, label %done
detach:
  %t = load i64, ptr %tid, align 8
  %d = call i32 @pthread_detach(i64 %t)
  %h1 = add i64 %have, 1
  store i64 %h1, ptr @rlx_pool_workers, align 8
  br label %loop
done:
  ret void
}

define void @@ENTRY@(ptr %task, ptr %ctx, i64 %n, i64 %maxt) {
entry:
  %nt = load atomic i64, ptr @rlx_num_threads monotonic, align 8
  %t0 = call i64 @rlx_pf_min(i64 %nt, i64 %maxt)
  %t = call i64 @rlx_pf_min(i64 %t0, i64 %n)
  %serial = icmp sle i64 %t, 1
  br i1 %serial, label %ser, label %try
ser:
  call void %task(ptr %ctx, i64 0, i64 %n)
  ret void
try:
  %lk = cmpxchg ptr @rlx_pool_lock, i32 0, i32 1 acquire monotonic, align 4
  %got = extractvalue { i32, i1 } %lk, 1
  br i1 %got, label %start, label %ser
start:
  %need = sub i64 %t, 1
  call void @rlx_pool_grow(i64 %need)
  %t4 = mul i64 %t, 4
  %g0 = sdiv i64 %n, %t4
  %small = icmp slt i64 %g0, 1
  %grain = select i1 %small, i64 1, i64 %g0
  %a = add i64 %n, %grain
  %a1 = sub i64 %a, 1
  %chunks = sdiv i64 %a1, %grain
  store atomic ptr %task, ptr @rlx_pool_task monotonic, align 8
  store atomic ptr %ctx, ptr @rlx_pool_ctx monotonic, align 8
  store atomic i64 %n, ptr @rlx_pool_tasks monotonic, align 8
  store atomic i64 %grain, ptr @rlx_pool_grain monotonic, align 8
  store atomic i64 %chunks, ptr @rlx_pool_chunks monotonic, align 8
  store atomic i64 0, ptr @rlx_pool_done monotonic, align 8
  %old = load atomic i32, ptr @rlx_pool_gen monotonic, align 4
  %g = add i32 %old, 1
  %g64 = zext i32 %g to i64
  %ticket = shl i64 %g64, 32
  store atomic i64 %ticket, ptr @rlx_pool_ticket release, align 8
  store atomic i32 %g, ptr @rlx_pool_gen release, align 4
  %wake = trunc i64 %need to i32
  %w = call i64 (i64, ...) @syscall(i64 @FUTEX@, ptr @rlx_pool_gen, i32 129, i32 %wake)
  %mine = call i64 @rlx_pool_run(i64 %g64)
@MARK@
  br label %join
join:
  %k = phi i64 [ 0, %start ], [ %k1, %pause ], [ %k1, %yield ]
  %d = load atomic i64, ptr @rlx_pool_done acquire, align 8
  %all = icmp sge i64 %d, %chunks
  br i1 %all, label %finish, label %wait
wait:
  %k1 = add i64 %k, 1
  %long = icmp sgt i64 %k1, 1000
  br i1 %long, label %yield, label %pause
pause:
  call void @rlx_pool_relax()
  br label %join
yield:
  %y = call i32 @sched_yield()
  br label %join
finish:
  store atomic i32 0, ptr @rlx_pool_lock release, align 4
  ret void
}
"""
)

_SERIAL_IR = (
    _COMMON_IR
    + r"""
define void @rlx_parallel_for(ptr %task, ptr %ctx, i64 %n, i64 %maxt) {
  call void %task(ptr %ctx, i64 0, i64 %n)
  ret void
}
"""
)

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


SPIN = 2000
"""Rounds (a PAUSE each) an idle worker spins before it sleeps: tens of microseconds."""

_FUTEX_SYSCALL = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}


def _pool_ir(profile: bool = False) -> str | None:
    """The pool's IR for this host, or None where it has no futex (not Linux); with
    `profile`, `rlx_parallel_for` is the timing wrapper of `pool_profile` around it."""
    machine = platform.machine().lower()
    if sys.platform != "linux" or machine not in _FUTEX_SYSCALL:
        return None
    x86 = machine in ("x86_64", "amd64")
    if profile:
        core = _POOL_IR.replace("@ENTRY@", "rlx_pf_core").replace("@MARK@", pool_profile.MARK_CALL)
        core += pool_profile.WRAPPER_IR
    else:
        core = _POOL_IR.replace("@ENTRY@", "rlx_parallel_for").replace("@MARK@", "")
    return (
        core.replace("@FUTEX@", str(_FUTEX_SYSCALL[machine]))
        .replace("@SPIN@", str(SPIN))
        .replace("@RELAX_DECL@", "declare void @llvm.x86.sse2.pause()" if x86 else "")
        .replace("@RELAX_CALL@", "  call void @llvm.x86.sse2.pause()" if x86 else "")
    )


def _threads_from_env() -> int:
    return env_count(ENV, usable_cpus)


def register() -> str:
    """Make sure the process has its pool (JIT-compiled here unless stored code brought
    one, `stored_entry`) and publish `rlx_parallel_for` to LLVM for JIT-compiled code;
    the backend name ("pool", or "serial" off Linux)."""
    with _LOCK:
        if "backend" not in _STATE:
            _jit()
        if not _STATE.get("published"):
            llvm = llvm_host._llvm()
            llvm.add_symbol("rlx_parallel_for", _STATE["address"])
            _STATE["published"] = True
        return str(_STATE["backend"])


def _jit() -> None:
    llvm = llvm_host._llvm()
    llvm_host._initialise()
    profile = pool_profile.enabled()
    ir = _pool_ir(profile)
    mod = llvm.parse_assembly(_SERIAL_IR if ir is None else ir)
    mod.verify()
    tm = llvm_host._target_machine(2, *llvm_host.host_target(), True)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    _install("serial" if ir is None else "pool", engine.get_function_address("rlx_parallel_for"),
             engine.get_global_value_address("rlx_num_threads"), (engine, mod))  # fmt: skip
    if profile and ir is not None:
        _STATE.update(pool_profile.attach(engine))


def _install(backend: str, entry: int, threads_at: int, owner: object) -> None:
    count = ctypes.c_int64.from_address(threads_at)
    count.value = _threads_from_env()
    # Worker threads run this code until the process ends: it is never freed (not even at
    # interpreter shutdown, when a worker may still be spinning).
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(owner))
    _STATE.update(backend=backend, address=int(entry), owner=owner, threads=count)


def stored_entry(pool_object: bytes | None) -> int:
    """Address of `rlx_parallel_for` for stored code: the process's pool if it has one
    (one pool per process, never two sets of workers), else the pool object stored in the
    artifact (`pool_object`, compiled at bake time from `_pool_ir`) linked without LLVM,
    else a JIT-compiled pool."""
    from rlx.runtime import elf_loader

    with _LOCK:
        if "backend" not in _STATE and pool_object is not None and not pool_profile.enabled():
            image = elf_loader.Image(pool_object, elf_loader.process_symbols(_LIBC))
            _install("pool", image.address("rlx_parallel_for"), image.address("rlx_num_threads"),
                     image)  # fmt: skip
        if "backend" in _STATE:
            return int(_STATE["address"])
    register()
    return int(_STATE["address"])


_LIBC = ("pthread_create", "pthread_detach", "syscall", "sched_yield")


def _ensure() -> None:
    if "backend" not in _STATE:
        register()


def set_num_threads(n: int) -> None:
    """Threads `rlx_rt.parallel_call` may use from now on (1: run on the calling thread)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_num_threads: need a positive integer, got {n!r}")
    _ensure()
    _STATE["threads"].value = n


def get_num_threads() -> int:
    """The thread count `rlx_rt.parallel_call` uses (`RLX_NUM_THREADS` or the CPU count)."""
    _ensure()
    return int(_STATE["threads"].value)


def backend() -> str:
    """ "pool" (the persistent thread pool) or "serial" (off Linux: tasks run in order)."""
    _ensure()
    return str(_STATE["backend"])


__all__ = ["ENV", "backend", "get_num_threads", "register", "set_num_threads"]
