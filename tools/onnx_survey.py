"""Survey: export real models to ONNX, import them into RLX and compare with onnxruntime.

    # 1. export (needs torch / torchvision / transformers; nothing is downloaded)
    PYTHONPATH=. /work/main/.venv/bin/python tools/onnx_survey.py export DIR \
        [--models a,b] [--exporters ts17,dyn18,ts13,ts20]
    # 2. check every DIR/*.onnx (needs rlx + onnxruntime only), one subprocess per file
    .venv/bin/python tools/onnx_survey.py check DIR [--json OUT.json] [--before OLD.json]
    # 3. the markdown table (docs/onnx-coverage.md "Exported models")
    .venv/bin/python tools/onnx_survey.py table OUT.json [--before OLD.json]

The models are in tools/onnx_survey_models.py (small random-weight configs, batch 2,
small inputs). Exporters: `ts<opset>` is `torch.onnx.export(dynamo=False)` with dynamic
axes, `dyn<opset>` is the dynamo exporter with `Dim.AUTO` axes. `check` imports each file
WITHOUT `dims=` (dynamic dims stay symbolic, bound at compile time; if that fails, again
with `dims=`), compiles with `rlx.compile`, runs the sample inputs saved next to the file
and compares every output with onnxruntime: `ok` when the cosine is >= 0.99999 and the
max abs difference <= 1e-3 x (1 + max |reference|), integers and booleans exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

EXPORTERS = ("ts17", "dyn18")
BACKEND = os.environ.get("RLX_SURVEY_BACKEND", "compile")
"""`compile` (rlx.compile, the default) or `reference` (the NumPy interpreter: the same
import checked in a fraction of the time; `check --backend`)."""


# ------------------------------------------------------------------------- export
def export_one(name: str, exporter: str, out: Path) -> None:
    """Export model `name` with `exporter` to `out/<name>__<exporter>.onnx` (+ `.npz` feeds)."""
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from onnx_survey_models import MODELS

    model, feeds, axes = MODELS[name]()
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    path = out / f"{name}__{exporter}.onnx"
    opset = int(exporter.lstrip("tsdyn"))
    with torch.no_grad():
        n_out = len(o) if isinstance(o := model(*args), tuple) else 1
    outs = [f"out{i}" for i in range(n_out)]
    if exporter.startswith("dyn"):
        dims = tuple({a: torch.export.Dim.AUTO for a in axes.get(k, {})} for k in feeds)
        torch.onnx.export(model, args, str(path), input_names=list(feeds), output_names=outs,
                          dynamo=True, dynamic_shapes=(dims,), opset_version=opset)  # fmt: skip
    else:
        torch.onnx.export(model, args, str(path), input_names=list(feeds), output_names=outs,
                          dynamic_axes=axes, dynamo=False, opset_version=opset)  # fmt: skip
    np.savez(path.with_suffix(".npz"), **feeds)


def export_all(out: Path, models: list[str], exporters: list[str], timeout: int) -> None:
    """All exports in this process (torch imports once); one that raises or runs longer
    than `timeout` seconds is a failed row (`<name>__<exporter>.export-error`)."""
    import signal
    import warnings

    warnings.simplefilter("ignore")
    out.mkdir(parents=True, exist_ok=True)

    def alarm(*_: Any) -> None:
        raise TimeoutError(f"export timed out after {timeout} s")

    signal.signal(signal.SIGALRM, alarm)
    for name in models:
        for exp in exporters:
            t0 = time.perf_counter()
            signal.alarm(timeout)
            try:
                export_one(name, exp, out)
                err = ""
            except BaseException as e:  # noqa: BLE001  (every exporter failure is a row)
                if isinstance(e, KeyboardInterrupt):
                    raise
                err = _why(e)
            finally:
                signal.alarm(0)
            if err:
                (out / f"{name}__{exp}.export-error").write_text(err)
            print(f"{name:30s} {exp:6s} {'exported' if not err else 'EXPORT FAILED: ' + err}"
                  f" ({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip


def _last_error(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln:
            return ln.strip()[:300]
    return (lines[-1] if lines else "failed")[:300]


# ------------------------------------------------------------------------- check
def check_one(path: Path) -> dict[str, Any]:
    """Import, compile and run one exported file against onnxruntime."""
    import onnx
    import onnxruntime as ort

    feeds = dict(np.load(path.with_suffix(".npz")))
    model = onnx.load(str(path))
    names = [vi.name for vi in model.graph.input]
    feeds = {k: v for k, v in feeds.items() if k in names}
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        want = sess.run(None, feeds)
    except Exception as e:  # an invalid export: no reference to compare with
        return {"status": "ort-rejects", "detail": _why(e)}
    row: dict[str, Any] = {
        "opset": next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    }
    t0 = time.perf_counter()
    try:
        got = _run_rlx(model, feeds, at_import=False)
        row["mode"] = "symbolic"
    except Exception as e:
        row["symbolic_error"] = _why(e)
        got = _run_rlx(model, feeds, at_import=True)  # raises: the row's error
        row["mode"] = "dims="
    row["seconds"] = round(time.perf_counter() - t0, 1)
    row["backend"] = BACKEND
    ok, cos, diff, detail = compare(got, want)
    if detail:
        row["detail"] = detail
    row.update(
        status="ok" if ok else "mismatch", cosine=round(cos, 7), max_abs=float(f"{diff:.3g}")
    )
    return row


def compare(got: list[Any], want: list[Any], tol: float = 1e-3) -> tuple[bool, float, float, str]:
    """RLX's outputs against onnxruntime's: (ok, least cosine, largest abs difference, what
    differs in shape or type). Integers and booleans must be equal; floats ok when the
    cosine is >= 0.99999 (or the difference <= 1e-6 x (1 + max |reference|): the cosine of
    a near-zero output says nothing), the difference <= `tol` x (1 + max |reference|) and
    the non-finite entries the same."""
    cos, diff, ok, detail = 1.0, 0.0, True, ""
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            ok = False
            detail = f"output {g.dtype}{list(g.shape)} vs onnxruntime {w.dtype}{list(w.shape)}"
            continue
        if w.dtype.kind in "biu":
            ok &= bool(np.array_equal(g, w))
            continue
        a, b = g.astype(np.float64).ravel(), w.astype(np.float64).ravel()
        if a.size == 0:
            continue
        fin = np.isfinite(b)
        c = float(a[fin] @ b[fin] / (np.linalg.norm(a[fin]) * np.linalg.norm(b[fin]) + 1e-30))
        d = float(np.abs(a[fin] - b[fin]).max()) if fin.any() else 0.0
        big = 1 + float(np.abs(b[fin]).max(initial=0))
        if not np.array_equal(np.isfinite(a), fin) or (c < 0.99999 and d > 1e-6 * big):
            ok = False
        ok &= d <= tol * big
        cos, diff = min(cos, c), max(diff, d)
    return ok, cos, diff, detail


def _run_rlx(model: Any, feeds: dict[str, np.ndarray], at_import: bool) -> list[np.ndarray]:
    import rlx
    from rlx.frontends.onnx import import_sized

    module, params, binding, _ = import_sized(model, feeds, at_import=at_import)
    if BACKEND == "reference":
        from rlx.transforms.bind_dims import bind_dims

        bind_dims(module, binding)
        return list(rlx.reference.run(module, feeds, params))
    try:
        cg = rlx.compile(module, rlx.CompileOptions(dim_binding=binding, param_bindings=params))
    except Exception as e:
        raise RuntimeError(f"compile: {_why(e)}") from e
    return list(cg.run(**feeds))


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:240]}"


def check_all(
    out: Path,
    timeout: int,
    done: dict[str, dict[str, Any]],
    pattern: str = "*",
    save: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Check every file of `out` not in `done` (rows of an earlier run, kept)."""
    rows: dict[str, dict[str, Any]] = dict(done)
    for err in sorted(out.glob(pattern + ".export-error")):
        rows[err.stem] = {"status": "export-failed", "detail": err.read_text().strip()}
    env = {**os.environ, "RLX_NUM_THREADS": os.environ.get("RLX_NUM_THREADS", "1")}
    for path in sorted(out.glob(pattern + ".onnx")):
        if path.stem in done:
            continue
        cmd = [sys.executable, __file__, "check-one", str(path)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            last = r.stdout.strip().splitlines()[-1:] or [""]
            row = json.loads(last[0]) if last[0].startswith("{") else {
                "status": "crash", "detail": _last_error(r.stderr)}  # fmt: skip
        except subprocess.TimeoutExpired:
            row = {"status": "timeout", "detail": f"> {timeout} s"}
        rows[path.stem] = row
        if save is not None:  # after every file: an interrupted run keeps its rows
            save.write_text(json.dumps(rows, indent=1))
        print(f"{path.stem:40s} {row['status']:10s} {row.get('detail', '')[:150]}"
              f" cos={row.get('cosine', '')} diff={row.get('max_abs', '')} {row.get('mode', '')}",
              flush=True)  # fmt: skip
    return rows


def _check_one_main(path: Path) -> None:
    try:
        row = check_one(path)
    except Exception as e:
        stage = "compile-failed" if str(e).startswith("compile:") else "import-failed"
        if not isinstance(e, (ValueError, RuntimeError)) or "Traceback" in str(e):
            traceback.print_exc()
        row = {"status": stage, "detail": _why(e)}
        if type(e).__name__ != "OnnxImportError" and stage == "import-failed":
            row["status"] = "error"  # not a clear OnnxImportError: a bug
    print(json.dumps(row))


# ------------------------------------------------------------------------- table
def table(rows: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]] | None) -> str:
    """Markdown: one row per model, one column per exporter (status before -> after)."""
    models: dict[str, dict[str, str]] = {}
    exps: list[str] = []
    for key, row in rows.items():
        name, exp = key.rsplit("__", 1)
        exps += [exp] if exp not in exps else []
        cell = _cell(row)
        if before is not None:
            old = _cell(before[key]) if key in before else "-"
            cell = cell if old == cell else f"{old} → {cell}"
        models.setdefault(name, {})[exp] = cell
    exps.sort(key=lambda e: (e.rstrip("0123456789"), int(e.lstrip("tsdyn") or 0)))
    lines = ["| model | " + " | ".join(exps) + " |", "|---|" + "---|" * len(exps)]
    for name, cells in models.items():
        lines.append(f"| {name} | " + " | ".join(cells.get(e, "") for e in exps) + " |")
    lines.append("")
    lines.append(_summary("now", rows))
    if before is not None:
        lines.append("")
        lines.append(_summary("before", {k: before[k] for k in rows if k in before}))
    return "\n".join(lines)


def _summary(when: str, rows: dict[str, dict[str, Any]]) -> str:
    runs = [r for r in rows.values() if r["status"] not in ("export-failed", "ort-rejects")]
    ok = [r for r in runs if r["status"] == "ok"]
    sym = sum(r.get("mode") != "dims=" for r in ok)
    return (f"{when.capitalize()}: {len(ok)} of the {len(runs)} files onnxruntime runs match it,"
            f" {sym} of them imported with symbolic dims (without `dims=`).")  # fmt: skip


def _cell(row: dict[str, Any]) -> str:
    s = row["status"]
    if s == "ok":
        return "ok" + (" (dims=)" if row.get("mode") == "dims=" else "")
    if s == "mismatch":
        return f"mismatch (cos {row.get('cosine')})"
    return s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir", type=Path)
    e.add_argument("--models", default="")
    e.add_argument("--exporters", default=",".join(EXPORTERS))
    e.add_argument("--timeout", type=int, default=600)
    eo = sub.add_parser("export-one")
    eo.add_argument("dir", type=Path)
    eo.add_argument("name")
    eo.add_argument("exporter")
    c = sub.add_parser("check")
    c.add_argument("dir", type=Path)
    c.add_argument("--json", type=Path)
    c.add_argument("--timeout", type=int, default=600)
    c.add_argument("--glob", default="*", help="check only DIR/<glob>.onnx")
    c.add_argument("--resume", action="store_true", help="keep the rows already in --json")
    c.add_argument("--backend", choices=("compile", "reference"), default="compile")
    co = sub.add_parser("check-one")
    co.add_argument("path", type=Path)
    t = sub.add_parser("table")
    t.add_argument("json", type=Path)
    t.add_argument("--before", type=Path)
    a = p.parse_args()
    if a.cmd == "export":
        sys.path.insert(0, str(Path(__file__).parent))
        from onnx_survey_models import MODELS

        export_all(
            a.dir,
            a.models.split(",") if a.models else list(MODELS),
            a.exporters.split(","),
            a.timeout,
        )
    elif a.cmd == "export-one":
        export_one(a.name, a.exporter, a.dir)
    elif a.cmd == "check":
        os.environ["RLX_SURVEY_BACKEND"] = a.backend
        done = json.loads(a.json.read_text()) if a.json and a.json.exists() and a.resume else {}
        rows = check_all(a.dir, a.timeout, done, a.glob, a.json)
        if a.json:
            a.json.write_text(json.dumps(rows, indent=1))
    elif a.cmd == "check-one":
        _check_one_main(a.path)
    else:
        before = json.loads(a.before.read_text()) if a.before else None
        print(table(json.loads(a.json.read_text()), before))


if __name__ == "__main__":
    main()
