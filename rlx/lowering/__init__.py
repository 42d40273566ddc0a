"""Registry of lowering passes (rlx -> linalg -> loops -> llvm): name -> lazy factory."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_lowering_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every lowering pass, keyed by its command-line name."""

    def get_convert_arith_to_llvm() -> type[ModulePass]:
        from rlx.lowering.convert_arith_to_llvm import ConvertArithToLLVMPass

        return ConvertArithToLLVMPass

    def get_convert_cf_to_llvm() -> type[ModulePass]:
        from rlx.lowering.convert_cf_to_llvm import ConvertCfToLLVMPass

        return ConvertCfToLLVMPass

    def get_convert_func_to_llvm() -> type[ModulePass]:
        from rlx.lowering.convert_func_to_llvm import ConvertFuncToLLVMPass

        return ConvertFuncToLLVMPass

    def get_convert_math_to_llvm() -> type[ModulePass]:
        from rlx.lowering.convert_math_to_llvm import ConvertMathToLLVMPass

        return ConvertMathToLLVMPass

    def get_convert_memref_to_llvm() -> type[ModulePass]:
        from rlx.lowering.convert_memref_to_llvm import ConvertMemRefToLLVMPass

        return ConvertMemRefToLLVMPass

    def get_convert_to_llvm() -> type[ModulePass]:
        from rlx.lowering.convert_to_llvm import ConvertToLLVMPass

        return ConvertToLLVMPass

    def get_convert_rlx_to_linalg() -> type[ModulePass]:
        from rlx.lowering.convert_rlx_to_linalg import ConvertRlxToLinalgPass

        return ConvertRlxToLinalgPass

    def get_plan_memory() -> type[ModulePass]:
        from rlx.lowering.plan_memory import PlanMemoryPass

        return PlanMemoryPass

    return {
        "convert-arith-to-llvm": get_convert_arith_to_llvm,
        "convert-cf-to-llvm": get_convert_cf_to_llvm,
        "convert-func-to-llvm": get_convert_func_to_llvm,
        "convert-math-to-llvm": get_convert_math_to_llvm,
        "convert-memref-to-llvm": get_convert_memref_to_llvm,
        "convert-rlx-to-linalg": get_convert_rlx_to_linalg,
        "convert-to-llvm": get_convert_to_llvm,
        "plan-memory": get_plan_memory,
    }
