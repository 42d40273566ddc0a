"""Property test: ONNX index ops fed indices at run time (hypothesis, docs/fuzzing.md).

Random Gather / GatherElements / GatherND / ScatterElements / ScatterND / OneHot nodes
(data shapes of rank 1-3, any axis, int32 or int64 indices, the ND ops take int64;
index shapes with 0-size dims: no update at all), compiled once per example
and run on several index arrays drawn around the valid range and at its extremes
(±2^62, INT_MIN). Found: an update-less ScatterND / ScatterElements raised an
IndexError (row 0 of the empty updates was gathered). Property: indices inside the op's range give NumPy's result (the spec:
negative ones wrap); any index outside gives an IndexError naming the index input
(`[from input 'i']`), never a wrong value, another exception or a crash; OneHot's
out-of-range indices give all-off rows (the spec). Run on guard pages too. CI:
`RLX_FUZZ_EXAMPLES` derandomized examples (RLX_FUZZ_RANDOM=1 for new ones).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from guarded_memory import guarded_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import rlx
from rlx.frontends.onnx import import_model
from rlx.runtime import cache

EXAMPLES = int(os.environ.get("RLX_FUZZ_EXAMPLES", "10"))
RANDOM = os.environ.get("RLX_FUZZ_RANDOM", "") not in ("", "0")
FUZZ = settings(max_examples=2 * EXAMPLES, deadline=None, derandomize=not RANDOM,
                database=None, suppress_health_check=list(HealthCheck))  # fmt: skip
OPS = ("Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "OneHot")
ITYPE = {np.int64: TensorProto.INT64, np.int32: TensorProto.INT32}


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE", "0")
    cache.CACHE.clear_memory()


def _model(op: str, d: np.ndarray, ishape: tuple, it: type, u: tuple | None, **attrs):  # noqa: ANN202
    ins = [helper.make_tensor_value_info("d", TensorProto.FLOAT, d.shape),
           helper.make_tensor_value_info("i", ITYPE[it], ishape)]  # fmt: skip
    names, inits = ["d", "i"], []
    if u is not None:
        ins.append(helper.make_tensor_value_info("u", TensorProto.FLOAT, u))
        names.append("u")
    if op == "OneHot":  # OneHot(indices, depth, values): the index input is the first
        ins = [ins[1]]
        names = ["i", "depth", "v"]
        inits = [numpy_helper.from_array(np.array(d.shape[0], np.int64), "depth"),
                 numpy_helper.from_array(np.array([0, 1], np.float32), "v")]  # fmt: skip
    g = helper.make_graph([helper.make_node(op, names, ["y"], name="n", **attrs)], "g", ins,
                          [helper.make_empty_tensor_value_info("y")], inits)  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def _reference(
    op: str, d: np.ndarray, i: np.ndarray, u: np.ndarray | None, axis: int
) -> np.ndarray:
    """NumPy statement of each op for indices already checked to be in range."""
    if op == "Gather":
        return np.take(d, i, axis=axis)
    if op == "GatherElements":
        return np.take_along_axis(d, np.where(i < 0, i + d.shape[axis], i), axis=axis)
    if op == "GatherND":
        shape = (*i.shape[:-1], *d.shape[i.shape[-1] :])
        rows = [d[tuple(r)] for r in i.reshape(-1, i.shape[-1])]
        return np.stack(rows).reshape(shape) if rows else np.zeros(shape, d.dtype)
    out = d.copy()
    if op == "ScatterElements":  # reduction="add": duplicates are well defined
        idx = list(np.indices(i.shape))
        idx[axis] = np.where(i < 0, i + d.shape[axis], i)
        np.add.at(out, tuple(idx), u)
        return out
    if op == "ScatterND":
        for r, v in zip(
            i.reshape(-1, i.shape[-1]), u.reshape(-1, *u.shape[i.ndim - 1 :]), strict=True
        ):
            out[tuple(r)] += v
        return out
    depth = d.shape[0]  # OneHot: out-of-range indices give all-off rows
    ok = (i >= -depth) & (i < depth)
    return ((np.where(i < 0, i + depth, i)[..., None] == np.arange(depth)) & ok[..., None]).astype(
        np.float32
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple:
    op = draw(st.sampled_from(OPS))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    d = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    ax = axis % rank
    attrs, u = {"axis": axis}, None
    if op == "Gather":
        ishape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        bound = [shape[ax]] * int(np.prod(ishape, dtype=np.int64))
    elif op in ("GatherElements", "ScatterElements"):
        ishape = tuple(draw(st.integers(0, 3)) if k == ax else s for k, s in enumerate(shape))
        bound = [shape[ax]] * int(np.prod(ishape))
        if op == "ScatterElements":
            attrs["reduction"], u = "add", ishape
    elif op in ("GatherND", "ScatterND"):
        m = draw(st.integers(1, rank))
        lead = tuple(draw(st.lists(st.integers(0, 3), max_size=1)))
        ishape = (*lead, m)
        bound = list(shape[:m]) * int(np.prod(lead, dtype=np.int64))
        attrs = {}
        if op == "ScatterND":
            attrs["reduction"], u = "add", (*lead, *shape[m:])
    else:  # OneHot over a depth of shape[0]
        ishape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
        bound = [shape[0]] * int(np.prod(ishape))
        attrs = {"axis": -1}
    it = np.int64 if op.endswith("ND") else draw(st.sampled_from([np.int64, np.int32]))
    info = np.iinfo(it)
    extremes = st.sampled_from([info.min, info.max, -(2**62) if it is np.int64 else info.min + 1])
    runs = []
    for bad in (False, True, True):
        vals = [draw(st.integers(-b, b - 1)) for b in bound]
        if bad and vals:
            k = draw(st.integers(0, len(vals) - 1))
            b = bound[k]
            vals[k] = draw(st.one_of(st.sampled_from([b, -b - 1, b + 1]), extremes))
        runs.append(np.array(vals, it).reshape(ishape))
    return op, d, ishape, it, u, attrs, runs, bound


@FUZZ
@given(case=cases())
def test_run_time_indices_match_numpy_or_name_the_input(case: tuple) -> None:
    op, d, ishape, it, ushape, attrs, runs, bound = case
    module, params = import_model(_model(op, d, ishape, it, ushape, **attrs))
    g = rlx.compile(module)
    g.set_params(params)
    upd = None if ushape is None else -np.arange(np.prod(ushape), dtype=np.float32).reshape(ushape)
    for i in runs:
        args = [i] if op == "OneHot" else [d, i] + ([] if upd is None else [upd])
        flat = i.reshape(-1).astype(np.int64)
        ok = all(-b <= v < b for v, b in zip(flat, bound, strict=True)) or op == "OneHot"
        if ok:
            want = _reference(op, d, i.astype(np.int64), upd, attrs.get("axis", 0) % d.ndim)
            np.testing.assert_array_equal(g.run(*args)[0], want)
        else:
            with pytest.raises(IndexError, match=r"is out of range .*input 'i'\]$"):
                g.run(*args)
        outs, status = guarded_run(g, args, "end" if len(flat) % 2 else "start")
        if ok:
            np.testing.assert_array_equal(outs[0], want)
        else:
            assert status is not None and status[0] == 1
