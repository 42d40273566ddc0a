"""rlx.runtime.loading: an rlx.Graph becomes its module one way (`source_module`), for
`rlx.compile` (keyed without verifying) and for `load_module`'s own callers (bake, aot)
alike; duck-typed sources with only a `module` attribute load too; a graph's own error
(no outputs) is the same ValueError on both paths."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import rlx
from rlx.runtime.loading import load_module, make_context, source_module


def _graph() -> rlx.Graph:
    g = rlx.Graph()
    x = g.input("x", (2, 3))
    g.output(g.tanh(g.add(x, x)))
    return g


@dataclass
class _HasModule:
    """A source object with only a `module` attribute (no `finish`)."""

    module: ModuleOp


def test_graph_loads_through_source_module_unverified() -> None:
    g = _graph()
    module, _ = load_module(g, make_context())
    assert not g._verified  # finished without xDSL's verifier: load_module verified a copy
    assert source_module(g) is g.finish(verify=False)  # built once
    assert str(module) == str(g.module)


@pytest.mark.parametrize("wrap", ["graph", "module attribute", "module"])
def test_every_source_kind_loads_and_compiles_alike(wrap: str) -> None:
    g = _graph()
    source = {"graph": g, "module attribute": _HasModule(g.module), "module": g.module}[wrap]
    module, _ = load_module(source, make_context())
    assert str(module) == str(_graph().module)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    (got,) = rlx.compile(source).run(x)
    np.testing.assert_allclose(got, np.tanh(x + x), rtol=1e-6)


def test_graph_without_outputs_is_the_same_error_on_both_paths() -> None:
    with pytest.raises(ValueError, match="no outputs"):
        load_module(rlx.Graph(), make_context())
    with pytest.raises(ValueError, match="no outputs"):
        rlx.compile(rlx.Graph())


def test_other_sources_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="expected MLIR text"):
        load_module(42, make_context())
