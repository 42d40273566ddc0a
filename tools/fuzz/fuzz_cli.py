"""CLI / compile fuzzer: structured mutations (`ir_mutants`) of every shipped .mlir through
`rlx-opt` (in process, with a pass pipeline drawn from `PIPELINES`) or through
`rlx.compile` + `run` on random inputs of the declared types.

A finding is: `rlx-opt` exiting with a code other than 0/1, exit 1 without an `error:`
line, a traceback or an `internal error` on stderr, a run longer than `--timeout`
seconds, an exception from `rlx.compile` / `run` that is not a ValueError / IndexError /
ArithmeticError / TypeError, or the process dying (segfault); `--mode passes` runs one
rlx pass (`GRAPH_PASSES`, under `--check-equivalence`, or a lowering) on mutants that
`rlx-opt` accepts unchanged (valid IR), and a changed value is a finding too. The cases run in a child
process that writes each input to `<out>/current.mlir` first, and the parent restarts it
after a crash. Findings go to `<out>/finding-<n>.mlir` (the input, the command and the
error as a comment); a summary is printed at the end.

    nice -n 10 timeout 600 .venv/bin/python tools/fuzz/fuzz_cli.py --mode opt --seconds 240
    nice -n 10 timeout 600 .venv/bin/python tools/fuzz/fuzz_cli.py --mode compile --seconds 240
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ir_mutants import corpus, mutate  # noqa: E402

PIPELINES: list[list[str]] = [
    [], ["-p", "canonicalize"], ["--constant-folding"], ["-p", "fusion"], ["--dce"], ["--cse"],
    ["--kernel-dispatch"], ["-p", "fusion,kernel-dispatch"], ["--convert-rlx-to-linalg"],
    ["--convert-rlx-to-linalg", "--plan-memory"], ["--lower-to-llvm"], ["--hoist-param-invariant"],
    ["--precision=f16"], ["--precision=bf16"], ["--scan-unroll"], ["--fold-batch-norm"],
    ["--check-equivalence", "-p", "canonicalize,fusion"], ["--split-graph"],
    ["--scaled-quant"], ["--legalize"], ["--bind-dims=batch=2,seq=3"], ["--verify-diagnostics"],
    ["-p", "fusion{max-steps=-1}"], ["-p", "constant-folding{max-elements=0}"],
    ["-p", "plan-memory{alignment=3}"], ["-p", "split-graph{max-ops=0}"],
    ["-p", "scan-unroll{max-length=-3}"], ["-p", "convert-memref-to-llvm{max-alloca-bytes=-1}"],
]  # fmt: skip
EXPECTED = (ValueError, IndexError, ArithmeticError, TypeError)
GRAPH_PASSES = [
    "canonicalize", "constant-folding", "cse", "dce", "fusion", "kernel-dispatch", "legalize",
    "fold-batch-norm", "hoist-param-invariant", "pack-weights", "blocked-layout", "scan-unroll",
    "scaled-quant", "split-graph", "precision{precision=f16}", "precision{precision=bf16}",
    "shape-inference", "bind-dims{dims=\"batch=2,seq=3,n=2\"}", "expand-small-floats",
]  # fmt: skip
"""`--mode passes`: each runs alone under `--check-equivalence` (the reference interpreter
before and after must agree: a changed value is a finding too), except `precision`
(bf16 rounding of a K=72 conv already reaches its 0.05 tolerance: noise, not a finding)."""
LOWERING_PASSES = ["convert-rlx-to-linalg", "convert-rlx-to-linalg,plan-memory", "lower-to-llvm"]


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang()


def _timed(fn, seconds: float):  # type: ignore[no-untyped-def]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_opt(path: Path, flags: list[str], timeout: float) -> str | None:
    """The finding of one rlx-opt run, or None."""
    from rlx.tools.rlx_opt import main

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = _timed(lambda: main([str(path), "--split-input-file", *flags]), timeout)
    except Hang:
        return f"hang (> {timeout} s)"
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001  (an escaped exception is the finding)
        return "escaped: " + traceback.format_exc(limit=-3)
    text = err.getvalue()
    if "Traceback" in text or "internal error" in text:
        return f"exit {code}: " + text[-1500:]
    if code not in (0, 1):
        return f"exit {code}: " + text[-800:]
    if code == 1 and "error:" not in text:
        return "exit 1 without a diagnostic: " + text[-800:]
    if "check-equivalence:" in text and "changed output" in text:
        return "changed value: " + text[-800:]
    return None


def valid_mutant(text: str, rng: random.Random, pool: list[str], path: Path) -> str | None:
    """`text` mutated (0 to 2 times) until `rlx-opt` accepts it as it is (exit 0): valid IR
    that a pass may still choke on; None after 8 tries."""
    from rlx.tools.rlx_opt import main

    for _ in range(8):
        t = text
        for _ in range(rng.randint(0, 2)):
            t = mutate(t, rng, pool)
        path.write_text(t)
        try:
            with (
                contextlib.redirect_stderr(io.StringIO()),
                contextlib.redirect_stdout(io.StringIO()),
            ):
                code = _timed(lambda: main([str(path), "--split-input-file"]), 10)
        except BaseException:  # noqa: BLE001  (invalid or broken: not a pass's input)
            continue
        if code == 0:
            return t
    return None


def _random_input(shape: tuple[int, ...], dtype, rng) -> object:  # type: ignore[no-untyped-def]
    import numpy as np

    if int(np.prod(shape)) > 1 << 22:
        return None
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-3, 9, shape).astype(dtype)
    x = rng.standard_normal(shape) * 3
    x.flat[:: max(1, x.size // 3)] = rng.choice([np.nan, np.inf, -np.inf, 0.0])
    return x.astype(dtype)


def run_compile(path: Path, timeout: float, seed: int) -> str | None:
    import numpy as np

    import rlx

    def go() -> None:
        try:
            g = rlx.compile(path.read_text())
        except EXPECTED:
            return
        rng = np.random.default_rng(seed)
        for name, (shape, dt) in g.params.items():
            v = _random_input(shape, dt, rng)
            if v is None:
                return
            g.set_param(name, v)
        ins = [_random_input(s, d, rng) for _, s, d in g.inputs]
        if any(v is None for v in ins):
            return
        with contextlib.suppress(*EXPECTED):
            g.run(*ins)

    try:
        _timed(go, timeout)
    except Hang:
        return f"hang (> {timeout} s)"
    except BaseException:  # noqa: BLE001
        return "escaped: " + traceback.format_exc(limit=-4)
    return None


def child(args: argparse.Namespace, start: int) -> None:
    os.environ.setdefault("RLX_CACHE", "0")
    pool = corpus()
    out = Path(args.out)
    cur = out / "current.mlir"
    end = time.monotonic() + args.seconds
    i = start
    while time.monotonic() < end:
        rng = random.Random(i)
        text = rng.choice(pool)
        if args.mode == "passes":
            got = valid_mutant(text, rng, pool, cur)
            if got is None:
                i += 1
                continue
            text = got
            p = rng.choice(GRAPH_PASSES + LOWERING_PASSES)
            checked = p in GRAPH_PASSES and not p.startswith("precision")
            flags = ["-p", p] + (["--check-equivalence"] if checked else [])
        else:
            for _ in range(rng.randint(1, 3)):
                text = mutate(text, rng, pool)
            flags = rng.choice(PIPELINES) if args.mode == "opt" else []
        cur.write_text(text)
        (out / "current.json").write_text(json.dumps({"case": i, "flags": flags}))
        found = (
            run_opt(cur, flags, args.timeout)
            if args.mode in ("opt", "passes")
            else run_compile(cur, args.timeout, i)
        )
        if found:
            n = len(list(out.glob("finding-*.mlir")))
            head = f"// case {i} flags {' '.join(flags)}\n// " + found.replace("\n", "\n// ")
            (out / f"finding-{n}.mlir").write_text(head + "\n" + text)
            print(f"case {i}: {found.splitlines()[-1][:160]}", flush=True)
        i += 1
    (out / "done").write_text(str(i - start))


def main() -> None:
    ap = fuzz_parser(__doc__, timeout=20, out="/tmp/rlx-fuzz")
    ap.add_argument("--mode", choices=["opt", "compile", "passes"], default="opt")

    def save(out: Path, case: dict[str, Any], n: int, rc: int) -> None:
        text = (out / "current.mlir").read_text()
        (out / f"finding-{n}.mlir").write_text(
            f"// case {case['case']} flags {' '.join(case['flags'])}\n// child died: rc {rc}\n"
            + text
        )

    fuzz_main(ap, __file__, child, lambda args: ["--mode", args.mode], save, "finding-*.mlir")


def fuzz_parser(doc: str, timeout: float, out: str) -> argparse.ArgumentParser:
    """The options of every fuzzer here (`fuzz_cli`, `fuzz_onnx`); each adds its own."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120, help="how long to fuzz")
    ap.add_argument("--timeout", type=float, default=timeout, help="seconds per case")
    ap.add_argument("--seed", type=int, default=0, help="the first case number")
    ap.add_argument("--out", default=out, help="the folder for findings")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    return ap


def fuzz_main(
    ap: argparse.ArgumentParser,
    script: str,
    child: Callable[[argparse.Namespace, int], None],
    flags: Callable[[argparse.Namespace], list[str]],
    save: Callable[[Path, dict[str, Any], int, int], None],
    pattern: str,
) -> None:
    """Parse `ap`; a `--child K` process runs `child(args, K)`, the parent `supervise`s
    children given `flags(args)` (the options of theirs the parent does not pass)."""
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.child is not None:
        child(args, args.child)
        return
    supervise(script, args, flags(args), save, pattern)


def supervise(
    script: str,
    args: argparse.Namespace,
    flags: list[str],
    save: Callable[[Path, dict[str, Any], int, int], None],
    pattern: str,
) -> None:
    """Run `script --child K` processes from case `args.seed` until `args.seconds` are
    up; when one dies (crash, hang killed by its alarm), `save(out, case, n, rc)` keeps
    the case it was on as finding n and the next child starts after it."""
    out = Path(args.out)
    deadline = time.monotonic() + args.seconds
    start, total = args.seed, 0
    while time.monotonic() < deadline:
        (out / "done").unlink(missing_ok=True)
        left = deadline - time.monotonic()
        cmd = [sys.executable, script, *flags, "--seconds", str(left), "--timeout",
               str(args.timeout), "--out", str(out), "--child", str(start)]  # fmt: skip
        rc = subprocess.run(cmd).returncode
        if (out / "done").exists():
            total += int((out / "done").read_text())
            break
        if not (out / "current.json").exists():
            break
        case = json.loads((out / "current.json").read_text())
        save(out, case, len(list(out.glob(pattern))), rc)
        print(f"case {case['case']}: child died (rc {rc})", flush=True)
        total += case["case"] - start + 1
        start = case["case"] + 1
    print(f"{total} cases, {len(list(out.glob(pattern)))} findings in {out}")


if __name__ == "__main__":
    main()
