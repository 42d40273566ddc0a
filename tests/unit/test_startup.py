"""rlx-opt start-up stays lazy: what a small run imports, and the lazy op machinery.

No timing assertions: the checks are on `sys.modules` in a fresh interpreter and on the
bookkeeping that makes laziness safe (the op table, lazily parsed assembly formats,
`LazyOpContext`). See docs/compile-time.md, "rlx-opt start-up".
"""

from __future__ import annotations

import gc
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = """\
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "rlx.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""

OP_SUBMODULES = (
    "compute",
    "control",
    "elementwise",
    "fused",
    "gemm",
    "layout",
    "leaves",
    "quant",
    "shape",
    "window",
)


def _loaded_after(code: str) -> set[str]:
    """Module names in `sys.modules` after running `code` in a fresh interpreter."""
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    return set(out.split())


# --------------------------------------------------------------------------------------
# What a run imports
# --------------------------------------------------------------------------------------


def test_import_driver_module_is_light() -> None:
    loaded = _loaded_after("import rlx.tools.rlx_opt")
    heavy = {"xdsl.ir", "xdsl.xdsl_opt_main", "xdsl.dialects.builtin", "rlx.tools.opt_main"}
    assert not heavy & loaded


def test_small_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    source = tmp_path / "small.mlir"
    source.write_text(SMALL)
    loaded = _loaded_after(
        "import contextlib, io\n"
        "from rlx.tools.rlx_opt import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main([{str(source)!r}, '--dce']) == 0\n"
    )
    assert {"rlx.dialects.rlx.elementwise", "rlx.transforms.dce"} <= loaded
    unused_ops = {f"rlx.dialects.rlx.{m}" for m in ("compute", "control", "fused", "quant")}
    assert not unused_ops & loaded, "ops of unused rlx submodules were defined"
    unused = {
        "numpy",
        "llvmlite",
        "rlx.runtime",
        "rlx.transforms.fusion",
        "rlx.transforms.canonicalize",
        "rlx.lowering.lower_to_llvm",
        "rlx.dialects.rlx_rt",
        "xdsl.dialects.arith",
        "xdsl.dialects.llvm",
        "xdsl.dialects.linalg",
    }
    assert not unused & loaded


def test_ml_dtypes_is_imported_on_first_use_only() -> None:
    """ml_dtypes costs ~0.7 s of CPU to import: the interpreter, the lowering and a run
    that only names element types (precision) do not import it; a bf16 dtype does."""
    loaded = _loaded_after(
        "import rlx.interpreter, rlx.lowering.lower_to_llvm, rlx.lowering.llvm_ir\n"
        "from rlx import dtypes\n"
        "import numpy as np\n"
        "assert dtypes.element_type('bf16') is not None\n"
        "assert dtypes.element_type(np.float32) == dtypes.element_type('f32')\n"
    )
    assert "ml_dtypes" not in loaded
    loaded = _loaded_after(
        "from rlx import dtypes\nassert dtypes.numpy_dtype('bf16').name == 'bfloat16'\n"
    )
    assert "ml_dtypes" in loaded


def test_op_submodule_import_does_not_define_the_whole_dialect() -> None:
    loaded = _loaded_after("import rlx.dialects.rlx.leaves")
    others = {f"rlx.dialects.rlx.{m}" for m in OP_SUBMODULES if m != "leaves"}
    assert not others & loaded


# --------------------------------------------------------------------------------------
# The lazy rlx package and its op table
# --------------------------------------------------------------------------------------


def _defined_rlx_ops() -> dict[str, type]:
    """Every IRDL op class defined in the rlx op submodules, by op name."""
    import importlib

    found: dict[str, type] = {}
    for module_name in OP_SUBMODULES:
        module = importlib.import_module(f"rlx.dialects.rlx.{module_name}")
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and obj.__module__ == module.__name__
                and isinstance(getattr(obj, "name", None), str)
                and obj.name.startswith("rlx.")
                and getattr(obj, "get_irdl_definition", None) is not None
            ):
                found[obj.name] = obj
    return found


def test_op_table_matches_the_definitions() -> None:
    import rlx.dialects.rlx as rlx_pkg

    defined = _defined_rlx_ops()
    assert set(rlx_pkg.OP_CLASSES) == set(defined), "update OP_CLASSES in rlx/dialects/rlx"
    for name, target in rlx_pkg.OP_CLASSES.items():
        module, cls_name = target.split(":")
        cls = defined[name]
        assert cls.__module__ == f"rlx.dialects.rlx.{module}" and cls.__name__ == cls_name
    assert [op.name for op in rlx_pkg.RLX_OPS] == list(rlx_pkg.OP_CLASSES)
    assert list(rlx_pkg.Rlx.operations) == list(rlx_pkg.RLX_OPS)
    assert rlx_pkg.OPS_BY_NAME == {op.name: op for op in rlx_pkg.RLX_OPS}


def test_package_attributes_resolve_lazily() -> None:
    import rlx.dialects.rlx as rlx_pkg
    from rlx.dialects.rlx.elementwise import UNARY_OPS, ReluOp

    assert rlx_pkg.ReluOp is ReluOp
    assert rlx_pkg.UNARY_OPS is UNARY_OPS
    assert rlx_pkg.compute.__name__ == "rlx.dialects.rlx.compute"
    with pytest.raises(AttributeError):
        _ = rlx_pkg.NoSuchOp
    loaders = rlx_pkg.op_loaders()
    assert loaders["rlx.relu"]() is ReluOp


def test_assembly_formats_are_valid_and_not_parsed_eagerly() -> None:
    from rlx.dialects.rlx import RLX_OPS

    for op in RLX_OPS:
        # xDSL's `assembly_format` would be parsed when the class is defined.
        assert op.get_irdl_definition().assembly_format is None, op.name
        program = op.format_program()  # builds (and validates) ASSEMBLY_FORMAT
        assert (program is None) == (op.ASSEMBLY_FORMAT is None), op.name


# --------------------------------------------------------------------------------------
# LazyOpContext
# --------------------------------------------------------------------------------------


def _lazy_context():
    from rlx.dialects import get_all_dialects
    from rlx.dialects.rlx import op_loaders
    from rlx.tools.lazy_context import LazyOpContext

    ctx = LazyOpContext()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    ctx.register_lazy_ops("rlx", op_loaders())
    return ctx


def test_lazy_context_resolves_ops_without_loading_the_dialect() -> None:
    from xdsl.parser import Parser

    from rlx.dialects.rlx.elementwise import ReluOp

    ctx = _lazy_context()
    module = Parser(ctx, SMALL).parse_module()
    module.verify()
    assert any(isinstance(op, ReluOp) for op in module.walk())
    assert "rlx" not in {d.name for d in ctx.loaded_dialects}


def test_lazy_context_then_full_dialect_load_is_consistent() -> None:
    from xdsl.parser import Parser

    from rlx.dialects.rlx import Rlx
    from rlx.dialects.rlx.compute import MatmulOp
    from rlx.dialects.rlx.elementwise import ReluOp

    ctx = _lazy_context()
    assert ctx.get_optional_op("rlx.relu") is ReluOp
    assert ctx.get_dialect("rlx") is Rlx  # loads every op; must not collide
    assert ctx.get_optional_op("rlx.relu") is ReluOp
    assert ctx.clone().get_optional_op("rlx.relu") is ReluOp
    fresh = _lazy_context().clone()  # a plain Context: loads the dialect as usual
    assert fresh.get_optional_op("rlx.matmul") is MatmulOp
    assert fresh.get_optional_op("rlx.no_such_op") is None
    with pytest.raises(Exception, match="not registered"):
        Parser(_lazy_context(), '"rlx.no_such_op"() : () -> ()').parse_module()


def test_lazy_context_rejects_foreign_ops() -> None:
    ctx = _lazy_context()
    with pytest.raises(ValueError):
        ctx.register_lazy_ops("rlx", {"func.relu": lambda: None})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        ctx.register_lazy_ops("no_such_dialect", {})


# --------------------------------------------------------------------------------------
# GC tuning is for the process entry point only
# --------------------------------------------------------------------------------------


def test_in_process_main_leaves_the_gc_alone(tmp_path: Path, capsys) -> None:
    from rlx.tools.rlx_opt import main

    source = tmp_path / "small.mlir"
    source.write_text(SMALL)
    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    assert main([str(source)]) == 0
    assert "rlx.relu" in capsys.readouterr().out
    assert (gc.isenabled(), gc.get_freeze_count()) == (enabled, frozen)


def test_process_entry_point_runs(tmp_path: Path) -> None:
    """`main()` as the console script calls it (argv from sys.argv): GC paused/frozen."""
    source = tmp_path / "small.mlir"
    source.write_text(SMALL)
    code = (
        "import gc, sys\n"
        "from rlx.tools.rlx_opt import main\n"
        f"sys.argv = ['rlx-opt', {str(source)!r}, '--dce']\n"
        "rc = main()\n"
        "assert gc.isenabled() and gc.get_freeze_count() > 0\n"
        "sys.exit(rc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "rlx.relu %x" in result.stdout
