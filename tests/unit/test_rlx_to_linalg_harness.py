"""Test harness (no tests of its own) for convert-rlx-to-linalg + plan-memory: lower a tensor-level rlx module to
LLVM, JIT it, call `@main` with ctypes following the ABI, and compare with the NumPy
reference interpreter."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, get_all_dialects
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.transforms.convert_linalg_to_loops import ConvertLinalgToLoopsPass
from xdsl.transforms.lower_affine import LowerAffinePass

from rlx.dialects.rlx import Rlx
from rlx.interpreter import numpy_dtype, run
from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.lowering.plan_memory import PlanMemoryPass
from rlx.lowering.rlx_to_linalg import ConvertRlxToLinalgPass
from rlx.runtime.jit import JitModule, to_llvm_ir

OPT_LEVEL = 1
"""LLVM optimisation level of the test JIT (O1 keeps compile time low; O3 is tested by bench)."""

TOL = {"f32": (1e-5, 1e-6), "f64": (1e-12, 1e-12), "f16": (1e-2, 1e-2), "bf16": (2e-2, 2e-2)}


def ctx() -> Context:
    c = Context()
    for name, factory in get_all_dialects().items():
        c.register_dialect(name, factory)
    c.load_dialect(Rlx)
    return c


def parse(text: str) -> tuple[Context, ModuleOp]:
    c = ctx()
    return c, Parser(c, text).parse_module()


def llvm_passes() -> list[ModulePass]:
    """LOOPS_TO_LLVM, with lower-affine after convert-linalg-to-loops if it is missing
    (broadcast indexing maps have constant results, which become affine.apply)."""
    passes = list(LOOPS_TO_LLVM)
    if not any(p.name == "lower-affine" for p in passes):
        i = next(i for i, p in enumerate(passes) if isinstance(p, ConvertLinalgToLoopsPass))
        passes.insert(i + 1, LowerAffinePass())
    return passes


def lower(text: str, plan: bool = True, seed: int = 42) -> tuple[ModuleOp, Context]:
    c, m = parse(text)
    return lower_parsed(c, m, plan, seed), c


def lower_parsed(c: Context, m: ModuleOp, plan: bool = True, seed: int = 42) -> ModuleOp:
    """`lower` of an already parsed module, in place."""
    ConvertRlxToLinalgPass(rng_seed=seed).apply(c, m)
    m.verify()
    if plan:
        PlanMemoryPass().apply(c, m)
        m.verify()
    return m


def aligned(a: np.ndarray | None, shape: Sequence[int] = (), dtype: object = None) -> np.ndarray:
    """A 64-byte aligned C-contiguous copy of `a` (or an empty array of shape/dtype)."""
    dt = np.dtype(dtype if a is None else a.dtype)
    shp = tuple(shape if a is None else a.shape)
    n = int(np.prod(shp, dtype=np.int64)) * dt.itemsize
    raw = np.empty(n + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    out = raw[off : off + n].view(dt).reshape(shp)
    if a is not None:
        out[...] = a
    return out


class Compiled:
    """A JIT-compiled @main plus what is needed to call it (ABI from the arg attributes).

    `inspect`, if given, is called with the lowered module (after convert-rlx-to-linalg
    and plan-memory, before the LLVM passes): a test that checks what the lowering chose
    and also runs the code lowers once, not twice."""

    def __init__(
        self,
        text: str,
        plan: bool = True,
        seed: int = 42,
        inspect: Callable[[ModuleOp], None] | None = None,
    ) -> None:
        c, m = parse(text)
        main = next(o for o in m.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main")
        self.out_types = [t for t in main.function_type.outputs.data]
        self.in_types = [t for t in main.function_type.inputs.data]
        lower_parsed(c, m, plan, seed)
        if inspect is not None:
            inspect(m)
        f = next(o for o in m.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main")
        self.arg_attrs = [
            (d.data["rlx.kind"].data, d.data["rlx.name"].data) for d in f.arg_attrs.data
        ]  # type: ignore[union-attr]
        self.param_types = {}
        self.arg_types = list(f.function_type.inputs.data)
        """The lowered memref type of each argument: what a buffer for it must hold."""
        for (kind, name), t in zip(self.arg_attrs, self.arg_types, strict=True):
            if kind == "param":
                self.param_types[name] = t
        sites = f.attributes.get("rlx.error_sites")
        self.error_sites = [s.data for s in sites.data] if sites is not None else []  # type: ignore[attr-defined]
        arena = f.attributes.get("rlx.arena_bytes")
        self.arena_bytes = arena.value.data if arena is not None else 0  # type: ignore[attr-defined]
        self.unplanned_bytes = f.attributes["rlx.unplanned_bytes"].value.data if plan else 0  # type: ignore[attr-defined]
        for p in llvm_passes():
            p.apply(c, m)
        self.jit = JitModule(to_llvm_ir(m), opt_level=OPT_LEVEL)
        n = len(self.arg_attrs)
        self.fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n))(self.jit.address("main"))

    def __call__(
        self, inputs: Sequence[np.ndarray], params: Mapping[str, np.ndarray] | None = None
    ) -> list[np.ndarray]:
        params = params or {}
        ins = [
            aligned(np.asarray(x, dtype=numpy_dtype(t)))
            for x, t in zip(inputs, self.in_types, strict=True)
        ]
        outs = [
            aligned(None, t.get_shape(), numpy_dtype(t))
            for t in self.out_types
            if isinstance(t, TensorType)
        ]
        args: list[int] = []
        it_in, it_out = iter(ins), iter(outs)
        keep = []
        status: np.ndarray | None = None
        for kind, name in self.arg_attrs:
            if kind == "input":
                args.append(next(it_in).ctypes.data)
            elif kind == "output":
                args.append(next(it_out).ctypes.data)
            elif kind == "param":
                t = self.param_types[name]
                p = aligned(
                    np.asarray(params[name], dtype=numpy_dtype(t.element_type)).reshape(
                        t.get_shape()
                    )
                )
                keep.append(p)
                args.append(p.ctypes.data)
            elif kind == "status":
                # the status record (memref<5xi64>): the entry writes word 4 before every
                # checked call, so it must be a zeroed buffer of its own type (a 1-byte
                # "arena" here was a heap overflow, docs/fuzzing.md)
                status = aligned(None, t_shape(self.arg_types[len(args)]), np.int64)
                status[...] = 0
                keep.append(status)
                args.append(status.ctypes.data)
            else:
                arena = aligned(None, (max(self.arena_bytes, 1),), np.uint8)
                keep.append(arena)
                args.append(arena.ctypes.data)
        self.fn(*args)
        if status is not None and status[0]:
            from rlx import errors

            code, site, value, bound = (int(v) for v in status[:4])
            where = self.error_sites[site] if 0 <= site < len(self.error_sites) else f"#{site}"
            raise errors.status_error(where, code, value, bound)
        return outs


def t_shape(memref_type: object) -> tuple[int, ...]:
    """The static shape of a lowered argument's memref type."""
    return tuple(memref_type.get_shape())  # type: ignore[attr-defined]


_CACHE: dict[tuple[str, bool, int], Compiled] = {}


def compile_text(text: str, plan: bool = True, seed: int = 42) -> Compiled:
    key = (text, plan, seed)
    if key not in _CACHE:
        _CACHE[key] = Compiled(text, plan, seed)
    return _CACHE[key]


def compile_and_run(
    module_text: str,
    inputs: Sequence[np.ndarray],
    params: Mapping[str, np.ndarray] | None = None,
    plan: bool = True,
    rng_seed: int = 42,
) -> list[np.ndarray]:
    """Lower (convert-rlx-to-linalg, plan-memory, loops -> LLVM), JIT and run @main."""
    return compile_text(module_text, plan, rng_seed)(inputs, params)


Tol = float | None | Sequence[float | None]


def _pick(v: Tol, i: int) -> float | None:
    return v[i] if isinstance(v, list | tuple) else v  # type: ignore[return-value]


def check(text: str, inputs: Sequence[np.ndarray], params: Mapping[str, np.ndarray] | None = None,
          rtol: Tol = None, atol: Tol = None, scale_atol: bool = False,
          names: Sequence[str] | None = None, rng_seed: int = 42) -> list[np.ndarray]:  # fmt: skip
    """Compare the compiled @main with the reference interpreter (tolerances may be given
    per output; `scale_atol` multiplies atol by the largest reference magnitude)."""
    ref = run(text, list(inputs), params or {}, rng_seed=rng_seed)
    got = compile_and_run(text, inputs, params, rng_seed=rng_seed)
    for i, (r, g) in enumerate(zip(ref, got, strict=True)):
        what = f"output {i}" + (f" ({names[i]})" if names else "")
        assert g.shape == r.shape and g.dtype == r.dtype, (what, g.shape, r.shape, g.dtype, r.dtype)
        if r.dtype.kind in "biu":
            np.testing.assert_array_equal(g, r, err_msg=what)
            continue
        key = {2: "f16", 4: "f32", 8: "f64"}.get(r.dtype.itemsize, "f32")
        if r.dtype.name == "bfloat16":
            key = "bf16"
        rt, at = TOL[key]
        rt_i, at_i = _pick(rtol, i), _pick(atol, i)
        rt, at = rt_i if rt_i is not None else rt, at_i if at_i is not None else at
        rf, gf = r.astype(np.float64), g.astype(np.float64)
        if scale_atol and rf.size:
            at = at * max(1.0, float(np.nanmax(np.abs(rf))))
        np.testing.assert_allclose(gf, rf, rtol=rt, atol=at, err_msg=what)
    return got


def rand(
    shape: Sequence[int],
    dtype: str = "f32",
    seed: int = 0,
    lo: float | None = None,
    hi: float | None = None,
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = numpy_dtype(parse_type(dtype))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    x = (
        rng.uniform(lo, hi, size=shape)
        if lo is not None and hi is not None
        else rng.standard_normal(shape)
    )
    return x.astype(np.float32).astype(dt)


def parse_type(s: str) -> object:
    c = ctx()
    return Parser(c, s).parse_type()


def t(shape: Sequence[int], e: str = "f32") -> str:
    """`tensor<...>` text."""
    return f"tensor<{'x'.join(map(str, shape))}{'x' if len(shape) else ''}{e}>"


def one_op(op: str, ins: list[str], out: str, attrs: str = "") -> str:
    """A module whose @main applies one op to its arguments."""
    return multi_op([(op, ins, out, attrs)])


def multi_op(cases: Sequence[tuple[str, list[str], str, str]]) -> str:
    """A module whose @main applies each (op, input types, result type, attrs) case to its
    own arguments and returns every result (one compile for many cases)."""
    args: list[str] = []
    lines: list[str] = []
    outs: list[str] = []
    for c, (op, ins, out, attrs) in enumerate(cases):
        names = []
        for s in ins:
            names.append(f"%a{len(args)}")
            args.append(f"%a{len(args)}: {s}")
        lines.append(f"  %r{c} = {op} {', '.join(names)} {attrs} : ({', '.join(ins)}) -> {out}")
        outs.append(out)
    rets = ", ".join(f"%r{c}" for c in range(len(cases)))
    return (
        f"func.func @main({', '.join(args)}) -> ({', '.join(outs)}) {{\n"
        + "\n".join(lines)
        + f"\n  func.return {rets} : {', '.join(outs)}\n}}\n"
    )
