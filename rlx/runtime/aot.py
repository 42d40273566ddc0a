"""Ahead-of-time code: compile a module to native object code once, link it later.

`compile_object` runs the rlx pipeline and LLVM for a target CPU (the host, or a named
CPU) and returns the object bytes with the ABI (`Signature`) and a `CodeKey`; `link`
loads such bytes into an MCJIT engine without running the compiler (no xDSL import, no
LLVM optimisation or code generation; `rlx.runtime.counters` stays unchanged) and returns
a `compiled.Artifact` ready for `CompiledGraph`. `rlx-bake` stores these sections in the
`.rlx` artifact (docs/artifact.md); `rlx.load` picks the one whose key `CodeKey.mismatch`
accepts here.

The code calls only symbols the process publishes itself before linking: the BLAS GEMM
wrappers (`rlx.runtime.blas`), the thread pool (`rlx_parallel_for`) and the bf16 helpers
(`rlx.runtime.llvm_host`), plus libc/libm. `LinkedCode` reads the object's undefined
symbols (`rlx.runtime.elf_symbols`), publishes just those pieces (`prepare_runtime`) and
refuses a symbol nobody provides (MCJIT would abort the process).

The compiler, the options and the LLVM IR translator are imported inside the functions
that compile (start-up laziness: linking stored code must not import xDSL).

The one host-dependent choice of the rlx lowering is the generated GEMM's tile (from the
host's vector ISA); it is part of `CodeKey.blas` (`blas.cache_key()`), so code whose tile
does not match this process is recompiled, never linked.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rlx.runtime import blas, parallel
from rlx.runtime.compiled import Artifact, CompiledGraph, Signature, aligned_empty, data_ptr
from rlx.runtime.elf_symbols import undefined_symbols
from rlx.runtime.llvm_host import _LOCK, ObjectEngine, _initialise, ensure_bf16_helpers

ABI_VERSION = 1
"""Bumped whenever generated code and the runtime stop agreeing (calling convention, runtime
symbols, memory plan layout): stored code of another ABI is never linked."""

GENERIC_CPUS = ("generic", "x86-64")
"""CPU names whose code runs on any host of the triple: their baseline is every x86-64's
(x86-64-v2..v4 imply features that a named target records none of, so their code links
only on a host of that very CPU name)."""


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

    def mismatch(self, other: CodeKey) -> str | None:
        """Why code for `self` must not run where `other` holds (None: it may)."""
        if self.abi != other.abi:
            return f"code ABI {self.abi}, this rlx uses {other.abi}"
        if self.triple != other.triple:
            return f"code for {self.triple}, this host is {other.triple}"
        if self.options != other.options:
            return "compiled with other CompileOptions"
        if self.blas != other.blas:
            return f"code built for GEMMs {self.blas}, this process has {other.blas}"
        have = {f[1:] for f in other.features.split(",") if f.startswith("+")}
        need = {f[1:] for f in self.features.split(",") if f.startswith("+")}
        if self.cpu in GENERIC_CPUS and need <= have:
            return None
        if self.cpu != other.cpu:
            return f"code for CPU {self.cpu}, this host is {other.cpu}"
        if not need <= have:
            missing = ", ".join(sorted(need - have)[:6])
            return f"code needs CPU features this host lacks ({missing})"
        return None


@functools.cache
def host() -> tuple[str, str, str]:
    """(triple, cpu name, feature string) of this machine."""
    import llvmlite.binding as llvm

    with _LOCK:
        _initialise()
        return (llvm.get_process_triple(), llvm.get_host_cpu_name(),
                llvm.get_host_cpu_features().flatten())  # fmt: skip


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
    """The key of code compiled for `cpu` (None or "host": this machine); ValueError for a
    CPU name LLVM does not know."""
    k = host_key(options)
    if cpu is None or cpu == "host" or cpu == k.cpu:
        return k
    check_cpu(k.triple, cpu)
    return CodeKey(k.triple, cpu, "", k.abi, k.options, k.blas)


@functools.cache
def check_cpu(triple: str, cpu: str) -> None:
    """ValueError unless LLVM knows `cpu` for `triple`. LLVM only prints "not a recognized
    processor" on stderr and later aborts the process in code generation, so the probe
    captures file descriptor 2 while it builds a target machine for an empty module."""
    import os
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
    import llvmlite.binding as llvm

    target = llvm.Target.from_triple(key.triple)
    return target.create_target_machine(
        cpu=key.cpu, features=key.features, opt=opt, codemodel="jitdefault", jit=True
    )


def compile_object(
    source: Any, options: Any = None, entry: str = "main", cpu: str | None = None
) -> ObjectCode:
    """Compile MLIR text / a ModuleOp to object code for `cpu` (default: the host)."""
    import llvmlite.binding as llvm

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
    with _LOCK:
        _initialise()
        mod = llvm.parse_assembly(ir)
        mod.verify()
        tm = _target_machine(key, 3)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        # the JitModule settings, so stored code computes what a JIT compile computes
        pto.loop_vectorization = pto.slp_vectorization = pto.loop_interleaving = True
        pto.loop_unrolling = False
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        data = bytes(tm.emit_object(mod))
    return ObjectCode(key, data, art.signature, art.prepare, art.report, art.reports)


# ----------------------------------------------------------------------------- linking


def _providers() -> tuple[tuple[str, Callable[[], Any]], ...]:
    return (("rlx_blas_", blas.register), ("rlx_parallel_for", parallel.register),
            ("__trunc", ensure_bf16_helpers))  # fmt: skip


def prepare_runtime(symbols: list[str] | None = None) -> None:
    """Publish what stored code may call: the BLAS GEMMs, the thread pool, the bf16 helpers
    (only those `symbols` need, when given), once per process. `rlx.load` does it on first
    use; a server may call `prepare_runtime()` at start-up so that the first load only maps
    and links (about 0.15-0.25 s of one-time set-up on the 2-core bench machine, see
    bench/bake_load.py). With `symbols`, raises LinkError naming any this process cannot
    resolve (MCJIT would abort the process on it)."""
    import llvmlite.binding as llvm

    _initialise()
    for prefix, register in _providers():
        if symbols is None or any(x.startswith(prefix) for x in symbols):
            register()
    missing = [x for x in symbols or () if not llvm.address_of_symbol(x)]
    if missing:
        raise LinkError(f"unresolved symbol(s) {', '.join(sorted(missing)[:8])}")


class LinkError(RuntimeError):
    """Stored object code needs a symbol this process does not provide."""


class LinkedCode(ObjectEngine):
    """Stored object code linked into MCJIT (the `JitModule` interface: `address`,
    `llvm_ir`, `asm`). Keep it alive while its functions may run."""

    what = "stored object code"

    llvm_ir = (
        "; LLVM IR is not stored in artifacts: rlx.load(path, allow_native=False) compiles it\n"
    )

    def __init__(self, data: bytes | memoryview) -> None:
        data = bytes(data)
        prepare_runtime(undefined_symbols(data))  # ELF: only what the code imports
        super().__init__(data)

    @property
    def asm(self) -> str:
        return "; assembly is not available for stored object code (load with allow_native=False)"


def link(data: bytes | memoryview, meta: dict[str, Any]) -> Artifact:
    """An Artifact from stored object bytes and their `ObjectCode.meta()` (no compiler)."""
    sig = Signature.from_json(meta["signature"])
    prep = None if meta.get("prepare") is None else Signature.from_json(meta["prepare"])
    code = LinkedCode(data)
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
