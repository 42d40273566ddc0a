"""Test-session setup: the on-disk compile cache goes to a temporary directory, so tests
never read or pollute the user's cache (~/.cache/rlx); `xdist_group` marks work again
under pytest >= 9.2 (see `pytest_collection_modifyitems`)."""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_compile_cache() -> object:
    with tempfile.TemporaryDirectory(prefix="rlx-test-cache-") as d:
        old = os.environ.get("RLX_CACHE_DIR")
        os.environ["RLX_CACHE_DIR"] = d
        yield
        if old is None:
            os.environ.pop("RLX_CACHE_DIR", None)
        else:
            os.environ["RLX_CACHE_DIR"] = old


def xdist_group_suffix(item: pytest.Item) -> str:
    """`@name` for an item marked `xdist_group(name)` (names joined by `_`), else ""."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "@" + "_".join(sorted(names)) if names else ""


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker under `--dist loadgroup`: give grouped items their `@group`
    node-id suffix, by which the scheduler keeps a group on one worker.

    pytest-xdist 3.8 assigns the suffixed id to `item._nodeid`, which pytest >= 9.2 no
    longer reads (node ids are structured, `item._id`): every group was silently spread
    over the workers (pytest-dev/pytest-xdist#1386), so a module's costly per-process
    setup (the ONNX node cases: ~12 s of CPU) was paid by each worker. Runs after xdist's
    hook and does nothing where that one worked."""
    if not hasattr(config, "workerinput") or not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest < 9.2: xdist's own suffix works
        return
    for item in items:
        suffix = xdist_group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]
