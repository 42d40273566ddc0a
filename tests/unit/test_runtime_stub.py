"""STUB BACKEND for the runtime tests, and the `backend` fixture (stub + real).

STUB: the lowering (convert-rlx-to-linalg, plan-memory, LOOPS_TO_LLVM) and the JIT
(rlx.runtime.jit) are written concurrently by others. Until they land, the runtime is
tested against this stand-in, which honours the same ABI: `StubLower` rewrites @f into the
ABI function (memref inputs, params, outputs, arena; `rlx.kind`/`rlx.name` arg attrs) and
keeps the original as @__ref_f; `StubJit` turns the ABI function into a ctypes callback
that runs the reference interpreter on the pointed-to buffers (staging outputs through the
arena, so a shared arena between threads would corrupt results). The `real` backend
parameter runs the same tests on the real pipeline and skips while it is missing.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    TensorType,
    i8,
)
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from rlx.runtime import cache, compiler, pipeline

KIND, NAME = "rlx.kind", "rlx.name"


def _nbytes(t: Any) -> int:
    from rlx.dtypes import numpy_dtype

    return int(np.prod(t.get_shape(), dtype=np.int64)) * numpy_dtype(t.element_type).itemsize


@dataclass(frozen=True)
class StubLower(ModulePass):
    """STUB of convert-rlx-to-linalg: the ABI signature with an empty body."""

    name = "convert-rlx-to-linalg"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for f in [
            f
            for f in op.ops
            if isinstance(f, func.FuncOp) and not f.sym_name.data.startswith("__ref_")
        ]:
            name = f.sym_name.data
            f.sym_name = StringAttr("__ref_" + name)
            names = [f"arg{i}" for i in range(len(f.args))]
            if f.arg_attrs is not None:
                for i, d in enumerate(f.arg_attrs.data):
                    if isinstance(d.data.get(NAME), StringAttr):
                        names[i] = d.data[NAME].data
            params: dict[str, Any] = {}
            for o in f.walk():
                if o.name == "rlx.param" and o.attributes["name"].data not in params:
                    params[o.attributes["name"].data] = o.results[0].type
            outs = list(f.function_type.outputs.data)
            arena = sum(_nbytes(t) for t in outs)
            sig: list[tuple[str, str, Any]] = [
                *(("input", n, a.type) for n, a in zip(names, f.args, strict=True)),
                *(("param", n, t) for n, t in params.items()),
                *(("output", f"out{i}", t) for i, t in enumerate(outs)),
            ]
            types = [
                MemRefType(t.element_type, t.get_shape())
                for _, _, t in sig
                if isinstance(t, TensorType)
            ]
            types.append(MemRefType(i8, [arena]))
            attrs = [DictionaryAttr({KIND: StringAttr(k), NAME: StringAttr(n)}) for k, n, _ in sig]
            attrs.append(DictionaryAttr({KIND: StringAttr("arena"), NAME: StringAttr("arena")}))
            block = Block(arg_types=types)
            block.add_op(func.ReturnOp())
            new = func.FuncOp(name, FunctionType.from_lists(types, []), Region(block))
            new.arg_attrs = ArrayAttr(attrs)
            new.attributes["rlx.arena_bytes"] = IntegerAttr(arena, 64)
            new.attributes["rlx.unplanned_bytes"] = IntegerAttr(2 * arena, 64)
            op.body.block.add_op(new)


@dataclass(frozen=True)
class StubPlanMemory(ModulePass):
    """STUB of plan-memory: rounds the arena attribute up to `alignment`."""

    name = "plan-memory"
    alignment: int = 64

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp) and "rlx.arena_bytes" in f.attributes:
                n = f.attributes["rlx.arena_bytes"].value.data
                f.attributes["rlx.arena_bytes"] = IntegerAttr(
                    -(-n // self.alignment) * self.alignment, 64
                )


class StubJit:
    """STUB of rlx.runtime.jit.JitModule: `ir_text` is the MLIR text of the ABI module."""

    instances = 0

    def __init__(self, ir_text: str) -> None:
        from rlx.runtime.reference import run

        StubJit.instances += 1
        self.llvm_ir = ir_text
        self.asm = "; stub asm"
        self.module = compiler.load_module(ir_text, compiler.make_context())[0]
        self._cbs: dict[str, Any] = {}
        self._run = run

    def address(self, name: str) -> int:
        sig = compiler.extract_signature(self.module, name, 64, {})
        specs = sig.args

        def body(*ptrs: int) -> None:
            arrays = {}
            for s, p in zip(specs, ptrs, strict=True):
                buf = (ctypes.c_ubyte * max(s.nbytes, 1)).from_address(p)
                arrays[s.kind, s.name] = np.frombuffer(
                    buf, s.np_dtype, count=int(np.prod(s.shape))
                ).reshape(s.shape)
            ins = [v for (k, _), v in arrays.items() if k == "input"]
            params = {n: v for (k, n), v in arrays.items() if k == "param"}
            res = self._run(self.module, ins, params, entry="__ref_" + name)
            arena = arrays["arena", "arena"].reshape(-1)
            outs = [v for (k, _), v in arrays.items() if k == "output"]
            off = 0
            for r in res:  # stage through the (per-thread) arena
                arena[off : off + r.nbytes] = r.reshape(-1).view(np.uint8)
                off += r.nbytes
            time.sleep(0.002)
            off = 0
            for o, r in zip(outs, res, strict=True):
                o[...] = arena[off : off + r.nbytes].view(r.dtype).reshape(r.shape)
                off += r.nbytes

        cb = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(specs)))(body)
        self._cbs[name] = cb
        return ctypes.cast(cb, ctypes.c_void_p).value or 0


def install_stub(monkeypatch: pytest.MonkeyPatch) -> None:
    real_registry = pipeline.pass_registry

    def registry() -> dict[str, Any]:
        reg = dict(real_registry())
        reg["convert-rlx-to-linalg"] = lambda: StubLower
        reg["plan-memory"] = lambda: StubPlanMemory
        return reg

    monkeypatch.setattr(pipeline, "pass_registry", registry)
    monkeypatch.setattr(pipeline, "llvm_pipeline", lambda: ())
    monkeypatch.setattr(compiler, "jit_api", lambda: (str, StubJit))
    monkeypatch.setattr(compiler, "object_api", lambda: None)
    monkeypatch.setattr(compiler, "BACKEND", "stub")


def real_backend_missing() -> str | None:
    """Why the real lowering/JIT cannot run yet (None when it can)."""
    reg = pipeline.pass_registry()
    for n in ("convert-rlx-to-linalg", "plan-memory"):
        if n not in reg:
            return f"lowering pass '{n}' not registered yet"
    try:
        pipeline.llvm_pipeline()
        compiler.jit_api()
    except ImportError as e:
        return f"LLVM half not available yet: {e}"
    return None


def fresh_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path / "rlx-cache"))
    monkeypatch.delenv("RLX_CACHE", raising=False)
    monkeypatch.delenv("RLX_VERBOSE", raising=False)
    cache.CACHE.clear_memory()
    cache.CACHE.stats = cache.CacheStats()


@pytest.fixture(name="backend", params=["stub", "real"])
def backend_fixture(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> str:
    """Run a test on the stub backend and on the real one (skipped while it is missing)."""
    fresh_cache(monkeypatch, tmp_path)
    if request.param == "stub":
        install_stub(monkeypatch)
    elif (why := real_backend_missing()) is not None:
        pytest.skip(why)
    return request.param


@pytest.fixture(name="stub")
def stub_fixture(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> str:
    """The stub backend only (tests of runtime behaviour independent of codegen)."""
    fresh_cache(monkeypatch, tmp_path)
    install_stub(monkeypatch)
    return "stub"


def test_stub_abi_roundtrip(stub: str) -> None:
    import rlx

    g = rlx.compile(
        'func.func @main(%x: tensor<2x3xf32> {rlx.name = "x"}) -> tensor<2x3xf32> {\n'
        '  %w = rlx.param "w" : tensor<3xf32>\n'
        "  %y = rlx.add %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
        "  func.return %y : tensor<2x3xf32>\n}\n"
    )
    assert [n for n, _, _ in g.inputs] == ["x"] and list(g.params) == ["w"]
    assert g.outputs == [("out0", (2, 3), np.dtype(np.float32))]
    assert g.arena_bytes == 64 and g.unplanned_bytes == 48
    g.set_param("w", np.arange(3, dtype=np.float32))
    (y,) = g.run(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(y, np.ones((2, 3)) + np.arange(3))
