"""Parsing input for RLX tools: a `Parser` that records op locations, and input splitting.

Why: xDSL's parser leaves `op.location` unknown unless the text spells `loc(...)`, so
errors found after parsing (verifier, passes) cannot point at the source. `LocatingParser`
gives every parsed op a `FileLineColLoc` of where its text starts (the first result name,
or the op name), as MLIR does. `split_input` implements `--split-input-file` so that each
chunk keeps the line numbers of the original file.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import UNKNOWN_LOC, FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span

AttributeInvT = TypeVar("AttributeInvT", bound=Attribute)


class LocatingParser(Parser):
    """An xDSL `Parser` that sets `op.location` to `loc("file":line:col)` for each op.

    Ops whose text carries an explicit location (`loc(...)`) keep it; block arguments
    are left as parsed (xDSL's `func.func` parser resets their location). When parsing fails
    with a non-`ParseError` exception (e.g. an attribute verifier raising while the op is
    built), `failed_op_position` is the start offset of the innermost op being parsed.
    """

    def __init__(self, ctx: Context, input: str, name: str = "<unknown>") -> None:
        super().__init__(ctx, input, name)
        self._text = input
        self._line_starts: list[int] | None = None
        self.failed_op_position: int | None = None
        self._first_forward_use: dict[str, Span] = {}

    def position_to_line_col(self, pos: int) -> tuple[int, int]:
        """1-based (line, column) of offset `pos` in the input (O(log n))."""
        if self._line_starts is None:
            starts = [0]
            starts.extend(m.end() for m in re.finditer("\n", self._text))
            self._line_starts = starts
        index = bisect_right(self._line_starts, pos) - 1
        return index + 1, pos - self._line_starts[index] + 1

    def parse_operation(self) -> Operation:
        start = self.pos
        try:
            op = super().parse_operation()
        except BaseException:
            if self.failed_op_position is None:
                self.failed_op_position = start
            raise
        if op.location is UNKNOWN_LOC:
            line, col = self.position_to_line_col(start)
            op.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(line), IntAttr(col)
            )
        return op

    def resolve_operand(
        self, operand: UnresolvedOperand, type: AttributeInvT
    ) -> SSAValue[AttributeInvT]:
        """Remember where each not-yet-defined value is first used (for error locations)."""
        name = operand.operand_name
        if name not in self.ssa_values and name not in self.forward_ssa_references:
            self._first_forward_use.setdefault(name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_located_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """`parse_module`; an implicit module gets `loc("file":0:0)` as in MLIR.

        xDSL reports values that are used but never defined at the end of the input;
        this reports them at their first use instead (same message).
        """
        try:
            module = self.parse_module(allow_implicit_module)
        except ParseError as e:
            undefined = [
                self._first_forward_use[n]
                for n in self.forward_ssa_references
                if n in self._first_forward_use
            ]
            if not e.msg.startswith("values used but not defined") or not undefined:
                raise
            first_use = min(undefined, key=lambda span: span.start)
            raise ParseError(first_use, e.msg) from None
        if module.location is UNKNOWN_LOC:
            module.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(0), IntAttr(0)
            )
        return module


_SPLIT_MARKER_RE = re.compile(r"[ \t]*// -----[ \t\r]*\n?")


@dataclass(frozen=True)
class InputChunk:
    """A piece of the input, padded with newlines so its line numbers match the file."""

    text: str
    first_line: int
    """1-based line number of the first line of the chunk in the original file."""
    last_line: int
    """1-based line number of the last line of the chunk (inclusive)."""

    def is_blank(self) -> bool:
        """True when the chunk holds only whitespace and `//` comments (= empty module)."""
        return all(
            not stripped or stripped.startswith("//")
            for stripped in (line.strip() for line in self.text.splitlines())
        )


def split_input(text: str, split: bool) -> list[InputChunk]:
    """Split on lines that are exactly `// -----` (MLIR's `--split-input-file`).

    Each chunk's text is prefixed with as many newlines as lines precede it, so the
    parser reports the original file's line numbers. The marker lines belong to no chunk.
    """
    lines = text.splitlines(keepends=True)
    if not split:
        return [InputChunk(text, 1, max(len(lines), 1))]
    chunks: list[InputChunk] = []
    start = 0
    for index, line in enumerate(lines + ["// -----\n"]):
        if index < len(lines) and _SPLIT_MARKER_RE.fullmatch(line) is None:
            continue
        body = "".join(lines[start:index])
        chunks.append(InputChunk("\n" * start + body, start + 1, max(index, start + 1)))
        start = index + 1
    return chunks
