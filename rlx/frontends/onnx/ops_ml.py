"""`ai.onnx.ml` ops that are elementwise arithmetic or table look-ups: Binarizer,
ArrayFeatureExtractor, Scaler, Normalizer, Imputer, OneHotEncoder, FeatureVectorizer and
LabelEncoder's numeric mappings, as onnxruntime computes them (each converter says where
onnx.reference differs), and the attribute and input helpers the domain's converters
share. The score transforms and label helpers of its models are in `ops_ml_scores`, the
linear models and SVMs in `ops_ml_linear`, the tree ensembles in `ops_trees`. rlx has no string tensors: string labels, categories and keys are refused,
naming the node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import numpy_helper
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN, is_float
from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx.node import Node, dims_text, elem, shape, static_shape
from rlx.frontends.onnx.ops_constants import bounded
from rlx.frontends.onnx.ops_index import wrap_index
from rlx.frontends.onnx.ops_ml_scores import match_index
from rlx.frontends.onnx.registry import converter

ML = "ai.onnx.ml"


# ---------------------------------------------------------------- shared helpers
def floats(n: Node, name: str) -> list[float]:
    """A FLOATS attribute (empty when absent)."""
    return [float(v) for v in n.attr(name, None) or []]


def ints(n: Node, name: str, size: int | None = None) -> list[int]:
    """An INTS attribute (empty when absent); with `size`, it must have that many values."""
    v = [int(i) for i in n.attr(name, None) or []]
    if size is not None and len(v) != size:
        raise n.error(f"attribute '{name}' has {len(v)} values, expected {size}")
    return v


def count(n: Node, name: str, default: int | None = None) -> int:
    """A positive INT attribute (`default` when absent; required when there is none)."""
    v = n.attr(name, default)
    if v is None or int(v) < 1:
        raise n.error(f"attribute '{name}' must be an integer >= 1, got {v}")
    return int(v)


def no_strings(n: Node, *names: str) -> None:
    """Refuse string-valued attributes: their tensors would have no rlx element type."""
    for name in names:
        if n.attr(name, None):
            raise n.error(
                f"{name} is not supported: rlx has no string tensors (use integer labels)"
            )


def ml_opset(n: Node) -> int:
    """The model's `ai.onnx.ml` opset version (1 when it imports none)."""
    return next((o.version for o in n.ctx.model.opset_import if o.domain == ML), 1)


def as_rows(n: Node, x: SSAValue, keep_f64: bool = False) -> SSAValue:
    """`x` as float32 rows [N, F] (`keep_f64`: double stays double): a 1-D [F] is one row
    (onnxruntime's reading; the spec's [N, F] layout); other ranks and dynamic shapes are
    refused."""
    s = static_shape(n, x, f"{n.op_type}'s input")
    if len(s) not in (1, 2):
        raise n.error(f"takes a 1-D [F] or 2-D [N, F] input, got shape {dims_text(s)}")
    rows = n.reshape(x, [1, s[0]]) if len(s) == 1 else x
    return rows if keep_f64 and _is_f64(x) else n.cast(rows, "f32")


def per_feature(n: Node, values: Sequence[Any], x: SSAValue, what: str) -> np.ndarray:
    """`values` (1, or one per feature of a 1-D/2-D input) shaped to broadcast against `x`;
    any other length is an error (onnxruntime silently used the first value, and read a
    rank-3 input's features along axis 1)."""
    s = shape(x)
    if len(values) == 1:
        return np.asarray(values[0])
    if len(s) in (1, 2) and len(values) == s[-1] != DYN:
        return np.asarray(values)
    want = f"1 or {s[-1]}" if len(s) in (1, 2) else "1 for a rank-3+ input"
    raise n.error(f"{what} has {len(values)} values; an input of shape {dims_text(s)} takes {want}")


def _is_f64(x: SSAValue) -> bool:
    return numpy_dtype(elem(x)) == np.float64


# ---------------------------------------------------------------- converters
@converter("Binarizer", attrs=("threshold",), domain=ML)
def binarizer(n: Node) -> list[SSAValue]:
    """1 where x > threshold (default 0), else 0, in x's type (NaN gives 0, as onnx.reference;
    onnxruntime fails on a NaN)."""
    x = n.input(0)
    xc = x if is_float(elem(x)) else n.cast(x, "f64")  # a threshold of -0.5 for integers
    above = n.emit("compare", xc, n.constant(float(n.attr("threshold", 0.0)), xc), predicate="gt")
    return [n.cast(above, elem(x))]


@converter("ArrayFeatureExtractor", attrs=(), domain=ML)
def array_feature_extractor(n: Node) -> list[SSAValue]:
    """`x[..., indices]` with the indices flattened; a 1-D x gives one row `[1, k]`
    (onnxruntime's shape); an index outside [0, last dim) is a run-time IndexError."""
    x, idx = n.input(0), n.input(1)
    xs, ks = list(shape(x)), list(shape(idx))
    if not xs or DYN in ks:
        raise n.error(f"ArrayFeatureExtractor needs a tensor and static indices, got {xs}, {ks}")
    k = 1
    for d in ks:
        k *= d
    at = wrap_index(n, n.reshape(idx, [k]), xs[-1], negative=False)
    y = n.emit("gather", x, n.cast(at, "i64"), axis=len(xs) - 1)
    return [n.reshape(y, [1, k]) if len(xs) == 1 else y]


@converter("Scaler", attrs=("offset", "scale"), domain=ML)
def scaler(n: Node) -> list[SSAValue]:
    """`(x - offset) * scale` as float32, the spec's output type whatever x's (onnx.reference
    keeps x's type, truncating integers); double x is computed in double, the others in
    float32, as onnxruntime. offset / scale: 1 value or one per feature (absent: 0 / 1, where
    both runtimes refuse the node)."""
    x = n.input(0)
    offset, scale = floats(n, "offset"), floats(n, "scale")
    if offset and scale and len(offset) != len(scale):
        raise n.error(f"offset has {len(offset)} values but scale {len(scale)}: they must match")
    ct = "f64" if _is_f64(x) else "f32"
    off = n.constant(per_feature(n, offset or [0.0], x, "offset"), ct)
    mul = n.constant(per_feature(n, scale or [1.0], x, "scale"), ct)
    return [n.cast(n.emit("mul", n.emit("sub", n.cast(x, ct), off), mul), "f32")]


@converter("Normalizer", attrs=("norm",), domain=ML)
def normalizer(n: Node) -> list[SSAValue]:
    """Each row (the last axis of a 1-D or 2-D x) over its MAX / L1 / L2 norm, as float32;
    a row whose divisor is 0 is copied (the spec). MAX divides by the row's max, not its
    max |x| (onnxruntime and the spec's `X / max(X)`; onnx.reference takes max |x|)."""
    x = n.input(0)
    s = shape(x)
    if len(s) not in (1, 2):
        raise n.error(f"takes a 1-D or 2-D input, got shape {dims_text(s)}")
    xf, axes = n.cast(x, "f32"), [len(s) - 1]
    norm = n.attr("norm", "MAX")
    if norm == "MAX":
        d = n.emit("reduce", xf, kind="max", axes=axes, keepdims=True)
    elif norm == "L1":
        d = n.emit("reduce", n.emit("abs", xf), kind="sum", axes=axes, keepdims=True)
    elif norm == "L2":
        sq = n.emit("reduce", n.emit("mul", xf, xf), kind="sum", axes=axes, keepdims=True)
        d = n.emit("sqrt", sq)
    else:
        raise n.error(f"norm '{norm}' is not one of MAX, L1, L2")
    zero = n.emit("compare", d, n.constant(0.0, d), predicate="eq")
    return [n.emit("where", zero, xf, n.emit("div", xf, d))]


@converter(
    "Imputer",
    attrs=("imputed_value_floats", "imputed_value_int64s", "replaced_value_float",
           "replaced_value_int64"),
    domain=ML,
)  # fmt: skip
def imputer(n: Node) -> list[SSAValue]:
    """x with the elements equal to the replaced value (NaN: the NaNs) set to the imputed
    value of their feature (1 value or one per feature), in x's type. A float input takes
    the *_float(s) attributes, an integer one the *_int64(s) ones (the spec; onnxruntime
    refuses the other pairing, onnx.reference takes whichever is set)."""
    x = n.input(0)
    dt = numpy_dtype(elem(x))
    fl = is_float(elem(x))
    name = "imputed_value_floats" if fl else "imputed_value_int64s"
    values: list[Any] = floats(n, name) if fl else ints(n, name)
    if not values:
        raise n.error(f"a {dt} input takes its imputed values in {name}, which is empty")
    table = per_feature(n, values, x, name)
    if fl:
        rep = float(n.attr("replaced_value_float", 0.0))
        hit = (n.emit("compare", x, x, predicate="ne") if np.isnan(rep)
               else n.emit("compare", x, n.constant(rep, x), predicate="eq"))  # fmt: skip
    else:
        info, rep = np.iinfo(dt), int(n.attr("replaced_value_int64", 0))
        if not (info.min <= table.min() and table.max() <= info.max):
            raise n.error(f"{name} {values} do not fit the input's {dt}")
        if not info.min <= rep <= info.max:
            return [x]  # no element can equal it
        hit = n.emit("compare", x, n.constant(rep, x), predicate="eq")
    return [n.emit("where", hit, n.constant(table, x), x)]


@converter("OneHotEncoder", attrs=("cats_int64s", "cats_strings", "zeros"), domain=ML)
def one_hot_encoder(n: Node) -> list[SSAValue]:
    """x's shape + [K]: 1.0 at the index of each element's category in cats_int64s, as
    float32. Floats are truncated toward zero first, as onnxruntime casts them to int64
    (onnx.reference compares the float, so 1.7 matched no category); NaN matches none. A
    repeated category takes its last index (onnxruntime; onnx.reference fails). An element of
    no category is an all-zero row, or with zeros=0 a run-time IndexError naming the node
    (onnxruntime fails)."""
    no_strings(n, "cats_strings")
    cats = ints(n, "cats_int64s")
    if not cats:
        raise n.error("cats_int64s is empty: there are no categories")
    x = n.input(0)
    if is_float(elem(x)):  # compared in f64: out-of-range floats match nothing, no UB cast
        xd = n.cast(x, "f64")
        neg = n.emit("compare", xd, n.constant(0.0, xd), predicate="lt")
        xd = n.emit("where", neg, n.emit("ceil", xd), n.emit("floor", xd))
        table = n.constant(np.array(cats, np.float64), xd)
    else:
        xd, table = n.cast(x, "i64"), n.constant(np.array(cats, np.int64), "i64")
    k, s = len(cats), list(shape(x))
    hit = n.emit("compare", n.reshape(xd, [*s, 1]), table, predicate="eq")  # [..., K]
    at = n.reshape(match_index(n, hit, last=True), [*s, 1])  # -1: no category
    if not n.attr("zeros", 1):
        at = wrap_index(n, at, k, negative=False)  # -1: "index -1 is out of range"
    return [n.cast(n.emit("compare", at, n.constant(np.arange(k), "i64"), predicate="eq"), "f32")]


@converter("FeatureVectorizer", attrs=("inputdimensions",), domain=ML)
def feature_vectorizer(n: Node) -> list[SSAValue]:
    """The inputs as float32 rows, each cut or zero-padded to its `inputdimensions` width,
    concatenated. A 1-D input is one row [1, C] (the spec and onnxruntime; onnx.reference
    made it a column); a rank-3+ one is flattened after its first axis (onnxruntime). All
    widths 0 are refused (onnxruntime gives an empty [N, 0])."""
    widths, xs = ints(n, "inputdimensions"), n.inputs()
    if len(widths) != len(xs):
        raise n.error(f"inputdimensions has {len(widths)} values for {len(xs)} inputs")
    parts, rows = [], None
    for i, (x, w) in enumerate(zip(xs, widths, strict=True)):
        s = static_shape(n, x, f"input #{i}")
        if not s or w < 0:
            raise n.error(
                f"input #{i}: shape {dims_text(s)}, width {w}: need rank >= 1, width >= 0"
            )
        r, c = (1, s[0]) if len(s) == 1 else (s[0], int(np.prod(s[1:])))
        bounded(n, [r, w])
        if rows is not None and r != rows:
            raise n.error(f"input #{i} has {r} rows, input #0 has {rows}")
        rows = r
        v = n.cast(n.reshape(x, [r, c]), "f32")
        if c > w:
            v = n.emit("slice", v, starts=[0, 0], limits=[r, w])
        elif c < w:
            v = n.emit("concat", v, n.constant(np.zeros((r, w - c)), "f32"), axis=1)
        if w:
            parts.append(v)
    if not parts:
        raise n.error("inputdimensions are all 0: the output would be empty")
    return [parts[0] if len(parts) == 1 else n.emit("concat", *parts, axis=1)]


_TABLE_ATTRS = ("int64s", "floats", "strings", "tensor")


def _label_table(n: Node, kind: str) -> np.ndarray:
    """The 1-D `keys` or `values` of a LabelEncoder (exactly one of its four attributes)."""
    given = [f"{kind}_{t}" for t in _TABLE_ATTRS if f"{kind}_{t}" in n.attrs]
    if len(given) != 1:
        raise n.error(f"exactly one {kind}_* attribute must be set, got {given or 'none'}")
    (name,) = given
    if name.endswith("_strings"):
        no_strings(n, name)
    if name.endswith("_tensor"):
        arr = numpy_helper.to_array(n.attrs[name])
        if arr.dtype.kind not in "iuf":
            raise n.error(f"{name} holds {arr.dtype}: only numeric tables are supported")
        if arr.ndim != 1:
            raise n.error(f"{name} must be 1-D, got shape {list(arr.shape)}")
        return arr
    return np.array(n.attrs[name], np.int64 if name.endswith("int64s") else np.float32)


def _label_default(n: Node, dt: np.dtype) -> np.ndarray:
    """The value of a key not in the table: default_tensor, else default_float /
    default_int64 for float / integer values (their defaults -0.0 / -1; onnxruntime's order)."""
    if "default_tensor" in n.attrs:
        d = numpy_helper.to_array(n.attrs["default_tensor"]).reshape(-1)
        if d.size != 1 or d.dtype != dt:
            raise n.error(f"default_tensor must hold one {dt}, got {d.size} of {d.dtype}")
        return d
    if dt.kind == "f":
        return np.array([n.attr("default_float", -0.0)], dt)
    v = int(n.attr("default_int64", -1))
    if not np.iinfo(dt).min <= v <= np.iinfo(dt).max:
        raise n.error(f"default_int64 {v} does not fit the values' {dt}")
    return np.array([v], dt)


@converter(
    "LabelEncoder",
    attrs=("default_float", "default_int64", "default_string", "default_tensor",
           *(f"{k}_{t}" for k in ("keys", "values") for t in _TABLE_ATTRS)),
    domain=ML,
)  # fmt: skip
def label_encoder(n: Node) -> list[SSAValue]:
    """Each element mapped to the value of its key (opset 2's keys_*/values_* lists, opset
    4's *_tensor), or to the default; numeric keys and values only. The keys' type must be
    x's. Opset 4 matches NaN keys to NaN inputs (its spec; onnxruntime's NaN-equal map;
    onnx.reference's dict never does), opset 2 does not (both runtimes). A repeated key is
    refused (onnx.reference and opset 4's spec take its last value, onnxruntime its first)."""
    keys, values = _label_table(n, "keys"), _label_table(n, "values")
    x = n.input(0)
    if len(keys) != len(values) or not len(keys):
        raise n.error(f"{len(keys)} keys and {len(values)} values: need as many, at least one")
    if keys.dtype != numpy_dtype(elem(x)):
        raise n.error(f"the keys are {keys.dtype} but the input is {numpy_dtype(elem(x))}")
    nan = np.isnan(keys) if keys.dtype.kind == "f" else np.zeros(len(keys), bool)
    if len(np.unique(keys[~nan])) < (~nan).sum() or nan.sum() > 1:
        raise n.error("a key repeats: onnxruntime keeps its first value, the spec its last")
    s = list(shape(x))
    xe = n.reshape(x, [*s, 1])
    hit = n.emit("compare", xe, n.constant(keys, x), predicate="eq")  # [..., K]
    if nan.any() and ml_opset(n) >= 4:
        hit = n.emit(
            "where", n.constant(nan, "bool"), n.emit("compare", xe, xe, predicate="ne"), hit
        )
    at = match_index(n, hit, last=False)  # k: the default
    table = np.concatenate([values, _label_default(n, values.dtype)])
    return [n.emit("gather", n.constant(table, table.dtype), at, axis=0)]
