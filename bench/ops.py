"""Median run time of compiled RLX graphs vs NumPy on single-op workloads.

    .venv/bin/python bench/ops.py [--quick] [--reps N]

Workloads (bench/common.py): gelu(x*a+b) 4096x4096, softmax 2048x2048, layer_norm
8192x768, matmul 1024^3, a 2-layer MLP 256x768 -> 3072 -> 768 (bias, GELU) and a BERT-like
encoder layer. Prints RLX / NumPy medians and their ratio (< 1: RLX faster), and GFLOP/s
where the FLOP count is defined (matmul vs NumPy's BLAS).
"""

from __future__ import annotations

import os
import sys

if "--threads" in sys.argv[:-1]:  # before numpy/BLAS are loaded (bench/common.py)
    os.environ["BENCH_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]

from common import arg_parser, compile_rlx, machine, max_err, median_s, reps_of, run_rlx, workloads


def main() -> None:
    ap = arg_parser(__doc__)
    args = ap.parse_args()
    reps = reps_of(args)
    print(machine())
    print(
        f"{'workload':36} {'rlx ms':>9} {'numpy ms':>9} {'ratio':>6} {'rlx GF/s':>9} {'np GF/s':>8} {'max err':>9}"
    )
    for w in workloads(args.quick):
        c, _ = compile_rlx(w)
        f_rlx = run_rlx(c, w)
        ref = w.numpy(w.inputs, w.params)
        err = max_err(f_rlx(), ref)
        t_np = median_s(lambda w=w: w.numpy(w.inputs, w.params), reps)
        t_rlx = median_s(f_rlx, reps)
        gf = (
            f"{w.flops / t_rlx / 1e9:9.1f} {w.flops / t_np / 1e9:8.1f}"
            if w.flops
            else f"{'':9} {'':8}"
        )
        print(
            f"{w.name:36} {t_rlx * 1e3:9.3f} {t_np * 1e3:9.3f} {t_rlx / t_np:6.2f} {gf} {err:9.2e}"
        )


if __name__ == "__main__":
    main()
