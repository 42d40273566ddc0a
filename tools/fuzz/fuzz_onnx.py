"""Hostile-ONNX fuzzer: mutated ONNX backend node models (the cases docs/onnx-coverage.md
lists as passing) through `rlx.frontends.onnx.import_model`, `rlx.compile` and `run`,
compared with onnx.reference.

Mutations (`mutate`): an int / ints attribute set to 0, -1, ±2^31, 2^62, a value one past
an axis; a declared graph-input dim set to 0, 1, 2^40 or another size, or its element
type changed (the run feeds random data of the declared type); an initializer whose dims
lie about its data; a node input renamed to a missing value, dropped, or to the node's
own output (a cycle). A finding: an exception other than OnnxImportError / ValueError /
IndexError / ArithmeticError / TypeError (import, compile or run), a hang over
`--timeout`, the child dying (a segfault: the parent restarts it), or a run whose
results differ from onnx.reference's and onnxruntime's (`mismatch`), or a run that
succeeds where both refuse (`accepted`: a possible silent value). Noted only with
`--notes`: results that differ from onnx.reference but match onnxruntime (`ref-wrong`),
runs that succeed where onnx.reference raises but onnxruntime agrees (`ref-refused`).
Findings go to `<out>/finding-<n>.onnx` plus `.txt`.

    nice -n 10 timeout 900 .venv/bin/python tools/fuzz/fuzz_onnx.py --seconds 600
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "unit"))
from fuzz_cli import EXPECTED, Hang, _timed, fuzz_main, fuzz_parser  # noqa: E402

INTS = [0, -1, 2**31, -(2**31), 2**62, 3, 7]
DIMS = [0, 1, 2**40, 5]
TYPES = [1, 6, 7, 9, 10, 11]  # FLOAT, INT32, INT64, BOOL, FLOAT16, DOUBLE


def corpus() -> list:  # type: ignore[type-arg]
    from onnx_node_cases import all_cases, documented_passing

    ok = set(documented_passing())
    return [
        c for c in all_cases() if c.name in ok and all(isinstance(a, np.ndarray) for a in c.inputs)
    ]


def mutate(model, rng: random.Random) -> str:  # type: ignore[no-untyped-def]
    """Apply one mutation to `model` (an onnx.ModelProto, in place); returns what it did."""
    from onnx import AttributeProto

    g = model.graph
    kind = rng.choice(["attr", "attr", "dim", "dim", "dtype", "init", "input"])
    nodes = list(g.node)
    if kind == "attr":
        attrs = [(n, a) for n in nodes for a in n.attribute
                 if a.type in (AttributeProto.INT, AttributeProto.INTS)]  # fmt: skip
        if attrs:
            n, a = rng.choice(attrs)
            v = rng.choice(INTS)
            if a.type == AttributeProto.INT:
                a.i = v
            elif a.ints:
                a.ints[rng.randrange(len(a.ints))] = v
            return f"{n.op_type}.{a.name} = {v}"
        kind = "dim"
    if kind in ("dim", "dtype") and g.input:
        vi = rng.choice(list(g.input))
        tt = vi.type.tensor_type
        if kind == "dtype":
            tt.elem_type = rng.choice(TYPES)
            return f"input {vi.name}: elem_type {tt.elem_type}"
        if tt.shape.dim:
            d = tt.shape.dim[rng.randrange(len(tt.shape.dim))]
            d.dim_value = rng.choice(DIMS)
            return f"input {vi.name}: dim {d.dim_value}"
    if kind == "init" and g.initializer:
        t = rng.choice(list(g.initializer))
        t.dims.append(rng.choice([2, 0, 2**33]))
        return f"initializer {t.name}: dims {list(t.dims)}"
    n = rng.choice(nodes)
    if not n.input:
        return "none"
    i = rng.randrange(len(n.input))
    how = rng.choice(["missing", "cycle", "drop"])
    if how == "missing":
        n.input[i] = "nowhere"
    elif how == "cycle" and n.output:
        n.input[i] = n.output[0]
    else:
        del n.input[i]
    return f"{n.op_type} input {i}: {how}"


def _random(vi, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    from onnx import helper

    tt = vi.type.tensor_type
    dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
    shape = [d.dim_value if d.HasField("dim_value") else 2 for d in tt.shape.dim]
    if int(np.prod(shape, dtype=np.float64)) > 1 << 20:
        return None
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind in "iu":
        return rng.integers(-3, 9, shape).astype(dt)
    return (rng.standard_normal(shape) * 2).astype(dt)


def _compare(got: list, want: list) -> str | None:  # type: ignore[type-arg]
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        b = np.asarray(b)
        if a.shape != b.shape:
            return f"output {i}: shape {a.shape}, reference {b.shape}"
        if b.dtype.kind in "fc" or b.dtype.name == "bfloat16":
            # bf16 has 8 mantissa bits: two correct roundings of a 4.75 differ by 0.016
            tol = 3e-2 if b.dtype.name == "bfloat16" else 1e-2 if b.dtype.itemsize <= 2 else 1e-4
            ok = np.isclose(
                a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol, equal_nan=True
            )
            if not ok.all():
                return f"output {i}: {int((~ok).sum())} values differ from the reference"
        elif not np.array_equal(a, b):
            return f"output {i}: values differ from the reference"
    return None


def _onnxruntime(model, feeds: dict):  # type: ignore[no-untyped-def,type-arg]
    """onnxruntime's outputs, or a string saying why it refused (or is not installed)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime (not installed)"
    try:
        ort.set_default_logger_severity(4)
        s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return s.run(None, feeds)
    except Exception as e:  # noqa: BLE001
        return f"onnxruntime ({type(e).__name__})"


def run_case(model, seed: int, timeout: float) -> str | None:  # type: ignore[no-untyped-def]
    """The finding of one mutated model, or None."""
    import rlx
    from rlx.frontends.onnx import import_model

    def go() -> str | None:
        try:
            module, params = import_model(model)
            g = rlx.compile(module)
        except EXPECTED:
            return None
        if params:
            g.set_params(params)
        rng = np.random.default_rng(seed)
        feeds = {vi.name: _random(vi, rng) for vi in model.graph.input
                 if vi.name not in {t.name for t in model.graph.initializer}}  # fmt: skip
        if any(v is None for v in feeds.values()):
            return None
        try:
            got = g.run(*feeds.values())
        except EXPECTED:
            return None
        try:
            from onnx.reference import ReferenceEvaluator

            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                want = ReferenceEvaluator(model).run(None, feeds)
        except Exception as e:  # noqa: BLE001
            ort = _onnxruntime(model, feeds)
            if isinstance(ort, str):  # both references refuse what rlx ran
                return f"accepted: onnx.reference ({type(e).__name__}) and {ort} refuse it"
            diff = _compare(got, ort)
            if diff:
                return f"mismatch with onnxruntime ({diff}); onnx.reference: {type(e).__name__}"
            return f"ref-refused: {type(e).__name__}: {str(e)[:200]} (onnxruntime agrees)"
        diff = _compare(got, want)
        if diff is None:
            return None
        ort = _onnxruntime(model, feeds)  # a third opinion: onnx.reference is wrong on some
        if not isinstance(ort, str) and _compare(got, ort) is None:
            return f"ref-wrong: {diff}; onnxruntime agrees with rlx"
        return f"mismatch: {diff} (onnxruntime: {ort if isinstance(ort, str) else _compare(ort, want) or 'as onnx.reference'})"

    try:
        return _timed(go, timeout)
    except Hang:
        return f"hang (> {timeout} s)"
    except BaseException:  # noqa: BLE001
        return "escaped: " + traceback.format_exc(limit=-4)


def child(args: argparse.Namespace, start: int) -> None:
    os.environ.setdefault("RLX_CACHE", "0")
    pool = corpus()
    out = Path(args.out)
    end = time.monotonic() + args.seconds
    i = start
    while time.monotonic() < end:
        rng = random.Random(i)
        case = rng.choice(pool)
        model = type(case.model)()
        model.CopyFrom(case.model)
        what = "; ".join(mutate(model, rng) for _ in range(rng.randint(1, 2)))
        (out / "current.onnx").write_bytes(model.SerializeToString())
        (out / "current.json").write_text(json.dumps({"case": i, "name": case.name, "what": what}))
        found = run_case(model, i, args.timeout)
        if found and (args.notes or not found.startswith(("ref-refused", "ref-wrong"))):
            n = len(list(out.glob("finding-*.onnx")))
            (out / f"finding-{n}.onnx").write_bytes(model.SerializeToString())
            (out / f"finding-{n}.txt").write_text(f"case {i} {case.name}: {what}\n{found}\n")
            print(f"case {i} {case.name} [{what}]: {found.splitlines()[-1][:200]}", flush=True)
        i += 1
    (out / "done").write_text(str(i - start))


def main() -> None:
    ap = fuzz_parser(__doc__, timeout=30, out="/tmp/rlx-fuzz-onnx")
    ap.add_argument("--notes", action="store_true", help="also save ref-refused cases")

    def save(out: Path, case: dict[str, Any], n: int, rc: int) -> None:
        (out / f"finding-{n}.onnx").write_bytes((out / "current.onnx").read_bytes())
        (out / f"finding-{n}.txt").write_text(f"case {case}: child died (rc {rc})\n")

    def flags(args: argparse.Namespace) -> list[str]:
        return ["--notes"] if args.notes else []

    fuzz_main(ap, __file__, child, flags, save, "finding-*.onnx")


if __name__ == "__main__":
    main()
