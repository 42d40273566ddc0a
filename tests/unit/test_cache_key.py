"""The compile cache's key without the printer (`rlx.runtime.ir_key`) and the cheap hit path.

Exactness: graphs that print differently never share a key text; the same graph built
twice gets the same one. Hits: neither parse, print, clone nor verify, and give the
reference interpreter's outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

import rlx
from rlx.interpreter import run as reference_run
from rlx.runtime import cache, compiler
from rlx.runtime.ir_key import structural_text


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path / "rlx-cache"))
    monkeypatch.delenv("RLX_CACHE", raising=False)
    cache.CACHE.clear_memory()
    cache.CACHE.stats = cache.CacheStats()


def build(
    *,
    axis: int = -1,
    in_dtype: str = "f32",
    width: int = 4,
    const: float = 0.5,
    swap: bool = False,
    wname: str = "w",
    xname: str = "x",
    hint: bool = True,
    extra_attr: bool = False,
) -> rlx.Graph:
    """A small graph whose every knob changes the printed module."""
    g = rlx.Graph()
    x = g.input(xname, (2, width), in_dtype)
    if in_dtype != "f32":
        x = g.cast(x, "f32")
    w = g.param(wname, (width,))
    if not hint:
        w.name_hint = None
    c = g.constant(np.full((width,), const, np.float32))
    a, b = (g.mul(x, c), g.add(x, w)) if swap else (g.add(x, w), g.mul(x, c))
    s = g.softmax(g.add(a, b), axis=axis)
    if extra_attr:
        s.owner.attributes["rlx.note"] = StringAttr("n")  # type: ignore[union-attr]
    g.output(s)
    return g


VARIANTS: dict[str, dict[str, object]] = {
    "base": {},
    "attribute": {"axis": 0},
    "type": {"in_dtype": "f16"},
    "shape": {"width": 3},
    "constant": {"const": 0.25},
    "signed zero": {"const": -0.0},
    "op order": {"swap": True},
    "param name": {"wname": "v"},
    "input name": {"xname": "y"},
    "name hint": {"hint": False},
    "extra attribute": {"extra_attr": True},
}


def test_same_graph_twice_same_key_and_variants_differ() -> None:
    texts = {k: structural_text(build(**v).module) for k, v in VARIANTS.items()}  # type: ignore[arg-type]
    assert structural_text(build().module) == texts["base"]
    for (ka, a), (kb, b) in combinations(texts.items(), 2):
        assert a != b, f"{ka!r} and {kb!r} share a key text"
    base0 = build(const=0.0).module
    assert structural_text(base0) != texts["signed zero"]  # prints 0.0 vs -0.0


def test_key_differs_whenever_printed_text_differs() -> None:
    modules = [build(**v).module for v in VARIANTS.values()] + [build().module]  # type: ignore[arg-type]
    for a, b in combinations(modules, 2):
        if str(a) != str(b):
            assert structural_text(a) != structural_text(b)
        else:
            assert structural_text(a) == structural_text(b)


def test_mutating_a_built_module_changes_the_key() -> None:
    g = build()
    before = structural_text(g.module)
    soft = next(op for op in g.module.walk() if op.name == "rlx.softmax")
    soft.attributes["rlx.tag"] = StringAttr("t")
    assert structural_text(g.module) != before


def _no_load(*_: object, **__: object) -> None:
    raise AssertionError("a cache hit parsed, cloned or verified the source")


@pytest.mark.parametrize("level", ["memory", "disk"])
def test_graph_hit_skips_loading_and_matches_reference(
    level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    p = {"w": rng.standard_normal(4).astype(np.float32)}
    first = rlx.compile(build())
    assert not first.cache_hit
    if level == "disk":
        cache.CACHE.clear_memory()
    g = build()
    with monkeypatch.context() as m:
        m.setattr(compiler, "load_module", _no_load)
        hit = rlx.compile(g)
    assert hit.cache_hit and getattr(cache.CACHE.stats, f"{level}_hits") == 1
    assert not g._verified  # finished without the verifier
    hit.set_params(p)
    (want,) = reference_run(build().module, [x], p)
    np.testing.assert_allclose(hit.run(x)[0], want, rtol=1e-5, atol=1e-6)
    assert hit.ir("input") == str(build().module)


def test_text_hit_does_not_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    text = str(build().module)
    rlx.compile(text)
    cache.CACHE.clear_memory()
    with monkeypatch.context() as m:
        m.setattr(compiler, "load_module", _no_load)
        hit = rlx.compile(text)
    assert hit.cache_hit and hit.ir("input") == text
    assert not rlx.compile(text.replace("axis = -1", "axis = 0")).cache_hit


def test_bad_graph_is_still_an_error() -> None:
    g = rlx.Graph()
    with pytest.raises(ValueError, match="no outputs"):
        rlx.compile(g)


def _keyed(make: Callable[[], rlx.Graph]) -> str:
    return structural_text(make().module)


def test_region_ops_are_keyed() -> None:
    def body(k: float) -> Callable[[], rlx.Graph]:
        def make() -> rlx.Graph:
            from xdsl.dialects import arith
            from xdsl.dialects.builtin import FloatAttr, f32

            g = rlx.Graph()
            x = g.input("x", (4,))
            g.output(g.elementwise_region(
                [x], lambda a: arith.MulfOp(a, arith.ConstantOp(FloatAttr(k, f32))).result
            ))  # fmt: skip
            return g

        return make

    assert _keyed(body(2.0)) == _keyed(body(2.0))
    assert _keyed(body(2.0)) != _keyed(body(3.0))


def _gather_model(node: str):  # noqa: ANN202
    from onnx import TensorProto, helper, numpy_helper

    g = helper.make_graph(
        [helper.make_node("Gather", ["data", "i"], ["y"], name=node)], "g",
        [helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.arange(3, dtype=np.float32), "data")],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_locations_are_keyed() -> None:
    """Run-time errors name the op's location (the ONNX node, the file and line): two
    models that differ only there must not share a cache entry (the second named the
    first's node)."""
    from rlx.frontends.onnx import import_model

    bad = np.array([0, 7], np.int64)
    for node in ("first_gather", "second_gather"):
        module, params = import_model(_gather_model(node))
        g = rlx.compile(module)
        assert not g.cache_hit
        g.set_params(params)
        with pytest.raises(IndexError, match=f"node '{node}'"):
            g.run(bad)
    assert rlx.compile(import_model(_gather_model("second_gather"))[0]).cache_hit
