"""Loading `.rlx` artifacts: `load(path) -> CompiledGraph`, `materialize`, `inspect`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from rlx.bake import artifact, memory
from rlx.runtime.compiler import compile as rlx_compile
from rlx.runtime.compiler import load_module, make_context


def materialize(path: str | Path | artifact.Artifact, verify: bool = True) -> ModuleOp:
    """The baked module of an artifact with every weight placeholder replaced by a
    constant holding the table bytes (checks happen before parsing)."""

    art = path if isinstance(path, artifact.Artifact) else artifact.read(path, verify=verify)
    try:
        module, _ = load_module(art.module_text, make_context())
    except ValueError as e:
        raise artifact.ArtifactError(f"{art.path}: the stored module does not parse: {e}") from None
    memory.materialize(module, art.blobs())
    module.verify()
    return module


def load(path: str | Path, options: Any = None, *, verify: bool = True) -> Any:
    """Read, verify and materialize an artifact, then compile it with `rlx.compile`.

    Returns a CompiledGraph whose weights are constants (only `params_remaining`, the
    params the bake did not bind, are left to `set_param`). `options`: a CompileOptions.
    """

    art = artifact.read(path, verify=verify)
    module = materialize(art)
    entry = str(art.header.get("module", {}).get("entry", "main"))
    return rlx_compile(module, options, entry=entry)


@dataclass
class ArtifactInfo:
    """Header of an artifact (`rlx.bake.inspect`); `str()` gives the printed summary."""

    path: Path
    version: int
    size: int
    header: dict[str, Any]

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self.header.get("meta", {}))

    @property
    def weights(self) -> list[dict[str, Any]]:
        return list(self.header.get("weights", []))

    def __str__(self) -> str:
        h, m = self.header, self.meta
        sig = lambda ios: ", ".join(  # noqa: E731
            f"{io['name']}: {io['dtype']}{io['shape']}" for io in ios
        )
        lines = [
            f"{self.path}: rlx-bake artifact v{self.version}, {self.size} bytes",
            f"rlx version: {h.get('rlx_version')}, profile: {h.get('profile')}, memory: {h.get('memory')}",
            f"options: {', '.join(f'{k}={v}' for k, v in h.get('options', {}).items())}",
            f"graph: @{m.get('name')}, {m.get('nodes')} ops, module {h['module']['nbytes']} bytes "
            f"({h['module'].get('form')} form)",
            f"inputs: {sig(m.get('inputs', []))}",
            f"outputs: {sig(m.get('outputs', []))}",
            f"params remaining: {', '.join(m.get('params_remaining', [])) or 'none'}",
            f"skipped zero matmuls: {m.get('skipped_zero_matmuls')}, ternary packed: "
            f"{m.get('ternary_packed')}, Q8_0 packed: {m.get('quant_packed')}",
            f"weights: {m.get('weight_count')} entries, {m.get('weight_bytes')} bytes",
        ]
        rows = [("name", "shape", "encoding", "bytes", "offset", "note")]
        for w in self.weights:
            note = w.get("note", "") + ("" if w.get("live", True) else " [not live]")
            rows.append(
                (w["name"], "x".join(map(str, w["shape"])) or "scalar", w["encoding"],
                 str(w["nbytes"]), str(w["offset"]), note)
            )  # fmt: skip
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows:
            lines.append(
                "  "
                + "  ".join(c.ljust(wd) for c, wd in zip(r, widths, strict=False))
                + "  "
                + r[5]
            )
        return "\n".join(ln.rstrip() for ln in lines)


def inspect(path: str | Path, verify: bool = True) -> ArtifactInfo:
    """Read and check an artifact's header (and, with `verify`, every checksum)."""
    art = artifact.read(path, verify=verify)
    return ArtifactInfo(art.path, art.version, art.size, art.header)
