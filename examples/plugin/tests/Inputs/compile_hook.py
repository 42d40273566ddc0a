"""rlx.compile with the plugin's passes inserted at a pipeline stage (extra_passes)."""

import sys

import numpy as np

import rlx
from rlx.runtime.compiler import CompileError
from rlx.runtime.options import CompileOptions

path = sys.argv[1]
x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
good = rlx.compile(path, CompileOptions(extra_passes={"before:fusion": "example-fold-double-neg"}))
assert np.array_equal(good.run(x)[0], np.maximum(-x, 0)), good.run(x)
assert (
    "extra_passes = (('before:fusion', 'example-fold-double-neg'),): applied"
    in good.pipeline_report()
)
print("ok: example-fold-double-neg ran in rlx.compile")
try:
    rlx.compile(
        path,
        CompileOptions(extra_passes={"before:fusion": "example-drop-neg"}, check_equivalence=True),
    )
except CompileError as e:
    print(f"CompileError: {e}")
    sys.exit(1)
