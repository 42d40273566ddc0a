"""`rlx-opt --list-passes`, `--show-dialects` and `--dump-pass-pipeline` output.

`--list-passes` prints one line per pass (`name  [origin]  summary`) followed by one line
per option that repeats the pass name, so `rlx-opt --list-passes | grep '^fusion '` shows
everything about a pass and the first column stays sorted:

    fusion                [rlx]     Fuse primitive rlx op chains into fused ops ...
    fusion                  max-steps: int = 0  (help text)

Summaries and options come from the static index (`rlx.tools.pass_index`), so listing
~150 passes imports none of them; plugin and test passes are imported to be described.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any

from xdsl.passes import ModulePass


def origin_of(tool: Any, name: str) -> str:
    if name in tool.plugin_names:
        return "[plugin]"
    return "[rlx]" if name in tool.rlx_pass_names else "[xdsl]"


def list_passes(tool: Any, stream: IO[str]) -> None:
    """Every registered pass of `tool` (an RlxOptMain), sorted, with its options."""
    from rlx.tools.pass_index import load_index, pass_info

    index = load_index()
    names = sorted(tool.available_passes)
    width = max((len(n) for n in names), default=0)
    for name in names:
        known = {} if name in tool.plugin_names else index
        info = pass_info(name, tool.available_passes[name], known)
        origin = origin_of(tool, name)
        stream.write(f"{name:<{width}}  {origin:<8}  {info['summary']}".rstrip() + "\n")
        for opt in info["options"]:
            line = f"{name:<{width}}    {opt['name']}: {opt['type']} = {opt['default']}"
            stream.write(line + (f"  ({opt['help']})" if opt["help"] else "") + "\n")


def list_dialects(tool: Any, stream: IO[str]) -> None:
    """`--show-dialects`: the registered dialect names, as mlir-opt prints them."""
    names = {*tool.ctx.registered_dialect_names, *getattr(tool.ctx, "on_demand_dialects", ())}
    stream.write("Available Dialects: " + ", ".join(sorted(names)) + "\n")


def list_registry(tool: Any, stream: IO[str]) -> None:
    if tool.args.show_dialects:
        list_dialects(tool, stream)
    if tool.args.list_passes:
        list_passes(tool, stream)


def pipeline_text(passes: Sequence[ModulePass]) -> str:
    """`--dump-pass-pipeline`: the pipeline in MLIR's textual form (re-usable as input)."""
    return "Pass Manager with {} passes:\nbuiltin.module({})".format(
        len(passes), ",".join(str(p.spec()) for p in passes)
    )
