"""`rlx-translate`: translate models from other formats into rlx MLIR.

    rlx-translate --import-onnx MODEL.onnx [-o OUT.mlir] [--weights OUT.npz]
                  [--bake-initializers] [--dim-binding NAME=N,...]

Initializers become `rlx.param` ops; their values are written to `--weights` (.npz or
.safetensors; default: OUT with suffix .npz when there are any and -o is given).
`--bake-initializers` writes them into the IR as `rlx.constant`s instead.
Errors print one line `rlx-translate: error: ...` and exit with 1 (RLX_DEBUG=1 for a
traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

PROG = "rlx-translate"


class UsageError(Exception):
    """A bad command line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Translate models into rlx MLIR.")
    p.add_argument("--import-onnx", metavar="MODEL.onnx", required=True, help="the ONNX model")
    p.add_argument("-o", "--output", metavar="OUT.mlir", help="default: stdout")
    p.add_argument("--weights", metavar="OUT.npz", help="where to write the initializers")
    p.add_argument("--bake-initializers", action="store_true", help="initializers as rlx.constant")
    p.add_argument(
        "--dim-binding", metavar="NAME=N,...", help="fix named dynamic dims at import time"
    )
    return p


def run(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    from rlx.frontends.onnx import import_model
    from rlx.transforms.bind_dims import parse_binding

    dims = parse_binding(args.dim_binding) if args.dim_binding else {}
    module, params = import_model(
        args.import_onnx, bake_initializers=args.bake_initializers, dims=dims
    )
    text = str(module) + "\n"
    weights = args.weights
    if params and weights is None and args.output:
        weights = str(Path(args.output).with_suffix(".npz"))
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    if params:
        if weights is None:
            print(
                f"{PROG}: warning: {len(params)} initializers not written (use --weights)",
                file=sys.stderr,
            )
        else:
            from rlx.weights import save

            save(weights, params)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except Exception as e:
        if os.environ.get("RLX_DEBUG"):
            raise
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
