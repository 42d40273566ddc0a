"""Hostile `rlx-run --input` files (docs/fuzzing.md, session 9): each is exit 1 with one
`rlx-run: error:` line naming the input and the file, never a traceback. Were: a
malformed `.npy` header raised NumPy's tokenize error without naming the input or file,
an `.npz` archive was read as a string array ("got <U1 array"), an input given twice
silently took the last file. Also: the bad-index run error names the index input."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy_format

from rlx.tools.rlx_run import main

SRC = """func.func @main(%x: tensor<2x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %g = rlx.gather %x, %i : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}
"""


def _files(d: Path) -> None:
    np.save(d / "x.npy", np.ones((2, 3), np.float32))
    np.save(d / "i.npy", np.array([0, 1]))
    np.save(d / "i_bad.npy", np.array([0, 7]))
    np.savez(d / "z.npz", a=np.ones(3))
    good = (d / "x.npy").read_bytes()
    (d / "header.npy").write_bytes(good.replace(b"(2, 3)", b"(2, 3 "))  # unclosed tuple
    (d / "short.npy").write_bytes(good[:-4])
    with open(d / "huge.npy", "wb") as f:
        npy_format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                              "shape": (2**61, 3)})  # fmt: skip
        f.write(b"\0" * 24)


CASES = {
    "malformed header": (["arg0=header.npy", "arg1=i.npy"], "--input arg0: cannot read header.npy"),
    "truncated": (["arg0=short.npy", "arg1=i.npy"], "--input arg0: cannot read short.npy"),
    "huge shape": (["arg0=huge.npy", "arg1=i.npy"], "--input arg0: cannot read huge.npy"),
    "npz archive": (["arg0=z.npz", "arg1=i.npy"], "--input arg0: z.npz is an .npz archive"),
    "directory": (["arg0=.", "arg1=i.npy"], "--input arg0: cannot read ."),
    "given twice": (["arg0=x.npy", "arg0=x.npy", "arg1=i.npy"], "input 'arg0' is given twice"),
    "bad index": (["arg0=x.npy", "arg1=i_bad.npy"],
                  "index 7 is out of range for an axis of size 2 [from input 'arg1']"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_files_are_one_error_line(tmp_path: Path, capsys, case: str) -> None:  # noqa: ANN001
    (tmp_path / "g.mlir").write_text(SRC)
    _files(tmp_path)
    specs, message = CASES[case]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["g.mlir", *(a for s in specs for a in ("--input", s))])
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    assert err.startswith("rlx-run: error: ") and message in err, err
