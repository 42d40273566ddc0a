"""Loading `.rlx` artifacts: `load(path) -> CompiledGraph`, `materialize`, `inspect`.

`load` links the stored object code for this host when a code section matches
(`rlx.runtime.aot`): no xDSL, no compiler, on x86-64 Linux no LLVM, nothing written to the
compile cache. The
weights stay in the file's read-only memory map and are bound to the code's weight params
without a copy. Otherwise (another CPU, other CompileOptions, `allow_native=False`, no code
stored) it compiles the stored MLIR text, with the weights still memory-mapped params.

The compiler, xDSL and the AOT linker are imported inside the functions that need them
(start-up laziness: a load that links stored code never imports xDSL or the compiler).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any

from rlx.bake import artifact
from rlx.bake.artifact import PLACEHOLDER_PREFIX
from rlx.bake.report import ArtifactInfo
from rlx.runtime.elf_symbols import ElfError

__all__ = ["ArtifactInfo", "inspect", "load", "materialize", "parse_module"]


def parse_module(art: artifact.Artifact) -> Any:
    """The stored module (a verified ModuleOp). The module section must be MLIR text: it is
    never taken as a path to another file."""
    from rlx.runtime.compiler import load_module, make_context

    text = art.module_text
    if "{" not in text:  # every MLIR module has a region; a bare path has none
        raise artifact.ArtifactError(
            f"{art.path}: the module section is not MLIR text (starts {text[:60]!r})"
        )
    try:
        module, _ = load_module(text, make_context())
    except ValueError as e:
        raise artifact.ArtifactError(f"{art.path}: the stored module does not parse: {e}") from None
    return module


def materialize(path: str | Path | artifact.Artifact, verify: bool = True) -> Any:
    """The baked module of an artifact with every weight placeholder replaced by a
    constant holding the table bytes (checks happen before parsing)."""
    from rlx.bake import memory

    art = path if isinstance(path, artifact.Artifact) else artifact.read(path, verify=verify)
    module = parse_module(art)
    try:
        memory.materialize(module, art.blobs())
    except ValueError as e:
        raise artifact.ArtifactError(f"{art.path}: {e}") from None
    module.verify()
    return module


def _code_module(art: artifact.Artifact) -> Any:
    """The module the stored code was compiled from: weight constants as placeholders."""
    from rlx.bake import memory

    module = parse_module(art)
    if art.memory == "duplex":
        memory.strip_weights(module, {e["name"] for e in art.weights if e.get("live", True)})
    return module


def _weights(art: artifact.Artifact) -> dict[str, Any]:
    if art.memory == "runtime":
        return {}
    return {PLACEHOLDER_PREFIX + n: b for n, b in art.blobs().items()}


def _pick(art: artifact.Artifact, options: Any) -> tuple[dict[str, Any] | None, str]:
    """The code section usable here, or None and why not."""
    from rlx.runtime import aot

    if not art.code:
        return None, "the artifact holds no object code"
    reasons = []
    for c in art.code:
        key = aot.CodeKey(**{f: c[f] for f in aot.CodeKey.__dataclass_fields__})
        why = aot.runs_here(key, options)
        if why is None:
            return c, ""
        reasons.append(why)
    return None, "; ".join(dict.fromkeys(reasons))


def _say(msg: str) -> None:
    sys.stderr.write(f"rlx.load: {msg}\n")
    sys.stderr.flush()


def load(
    path: str | Path,
    options: Any = None,
    *,
    verify: bool = True,
    allow_native: bool = True,
    quiet: bool = False,
) -> Any:
    """Load an artifact as a ready CompiledGraph (weights bound; only the params the bake
    left unbound, or every weight of a `runtime`-mode artifact, are left to `set_param`).

    `options`: a CompileOptions (code compiled with other options is not used).
    `allow_native=False`: never link the stored object code (it is executable code, like a
    shared library: docs/artifact.md, "Trust"); compile the MLIR text instead.
    `verify=False` skips the weight checksums (module and code are always checked).
    When stored code cannot be used, a RuntimeWarning says why (once) and progress goes
    to stderr unless `quiet`.
    """
    from rlx.runtime import aot

    art = artifact.read(path, verify=verify)
    entry = str(art.header["module"]["entry"])
    weights = _weights(art)
    section, why = _pick(art, options) if allow_native else (None, "allow_native=False")
    if section is not None:
        try:
            linked = aot.link(art.code_bytes(section), section, art.runtime_bytes(section))
        except ElfError as e:  # a well-formed but unsupported object went to MCJIT instead
            raise artifact.ArtifactError(f"{art.path}: malformed object code: {e}") from None
        except Exception as e:  # e.g. a symbol this process does not provide
            section, why = None, f"the stored code does not link here ({e})"
        else:
            return _bind(art, lambda: aot.LoadedGraph(
                linked, lambda: _regenerate(art, options, entry), weights))  # fmt: skip
    if allow_native and art.code:
        warnings.warn(
            f"{art.path}: stored code not used ({why}); compiling from the IR",
            RuntimeWarning,
            stacklevel=2,
        )
    return _compile(art, options, entry, weights, quiet or not art.code or not allow_native)


def _compile(art: artifact.Artifact, options: Any, entry: str, weights: dict[str, Any],
             quiet: bool) -> Any:  # fmt: skip
    from rlx.runtime import aot
    from rlx.runtime.compiler import compile as rlx_compile

    t0 = time.perf_counter()
    if not quiet:
        _say(f"compiling {art.path.name} [1/2: parse]")
    module = _code_module(art)
    if not quiet:
        _say(f"compiling {art.path.name} [2/2: graph passes, LLVM]")
    g = rlx_compile(module, options, entry=entry)
    if not quiet:
        _say(f"compiled {art.path.name} in {time.perf_counter() - t0:.1f} s")
    out = _bind(art, lambda: aot.LoadedGraph(g._art, g._regenerate, weights))
    out.cache_hit = g.cache_hit
    return out


def _bind(art: artifact.Artifact, make: Any) -> Any:
    """`make()` (a LoadedGraph), a table/signature mismatch as an ArtifactError."""
    try:
        return make()
    except ValueError as e:
        raise artifact.ArtifactError(f"{art.path}: {e}") from None


def _regenerate(art: artifact.Artifact, options: Any, entry: str) -> Any:
    """Stage texts for `ir()` of a graph linked from stored code (compiles, on demand)."""
    from rlx.runtime import compiler
    from rlx.runtime.options import CompileOptions

    module = _code_module(art)
    text = str(module)
    opts = CompileOptions() if options is None else options
    return compiler._build(module, text, opts, entry, compiler._Log(False),
                           compiler.SourceManager(), capture=True, jit=False)  # fmt: skip


def inspect(path: str | Path, verify: bool = True) -> ArtifactInfo:
    """Read and check an artifact's header (and, with `verify`, every checksum)."""
    art = artifact.read(path, verify=verify)
    return ArtifactInfo(art.path, art.version, art.size, art.header)
