"""Registry of lowering passes (rlx -> linalg -> loops -> llvm): name -> lazy factory."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_lowering_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every lowering pass, keyed by its command-line name."""
    return {}
