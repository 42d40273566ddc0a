"""`LazyOpContext`: an xDSL `Context` that can resolve a dialect's ops one at a time.

xDSL loads a registered dialect as a whole the first time one of its names is used, so
parsing a single `rlx.relu` defines all 62 rlx op classes (IRDL definitions and assembly
formats: tens of milliseconds). This context additionally knows, for some dialects, a
loader per op name (`rlx.dialects.rlx.op_loaders()`); `get_optional_op` asks that loader
first, which imports only the module defining the op.

The classes returned are the dialect's own, so nothing changes when the whole dialect is
loaded later (by `get_optional_dialect`, an attribute or type lookup, or in a `clone()`,
which is a plain `Context` that loads dialects the usual way): the lazily resolved ops are
never put into the context's op table, so loading the dialect cannot collide with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from xdsl.context import Context
from xdsl.ir import Dialect, Operation

OpLoader = Callable[[], type[Operation]]


class LazyOpContext(Context):
    """A `Context` that resolves ops of registered dialects through per-op loaders.

    Deliberately not re-decorated with `@dataclass` (that would regenerate `__init__`,
    `__repr__` and `__eq__` at import time, a few milliseconds of start-up); the loader
    table is plain instance state and is not part of `clone()`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_ops: dict[str, OpLoader] = {}
        """Op name -> loader returning the op class (only for registered dialects)."""
        self.on_demand_dialects: dict[str, Callable[[], Dialect]] = {}
        """Dialects registered only when a name of theirs is first looked up (plugins)."""

    def add_on_demand_dialect(self, name: str, factory: Callable[[], Dialect]) -> None:
        """Make dialect `name` available, registering it on its first use (plugins: an
        installed plugin costs nothing, and the registered set stays rlx's own, until the
        input uses it)."""
        if name in self.registered_dialect_names or name in self.on_demand_dialects:
            raise ValueError(f"dialect '{name}' is already registered")
        self.on_demand_dialects[name] = factory

    def _demand(self, name: str) -> None:
        dialect = name.split(".", 1)[0]
        factory = self.on_demand_dialects.pop(dialect, None)
        if factory is not None:
            self.register_dialect(dialect, factory)

    def get_optional_type(self, name: str) -> Any:
        self._demand(name)
        return super().get_optional_type(name)

    def get_optional_attr(self, name: str) -> Any:
        self._demand(name)
        return super().get_optional_attr(name)

    def get_optional_dialect(self, name: str) -> Any:
        self._demand(name)
        return super().get_optional_dialect(name)

    def register_lazy_ops(self, dialect_name: str, loaders: Mapping[str, OpLoader]) -> None:
        """Resolve the ops of the registered dialect `dialect_name` through `loaders`."""
        if dialect_name not in self.registered_dialect_names:
            raise ValueError(f"dialect '{dialect_name}' is not registered")
        prefix = dialect_name + "."
        for name, loader in loaders.items():
            if not name.startswith(prefix):
                raise ValueError(f"op '{name}' is not in dialect '{dialect_name}'")
            self.lazy_ops[name] = loader

    def get_optional_op(
        self, name: str, *, dialect_stack: Sequence[str] = ()
    ) -> type[Operation] | None:
        loader = self.lazy_ops.get(name)
        if loader is not None:
            return loader()
        self._demand(name)
        for dialect in dialect_stack:
            self._demand(dialect)
        return super().get_optional_op(name, dialect_stack=dialect_stack)
