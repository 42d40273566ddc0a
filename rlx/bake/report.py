"""`rlx-bake inspect`: the printed summary of an artifact's header (`ArtifactInfo`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
