"""Ahead-of-time code: compile a module to native object code once, link it later.

`compile_object` runs the rlx pipeline and LLVM for a target CPU (the host, or an x86-64
level of `CPU_FEATURES`) and returns the object bytes with the ABI (`Signature`), a
`CodeKey` (with the feature set the code was compiled for) and the object code of the
runtime pieces it calls (`RUNTIME`: thread pool, BLAS wrappers, bf16 helpers). `link`
links such bytes without running the compiler (no xDSL import, no LLVM optimisation or
code generation; `rlx.runtime.counters` stays unchanged) and returns a
`compiled.Artifact` ready for `CompiledGraph`; on x86-64 Linux it loads no LLVM at all
(`rlx.runtime.elf_link`, `rlx.runtime.elf_loader`). `rlx-bake` stores these sections in
the `.rlx` artifact (docs/artifact.md); `rlx.load` picks the one `runs_here` accepts
(checked with CPUID, `rlx.host_cpu`, where it can answer; else with LLVM).

The code calls only the runtime pieces, plus libc/libm; `LinkedCode` reads the object's
undefined symbols (`rlx.runtime.elf_symbols`), links just those pieces and refuses a
symbol nobody provides (MCJIT would abort the process).

The compiler, the options, llvmlite and the LLVM IR translator are imported inside the
functions that compile (start-up laziness: linking stored code must not import xDSL or,
on x86-64 Linux, llvmlite).

The one host-dependent choice of the rlx lowering is the generated GEMM's tile (from the
host's vector ISA); it is part of `CodeKey.blas` (`blas.cache_key()`), so code whose tile
does not match this process is recompiled, never linked.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rlx import host_cpu
from rlx.runtime import blas, parallel
from rlx.runtime.abi import Artifact, Signature, aligned_empty, data_ptr
from rlx.runtime.compiled import CompiledGraph
from rlx.runtime.elf_link import (  # noqa: F401  (re-exported: the linking half of aot)
    LOADER_ENV,
    LinkedCode,
    LinkError,
    prepare_runtime,
    runtime_symbols,
    use_elf_loader,
)
from rlx.runtime.elf_symbols import undefined_symbols
from rlx.runtime.llvm_host import _LOCK, _initialise, _llvm, host_target

ABI_VERSION = 1
"""Bumped whenever generated code and the runtime stop agreeing (calling convention, runtime
symbols, memory plan layout): stored code of another ABI is never linked."""

GENERIC_CPUS = ("generic", "x86-64")
"""CPU names whose code runs on any host of the triple (their baseline is every x86-64's);
code of another name stored without a feature list (older bakes) links only on a host of
that very CPU name."""

_V1 = ("64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2")
_V2 = (*_V1, "crc32", "cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")
_V3 = (*_V2, "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = (*_V3, "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl")
CPU_FEATURES: dict[str, tuple[str, ...]] = {
    "generic": _V1, "x86-64": _V1, "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4,
}  # fmt: skip
"""The feature set stored with code for a named `--target-cpu`: the x86-64
micro-architecture levels of the x86-64 psABI (LLVM's `x86-64-v2..v4` are defined as
exactly these, implied features spelled out, under LLVM's feature names). Other CPU names
are refused: their feature lists live only inside LLVM, and code stored without one could
not be checked against the host it links on."""


@dataclass(frozen=True)
class CodeKey:
    """What stored code was generated for; all fields must agree before it is linked."""

    triple: str
    cpu: str
    features: str
    """LLVM feature string (`+avx2,-avx512f,...`); empty: implied by `cpu`."""
    abi: int
    options: str
    """sha256 of the CompileOptions that shaped the code (`cache.options_key`)."""
    blas: str
    """The GEMM choices the code depends on (`blas.cache_key()`: BLAS availability, the
    GEMM mode and the generated GEMM's tile ISA)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def needs(self) -> list[str]:
        """The CPU features the code was compiled for (`+` entries of `features`)."""
        return [f[1:] for f in self.features.split(",") if f.startswith("+")]

    def mismatch(self, other: CodeKey) -> str | None:
        """Why code for `self` must not run where `other` holds (None: it may). The CPU
        name does not matter when the feature set is stored: any host with every feature
        runs the code. Code of a named CPU without a feature list (bakes before feature
        sets were stored) runs only on a host of that very CPU name."""
        why = self._same_build(other)
        if why:
            return why
        have = {f[1:] for f in other.features.split(",") if f.startswith("+")}
        need = set(self.needs())
        if not need and self.cpu not in GENERIC_CPUS and self.cpu != other.cpu:
            return f"code for CPU {self.cpu}, this host is {other.cpu}"
        if not need <= have:
            missing = ", ".join(sorted(need - have)[:6])
            return f"code needs CPU features this host lacks ({missing})"
        return None

    def _same_build(self, other: CodeKey) -> str | None:
        if self.abi != other.abi:
            return f"code ABI {self.abi}, this rlx uses {other.abi}"
        if self.triple != other.triple:
            return f"code for {self.triple}, this host is {other.triple}"
        if self.options != other.options:
            return "compiled with other CompileOptions"
        if self.blas != other.blas:
            return f"code built for GEMMs {self.blas}, this process has {other.blas}"
        return None


LINUX_X86_64 = "x86_64-unknown-linux-gnu"
"""LLVM's process triple on x86-64 Linux (glibc)."""


def runs_here(key: CodeKey, options: Any = None) -> str | None:
    """`key.mismatch(host_key(options))` without loading LLVM where CPUID can answer
    (`rlx.host_cpu`): x86-64 Linux code with a stored feature list. None: it may run."""
    need = key.needs()
    missing = host_cpu.missing(need) if key.triple == LINUX_X86_64 and need else None
    if missing is None:
        return key.mismatch(host_key(options))
    here = CodeKey(LINUX_X86_64, key.cpu, "", ABI_VERSION, options_digest(options),
                   blas.cache_key())  # fmt: skip
    why = key._same_build(here)
    if why or not missing:
        return why
    return f"code needs CPU features this host lacks ({', '.join(sorted(missing)[:6])})"


@functools.cache
def host() -> tuple[str, str, str]:
    """(triple, cpu name, feature string) of this machine (asks LLVM)."""
    llvm = _llvm()

    with _LOCK:
        _initialise()
        return (llvm.get_process_triple(), *host_target())


def options_digest(options: Any) -> str:
    from rlx.runtime.cache import options_key
    from rlx.runtime.options import CompileOptions

    opts = CompileOptions() if options is None else options
    return hashlib.sha256(options_key(opts).encode()).hexdigest()


def host_key(options: Any = None) -> CodeKey:
    """The key stored code must match to be linked in this process with `options`."""
    triple, cpu, features = host()
    return CodeKey(triple, cpu, features, ABI_VERSION, options_digest(options), blas.cache_key())


def target_key(cpu: str | None, options: Any = None) -> CodeKey:
    """The key of code compiled for `cpu` (None or "host": this machine, with its features;
    a level of `CPU_FEATURES`: that feature set); ValueError for another CPU name."""
    k = host_key(options)
    if cpu is None or cpu == "host" or cpu == k.cpu:
        return k
    if cpu not in CPU_FEATURES:
        check_cpu(k.triple, cpu)  # an unknown name: the LLVM error
        raise ValueError(
            f"target CPU {cpu!r}: its feature set is not known here, so stored code could "
            f"not be checked against the host; use host or one of {', '.join(CPU_FEATURES)}"
        )
    features = ",".join("+" + f for f in CPU_FEATURES[cpu])
    return CodeKey(k.triple, cpu, features, k.abi, k.options, k.blas)


@functools.cache
def check_cpu(triple: str, cpu: str) -> None:
    """ValueError unless LLVM knows `cpu` for `triple`. LLVM only prints "not a recognized
    processor" on stderr and later aborts the process in code generation, so the probe
    captures file descriptor 2 while it builds a target machine for an empty module."""
    import tempfile

    import llvmlite.binding as llvm

    if not cpu or any(c.isspace() or c in ",+" for c in cpu):
        raise ValueError(f"invalid target CPU name {cpu!r}")
    with _LOCK, tempfile.TemporaryFile() as err:
        _initialise()
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, jit=True)
            mod = llvm.parse_assembly("")
            mod.triple = tm.triple
            tm.emit_object(mod)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        said = err.read().decode(errors="replace")
    if "not a recognized processor" in said:
        raise ValueError(f"unknown target CPU {cpu!r} for {triple} (LLVM: {said.splitlines()[0]})")


# ----------------------------------------------------------------------------- compiling


@dataclass
class ObjectCode:
    """The result of `compile_object`: object bytes plus what `link` needs."""

    key: CodeKey
    data: bytes
    signature: Signature
    prepare: Signature | None
    report: list[dict[str, str]]
    reports: dict[str, str]
    runtime: dict[str, bytes]
    """Object code of the runtime pieces the code calls (`RUNTIME`), for the same target:
    a load links them without LLVM."""

    def meta(self) -> dict[str, Any]:
        """JSON form of everything but the bytes (the artifact's code-section entry)."""
        return {
            **self.key.to_json(),
            "signature": self.signature.to_json(),
            "prepare": None if self.prepare is None else self.prepare.to_json(),
            "report": self.report,
            "reports": self.reports,
        }


def _target_machine(key: CodeKey, opt: int) -> Any:
    llvm = _llvm()
    target = llvm.Target.from_triple(key.triple)
    return target.create_target_machine(
        cpu=key.cpu, features=key.features, opt=opt, codemodel="jitdefault", jit=True
    )


def compile_object(
    source: Any, options: Any = None, entry: str = "main", cpu: str | None = None
) -> ObjectCode:
    """Compile MLIR text / a ModuleOp to object code for `cpu` (default: the host), with the
    runtime pieces it calls (`RUNTIME`)."""
    from rlx.lowering.llvm_ir import to_llvm_ir
    from rlx.runtime import compiler
    from rlx.runtime.options import CompileOptions

    opts = CompileOptions() if options is None else options
    key = target_key(cpu, opts)
    module, sources = compiler.load_module(source, compiler.make_context())
    text = str(module)
    log = compiler._Log(False)
    art = compiler._build(module, text, opts, entry, log, sources, capture=False, jit=False)
    ir = to_llvm_ir(module)
    data = _emit(ir, key, 3)
    imports = undefined_symbols(data) or []
    runtime: dict[str, bytes] = {}
    for name, (prefix, make) in RUNTIME.items():
        # the BLAS wrappers split large GEMMs over the pool: stored code calling BLAS needs it
        prefixes = (prefix, "rlx_blas_") if name == "pool" else (prefix,)
        ir = make() if any(x.startswith(prefixes) for x in imports) else None
        if ir is not None:
            runtime[name] = _emit(ir, key, 2, passes=False)
    return ObjectCode(key, data, art.signature, art.prepare, art.report, art.reports, runtime)


def _pool_ir() -> str | None:
    return parallel._pool_ir()  # None off Linux: the load JIT-compiles the serial backend


def _bf16_ir() -> str:
    from rlx.runtime.llvm_host import _SUPPORT_IR

    return _SUPPORT_IR


RUNTIME: dict[str, tuple[str, Callable[[], str | None]]] = {
    "pool": ("rlx_parallel_for", _pool_ir),
    "bf16": ("__trunc", _bf16_ir),
    "blas": ("rlx_blas_", blas.wrapper_ir),
}
"""Runtime pieces stored code may call, stored as object code next to it: name ->
(symbol prefix of its entry points, its LLVM IR, or None: nothing to store here)."""


def _emit(ir: str, key: CodeKey, opt: int, passes: bool = True) -> bytes:
    """Object code of LLVM IR `ir` for `key`'s target: with `passes`, the JitModule's
    optimisation; without, code generation only (how the runtime pieces are JIT-compiled)."""
    llvm = _llvm()
    with _LOCK:
        _initialise()
        mod = llvm.parse_assembly(ir)
        mod.verify()
        tm = _target_machine(key, opt)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        if passes:
            pto = llvm.create_pipeline_tuning_options(speed_level=opt)
            # the JitModule settings, so stored code computes what a JIT compile computes
            pto.loop_vectorization = pto.slp_vectorization = pto.loop_interleaving = True
            pto.loop_unrolling = False
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        return bytes(tm.emit_object(mod))


# ----------------------------------------------------------------------------- linking


def link(data: bytes | memoryview, meta: dict[str, Any],
         runtime: Mapping[str, bytes] | None = None) -> Artifact:  # fmt: skip
    """An Artifact from stored object bytes, their `ObjectCode.meta()` and the stored
    runtime pieces (no compiler)."""
    sig = Signature.from_json(meta["signature"])
    prep = None if meta.get("prepare") is None else Signature.from_json(meta["prepare"])
    code = LinkedCode(data, runtime)
    address = code.address(sig.entry)
    prep_address = 0 if prep is None else code.address(prep.entry)
    return Artifact(sig, code, address, list(meta.get("report", [])), {}, "",
                    prep, prep_address, dict(meta.get("reports", {})))  # fmt: skip


class LoadedGraph(CompiledGraph):
    """A CompiledGraph whose weight params are bound, without a copy, to read-only buffers
    (the artifact's memory map). Bound weights are not listed in `params`; the other params
    (`params_remaining` of a bake, or every weight of a `runtime`-mode artifact) are set
    with `set_param` / `set_params` as usual."""

    def __init__(
        self,
        artifact: Artifact,
        regenerate: Callable[[], Artifact] | None,
        weights: Mapping[str, np.ndarray],
    ) -> None:
        super().__init__(artifact, regenerate)
        self._bound: set[str] = set()
        for name, blob in weights.items():
            spec = self._param_spec(name)
            if spec is None:
                continue  # removed by optimisation
            if blob.nbytes != spec.nbytes:
                raise ValueError(
                    f"weight '{name}' has {blob.nbytes} bytes, {spec} needs {spec.nbytes}"
                )
            arr = np.asarray(blob).view(spec.np_dtype).reshape(spec.shape)
            if data_ptr(arr) % self._align or not arr.flags.c_contiguous:
                arr = aligned_empty(spec.shape, spec.np_dtype, self._align)
                arr[...] = np.asarray(blob).view(spec.np_dtype).reshape(spec.shape)
            self._params[name] = arr
            self._bound.add(name)
            if name in self._prep_params:
                self._prep_stale = True
        self._version += 1

    @property
    def params(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Params still to set (the bound weights are not listed)."""
        return {k: v for k, v in super().params.items() if k not in self._bound}
