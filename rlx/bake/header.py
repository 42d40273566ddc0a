"""Strict decoding of the artifact header: JSON without NaN/Infinity or duplicate keys,
then every field type- and range-checked (docs/artifact.md, "Header fields").

A bad field raises `HeaderError(field, reason)`; `artifact.read` turns it into an
`ArtifactError` naming the file, the field (`weights[3].shape`) and its file offset.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

MAX_DEPTH = 32
"""Deepest nesting of lists/objects a header may have (ours has 5)."""
MAX_STR = 1 << 20
MAX_NAME = 1024
MAX_DIMS = 64
MAX_INT = (1 << 63) - 1
SHA_RE = re.compile(r"[0-9a-f]{64}\Z")
ENCODINGS = ("gguf_tq2_0", "gguf_q8_0")
MEMORY_MODES = ("compact", "duplex", "runtime")


class HeaderError(ValueError):
    """A header field that is missing or has a wrong type or value."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"header field '{field}': {reason}")
        self.field, self.reason = field, reason


def decode(text: bytes) -> dict[str, Any]:
    """Parse the header JSON strictly (raises HeaderError with field '<json>')."""
    depth = _max_depth(text)
    if depth > MAX_DEPTH:
        raise HeaderError("<json>", f"nested {depth} levels deep (at most {MAX_DEPTH})")

    def constant(name: str) -> Any:
        raise HeaderError("<json>", f"{name} is not allowed in an artifact header")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise HeaderError("<json>", f"duplicate key {k!r}")
            out[k] = v
        return out

    try:
        obj = json.loads(text.decode("utf-8"), parse_constant=constant, object_pairs_hook=pairs)
    except UnicodeDecodeError as e:
        raise HeaderError("<json>", f"not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise HeaderError("<json>", f"unreadable JSON: {e.msg} at byte {e.pos}") from None
    except RecursionError:
        raise HeaderError("<json>", "nested too deeply") from None
    if not isinstance(obj, dict):
        raise HeaderError("<root>", f"expected a JSON object, got {_kind(obj)}")
    check(obj)
    return obj


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _max_depth(text: bytes) -> int:
    """Deepest [/{ nesting outside strings (capped at MAX_DEPTH + 1), found before
    `json.loads` recurses into it: strings are cut out by one regex pass and the brackets
    counted with a cumulative sum, so a header of many weights costs no Python loop."""
    a = np.frombuffer(_STRING.sub(b"", text), np.uint8)
    step = np.isin(a, (0x5B, 0x7B)).astype(np.int64) - np.isin(a, (0x5D, 0x7D))
    deepest = int(np.cumsum(step).max(initial=0))
    return min(deepest, MAX_DEPTH + 1)


# ----------------------------------------------------------------------------- field checks


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(v), type(v).__name__)  # fmt: skip


Check = Callable[[str, Any], None]


def _str(limit: int = MAX_STR, pattern: re.Pattern[str] | None = None) -> Check:
    def f(path: str, v: Any) -> None:
        if not isinstance(v, str):
            raise HeaderError(path, f"expected a string, got {_kind(v)}")
        if len(v) > limit:
            raise HeaderError(path, f"string of {len(v)} characters (at most {limit})")
        if "\0" in v:
            raise HeaderError(path, "contains a NUL character")
        if pattern is not None and not pattern.match(v):
            raise HeaderError(path, f"{v[:80]!r} does not match {pattern.pattern}")

    return f


def _int(lo: int = 0, hi: int = MAX_INT) -> Check:
    def f(path: str, v: Any) -> None:
        if not isinstance(v, int) or isinstance(v, bool):
            raise HeaderError(path, f"expected an integer, got {_kind(v)}")
        if not lo <= v <= hi:
            raise HeaderError(path, f"{v} is out of range [{lo}, {hi}]")

    return f


def _bool(path: str, v: Any) -> None:
    if not isinstance(v, bool):
        raise HeaderError(path, f"expected true or false, got {_kind(v)}")


def _one_of(*values: str) -> Check:
    def f(path: str, v: Any) -> None:
        _str(64)(path, v)
        if v not in values:
            raise HeaderError(path, f"{v!r} is not one of {', '.join(values)}")

    return f


def _list(item: Check, limit: int = 1 << 20) -> Check:
    def f(path: str, v: Any) -> None:
        if not isinstance(v, list):
            raise HeaderError(path, f"expected a list, got {_kind(v)}")
        if len(v) > limit:
            raise HeaderError(path, f"{len(v)} items (at most {limit})")
        for i, x in enumerate(v):
            item(f"{path}[{i}]", x)

    return f


def _opt(c: Check) -> Check:
    return lambda path, v: None if v is None else c(path, v)


def _leaf(path: str, v: Any) -> None:
    if isinstance(v, str):
        _str()(path, v)
    elif isinstance(v, int) and not isinstance(v, bool):
        _int(-MAX_INT)(path, v)
    elif not (v is None or isinstance(v, bool | float)):  # floats are finite: see decode
        raise HeaderError(path, f"expected a scalar, got {_kind(v)}")


def _scalar(path: str, v: Any) -> None:
    """A free-form value (options, report, meta counters): a scalar, a list of scalars, or
    an object of those (one level)."""
    if isinstance(v, list):
        _list(_leaf, 1 << 16)(path, v)
    elif isinstance(v, dict) and path.count(".") < 2:
        for k, x in v.items():
            _scalar(f"{path}.{k}", x)
    else:
        _leaf(path, v)


def _obj(
    fields: dict[str, Check], required: tuple[str, ...] = (), free: Check | None = None
) -> Check:
    """An object with known `fields` (those in `required` must be present); other keys are
    checked with `free` (ignored when None: new keys may be added without a version bump)."""

    def f(path: str, v: Any) -> None:
        if not isinstance(v, dict):
            raise HeaderError(path, f"expected an object, got {_kind(v)}")
        for k in required:
            if k not in v:
                raise HeaderError(f"{path}.{k}".lstrip("."), "missing")
        for k, x in v.items():
            sub = f"{path}.{k}".lstrip(".")
            if k in fields:
                fields[k](sub, x)
            elif free is not None:
                free(sub, x)

    return f


_NAME = _str(MAX_NAME)
_SHA = _str(64, SHA_RE)
_DIMS = _list(_int(), MAX_DIMS)
_SECTION = {"offset": _int(), "nbytes": _int(), "sha256": _SHA}
_SECTION_REQ = ("offset", "nbytes", "sha256")
_IO = _obj({"name": _NAME, "shape": _list(_int(-1), MAX_DIMS), "dtype": _str(64)},
           ("name", "shape", "dtype"))  # fmt: skip
_COUNTS = ("nodes", "params_baked", "weight_count", "weight_bytes", "constant_bytes",
           "skipped_zero_matmuls", "ternary_packed", "quant_packed", "constants_deduped")  # fmt: skip
_META = _obj(
    {"name": _NAME, "inputs": _list(_IO, 1024), "outputs": _list(_IO, 1024),
     "params_remaining": _list(_NAME), **dict.fromkeys(_COUNTS, _int())},
    ("inputs", "outputs"), free=_scalar,
)  # fmt: skip
_REPORT = _obj(
    {"kept_dense": _list(_str(4096)), "code": _list(_str(4096)),
     **dict.fromkeys(_COUNTS, _int())},
    free=_scalar,
)  # fmt: skip
_WEIGHT = _obj(
    {"name": _NAME, "shape": _DIMS, "encoding": _str(64), "dtype": _str(64),
     "stored_shape": _DIMS, "live": _bool, "note": _str(4096), **_SECTION},
    ("name", "shape", "encoding", "dtype", "stored_shape", *_SECTION_REQ),
)  # fmt: skip
_ARG = _obj({"name": _NAME, "kind": _one_of("input", "prepared", "param", "output", "status", "arena"),
             "shape": _DIMS, "dtype": _str(64)}, ("name", "kind", "shape", "dtype"))  # fmt: skip
_SIG = _obj(
    {"entry": _NAME, "args": _list(_ARG, 1024), "arena_bytes": _int(), "unplanned_bytes": _int(),
     "alignment": _int(1, 1 << 20), "dead_params": _obj({}, free=_ARG),
     "error_sites": _list(_str(4096), 1 << 16)},
    ("entry", "args", "arena_bytes", "unplanned_bytes", "alignment"),
)  # fmt: skip
_CODE = _obj(
    {"triple": _str(256), "cpu": _str(256), "features": _str(1 << 16), "abi": _int(0, 1 << 31),
     "options": _SHA, "blas": _str(64), "signature": _SIG, "prepare": _opt(_SIG),
     "report": _list(_obj({}, free=_str()), 1024), "reports": _obj({}, free=_str()),
     "runtime": _list(_obj({"name": _NAME, **_SECTION}, ("name", *_SECTION_REQ)), 16),
     **_SECTION},
    ("triple", "cpu", "features", "abi", "options", "blas", "signature", *_SECTION_REQ),
)  # fmt: skip
_MODULE = _obj({"form": _one_of("custom"), "entry": _NAME, **_SECTION}, ("entry", *_SECTION_REQ))
_HEADER = _obj(
    {"format": _one_of("rlx-bake"), "rlx_version": _str(64), "profile": _str(64),
     "options": _obj({}, free=_scalar), "memory": _one_of(*MEMORY_MODES), "meta": _META,
     "report": _REPORT, "module": _MODULE, "weights": _list(_WEIGHT),
     "code": _list(_CODE, 64)},
    ("format", "memory", "meta", "module", "weights"),
)  # fmt: skip


def check(header: Any) -> None:
    """Raise HeaderError on the first missing or bad field of a decoded header."""
    _HEADER("", header)


def locate(text: bytes, field: str) -> int:
    """Best-effort byte offset (in `text`) of `field`, e.g. `weights[3].shape`: the key of
    each step in turn; `[i].k` is the (i+1)-th `"k":` after the list's key. 0 if unknown."""
    tokens = re.findall(r"\[(\d+)\]|([^.\[\]]+)", field)
    pos, skip = 0, 0
    for index, key in tokens:
        if index:
            skip = int(index)
            continue
        k = json.dumps(key).encode() + b":"
        p = text.find(k, pos)
        for _ in range(skip):
            if p < 0:
                break
            p = text.find(k, p + 1)
        if p < 0:
            return pos
        pos, skip = p, 0
    return pos
