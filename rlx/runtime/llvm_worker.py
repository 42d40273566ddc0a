"""LLVM's optimisation pipeline, run in a helper process once a process has run it often.

Why: llvmlite 0.50's new-pass-manager bindings leak native memory on every use of the
default pipeline: `LLVMPY_CreatePassBuilder` allocates a `PassInstrumentationCallbacks`
that nothing frees, every run registers the `StandardInstrumentations` callbacks into it,
and building `buildPerModuleDefaultPipeline` alone keeps ~30 KB. Together about 65 KB per
compiled module, whatever RLX frees (500 compiles: +33 MB RSS). A process that compiles
many graphs therefore sends the pipeline to a helper process (this file run as a script:
it imports llvmlite only) that is replaced every `WORKER_JOBS` modules, and gets the
optimised module back as bitcode. Same LLVM, same target machine options: the same code.

`RLX_LLVM_WORKER`: `auto` (default) runs the first `IN_PROCESS_RUNS` pipelines in process
(a one-shot `rlx-run` pays no start-up) and the rest in the helper; `1` always uses the
helper; `0` never. If the helper cannot run, the pipeline runs in process.

This module is imported by `rlx.runtime.jit` and also executed as the helper's script, so
at module level it imports only the standard library and llvmlite.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import IO, Any

import llvmlite.binding as llvm

IN_PROCESS_RUNS = 16
"""With `RLX_LLVM_WORKER=auto`: pipelines run in this process before the helper is used."""
WORKER_JOBS = 256
"""Modules a helper optimises before it is replaced (bounds its own leak to ~17 MB)."""
REPLY_TIMEOUT_S = 600.0
"""Longest wait for the helper's reply to one module; past it the helper is killed and the
module is optimised in process (a stalled helper must not block every compile)."""


def frame(head: dict[str, Any], data: bytes = b"") -> bytes:
    """One message on a pipe: a JSON header line (with the payload's length `n`), then the
    payload (this helper's replies, `parallel_build`'s children)."""
    return json.dumps({**head, "n": len(data)}).encode() + b"\n" + data


class FrameReader:
    """Reads `frame`d messages from the pipe `fd`, each within `timeout` seconds."""

    def __init__(self, fd: int, timeout: float) -> None:
        self.fd, self.timeout = fd, timeout
        self._rest = b""  # bytes read past the last message (never more than one's)
        self.timed_out = False

    def message(self) -> tuple[dict[str, Any], bytes] | None:
        """The next (header, payload); None when the writer exited, sent a bad header or
        a short payload, or took longer than the timeout (`timed_out`)."""
        self.timed_out = False
        deadline = time.monotonic() + self.timeout
        line = self._read(deadline, until_newline=True)
        try:
            head = json.loads(line)
            n = int(head.get("n", 0))
        except (ValueError, TypeError, AttributeError):
            return None
        data = self._read(deadline, n=n)
        return (head, data) if len(data) == n else None

    def _read(self, deadline: float, n: int = 0, until_newline: bool = False) -> bytes:
        """`n` bytes (or one line) from the pipe, waiting at most until `deadline`; reads
        the descriptor directly, so nothing is left in a buffer."""
        out = bytearray(self._rest)
        while not (b"\n" in out if until_newline else len(out) >= n):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                self.timed_out = True
                break
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                break  # the writer exited
            out += chunk
        cut = out.index(b"\n") + 1 if until_newline and b"\n" in out else min(n, len(out))
        if until_newline and b"\n" not in out:
            cut = len(out)
        self._rest = bytes(out[cut:])
        return bytes(out[:cut])


def _target_machine(opt_level: int, cpu: str, features: str) -> Any:
    """The helper's copy of `llvm_host._target_machine(..., jit=True)` (importing that
    module would import rlx); `test_memory_growth` checks both give the same code."""
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=cpu, features=features, opt=opt_level, codemodel="jitdefault", jit=True
    )


def run_pipeline(mod: Any, tm: Any, opt_level: int, unroll: bool) -> None:
    """LLVM's default O<opt_level> module pipeline on `mod`, in place."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_interleaving = opt_level >= 2
    pto.loop_unrolling = unroll and opt_level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def mode() -> str:
    """`RLX_LLVM_WORKER` as "auto", "on" or "off"; ValueError naming it otherwise."""
    v = os.environ.get("RLX_LLVM_WORKER", "auto").strip().lower()
    if v in ("", "auto"):
        return "auto"
    if v in ("0", "false", "off", "no"):
        return "off"
    if v in ("1", "true", "on", "yes"):
        return "on"
    raise ValueError(f"RLX_LLVM_WORKER must be auto, 0 or 1, got {v!r}")


class _Worker:
    """One helper process and the pipes to it; used under the caller's lock."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", os.path.abspath(__file__)],  # -P: no rlx/runtime on sys.path
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.jobs = 0
        assert self.proc.stdout is not None
        self._reader = FrameReader(self.proc.stdout.fileno(), REPLY_TIMEOUT_S)

    def optimise(self, bitcode: bytes, request: dict[str, Any]) -> bytes:
        assert self.proc.stdin is not None
        self.jobs += 1
        self.proc.stdin.write(frame(request, bitcode))
        self.proc.stdin.flush()
        self._reader.timeout = REPLY_TIMEOUT_S
        got = self._reader.message()
        if self._reader.timed_out:
            raise RuntimeError(f"LLVM helper process: no reply in {REPLY_TIMEOUT_S:.0f} s")
        if got is None:
            raise RuntimeError("LLVM helper process: exited or short reply")
        reply, data = got
        if not reply.get("ok"):
            raise RuntimeError(f"LLVM helper process failed: {reply.get('error')}")
        return data

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


_STATE_LOCK = threading.Lock()
_runs = 0
_worker: _Worker | None = None
_failures = 0
MAX_FAILURES = 3
"""After this many helper failures the process stops trying (e.g. it cannot be started)."""


def _forget_in_child() -> None:
    """After `fork()`: close the child's copies of the helper's pipes. Kept open, they
    hold the helper's stdin open after the parent closes its own, so the parent's `close`
    waited out its 5 s timeout and killed the helper; the child starts its own if needed."""
    global _worker
    if _worker is not None:
        for f in (_worker.proc.stdin, _worker.proc.stdout):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        _worker = None


os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _close_at_exit() -> None:
    """End the helper with this process (EOF on its stdin; it exits on its own)."""
    global _worker
    if _worker is not None:
        _worker.close()
        _worker = None


def optimise(mod: Any, tm: Any, opt_level: int, cpu: str, features: str, unroll: bool) -> Any:
    """`mod` optimised at `opt_level` for `tm`: `mod` itself (in process) or a new module
    parsed from the helper's bitcode. Callers hold the JIT's LLVM lock."""
    global _runs, _worker, _failures
    setting = mode()
    with _STATE_LOCK:
        _runs += 1
        isolate = setting == "on" or (setting == "auto" and _runs > IN_PROCESS_RUNS)
        if isolate and _failures < MAX_FAILURES:
            request = {"opt": opt_level, "cpu": cpu, "features": features, "unroll": unroll}
            try:
                if _worker is None or _worker.jobs >= WORKER_JOBS:
                    if _worker is not None:
                        _worker.close()
                    _worker = _Worker()
                new = llvm.parse_bitcode(_worker.optimise(mod.as_bitcode(), request))
                new.name, new.triple, new.data_layout = mod.name, mod.triple, mod.data_layout
                return new
            except (OSError, ValueError, RuntimeError):
                _failures += 1
                if _worker is not None:
                    _worker.close()
                _worker = None  # start a fresh helper next time; this module: in process
    run_pipeline(mod, tm, opt_level, unroll)
    return mod


def _serve(inp: IO[bytes], out: IO[bytes]) -> None:
    """The helper's loop: a JSON header line and bitcode in, a JSON line and bitcode out."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    while header := inp.readline():
        try:
            req = json.loads(header)
            mod = llvm.parse_bitcode(inp.read(int(req["n"])))
            tm = _target_machine(int(req["opt"]), req["cpu"], req["features"])
            run_pipeline(mod, tm, int(req["opt"]), bool(req["unroll"]))
            out.write(frame({"ok": True}, mod.as_bitcode()))
        except Exception as e:  # reported to the parent, which falls back to in-process
            out.write(frame({"ok": False, "error": f"{type(e).__name__}: {e}"}))
        out.flush()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
