"""Registry of RLX graph-level passes: pass name -> lazy factory returning the pass class."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every rlx transform pass, keyed by its command-line name."""
    return {}
