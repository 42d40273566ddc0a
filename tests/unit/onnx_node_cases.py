"""ONNX backend node test cases, run through the ONNX importer and `rlx.reference`.

The `onnx` package ships the case generators (`onnx.backend.test.case.node`); when the
materialized data (`onnx/backend/test/data/node/<case>/`) is installed it is read from
there, otherwise the cases are generated in memory (nothing is written to disk).

`python tests/unit/onnx_node_cases.py` prints the coverage report; with `--write-doc` it
regenerates the generated section of docs/onnx-coverage.md (the passing list pytest reads).
"""

from __future__ import annotations

import functools
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DOC = Path(__file__).resolve().parents[2] / "docs" / "onnx-coverage.md"


@dataclass
class Case:
    name: str
    model: object  # onnx.ModelProto
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


@functools.cache
def all_cases() -> tuple[Case, ...]:
    """Every ONNX backend node case (first data set each)."""
    import onnx
    from onnx import numpy_helper

    root = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    out: list[Case] = []
    if root.is_dir() and any(root.iterdir()):
        for d in sorted(root.iterdir()):
            ds = d / "test_data_set_0"
            if not (d / "model.onnx").is_file() or not ds.is_dir():
                continue

            def load(prefix: str, ds: Path = ds) -> list[np.ndarray]:
                files = sorted(ds.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
                return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]

            out.append(
                Case(d.name, onnx.load(str(d / "model.onnx")), load("input"), load("output"))
            )
        return tuple(out)
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    for c in cases:
        if not c.data_sets:
            continue
        ins, outs = c.data_sets[0]
        out.append(Case(c.name, c.model, [_array(a) for a in ins], [_array(a) for a in outs]))
    return tuple(sorted(out, key=lambda c: c.name))


def _array(a: object) -> object:
    """Test data as a NumPy array (TensorProto and NumPy scalars converted; sequences kept)."""
    import onnx
    from onnx import numpy_helper

    if isinstance(a, onnx.TensorProto):
        return numpy_helper.to_array(a)
    if isinstance(a, np.generic):
        return np.asarray(a)
    return a


def case_ops(case: Case) -> set[str]:
    return {f"{n.domain + '.' if n.domain else ''}{n.op_type}" for n in case.model.graph.node}  # type: ignore[attr-defined]


def tolerance(dt: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing outputs of a dtype."""
    name = np.dtype(dt).name
    if name in ("float16", "bfloat16") or "float8" in name:
        return 1e-2, 1e-2
    return 1e-4, 1e-5


ROUNDED_CASES = frozenset({"test_averagepool_2d_ceil_last_window_starts_on_pad",
                           "test_gridsample_bicubic", "test_roialign_aligned_false",
                           "test_roialign_aligned_true"})  # fmt: skip
"""Cases whose expected outputs are stored with 4 decimals: compared with the ONNX backend
runner's relative tolerance (rtol 1e-3) instead of rtol 1e-4 (onnx.reference gives the
same values as rlx there)."""


def run_case(case: Case) -> tuple[str, str]:
    """Run one case: ("pass" | "skip" | "fail", reason)."""
    from rlx.frontends.onnx import OnnxImportError, import_model
    from rlx.interpreter import run

    if not all(isinstance(a, np.ndarray) for a in [*case.inputs, *case.outputs]):
        return "skip", "sequence or optional values"
    names = [vi.name for vi in case.model.graph.input]  # type: ignore[attr-defined]
    frozen: dict[str, np.ndarray] = {}
    while True:
        try:
            module, params = import_model(case.model, constants=frozen)  # type: ignore[arg-type]
            break
        except OnnxImportError as e:
            m = re.search(r"must be a constant.*?\('([^']+)'\)", str(e)) or re.search(
                r"input #\d+ [\w ]*\('([^']+)'\) must be a constant", str(e)
            )
            todo = (
                [n for n in _graph_inputs_behind(case, m.group(1)) if n not in frozen] if m else []
            )
            if m and not todo:  # a value inside an expanded function: freeze every shape-like input
                todo = [n for n in _int_inputs(case) if n not in frozen]
            if todo:
                for n in todo:
                    frozen[n] = case.inputs[names.index(n)]
                continue
            u = re.search(r"op type '(\w+)' is not supported", str(e))
            d = re.search(r"\((\w+)\): op domain '([\w.]+)'", str(e))
            if u or d:
                return (
                    "skip",
                    f"unsupported op {u.group(1) if u else d.group(2) + '.' + d.group(1)}",
                )
            return "skip", _short(str(e))
        except Exception as e:  # a bug of the importer
            return "fail", f"import crashed: {type(e).__name__}: {_short(str(e))}"
    inputs = [a for nm, a in zip(names, case.inputs, strict=False) if nm not in frozen]
    try:
        got = run(module, inputs, params)
    except Exception as e:
        return "fail", f"run: {type(e).__name__}: {_short(str(e))}"
    if len(got) != len(case.outputs):
        return "fail", f"{len(got)} outputs, expected {len(case.outputs)}"
    for i, (g, want) in enumerate(zip(got, case.outputs, strict=True)):
        if g.shape != want.shape:
            return "fail", f"output {i}: shape {g.shape}, expected {want.shape}"
        if g.dtype != want.dtype:
            return "fail", f"output {i}: dtype {g.dtype}, expected {want.dtype}"
        if want.dtype.kind in "fcV" or "float" in want.dtype.name:
            rtol, atol = tolerance(want.dtype)
            if case.name in ROUNDED_CASES:
                rtol = max(rtol, 1e-3)
            ok = np.allclose(
                g.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
            )
        else:
            ok = np.array_equal(g, want)
        if not ok and _random(case):
            return "skip", "random values: the spec fixes their distribution, not the values"
        if not ok:
            return "fail", f"output {i}: values differ"
    return "pass", ""


RANDOM_OPS = {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
              "Bernoulli", "Multinomial"}  # fmt: skip
"""Ops whose outputs are draws (rlx's Philox stream: the distribution matches
onnxruntime's, the values do not, docs/onnx-coverage.md)."""


def _random(case: Case) -> bool:
    """Whether `case` draws random values: a random op, or Dropout in training mode (its
    mask; with ratio 0 it is deterministic and passes)."""
    ops = {nd.op_type for nd in case.model.graph.node}  # type: ignore[attr-defined]
    return bool(ops & RANDOM_OPS) or ("Dropout" in ops and "training" in case.name)


def _graph_inputs_behind(case: Case, value: str) -> list[str]:
    """The integer and bool graph inputs `value` is computed from (candidates for freezing)."""
    g = case.model.graph  # type: ignore[attr-defined]
    int_inputs = _int_inputs(case)
    producer = {o: n for n in g.node for o in n.output}
    seen, stack, out = set(), [value], []
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in int_inputs or (v == value and v in {vi.name for vi in g.input}):
            out.append(v)
        elif v in producer:
            stack.extend(i for i in producer[v].input if i)
    return out


def _int_inputs(case: Case) -> list[str]:
    """The graph inputs of integer or bool type (int32, int64, bool)."""
    g = case.model.graph  # type: ignore[attr-defined]
    return [vi.name for vi in g.input if vi.type.tensor_type.elem_type in (6, 7, 9)]


def _short(s: str) -> str:
    s = re.sub(r"\s+", " ", s)
    return s if len(s) < 400 else s[:397] + "..."


def documented_passing() -> list[str]:
    """The case names listed in docs/onnx-coverage.md between the passing markers."""
    text = DOC.read_text()
    m = re.search(r"<!-- passing:begin -->(.*?)<!-- passing:end -->", text, re.S)
    return re.findall(r"\btest_\w+", m.group(1)) if m else []


def documented_families() -> dict[str, list[str]]:
    """The passing list of docs/onnx-coverage.md by op family (`* **Op** (n): names`)."""
    text = DOC.read_text()
    m = re.search(r"<!-- passing:begin -->(.*?)<!-- passing:end -->", text, re.S)
    out: dict[str, list[str]] = {}
    for fam, names in re.findall(
        r"^\* \*\*(.+?)\*\* \(\d+\): (.*)$", m.group(1) if m else "", re.M
    ):
        out[fam] = re.findall(r"\btest_\w+", names)
    return out


def report() -> dict[str, list[tuple[str, str, float]]]:
    """Run every case; {status: [(name, reason, seconds)]} (status "slow": passes, > 1 s)."""
    res: dict[str, list[tuple[str, str, float]]] = {"pass": [], "skip": [], "fail": [], "slow": []}
    cases = all_cases()
    run_case(cases[0])  # warm-up: imports and caches outside the timings
    for c in cases:
        t0 = time.perf_counter()
        status, why = run_case(c)
        dt = time.perf_counter() - t0
        res["slow" if status == "pass" and dt > SLOW else status].append((c.name, why, dt))
    return res


SLOW = 1.0
"""Cases slower than this (seconds) are left out of the pytest passing list."""


def _group_key(why: str) -> str:
    """A skip reason without node and value names, for grouping."""
    why = re.sub(r"node '[^']*' ", "", why)
    why = re.sub(r"\('[^']*(?:'\)|\.\.\.)", "(...)", why)
    return re.sub(r"\.\.\.$", "", why)


def render(r: dict[str, list[tuple[str, str, float]]]) -> str:
    """The generated part of docs/onnx-coverage.md."""
    from collections import Counter, defaultdict

    by_name = {c.name: c for c in all_cases()}
    ops_of = {n: sorted(case_ops(c)) for n, c in by_name.items()}
    unsupported_op = [x for x in r["skip"] if x[1].startswith("unsupported op")]
    other_skip = [x for x in r["skip"] if not x[1].startswith("unsupported op")]
    seq = [x for x in other_skip if x[1] == "sequence or optional values"]
    dtype = [x for x in other_skip if "element type" in x[1]]
    rest = [x for x in other_skip if x not in seq and x not in dtype]
    n_sup = len(r["pass"]) + len(r["slow"]) + len(r["fail"]) + len(dtype) + len(rest)
    out = [
        f"ONNX {__import__('onnx').__version__}: {len(by_name)} node cases. ",
        "",
        "| | cases |",
        "|---|---|",
        f"| **pass** (run by pytest) | **{len(r['pass'])}** |",
        f"| pass but slower than {SLOW:.0f} s (not in pytest) | {len(r['slow'])} |",
        f"| fail | {len(r['fail'])} |",
        f"| skipped: an element type rlx lacks | {len(dtype)} |",
        f"| skipped: a supported op with an unsupported attribute/input/mode | {len(rest)} |",
        f"| skipped: sequence / optional values (no rlx equivalent) | {len(seq)} |",
        f"| skipped: an op without a converter | {len(unsupported_op)} |",
        "",
        f"Of the {n_sup} cases whose ops all have converters (and that use plain tensors), "
        f"**{len(r['pass']) + len(r['slow'])} pass** "
        f"({100 * (len(r['pass']) + len(r['slow'])) / max(n_sup, 1):.1f} %).",
        "",
        "### Failing",
        "",
    ]
    out += [f"* `{n}`: {w}" for n, w, _ in r["fail"]] or ["None."]
    out += ["", "### Skipped: supported ops, unsupported features", ""]
    groups: dict[str, list[str]] = defaultdict(list)
    for n, w, _ in rest:
        groups[_group_key(w)].append(n)
    for k in sorted(groups, key=lambda k: (-len(groups[k]), k)):
        out.append(f"* {k} ({len(groups[k])}): " + ", ".join(f"`{n}`" for n in groups[k]))
    out += ["", "### Skipped: element types", ""]
    tcount = Counter(re.sub(r"ONNX element type (\w+).*", r"\1", w) for _, w, _ in dtype)
    out.append(", ".join(f"{t} ({c})" for t, c in sorted(tcount.items())) + " have no rlx type.")
    out += ["", "### Skipped: ops without a converter", ""]
    ocount = Counter(w.removeprefix("unsupported op ") for _, w, _ in unsupported_op)
    out.append(", ".join(f"{o} ({c})" for o, c in sorted(ocount.items())) + ".")
    out += [
        "",
        "### Per op",
        "",
        "Cases grouped by the op of their model (several ops: one row).",
        "",
    ]
    out += ["| op | pass | fail | unsupported |", "|---|---|---|---|"]
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for col, key in ((0, "pass"), (0, "slow"), (1, "fail"), (2, "skip")):
        for nm, _, _ in r[key]:
            ops = ops_of[nm]
            rows[ops[0] if len(ops) == 1 else "multi-op (expanded functions, composites)"][col] += 1
    out += [f"| {k} | {v[0]} | {v[1]} | {v[2]} |" for k, v in sorted(rows.items())]
    out += ["", "### Every unsupported case and why", ""]
    out += [f"* `{nm}` ({', '.join(ops_of[nm])}): {w}" for nm, w, _ in sorted(r["skip"])]
    out += ["", f"### Slower than {SLOW:.0f} s", ""]
    out += [", ".join(f"`{n}`" for n, _, _ in r["slow"]) or "None."]
    out += ["", "### Passing cases", "", "Grouped by op (the ops of the case's model).", ""]
    out.append("<!-- passing:begin -->")
    fam: dict[str, list[str]] = defaultdict(list)
    for n, _, _ in r["pass"]:
        ops = ops_of[n]
        fam[ops[0] if len(ops) == 1 else "multi-op (expanded functions, composites)"].append(n)
    for k in sorted(fam):
        out.append(f"* **{k}** ({len(fam[k])}): " + " ".join(fam[k]))
    out.append("<!-- passing:end -->")
    return "\n".join(out) + "\n"


def write_doc(r: dict[str, list[tuple[str, str, float]]]) -> None:
    """Replace the generated section of docs/onnx-coverage.md."""
    text = DOC.read_text()
    a, b = "<!-- generated:begin -->\n", "<!-- generated:end -->"
    head, _, tail = text.partition(a)
    _, _, tail = tail.partition(b)
    DOC.write_text(head + a + render(r) + b + tail)


if __name__ == "__main__":  # pragma: no cover
    r = report()
    if "--write-doc" in sys.argv:
        write_doc(r)
    for status in ("fail", "skip"):
        for name, why, _ in r[status]:
            print(f"{status}\t{name}\t{why}")
    print(" ".join(f"{k} {len(v)}" for k, v in r.items()))
