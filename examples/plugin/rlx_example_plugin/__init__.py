"""An out-of-tree RLX plugin: what a research package ships to add passes and a dialect.

Everything is declared in one `xdsl.universe.Universe` (lazy factories: nothing is imported
until a pass or the dialect is used), exposed through the `xdsl.universe` entry point in
pyproject.toml. After `pip install examples/plugin`:

    rlx-opt in.mlir -p 'example-fold-double-neg{strict=true}'
    rlx-opt --list-passes | grep example
    rlx.compile(src, CompileOptions(extra_passes={"after:fusion": "example-fold-double-neg"}))

Without installing, `rlx-opt --load-pass-plugin=rlx_example_plugin` (importable module) or
`--load-pass-plugin=path/to/file.py` loads the same Universe.
"""

from xdsl.universe import Universe


def _fold_double_neg():
    from rlx_example_plugin.passes import FoldDoubleNeg

    return FoldDoubleNeg


def _drop_neg():
    from rlx_example_plugin.passes import DropNeg

    return DropNeg


def _dialect():
    from rlx_example_plugin.dialect import Example

    return Example


UNIVERSE = Universe(
    all_passes={"example-fold-double-neg": _fold_double_neg, "example-drop-neg": _drop_neg},
    all_dialects={"example": _dialect},
)
