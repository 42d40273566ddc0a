"""Named pass pipelines of the lowering (as ``tuple[ModulePass, ...]``)."""

from xdsl.passes import ModulePass
from xdsl.transforms.convert_linalg_to_loops import ConvertLinalgToLoopsPass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from rlx.lowering.convert_to_llvm import ConvertToLLVMPass

LOOPS_TO_LLVM: tuple[ModulePass, ...] = (
    ConvertLinalgToLoopsPass(),
    ConvertScfToCf(),
    ConvertToLLVMPass(),
    ReconcileUnrealizedCastsPass(),
)
"""Everything after rlx -> linalg: memref linalg ops -> loops -> cf -> llvm dialect."""
