"""Fusion on vs off: median run time of the example MLP and transformer block compiled with
the default pipeline (fusion on) and with `fusion_target="none"`, in the same run.

    python bench/fusion.py [--repeats 50]

Prints op counts after the graph passes, medians and the ratio (fused / unfused), and the
max difference between the two (they must agree with each other and with the reference).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import rlx

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _median_ms(g: rlx.CompiledGraph, inputs: dict[str, np.ndarray], repeats: int) -> float:
    g.run(**inputs)  # warm up (arena, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        g.run(**inputs)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _ops(g: rlx.CompiledGraph) -> int:
    return sum(
        1
        for line in g.ir("rlx").splitlines()
        if " = rlx." in line or line.strip().startswith("rlx.")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=50)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(
        f"{'model':<20} {'ops on':>7} {'ops off':>7} {'fused ms':>9} {'unfused ms':>10} {'ratio':>6} {'max diff':>9}"
    )
    for name in ("mlp.mlir", "transformer_block.mlir"):
        text = (EXAMPLES / name).read_text()
        on = rlx.compile(text)
        off = rlx.compile(text, rlx.CompileOptions(fusion_target="none"))
        params = {
            k: rng.standard_normal(shape).astype(dtype) * 0.1
            for k, (shape, dtype) in on.params.items()
        }
        params.update(
            {
                k: rng.standard_normal(shape).astype(dtype) * 0.1
                for k, (shape, dtype) in off.params.items()
                if k not in params
            }
        )
        on.set_params({k: v for k, v in params.items() if k in on.params})
        off.set_params({k: v for k, v in params.items() if k in off.params})
        inputs = {n: rng.standard_normal(shape).astype(dtype) for n, shape, dtype in on.inputs}
        diff = max(
            float(np.abs(x - y).max())
            for x, y in zip(on.run(**inputs), off.run(**inputs), strict=True)
        )
        t_on, t_off = _median_ms(on, inputs, a.repeats), _median_ms(off, inputs, a.repeats)
        print(
            f"{name:<20} {_ops(on):>7} {_ops(off):>7} {t_on:>9.3f} {t_off:>10.3f} {t_on / t_off:>6.2f} {diff:>9.2e}"
        )


if __name__ == "__main__":
    main()
