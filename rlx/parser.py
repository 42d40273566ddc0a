"""Parsing input for RLX tools: a `Parser` that records op locations, and input splitting.

Why: xDSL's parser leaves `op.location` unknown unless the text spells `loc(...)`, so
errors found after parsing (verifier, passes) cannot point at the source. `LocatingParser`
gives every parsed op a `FileLineColLoc` of where its text starts (the first result name,
or the op name), as MLIR does. `split_input` implements `--split-input-file` so that each
chunk keeps the line numbers of the original file.

It also makes hostile input safe to parse (see docs/xdsl-workarounds.md): a linear pre-scan
(`prescan`) rejects unterminated or badly escaped string literals before xDSL's lexer sees
them (its string regex backtracks exponentially on them) and bounds bracket nesting
(`MAX_NESTING`, instead of a RecursionError); an error on the very first token is reported
as a located diagnostic; splat dense literals stay one element (`dense<1.0> :
tensor<2147483648xf32>` costs 4 bytes, not 8 GiB).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    UNKNOWN_LOC,
    AnyDenseElement,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    IntegerType,
    ModuleOp,
    RankedStructure,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

AttributeInvT = TypeVar("AttributeInvT", bound=Attribute)

MAX_NESTING = 64
"""Deepest bracket nesting ((), [], {}, <>) accepted in the input.

xDSL parses (and rlx verifies and prints) nested attributes, types and regions by
recursion; about 100 levels of `{a = {b = ...}}` exhaust Python's stack. Real IR nests a
dozen levels at most."""

_STRING_BODY = r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+'
"""xDSL's string-literal regex made possessive (linear time; Python >= 3.11)."""
_SCAN_RE = re.compile(r"//[^\n]*|" + _STRING_BODY + r'"|"|->|[(\[{<]|[)\]}>]')
_STRING_PREFIX_RE = re.compile(_STRING_BODY)
_SPLAT_RE = re.compile(r'<\s*(?:"[^"\n]*"|[-+]?[\w.+-]+|\([^()\n]*\))\s*>')
"""`<scalar>` or `<"0x...">` (after `dense`): a splat or a hex literal."""


def prescan(text: str, name: str = "<unknown>") -> ParseError | None:
    """The first string-literal or nesting error in `text`, in one linear pass.

    Comments and well-formed strings are skipped; a `"` that does not start a well-formed
    string is unterminated (strings end on their line, as in MLIR) or has a bad escape.
    """
    depth = 0
    source: Input[str] | None = None
    for m in _SCAN_RE.finditer(text):
        token = m.group()
        if token in "([{<":
            depth += 1
            if depth <= MAX_NESTING:
                continue
            message = f"brackets nested deeper than {MAX_NESTING} levels (the limit of rlx tools)"
        elif token in ")]}>":
            depth = max(depth - 1, 0)
            continue
        elif token != '"':
            continue  # a comment, a well-formed string or `->`
        else:
            end = _STRING_PREFIX_RE.match(text, m.start())
            stop = m.start() if end is None else end.end()
            if stop < len(text) and text[stop] == "\\":
                message = (
                    'invalid escape sequence in string literal (use \\n, \\t, \\\\, \\" or \\XX)'
                )
            else:
                message = "unterminated string literal (a string must end on its line)"
        source = Input(text, name) if source is None else source
        return ParseError(Span(m.start(), m.start() + 1, source), message)
    return None


MALFORMED_TEXT_ERRORS = (AssertionError, ValueError, LookupError, TypeError, ArithmeticError,
                         AttributeError)  # fmt: skip
"""What xDSL 0.75's op, attribute and type parsers raise on some malformed text instead of
a `ParseError` (docs/xdsl-workarounds.md, item 9): a bare `assert` on an unexpected token,
`ValueError` for a literal out of its type's range or an unknown enum value,
`IndexError` for a missing region, `OverflowError` packing a float too large for f32.
`LocatingParser.parse_operation` reports them as a `ParseError` at the op's start."""

_OP_NAME_RE = re.compile(r'\s*(?:%[^=]*=\s*)?"?([A-Za-z_][\w$.]*)')


def _malformed(text: str, start: int, e: BaseException) -> str:
    """The message for exception `e` of the op whose text starts at `start`."""
    m = _OP_NAME_RE.match(text, start)
    what = f"'{m.group(1)}' op" if m else "op"
    detail = str(e).strip().splitlines()[0] if str(e).strip() else ""
    if isinstance(e, OverflowError) and "pack" in detail:
        return f"invalid {what}: a literal is out of the range of its element type"
    if isinstance(e, ValueError | ArithmeticError) and detail:
        return f"invalid {what}: {detail}"
    origin = ""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        origin = f" in {tb.tb_frame.f_globals.get('__name__', '?')}"
    return f"malformed {what}: the parser failed ({type(e).__name__}{origin}{': ' + detail if detail else ''})"


class LocatingParser(Parser):
    """An xDSL `Parser` that sets `op.location` to `loc("file":line:col)` for each op.

    Ops whose text carries an explicit location (`loc(...)`) keep it; block arguments
    are left as parsed (xDSL's `func.func` parser resets their location). When parsing fails
    with a non-`ParseError` exception (e.g. an attribute verifier raising while the op is
    built), `failed_op_position` is the start offset of the innermost op being parsed.
    """

    def __init__(self, ctx: Context, input: str, name: str = "<unknown>") -> None:
        self.deferred_error: ParseError | None = prescan(input, name)
        """An error found before parsing (by `prescan`, or on the first token); raised by
        `parse_located_module`. xDSL's constructor lexes the first token, so without this a
        bad first token would raise from the constructor, outside any error handling."""
        if self.deferred_error is None:
            try:
                super().__init__(ctx, input, name)
            except ParseError as e:
                self.deferred_error = e
        if self.deferred_error is not None:
            super().__init__(ctx, "", name)
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
        except MALFORMED_TEXT_ERRORS as e:
            if self.failed_op_position is None:
                self.failed_op_position = start
            raise ParseError(
                Span(start, start + 1, self.lexer.input), _malformed(self._text, start, e)
            ) from e
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
        if self.deferred_error is not None:
            raise _reworded(self.deferred_error)
        try:
            module = self.parse_module(allow_implicit_module)
        except RecursionError:
            # MAX_NESTING keeps brackets shallow; this is the backstop for other recursion.
            raise ParseError(
                self._current_span(), "input nested too deeply for the parser"
            ) from None
        except ParseError as e:
            undefined = [
                self._first_forward_use[n]
                for n in self.forward_ssa_references
                if n in self._first_forward_use
            ]
            if not e.msg.startswith("values used but not defined") or not undefined:
                raise _reworded(e) from None
            first_use = min(undefined, key=lambda span: span.start)
            raise ParseError(first_use, e.msg) from None
        if module.location is UNKNOWN_LOC:
            module.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(0), IntAttr(0)
            )
        return module

    def _parse_block(self) -> Block:
        """xDSL's block parser, but a second definition of a block that was used before
        its first definition is a "re-declaration" error (xDSL 0.75: KeyError)."""
        token = self._current_token
        if token.kind == MLIRTokenKind.CARET_IDENT:
            name = token.text[1:]
            entry = self.blocks.get(name)
            if entry is not None and entry[1] is None and name not in self.forward_block_references:
                raise ParseError(token.span, f"re-declaration of block '{name}'")
        return super()._parse_block()

    def _current_span(self) -> Span:
        start = self.failed_op_position if self.failed_op_position is not None else self.pos
        return Span(start, start + 1, self.lexer.input)

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        """xDSL's dense parser, except that a splat keeps a single element.

        xDSL repeats a splat value once per element while parsing (a MemoryError for
        `dense<1.0> : tensor<2147483648xf32>`). RLX code reads a one-element dense attribute
        of a larger type as a splat (`rlx.dtypes.from_dense_attr`, the reference, the
        lowering, the LLVM emitter), and xDSL prints it as `dense<v>`.
        """
        if _SPLAT_RE.match(self._text, self.pos) is None:
            return super().parse_dense_int_or_fp_elements_attr(type)
        self.parse_punctuation("<", " in dense attribute")
        hex_string = self.parse_optional_str_literal()
        literal = None if hex_string is not None else self._parse_tensor_literal()
        self.parse_punctuation(">", " in dense attribute")
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type = self._parse_dense_literal_type()
        element = type.element_type
        numel = math.prod(type.get_shape())
        if hex_string is not None:
            try:
                raw = bytes.fromhex(hex_string[2:])
            except ValueError:
                self.raise_error("Hex string in denseAttr is invalid")
            splat = len(raw) == element.compile_time_size
            attr = DenseIntOrFPElementsAttr(type, BytesAttr(raw if numel or not splat else b""))
            if not splat and len(attr) != numel:
                self.raise_error(
                    f"Shape mismatch in dense literal. Expected {numel} "
                    f"elements from the type, but got {len(attr)} elements."
                )
            return attr
        assert literal is not None and len(literal[0]) == 1 and not literal[1]
        value = literal[0][0].to_type(self, element)
        if isinstance(element, IntegerType):
            value = element.get_normalized_value(value)  # pyright: ignore[reportArgumentType]
        raw = element.pack([value]) if numel else b""  # pyright: ignore[reportArgumentType]
        return DenseIntOrFPElementsAttr(type, BytesAttr(raw))


def _reworded(e: ParseError) -> ParseError:
    """`e`, with xDSL 0.75's unformatted "Expected suffix identifier after {first_char}"
    (a missing f-string prefix) spelled out, and its bare " in block definition" (a region
    not closed by `}`: the start of its message is missing) said in full."""
    if e.msg == " in block definition":
        at_end = not e.span.input.content[e.span.start :].strip()
        where = "the end of the input" if at_end else "this token"
        return ParseError(
            e.span, f"expected '}}' to close the region (or a block label) before {where}"
        )
    if "{first_char}" not in e.msg:
        return e
    prefix = e.span.input.content[e.span.start : e.span.start + 1]
    return ParseError(
        e.span, f"expected an identifier after '{prefix}' (e.g. {prefix}name or {prefix}0)"
    )


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
