"""Dialect registry: name -> lazy factory, as xDSL's own `get_all_dialects`."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """The dialects RLX tools load: rlx plus the upstream dialects its pipeline uses."""
    from xdsl.dialects import get_all_dialects as upstream

    def get_rlx() -> Dialect:
        from rlx.dialects.rlx import Rlx

        return Rlx

    dialects = dict(upstream())
    dialects["rlx"] = get_rlx
    return dialects
