"""Hostile artifacts (issue 14 item 4): every header field type- and range-checked with
an ArtifactError naming the field and its byte offset; the module section is MLIR text,
never a path; FIFOs and devices are refused without being opened; a fuzzer over header
mutations (hypothesis, fixed seed) sees ArtifactError or a clean read, nothing else."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import signal
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import rlx
import rlx.bake
from rlx.bake import artifact
from rlx.bake.artifact import ArtifactError

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.mlir"
PAD = 1 << 17
"""Slack reserved in the header so that mutated headers still fit before the data."""


def _strip(e: dict) -> dict:
    """A table entry without what `artifact.write` recomputes."""
    return {k: v for k, v in e.items() if k not in ("offset", "nbytes", "sha256", "runtime")}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    shapes = {"w1": (64, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
    w = {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}
    src = rlx.bake.bake(MLP, w, "exact", tmp_path_factory.mktemp("hdr") / "src.rlx")
    art = artifact.read(src)
    header = {k: v for k, v in art.header.items() if k not in ("code", "weights")}
    header["pad"] = "x" * PAD
    out = src.with_name("padded.rlx")
    artifact.write(
        out, header, art.module_text,
        [(_strip(e), art.section(e).tobytes()) for e in art.weights],
        code=[(_strip(c), art.section(c).tobytes(), art.runtime_bytes(c)) for c in art.code],
    )  # fmt: skip
    return out


def _with_header(src: Path, dst: Path, header: Any = None, text: bytes | None = None) -> Path:
    """A copy of `src` with another header (same data start; the header checksum is valid)."""
    raw = bytearray(src.read_bytes())
    _, _, _, hlen, data, _ = artifact.PREAMBLE.unpack_from(raw)
    if text is None:
        text = json.dumps(header, separators=(",", ":")).encode()
    if 64 + len(text) > data:
        pytest.skip("mutated header does not fit")  # never with the fixture's slack
    raw[16:24] = struct.pack("<Q", len(text))
    raw[32:64] = hashlib.sha256(text).digest()
    raw[64:data] = text + b" " * (data - 64 - len(text))
    dst.write_bytes(bytes(raw))
    return dst


def _header(p: Path) -> dict[str, Any]:
    return copy.deepcopy(artifact.read(p, verify=False).header)


def _set(h: dict[str, Any], path: str, value: Any) -> None:
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    for k in keys[:-1]:
        h = h[k]
    if value is _DELETE:
        del h[keys[-1]]
    else:
        h[keys[-1]] = value


_DELETE = object()
BIG = "a" * 100_000
CASES = [
    ("weights.0.shape", "abc", "header field 'weights[0].shape': expected a list"),
    ("weights.0.offset", 1.5, "header field 'weights[0].offset': expected an integer"),
    ("weights.0.nbytes", -5, "out of range"),
    ("weights.0.nbytes", 2**70, "out of range"),
    ("module.offset", "12", "'module.offset': expected an integer"),
    ("module.entry", BIG, "string of 100000 characters"),
    ("weights.0.name", BIG, "'weights[0].name': string of 100000"),
    ("meta", _DELETE, "'meta': missing"),
    ("module.sha256", _DELETE, "'module.sha256': missing"),
    ("weights", {"a": 1}, "'weights': expected a list"),
    ("memory", "turbo", "'turbo' is not one of compact, duplex, runtime"),
    ("code.0.signature.args.0.kind", "weird", "is not one of input"),
    ("code.0.abi", True, "expected an integer, got a boolean"),
    ("weights.0.live", "yes", "expected true or false"),
    ("report", {"deep": [[[[1]]]]}, "'report.deep[0]': expected a scalar, got a list"),
    ("meta.inputs.0.shape", [8, -2], "out of range [-1,"),
]


@pytest.mark.parametrize(("field", "value", "msg"), CASES, ids=[c[0] for c in CASES])
def test_bad_field_names_field_and_offset(
    base: Path, tmp_path: Path, field: str, value: Any, msg: str
) -> None:
    h = _header(base)
    h.pop("pad")
    _set(h, field, value)
    bad = _with_header(base, tmp_path / "bad.rlx", h)
    with pytest.raises(ArtifactError) as e:
        rlx.load(bad)
    text = str(e.value)
    assert msg in text and str(bad) in text and ": byte " in text, text
    at = int(text.split(": byte ")[1].split(":")[0])
    hlen = struct.unpack_from("<Q", bad.read_bytes(), 16)[0]
    assert 64 <= at < 64 + hlen


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        (b'{"format": Infinity}', "Infinity is not allowed"),
        (b'{"a": NaN}', "NaN is not allowed"),
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b"[" * 5000 + b"]" * 5000, "nested 33 levels deep"),
        (b'{"x": "\xff"}', "not UTF-8"),
        (b'{"x": ', "unreadable JSON"),
        (b"[]", "expected a JSON object"),
    ],
)
def test_bad_json(base: Path, tmp_path: Path, text: bytes, msg: str) -> None:
    bad = _with_header(base, tmp_path / "j.rlx", text=text)
    with pytest.raises(ArtifactError, match=msg.replace("[", r"\[")):
        artifact.read(bad)


def test_module_section_is_never_a_path(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "other.mlir"
    secret.write_text(MLP.read_text().replace("w1", "SECRET_NAME"))
    art = artifact.read(base)
    header = {k: v for k, v in art.header.items() if k not in ("code", "weights")}
    out = tmp_path / "path.rlx"
    blobs = [(_strip(e), art.section(e).tobytes()) for e in art.weights]
    artifact.write(out, header, str(secret), blobs)  # module section = a path (no code)
    for allow in (True, False):
        with pytest.raises(ArtifactError, match="module section is not MLIR text") as e:
            rlx.load(out, allow_native=allow)
        assert "SECRET_NAME" not in str(e.value)


def _alarm(seconds: int) -> Iterator[None]:
    old = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("hung")))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_fifo_and_devices_refused_without_opening(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.rlx"
    os.mkfifo(fifo)
    gen = _alarm(10)
    next(gen)
    try:
        for p, kind in (
            (fifo, "a FIFO"),
            (Path("/dev/null"), "a character device"),
            (tmp_path, "a directory"),
        ):
            with pytest.raises(ArtifactError, match=f"is {kind}, not a regular file"):
                rlx.load(p)
            with pytest.raises(ArtifactError, match="not a regular file"):
                rlx.bake.inspect(p)
    finally:
        next(gen, None)
    link = tmp_path / "link.rlx"
    link.symlink_to("/dev/zero")
    with pytest.raises(ArtifactError, match="character device"):
        rlx.load(link)


# ----------------------------------------------------------------------------- fuzzer

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
    max_leaves=8,
)  # fmt: skip


def _paths(h: Any, prefix: str = "") -> list[str]:
    out = []
    if isinstance(h, dict):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in h.items() if k != "pad"]
    elif isinstance(h, list):
        items = [(str(i), v) for i, v in enumerate(h[:3])]
    else:
        return out
    for k, v in items:
        p = f"{prefix}.{k}" if prefix else k
        out.append(p)
        out += _paths(v, p)
    return out


@pytest.fixture(scope="module")
def fuzz_base(base: Path) -> tuple[Path, dict[str, Any], list[str]]:
    h = _header(base)
    return base, h, _paths(h)


@seed(20241201)
@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(data=st.data())
def test_fuzz_header(
    fuzz_base: tuple[Path, dict[str, Any], list[str]], tmp_path: Path, data: st.DataObject
) -> None:
    src, header, paths = fuzz_base
    h = copy.deepcopy(header)
    for _ in range(data.draw(st.integers(1, 3))):
        field = data.draw(st.sampled_from(paths))
        try:
            _set(h, field, data.draw(st.one_of(_JSON, st.just(_DELETE))))
        except (KeyError, IndexError, TypeError):
            continue  # the path went away with an earlier mutation
    h.pop("pad", None)
    bad = _with_header(src, tmp_path / "fuzz.rlx", h)
    try:
        art = artifact.read(bad)
    except ArtifactError as e:
        assert str(bad) in str(e)
        return
    str(rlx.bake.inspect(bad))  # a header that reads also prints
    assert art.module_text.startswith("builtin.module") or "{" not in art.module_text
