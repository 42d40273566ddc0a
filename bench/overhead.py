"""Per-run overhead of `CompiledGraph.run`: the time of a 1-element add, i.e. the Python
side of a call (argument checks, pointer marshalling, output allocation) plus one native
call. Prints the best-of-3 mean over N calls, for positional and named inputs.

    python bench/overhead.py [-n 20000]
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

import rlx

SRC = """func.func @main(%a: tensor<1xf32>, %b: tensor<1xf32>) -> tensor<1xf32> {
  %c = rlx.add %a, %b : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  func.return %c : tensor<1xf32>
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20000)
    n = ap.parse_args().n
    g = rlx.compile(SRC)
    a, b = np.ones(1, np.float32), np.full(1, 2, np.float32)
    assert g.run(a, b)[0][0] == 3.0
    for label, call in (
        ("positional", lambda: g.run(a, b)),
        ("named", lambda: g.run(arg0=a, arg1=b)),
    ):
        best = min(timeit.timeit(call, number=n) / n for _ in range(3))
        print(f"run() overhead, {label} inputs: {best * 1e6:.2f} us")


if __name__ == "__main__":
    main()
