"""Lowering and LLVM-optimising a module's kernels on several cores (`rlx.compile`).

Why: after `convert-rlx-to-linalg` a CNN is a few hundred kernel functions, and the rest of
a cold compile (the xDSL passes down to the llvm dialect, the LLVM IR text, LLVM's O3
pipeline) treats each function on its own: on a 2-core machine half of that work can run
in a second process. The functions are grouped by the calls kernels (`rlx.kernel`
functions) make (a kernel and the workers it calls stay together, so LLVM inlines and
specialises them as before; a graph function, i.e. the entry, `@prepare` or a
`split-graph` part, is a group of its own unless a kernel calls it) and the groups are
spread by estimated cost (`_cost`: ops, those in loops 8x) over this process and
`jobs() - 1` forked children. Each child lowers its part to LLVM IR, sends the text (the
fallback), optimises it with the pipeline and target machine of the `JitModule` that will
load it (`llvm_host.Codegen`: the same optimisation level, unrolling, CPU and features),
generates its machine code and sends the bitcode and the object; this process lowers,
optimises and generates code for its own part meanwhile, and MCJIT loads the children's
objects beside its own (`JitModule`; the cache stores them as one `object_bundle`; the
bitcode makes the IR text of the whole program). A function called across parts keeps its
definition with external linkage instead of internal; nothing else changes.

Anything a child cannot do is done here instead: a pass failing in a child is re-run in
this process (so its diagnostic is raised as in a serial compile), a child that fails in
LLVM or dies has its IR text optimised and compiled here. `RLX_COMPILE_JOBS`: `auto`
(default: the usable CPUs, at most `MAX_JOBS`), or a count (1: serial). Modules under
`MIN_OPS` operations compile serially (forking costs more than it saves).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from xdsl.dialects import func, llvm, memref, scf
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Operation, Region

from rlx.env import env_count, usable_cpus
from rlx.lowering.llvm_ir import to_llvm_ir
from rlx.runtime import llvm_worker
from rlx.runtime.jit import JitModule, Part
from rlx.runtime.llvm_host import _LOCK, Codegen, _initialise, _target_machine, parse_for

JOBS_ENV = "RLX_COMPILE_JOBS"
MAX_JOBS = 4
"""Most processes `auto` uses."""
MIN_OPS = 2000
"""Operations (after `convert-rlx-to-linalg`) below which a module compiles serially."""
REPLY_TIMEOUT_S = llvm_worker.REPLY_TIMEOUT_S
"""Longest wait for a child's message; then it is killed and its part is done here."""

Lower = Callable[[ModuleOp, bool], None]
"""Runs the llvm-dialect pipeline on one part, in place (True: in a child, quietly)."""


def can_fork() -> bool:
    """Forking a process that may have threads is safe enough only on Linux (on macOS
    system frameworks abort in the child; Windows has no fork)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def fork(run: Callable[[], None]) -> int:
    """`run()` in a forked child, which then exits (status 0 when `run` returned, 1 when
    it raised); returns the child's pid, OSError when there is no process to be had.
    Flushes stdout and stderr first (else the child would write them again), forks while
    no thread of this process is inside LLVM, and turns the cyclic GC off in the child (a
    collection would touch, and so copy, every page of the heap)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with _LOCK:
        pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            gc.disable()
            run()
            code = 0
        finally:
            os._exit(code)
    return pid


def jobs() -> int:
    """Processes for one compile: `RLX_COMPILE_JOBS` (ValueError naming it when bad)."""
    n = env_count(JOBS_ENV, lambda: min(usable_cpus(), MAX_JOBS), auto=True)
    return n if can_fork() else 1


# ----------------------------------------------------------------------------- partition


def _symbol_refs(op: Operation) -> set[str]:
    """Root names of every symbol reference in `op`'s body (calls, globals, callees)."""
    out: set[str] = set()
    for o in op.walk():
        for v in (*o.properties.values(), *o.attributes.values()):
            if isinstance(v, SymbolRefAttr):
                out.add(v.root_reference.data)
    return out


def _name(op: Operation) -> str | None:
    sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return getattr(sym, "data", None)


LOOP_OP_COST = 8
"""What an op inside a loop costs against one outside (`_cost`)."""


def _cost(f: Operation) -> tuple[int, int]:
    """(ops, estimated cost) of lowering and optimising `f`: its ops, those inside a loop
    (`scf.for` / `scf.parallel` / `scf.while`: where LLVM vectorizes, unrolls and
    schedules) LOOP_OP_COST times over. Why not the op count: a graph function is
    mostly calls and casts, cheap to lower and to optimise, while a microkernel's loop
    bodies cost LLVM far more per op (densenet121 split by op count: this process's half
    took 2.2 s, the child's 3.7 s)."""
    ops = cost = 0
    todo: list[tuple[Operation, bool]] = [(f, False)]
    while todo:
        op, looped = todo.pop()
        ops += 1
        cost += LOOP_OP_COST if looped else 1
        inner = looped or isinstance(op, scf.ForOp | scf.ParallelOp | scf.WhileOp)
        for r in op.regions:
            for b in r.blocks:
                todo.extend((o, inner) for o in b.ops)
    return ops, cost


@dataclass
class Split:
    """`module` (part 0, this process) and the parts moved out of it."""

    parts: list[ModuleOp]
    cross: set[str] = field(default_factory=set)
    """Functions defined in one part and referenced from another (external linkage)."""


def split_module(module: ModuleOp, n: int) -> Split | None:
    """Move groups of kernels out of `module` into up to `n - 1` new modules (see the
    module docstring); None (module unchanged) when it is small or cannot be split."""
    if n < 2:
        return None
    ops = list(module.ops)
    defs: dict[str, func.FuncOp] = {}
    for o in ops:
        nm = _name(o)
        if nm is None or not isinstance(o, func.FuncOp | memref.GlobalOp):
            return None  # an op this split does not know: compile serially
        if isinstance(o, func.FuncOp) and o.body.blocks:
            defs[nm] = o
    costs = {nm: _cost(f) for nm, f in defs.items()}
    if sum(count for count, _ in costs.values()) < MIN_OPS:
        return None
    weight = {nm: cost for nm, (_, cost) in costs.items()}
    refs = {nm: _symbol_refs(f) for nm, f in defs.items()}
    parent = {k: k for k in defs}

    def root(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for k, f in defs.items():  # a kernel and what it calls: one group
        if "rlx.kernel" in f.attributes:
            for r in refs[k]:
                if r in defs:
                    parent[root(r)] = root(k)
    groups: dict[str, list[str]] = {}
    for k in defs:  # module order: deterministic
        groups.setdefault(root(k), []).append(k)
    size = {g: sum(weight[k] for k in ks) for g, ks in groups.items()}
    load = [0.0] * n
    where: dict[str, int] = {}
    for g in sorted(groups, key=lambda g: -size[g]):  # largest first, to the lightest part
        i = min(range(n), key=lambda j: load[j])
        load[i] += size[g]
        for k in groups[g]:
            where[k] = i
    used = sorted({i for i in where.values() if i > 0})
    if not used:
        return None
    renum = {i: j + 1 for j, i in enumerate(used)}
    where = {k: renum.get(i, 0) for k, i in where.items()}
    return _build(module, ops, defs, refs, where, len(used) + 1)


def _build(module: ModuleOp, ops: list[Operation], defs: dict[str, func.FuncOp],
           refs: dict[str, set[str]], where: dict[str, int], n: int) -> Split:  # fmt: skip
    """Move the functions of parts 1.. into new modules: each gets clones of the globals
    and declarations it references and a declaration of every function another part
    defines; `module` gets declarations of the functions moved out that it calls."""
    by_name = {_name(o): o for o in ops}
    needs: list[set[str]] = [set() for _ in range(n)]
    for k, i in where.items():
        needs[i] |= refs[k]
    split = Split([module])
    bodies: list[list[Operation]] = [[] for _ in range(n)]
    for o in ops:
        nm = _name(o)
        i = where.get(nm, -1) if nm is not None else -1
        if i > 0:
            o.detach()
            bodies[i].append(o)
    for i in range(1, n):
        part_ops: list[Operation] = []
        for nm in sorted(needs[i]):
            o = by_name.get(nm)
            if o is None or where.get(nm) == i:
                continue
            if nm in defs:  # defined in another part
                part_ops.append(_declaration(defs[nm]))
                split.cross.add(nm)
            else:  # a global or a declaration: every part has its own copy
                part_ops.append(o.clone())
        split.parts.append(ModuleOp(part_ops + bodies[i]))
        split.parts[-1].attributes.update(module.attributes)
    moved = {nm for nm, i in where.items() if i > 0}
    for nm in sorted(needs[0] & moved):
        module.body.block.add_op(_declaration(defs[nm]))
        split.cross.add(nm)
    used_here = set().union(*(refs[k] for k, i in where.items() if i == 0))
    for o in list(module.ops):  # globals only the other parts use
        if isinstance(o, memref.GlobalOp) and _name(o) not in used_here:
            module.body.block.erase_op(o)
    return split


def _declaration(f: func.FuncOp) -> func.FuncOp:
    """A private declaration of `f` (same type and argument attributes)."""
    return func.FuncOp(f.sym_name.data, f.function_type, Region(), "private",
                       arg_attrs=f.arg_attrs)  # fmt: skip


def export_cross(part: ModuleOp, cross: set[str]) -> None:
    """External linkage for the `cross` functions `part` defines (lowered to `llvm.func`),
    so that the other parts' declarations resolve to them when the modules are linked."""
    for o in part.ops:
        if isinstance(o, llvm.FuncOp) and o.body.blocks and o.sym_name.data in cross:
            o.properties["linkage"] = llvm.LinkageAttr("external")


# ----------------------------------------------------------------------------- children


def _optimise_text(text: str, codegen: Codegen) -> tuple[bytes, bytes]:
    """`text` parsed, verified and optimised exactly as `JitModule` does with `codegen`
    (CPU and features given): its bitcode and its object code, generated by a target
    machine like MCJIT's."""
    _initialise()
    assert codegen.cpu is not None and codegen.features is not None
    tm = _target_machine(codegen.opt_level, codegen.cpu, codegen.features, jit=True)
    mod = parse_for(text, tm)
    if codegen.opt_level > 0:  # as `JitModule`: level 0 generates code unoptimised
        llvm_worker.run_pipeline(mod, tm, codegen.opt_level, codegen.unroll)
    bitcode = bytes(mod.as_bitcode())
    return bitcode, bytes(tm.emit_object(mod))


def _send(fd: int, ok: bool, data: bytes = b"", error: str = "") -> None:
    view = memoryview(llvm_worker.frame({"ok": ok, "error": error}, data))
    while view:
        view = view[os.write(fd, view) :]


def _child(fd: int, part: ModuleOp, lower: Lower, cross: set[str], codegen: Codegen) -> None:
    """The forked child: lower `part`, send its LLVM IR text, then its bitcode and object
    code, optimised and generated with `codegen`."""
    try:
        lower(part, True)
        export_cross(part, cross)
        text = to_llvm_ir(part)
    except BaseException as e:  # the parent re-runs the passes and reports the error
        _send(fd, False, error=f"{type(e).__name__}: {e}")
        return
    _send(fd, True, text.encode())
    try:
        bitcode, obj = _optimise_text(text, codegen)
    except BaseException as e:
        _send(fd, False, error=f"{type(e).__name__}: {e}")
        return
    _send(fd, True, bitcode)
    _send(fd, True, obj)


class Child:
    """One forked child lowering one part of a split module, and the pipe to read its messages from."""

    def __init__(self, part: ModuleOp, lower: Lower, cross: set[str], codegen: Codegen) -> None:
        self.part = part
        r, w = os.pipe()

        def run() -> None:
            os.close(r)
            _child(w, part, lower, cross, codegen)

        try:
            pid = fork(run)
        except OSError as e:  # no process to be had (EAGAIN, ENOMEM): done here
            os.close(r)
            os.close(w)
            self.pid, self.fd, self.error, self.closed = 0, -1, f"fork failed: {e}", True
            return
        os.close(w)
        self.pid, self.fd = pid, r
        self._reader = llvm_worker.FrameReader(r, REPLY_TIMEOUT_S)
        self.error = ""
        self.closed = False

    def receive(self) -> bytes | None:
        """The next message's payload, or None (and `error` set) when it failed."""
        if self.pid == 0:  # never started
            return None
        got = self._reader.message()
        if got is None:
            self.error = "no reply in time" if self._reader.timed_out else "the child exited"
            return None
        head, data = got
        if not head.get("ok"):
            self.error = str(head.get("error"))
            return None
        return data

    def close(self) -> None:
        """Reap the child (killed first if it is still running); idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            os.close(self.fd)
        except OSError:
            pass
        try:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done == 0:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
        except (ChildProcessError, OSError):
            pass


@dataclass
class ParallelBuild:
    """What `lower_split` leaves for `JitModule`: this process's LLVM IR, the functions
    the other parts define (`provided`), `more()`, the other parts' modules, and the
    code generation setting the children used (`jit()` loads them all with it)."""

    llvm_ir: str
    provided: frozenset[str]
    more: Callable[[], Sequence[Part]]
    children: int
    codegen: Codegen

    def jit(self) -> JitModule:
        """The whole program, optimised and loaded with the children's setting."""
        return JitModule(self.llvm_ir, **asdict(self.codegen), provided=self.provided,
                         more=self.more)  # fmt: skip


def lower_split(split: Split, lower: Lower, codegen: Codegen) -> ParallelBuild:
    """Lower part 0 here and the others in forked children, which optimise and generate
    code with `codegen` (module docstring). Raises what a pass raises (a failing child's
    part is lowered here, after this one's)."""
    codegen = codegen.for_host()  # asked once, here, not in every child
    children = [Child(p, lower, split.cross, codegen) for p in split.parts[1:]]
    try:
        main = split.parts[0]
        lower(main, False)
        export_cross(main, split.cross)
        text = to_llvm_ir(main)
        texts: list[str] = []
        failed: list[bool] = []
        for c in children:
            data = c.receive()
            failed.append(data is None)
            if data is None:  # the passes failed or the child died: do it here
                c.close()
                lower(c.part, False)
                export_cross(c.part, split.cross)
                texts.append(to_llvm_ir(c.part))
            else:
                texts.append(data.decode())
    except BaseException:
        for c in children:
            c.close()
        raise

    def more() -> list[Part]:
        """Each child's (optimised bitcode, object code), or its IR text for `JitModule`
        to optimise and generate code for."""
        out: list[Part] = []
        for c, t, bad in zip(children, texts, failed, strict=True):
            bitcode = None if bad else c.receive()
            obj = None if bitcode is None else c.receive()
            c.close()
            out.append(t if bitcode is None or obj is None else (bitcode, obj))
        return out

    return ParallelBuild(text, frozenset(split.cross), more, len(children), codegen)
