"""`rlx-run`: compile an .mlir graph, run it on NumPy data, print (and save) its outputs.

    rlx-run model.mlir [--entry main] [--input NAME=FILE.npy | NAME=random]...
            [--params FILE(.npz|.safetensors|.gguf)] [compile flags] [--bench N]
            [--output-dir DIR] [--seed S] [--print-ir STAGE]

Inputs and params that are not given get seeded random values (with a note on stderr), so
the examples run without weight files. Compile flags mirror `CompileOptions` (see --help).
Errors print one line `rlx-run: error: ...` and exit with 1 (set RLX_DEBUG=1 for a
traceback).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlx.tools.cli import Parser, UsageError, int_at_least, run_main

PROG = "rlx-run"


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Compile and run an RLX graph (.mlir) on NumPy data.")
    p.add_argument("file", help="the .mlir file")
    p.add_argument("--entry", default="main", help="function to run (default: main)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy|NAME=random")
    p.add_argument("--params", metavar="FILE", help="weights: .npz, .safetensors or .gguf")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs/params")
    p.add_argument(
        "--bench",
        type=int_at_least(1, "a positive number of runs"),
        default=0,
        metavar="N",
        help="time N runs, print the median",
    )
    p.add_argument("--output-dir", metavar="DIR", help="save each output as DIR/<name>.npy")
    p.add_argument(
        "--print-ir",
        metavar="STAGE",
        help="print the IR at a stage (input, rlx, linalg, loops, llvm, llvm-ir, asm)",
    )
    c = p.add_argument_group("compile options (CompileOptions fields)")
    c.add_argument("--precision", choices=("f32", "f16", "bf16"))
    c.add_argument(
        "--policy",
        help="always-f32 | always-f16 | auto-mixed | auto-mixed-conservative | auto-mixed-bf16",
    )
    c.add_argument("--scaled-quant", metavar="CFG", help="e.g. fp8-e4m3, mxfp8, f4e3m0,layout=mx")
    c.add_argument("--dce", action=argparse.BooleanOptionalAction, default=None)
    c.add_argument("--constant-folding", action=argparse.BooleanOptionalAction, default=None)
    c.add_argument("--fusion-target", choices=("cpu", "none"))
    c.add_argument("--arena-alignment", type=int, metavar="N")
    c.add_argument("--assert-fusion-clean", action="store_true", default=None)
    c.add_argument("--supported-ops", metavar="OP,OP,...")
    c.add_argument("--dim-binding", metavar="NAME=N,...")
    c.add_argument("--param-bindings", metavar="FILE", help="bake these weights in at compile time")
    c.add_argument("--quant-param-bindings", metavar="FILE")
    c.add_argument("--kernel-dispatch", choices=("prefer-native", "common", "native"))
    c.add_argument("--force-common-kinds", metavar="KIND,...")
    c.add_argument("--force-native-kinds", metavar="KIND,...")
    c.add_argument("--scan-unroll-max-length", type=int, metavar="N")
    c.add_argument("--cache-param-invariant", action="store_true", default=None)
    c.add_argument("--disable-mpsgraph", action="store_true", default=None)
    c.add_argument("--rng-seed", type=int, metavar="N")
    c.add_argument("--rng-backend", choices=("philox", "zero"))
    c.add_argument("--verbose", "-v", action="store_true", default=None)
    c.add_argument("--no-cache", action="store_true", help="do not use the compile cache")
    c.add_argument("--no-native", action="store_true",
                   help=".rlx: do not link the stored object code; compile the IR")  # fmt: skip
    return p


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _dims(s: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in _csv(s):
        k, eq, v = item.partition("=")
        if not eq or not v.strip().lstrip("-").isdigit():
            raise UsageError(f"--dim-binding: expected NAME=N[,NAME=N...], got {item!r}")
        out[k.strip()] = int(v)
    return out


def options_from_args(a: argparse.Namespace) -> Any:
    """CompileOptions from the compile flags (unset flags keep defaults / the environment)."""
    from rlx.runtime.options import CompileOptions, RngOptions

    kw: dict[str, Any] = {}
    for name in ("precision", "policy", "scaled_quant", "dce", "constant_folding", "fusion_target",
                 "arena_alignment", "assert_fusion_clean", "param_bindings", "quant_param_bindings",
                 "kernel_dispatch", "scan_unroll_max_length", "cache_param_invariant",
                 "disable_mpsgraph", "verbose"):  # fmt: skip
        if getattr(a, name) is not None:
            kw[name] = getattr(a, name)
    for name in ("supported_ops", "force_common_kinds", "force_native_kinds"):
        if getattr(a, name) is not None:
            kw[name] = _csv(getattr(a, name))
    if a.dim_binding is not None:
        kw["dim_binding"] = _dims(a.dim_binding)
    if a.rng_seed is not None or a.rng_backend is not None:
        kw["rng"] = RngOptions(42 if a.rng_seed is None else a.rng_seed, a.rng_backend or "philox")
    return CompileOptions(**kw)


def random_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, scale: float, high: int = 4
) -> np.ndarray:
    """Seeded test data: N(0, scale) floats, ints in [0, high), random bools."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, max(1, high), size=shape).astype(dtype)
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def _note(msg: str) -> None:
    sys.stderr.write(f"{PROG}: note: {msg}\n")


def _inputs(
    g: Any, specs: Sequence[str], rng: np.random.Generator, seed: int, bounds: dict[str, int]
) -> dict[str, np.ndarray]:
    wanted = {n: (s, d) for n, s, d in g.inputs}
    given: dict[str, str] = {}
    for spec in specs:
        name, eq, src = spec.partition("=")
        if not eq or not name:
            raise UsageError(f"--input: expected NAME=FILE.npy or NAME=random, got {spec!r}")
        if name not in wanted:
            raise ValueError(
                f"--input: unknown input '{name}'; inputs: {', '.join(wanted) or 'none'}"
            )
        if name in given:
            raise UsageError(f"--input: input '{name}' is given twice")
        given[name] = src
    out: dict[str, np.ndarray] = {}
    for name, (shape, dtype) in wanted.items():
        src = given.get(name)
        if src is None or src == "random":
            if src is None:
                _note(f"input '{name}' not given: using random {dtype}{list(shape)} (seed {seed})")
            # integer inputs that index a gather stay inside its table
            out[name] = random_array(rng, shape, dtype, 1.0, min(4, bounds.get(name, 4)))
            continue
        out[name] = _read_npy(name, src)
    return out


def _read_npy(name: str, src: str) -> np.ndarray:
    """One `.npy` array; ValueError naming the input for anything else. NumPy's header
    parser raises SyntaxError / tokenize errors on a malformed header (was an error
    naming neither the input nor the file), and an `.npz` archive is no array."""
    try:
        arr = np.load(src, allow_pickle=False)
    except Exception as e:  # noqa: BLE001  (any failure of the reader is a bad input file)
        raise ValueError(f"--input {name}: cannot read {src}: {type(e).__name__}: {e}") from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise ValueError(f"--input {name}: {src} is an .npz archive, not one .npy array")
    return arr


def _params(g: Any, path: str | None, rng: np.random.Generator, seed: int) -> None:
    values: dict[str, Any] = {}
    if path is not None:
        from rlx.weights import load

        values = load(path)
    random_names = []
    for name, (shape, dtype) in g.params.items():
        if name in values:
            v = values[name]
            if isinstance(v, np.ndarray) and v.dtype != dtype and v.dtype.kind == "f" == dtype.kind:
                _note(f"param '{name}': converting {v.dtype} to {dtype}")
                v = v.astype(dtype)
            g.set_param(name, v)
        else:
            random_names.append(name)
            g.set_param(name, random_array(rng, shape, dtype, 0.1))
    if random_names:
        _note(
            f"{len(random_names)} param(s) not given, using random values (seed {seed}): {', '.join(random_names)}"
        )
    unused = sorted(set(values) - set(g.params))
    if unused:
        _note(
            f"ignoring {len(unused)} tensor(s) of {path} not used by the graph: {', '.join(unused[:8])}"
        )


def summarize(name: str, a: np.ndarray, k: int = 6) -> str:
    """`name: shape (..) dtype  min .. max .. mean ..  first [..]`."""
    head = f"{name}: shape {tuple(a.shape)} {a.dtype}"
    if a.size == 0:
        return head + "  (empty)"
    f = a.astype(np.float64)
    first = ", ".join(f"{v:.6g}" for v in f.reshape(-1)[:k]) + (", ..." if a.size > k else "")
    return f"{head}  min {f.min():.6g}  max {f.max():.6g}  mean {f.mean():.6g}  first [{first}]"


def _graph(a: argparse.Namespace) -> Any:
    """The compiled (.mlir) or loaded (.rlx) graph. The compiler is imported only for .mlir
    files (start-up laziness: running an artifact with stored code imports neither xDSL nor
    LLVM)."""
    import rlx

    opts = options_from_args(a)
    if a.file.endswith(".rlx"):
        return rlx.load(a.file, opts, allow_native=not a.no_native)
    from rlx.runtime.compiler import UnboundDimsError

    try:
        return rlx.compile(Path(a.file), opts, entry=a.entry)
    except UnboundDimsError as e:  # name rlx-run's flag, not the Python API
        flag = "--dim-binding=" + ",".join(f"{d}=N" for d in e.dims)
        raise UnboundDimsError(e.dims, flag) from None


def run(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    if not Path(a.file).is_file():
        raise ValueError(f"no such file: {a.file}")
    saved = os.environ.get("RLX_CACHE")
    if a.no_cache:
        os.environ["RLX_CACHE"] = "0"
    try:
        g = _graph(a)
    finally:
        if a.no_cache and saved is None:
            del os.environ["RLX_CACHE"]
        elif a.no_cache:
            os.environ["RLX_CACHE"] = saved
    if a.print_ir:
        sys.stdout.write(g.ir(a.print_ir).rstrip("\n") + "\n")
    rng = np.random.default_rng(a.seed)
    bounds: dict[str, int] = {}
    if a.file.endswith(".mlir"):  # gather tables of the IR (an .rlx has none to read fast)
        from rlx.tools.index_bounds import index_bounds_of_file

        bounds = index_bounds_of_file(a.file, a.entry)
    inputs = _inputs(g, a.input, rng, a.seed, bounds)
    _params(g, a.params, rng, a.seed)
    outs = g.run(**inputs)
    for (name, _, _), arr in zip(g.outputs, outs, strict=True):
        print(summarize(name, arr))
    if a.output_dir:
        d = Path(a.output_dir)
        d.mkdir(parents=True, exist_ok=True)
        for (name, _, _), arr in zip(g.outputs, outs, strict=True):
            np.save(d / f"{name}.npy", arr)
        print(f"saved {len(outs)} output(s) to {d}")
    if a.bench > 0:
        times = []
        for _ in range(a.bench):
            t0 = time.perf_counter()
            g.run(**inputs)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times) * 1e3
        print(f"bench: {a.bench} runs, median {med:.4f} ms, min {min(times) * 1e3:.4f} ms")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point: returns the exit code (0 ok, 1 error)."""
    return run_main(PROG, run, argv)


if __name__ == "__main__":
    sys.exit(main())
