"""What a bake did (`BakeReport`: what `rlx-bake` prints, stored in the artifact header)
and `rlx-bake inspect`'s printed summary of an artifact's header (`ArtifactInfo`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class BakeReport:
    """What a bake did (also stored in the artifact header)."""

    profile: str
    options: dict[str, Any]
    ops_before: int = 0
    ops_after: int = 0
    params_bound: list[str] = field(default_factory=list)
    params_remaining: list[str] = field(default_factory=list)
    unused_weights: list[str] = field(default_factory=list)
    skipped_zero_matmuls: int = 0
    ternary_packed: int = 0
    quant_packed: int = 0
    kept_dense: list[str] = field(default_factory=list)
    rounded: list[str] = field(default_factory=list)
    """One line per float weight whose values changed in the conversion to its param's
    type (`bind_params.rounding_note`; also a `LossyBindingWarning`)."""
    code: list[str] = field(default_factory=list)
    """One line per requested code target: stored (size) or why not."""
    constants_deduped: int = 0
    folded_bindings_dropped: int = 0
    weight_bytes_before: int = 0
    """Bytes of the bound weights as given (dense)."""
    weight_bytes_after: int = 0
    """Bytes of the live weight-table entries (identical blobs counted once when deduped)."""
    graph_bytes_stripped: int = 0
    file_bytes: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        """Human-readable summary (what rlx-bake prints)."""
        pct = (
            f" ({100 * self.weight_bytes_after / self.weight_bytes_before:.1f}%)"
            if self.weight_bytes_before
            else ""
        )
        out = [
            f"profile: {self.profile}",
            f"ops: {self.ops_before} -> {self.ops_after}",
            f"params bound: {len(self.params_bound)}, remaining: {len(self.params_remaining)}"
            + (f" ({', '.join(self.params_remaining)})" if self.params_remaining else ""),
            f"matmuls skipped (all-zero weight): {self.skipped_zero_matmuls}",
            f"matmuls ternary-packed (TQ2_0): {self.ternary_packed}",
            f"matmuls Q8_0-packed: {self.quant_packed}",
            f"constants deduped: {self.constants_deduped}, folded bindings dropped: "
            f"{self.folded_bindings_dropped}",
            f"weight bytes: {self.weight_bytes_before} -> {self.weight_bytes_after}{pct}",
            f"file: {self.file_bytes} bytes in {self.seconds:.2f} s",
        ]
        if self.unused_weights:
            out.append(f"unused weights in the file: {', '.join(self.unused_weights[:8])}")
        out += [f"kept dense: {r}" for r in self.kept_dense]
        out += self.code
        return out


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns; the last column is not padded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        (
            "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
        ).rstrip()
        for r in rows
    ]


def _features(f: str, limit: int = 12) -> str:
    on = [x[1:] for x in f.split(",") if x.startswith("+")]
    if not f:
        return "implied by the CPU name"
    head = ", ".join(on[:limit])
    return f"{len(on)} enabled: {head}" + (", ..." if len(on) > limit else "")


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

    @property
    def code(self) -> list[dict[str, Any]]:
        return list(self.header.get("code", []))

    def decisions(self) -> list[str]:
        """What the profile did with each matmul weight (the bake report's lines)."""
        r = self.header.get("report", {})
        out = [f"matmuls skipped (all-zero weight): {r.get('skipped_zero_matmuls', 0)}",
               f"matmuls ternary-packed (TQ2_0): {r.get('ternary_packed', 0)}",
               f"matmuls Q8_0-packed: {r.get('quant_packed', 0)}",
               f"constants deduped: {r.get('constants_deduped', 0)}"]  # fmt: skip
        out += [f"kept dense: {k}" for k in r.get("kept_dense", [])]
        out += [f"rounded: {k}" for k in r.get("rounded", [])]
        return out

    def __str__(self) -> str:
        h, m = self.header, self.meta
        sig = lambda ios: ", ".join(  # noqa: E731
            f"{io['name']}: {io['dtype']}{io['shape']}" for io in ios
        )
        opts = h.get("options", {})
        lines = [
            f"{self.path}: rlx-bake artifact v{self.version}, {self.size} bytes",
            f"rlx version: {h.get('rlx_version')}, profile: {h.get('profile')}, memory: {h.get('memory')}",
            f"options: {', '.join(f'{k}={v}' for k, v in opts.items())}",
            f"graph: @{m.get('name')}, {m.get('nodes')} ops, module {h['module']['nbytes']} bytes "
            f"({h['module'].get('form')} form), {m.get('constant_bytes', 0)} bytes of inline constants",
            f"inputs: {sig(m.get('inputs', []))}",
            f"outputs: {sig(m.get('outputs', []))}",
            f"params remaining: {', '.join(m.get('params_remaining', [])) or 'none'}",
            f"code sections: {len(self.code)}"
            + ("" if self.code else " (loading compiles the IR)"),
        ]
        for c in self.code:
            lines.append(
                f"  {c['triple']} cpu {c['cpu']}, abi {c['abi']}, {c['nbytes']} bytes at "
                f"{c['offset']}, BLAS [{c['blas'] or 'none'}]; features: {_features(c['features'])}"
            )
        lines.append("decisions:")
        lines += [f"  {d}" for d in self.decisions()]
        lines.append(f"weights: {m.get('weight_count')} entries, {m.get('weight_bytes')} bytes")
        rows = [("name", "shape", "encoding", "bytes", "offset", "note")]
        for w in self.weights:
            note = w.get("note", "") + ("" if w.get("live", True) else " [not live]")
            if h.get("memory") == "runtime":
                note += " [metadata-only: set at run time]"
            rows.append(
                (w["name"], "x".join(map(str, w["shape"])) or "scalar", w["encoding"],
                 str(w["nbytes"]), str(w["offset"]), note.strip())
            )  # fmt: skip
        lines += _table(rows)
        return "\n".join(ln.rstrip() for ln in lines)
