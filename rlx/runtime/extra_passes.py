"""`CompileOptions(extra_passes=...)`: user (plugin) passes inserted into the pipeline table.

    CompileOptions(extra_passes={"after:fusion": "my-pass{opt=1}", "before:dce": "cse"})

Keys are `before:STAGE` or `after:STAGE`, STAGE a stage name of `rlx.runtime.option_pipeline`
(the pass names of its table: scaled-quant, bind-params, ..., fusion, kernel-dispatch, ...,
convert-rlx-to-linalg, plan-memory, split-graph). Values are xDSL pass pipelines
(`a,b{k=v}`) over the registered passes: upstream xDSL, rlx, and every installed
`xdsl.universe` entry point. The passes run at that position whether or not the stage's
own pass runs for the given options. Shape is checked when the options are created;
stage and pass names when the pipeline is built (`rlx.compile`), both as ValueError.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

WHEN = ("before", "after")

ExtraPasses = tuple[tuple[str, str], ...]


def check_extra_passes(value: Any) -> ExtraPasses:
    """Normalise `extra_passes` to ((where, pipeline), ...); ValueError on a bad shape."""
    if value is None:
        return ()
    if isinstance(value, Mapping):
        items: Iterable[Any] = value.items()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        raise ValueError(
            "CompileOptions.extra_passes: expected a dict such as "
            f'{{"after:fusion": "my-pass{{opt=1}}"}}, got {type(value).__name__}'
        )
    out = []
    for item in items:
        if not (isinstance(item, (list, tuple)) and len(item) == 2):
            raise ValueError(f"CompileOptions.extra_passes: bad entry {item!r}")
        where, spec = item
        when, sep, stage = str(where).partition(":")
        if not sep or when not in WHEN or not stage:
            raise ValueError(
                f"CompileOptions.extra_passes: key {where!r} must be 'before:STAGE' or "
                "'after:STAGE' (e.g. 'after:fusion')"
            )
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError(
                f"CompileOptions.extra_passes[{where!r}]: expected a pass pipeline string "
                f"such as 'my-pass{{opt=1}}', got {spec!r}"
            )
        out.append((f"{when}:{stage}", spec.strip()))
    return tuple(out)


def build_extra_passes(
    extra: ExtraPasses, stages: Iterable[str], registry: Mapping[str, Any]
) -> dict[str, list[Any]]:
    """ "before:STAGE"/"after:STAGE" -> pass instances; ValueError naming a bad stage/pass."""
    from xdsl.passes import PassPipeline

    names = list(stages)
    built: dict[str, list[Any]] = {}
    for where, spec in extra:
        stage = where.partition(":")[2]
        if stage not in names:
            raise ValueError(
                f"CompileOptions.extra_passes: unknown stage {stage!r} in {where!r}; "
                f"stages: {', '.join(names)}"
            )
        try:
            passes = PassPipeline.parse_spec(dict(registry), spec).passes
        except Exception as e:
            detail = str(e).strip().splitlines()
            raise ValueError(
                f"CompileOptions.extra_passes[{where!r}]: invalid pipeline {spec!r}: "
                + (detail[-1] if detail else type(e).__name__)
            ) from None
        built.setdefault(where, []).extend(passes)
    return built
