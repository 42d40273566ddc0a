"""Out-of-tree passes and dialects: xDSL `Universe`s from entry points and plugin modules.

Two routes, both giving an `xdsl.universe.Universe` (`all_passes`, `all_dialects`):

* an installed distribution's `xdsl.universe` entry point (what unmodified `xdsl-opt`
  honours too); xDSL's own universe is skipped, since rlx registers xDSL's passes and
  dialects itself;
* `rlx-opt --load-pass-plugin=MODULE` / `--load-dialect-plugin=MODULE`: MODULE is a dotted
  module name or a path to a `.py` file; the module must define a `Universe` (at module
  level; the first one found is used).

`rlx.compile` uses the entry points (`plugin_passes()`), so a pip-installed plugin's
passes are available to `CompileOptions(extra_passes=...)` with no edit to rlx.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

XDSL_OWN_ENTRY_POINT = "xdsl.universe:XDSL_UNIVERSE"


class PluginError(ValueError):
    """A plugin that cannot be loaded or that clashes with a registered name."""


@dataclass
class LoadedPlugins:
    """Passes and dialects of every plugin, with the plugin that provided each."""

    passes: dict[str, Callable[[], Any]] = field(default_factory=dict)
    dialects: dict[str, Callable[[], Any]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    """"pass:NAME" / "dialect:NAME" -> plugin description."""

    def add(self, universe: Any, source: str, passes: bool = True, dialects: bool = True) -> None:
        """Add a universe's passes and/or dialects; a name given twice is an error."""
        tables = []
        if passes:
            tables.append(("pass", universe.all_passes, self.passes))
        if dialects:
            tables.append(("dialect", universe.all_dialects, self.dialects))
        for kind, items, into in tables:
            for name, factory in items.items():
                key = f"{kind}:{name}"
                if key in self.origin and into.get(name) is factory:
                    continue  # the same Universe reached twice (entry point and flag)
                if key in self.origin:
                    raise PluginError(
                        f"{kind} '{name}' is defined by both {self.origin[key]} and {source}"
                    )
                into[name] = factory
                self.origin[key] = source

    def new_items(self, kind: str, registered: Iterable[str]) -> dict[str, Callable[[], Any]]:
        """The plugins' passes or dialects (`kind`); a clash with `registered` is an error."""
        items = self.passes if kind == "pass" else self.dialects
        for name in set(items) & set(registered):
            raise PluginError(
                f"plugin {kind} '{name}' ({self.origin[f'{kind}:{name}']}) clashes with a "
                f"registered {kind} of the same name"
            )
        return items


def _universe_in(module: Any, source: str) -> Any:
    from xdsl.universe import Universe

    for value in vars(module).values():
        if isinstance(value, Universe):
            return value
    raise PluginError(f"plugin {source} defines no xdsl.universe.Universe")


def load_module_universe(spec: str) -> Any:
    """The `Universe` of plugin module `spec` (dotted name or `.py` path)."""
    source = f"'{spec}'"
    try:
        if spec.endswith(".py") or "/" in spec or "\\" in spec:
            path = Path(spec)
            if not path.is_file():
                raise PluginError(f"plugin {source}: no such file")
            name = f"rlx_plugin_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise PluginError(f"plugin {source}: cannot load this file")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except PluginError:
        raise
    except Exception as e:
        raise PluginError(f"cannot load plugin {source}: {type(e).__name__}: {e}") from e
    return _universe_in(module, source)


def entry_point_universes() -> Iterable[tuple[str, Any]]:
    """(description, Universe) of every installed `xdsl.universe` entry point but xDSL's."""
    from importlib.metadata import entry_points

    from xdsl.universe import Universe

    for ep in sorted(entry_points(group="xdsl.universe"), key=lambda e: e.name):
        if ep.value == XDSL_OWN_ENTRY_POINT:
            continue
        source = f"entry point '{ep.name}' ({ep.value})"
        try:
            universe = ep.load()
        except Exception as e:
            raise PluginError(f"cannot load {source}: {type(e).__name__}: {e}") from e
        if not isinstance(universe, Universe):
            raise PluginError(f"{source} is not an xdsl.universe.Universe")
        yield source, universe


def load_plugins(
    pass_plugins: Iterable[str] = (), dialect_plugins: Iterable[str] = ()
) -> LoadedPlugins:
    """Entry-point universes, then the `--load-*-plugin` modules."""
    loaded = LoadedPlugins()
    for source, universe in entry_point_universes():
        loaded.add(universe, source)
    for spec in pass_plugins:
        loaded.add(load_module_universe(spec), f"--load-pass-plugin={spec}", dialects=False)
    for spec in dialect_plugins:
        loaded.add(load_module_universe(spec), f"--load-dialect-plugin={spec}", passes=False)
    return loaded


def plugin_passes() -> dict[str, Callable[[], Any]]:
    """Passes of the installed `xdsl.universe` entry points (for `rlx.compile`)."""
    return load_plugins().passes
