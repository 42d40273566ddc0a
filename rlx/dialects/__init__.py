"""Dialect registry: name -> lazy factory, as xDSL's own `get_all_dialects`.

The factories import their dialect on first use (start-up laziness: `rlx-opt` loads only
the dialects a file uses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """The dialects RLX tools load: rlx plus the upstream dialects its pipeline uses."""
    from xdsl.dialects import get_all_dialects as upstream

    def get_rlx() -> Dialect:
        from rlx.dialects.rlx import Rlx

        return Rlx

    def get_rlx_rt() -> Dialect:
        from rlx.dialects.rlx_rt import RlxRt

        return RlxRt

    dialects = dict(upstream())
    dialects["rlx"] = get_rlx
    dialects["rlx_rt"] = get_rlx_rt
    return dialects
