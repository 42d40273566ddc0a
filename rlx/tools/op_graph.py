"""`rlx-opt --view-op-graph`: each function as a Graphviz DOT digraph.

Ops are nodes (labelled with the op name and its attributes/properties), block arguments
are nodes too, and every SSA use is an edge from the defining op (or argument) to the user,
labelled with the value's type. Ops nested in regions (fused-op bodies, loops) appear in a
`subgraph cluster_*` of their parent. One `digraph` per `func.func`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

MAX_ATTR_CHARS = 60


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _short(text: str) -> str:
    return text if len(text) <= MAX_ATTR_CHARS else text[: MAX_ATTR_CHARS - 3] + "..."


class _Graph:
    def __init__(self) -> None:
        self.ids: dict[int, str] = {}
        self.lines: list[str] = []

    def node_id(self, key: object, prefix: str) -> str:
        return self.ids.setdefault(id(key), f"{prefix}{len(self.ids)}")

    def source(self, value: SSAValue) -> str:
        if isinstance(value, OpResult):
            return self.node_id(value.op, "op")
        assert isinstance(value, BlockArgument)
        return self.node_id(value, "arg")

    def block(self, block: Block, indent: str) -> None:
        for arg in block.args:
            name = f"%{arg.name_hint}" if arg.name_hint else f"arg{arg.index}"
            self.lines.append(
                f'{indent}{self.node_id(arg, "arg")} [shape=ellipse, label="{_esc(name)}"];'
            )
        for op in block.ops:
            self.op(op, indent)

    def op(self, op: Operation, indent: str) -> None:
        attrs = {**op.properties, **op.attributes}
        label = op.name + "".join(
            f"\\n{_esc(k)} = {_esc(_short(str(v)))}"
            for k, v in sorted(attrs.items())
            if k not in ("sym_name", "function_type")
        )
        self.lines.append(f'{indent}{self.node_id(op, "op")} [label="{label}"];')
        for index, region in enumerate(op.regions):
            cluster = f"cluster_{self.node_id(op, 'op')}_{index}"
            self.lines.append(
                f'{indent}subgraph {cluster} {{ label="{_esc(op.name)} region {index}";'
            )
            for block in region.blocks:
                self.block(block, indent + "  ")
            self.lines.append(f"{indent}}}")

    def edges(self, root: Operation) -> None:
        for op in root.walk():
            if op is root:
                continue
            for operand in op.operands:
                self.lines.append(
                    f"  {self.source(operand)} -> {self.node_id(op, 'op')} "
                    f'[label="{_esc(str(operand.type))}"];'
                )


def func_to_dot(func: Operation) -> str:
    """The DOT digraph of one function."""
    graph = _Graph()
    name = getattr(func, "sym_name", None)
    title = name.data if name is not None else func.name
    for region in func.regions:
        for block in region.blocks:
            graph.block(block, "  ")
    graph.edges(func)
    body = "\n".join(graph.lines)
    return f'digraph "{_esc(title)}" {{\n  node [shape=box];\n{body}\n}}\n'


def module_to_dot(module: ModuleOp) -> str:
    """One digraph per function of `module` (or of the module itself if it has none)."""
    funcs = [op for op in module.walk() if op.name == "func.func"]
    return "".join(func_to_dot(f) for f in funcs) if funcs else func_to_dot(module)
