"""Per-pass command-line flags (`--NAME[=VALUE]`) and `-p` pipelines for RLX tools.

Contract for pass authors (see also `build_pass_from_flag`):

* A pass is a `ModulePass` subclass (a frozen dataclass); its options are its fields.
* `--NAME` runs the pass with default options.
* `--NAME='k1=v1 k-2=a,b'` is an *options string*: the same syntax as inside
  `NAME{...}` in a `-p` pipeline (space-separated `key=value`, dashes in keys become
  underscores, `a,b` is a tuple, `"..."` quotes a string with spaces).
* A pass with one main option declares `main_option: ClassVar[str] = "<field name>"`;
  then `--NAME=VALUE` with a VALUE that is not an options string sets that field.
  A VALUE is an options string iff every space-separated token is `key=value` and each
  key (dashes -> underscores) is a field of the pass. A `str` field receives VALUE
  verbatim (so `--dim-binding=batch=1,seq=128` works); `int`, `float` and `bool`
  (`true/false/1/0/yes/no/on/off`) fields are converted; `tuple[...]` fields take a
  comma-separated list.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, ParameterListType, parse_pipeline, parse_spec
from xdsl.utils.exceptions import ArgSpecParseError

PassRegistry = dict[str, Callable[[], type[ModulePass]]]


class PassOptionError(ValueError):
    """A user error in a pass flag, a pass option or a pipeline string."""


@dataclass(frozen=True)
class PassFlag:
    """One `--NAME[=VALUE]` pass flag taken from the command line, in order."""

    name: str
    value: str | None
    spelling: str
    """The flag as written, without the value (`--canonicalize`), for messages."""


def split_pass_flags(
    argv: Sequence[str], pass_names: Iterable[str]
) -> tuple[list[str], list[PassFlag]]:
    """Remove `--NAME[=VALUE]` / `-NAME[=VALUE]` pass flags from `argv`, keeping order.

    A value must be attached with `=`: `--fusion max-steps=3` would be ambiguous with the
    input file. Everything after a bare `--` is left alone.
    """
    names = set(pass_names)
    rest: list[str] = []
    flags: list[PassFlag] = []
    for index, arg in enumerate(argv):
        if arg == "--":
            rest.extend(argv[index:])
            break
        if arg.startswith("-") and arg != "-":
            body = arg[2:] if arg.startswith("--") else arg[1:]
            name, eq, value = body.partition("=")
            if name in names:
                flags.append(PassFlag(name, value if eq else None, arg.partition("=")[0]))
                continue
        rest.append(arg)
    return rest, flags


# --------------------------------------------------------------------------------------
# Building passes
# --------------------------------------------------------------------------------------


def pass_fields(pass_cls: type[ModulePass]) -> dict[str, Any]:
    """Option name -> resolved type annotation, for every init field of the pass."""
    try:
        hints = typing.get_type_hints(pass_cls)
    except Exception:  # unresolvable annotations: fall back to the raw ones
        hints = {}
    return {
        f.name: hints.get(f.name, f.type)
        for f in dataclasses.fields(pass_cls)
        if f.init and f.name != "name"
    }


def main_option_of(pass_cls: type[ModulePass]) -> str | None:
    """The pass's `main_option` ClassVar (a field name), validated; None if undeclared."""
    main = getattr(pass_cls, "main_option", None)
    if main is None:
        return None
    if not isinstance(main, str) or main not in pass_fields(pass_cls):
        raise PassOptionError(
            f"pass '{pass_cls.name}' declares main_option={main!r}, which is not one of "
            f"its options ({_option_list(pass_cls)})"
        )
    return main


def _option_list(pass_cls: type[ModulePass]) -> str:
    names = [n.replace("_", "-") for n in pass_fields(pass_cls)]
    return ", ".join(names) if names else "none"


def instantiate(pass_cls: type[ModulePass], parameters: dict[str, ParameterListType]) -> ModulePass:
    """`pass_cls.from_spec` with the option names checked first for a clearer error."""
    fields = pass_fields(pass_cls)
    for key in parameters:
        if key.replace("-", "_") not in fields:
            import difflib  # only for this error message (keeps start-up light)

            hint = difflib.get_close_matches(
                key.replace("_", "-"), [f.replace("_", "-") for f in fields], n=1
            )
            did_you_mean = f"; did you mean '{hint[0]}'?" if hint else ""
            raise PassOptionError(
                f"unknown option '{key}' for pass '{pass_cls.name}' "
                f"(options: {_option_list(pass_cls)}){did_you_mean}"
            )
    try:
        return pass_cls.from_spec(ArgSpec(pass_cls.name, dict(parameters)))
    except (ValueError, TypeError) as e:
        detail = re.sub(r"<class '(\w+)'>", r"\1", str(e))
        raise PassOptionError(f"invalid options for pass '{pass_cls.name}': {detail}") from e


_TOKEN_RE = re.compile(r'(?:[^\s"]+|"(?:\\.|[^"\\])*")+')


def is_options_string(pass_cls: type[ModulePass], value: str) -> bool:
    """True iff every space-separated token of `value` is `key=value` with a known key."""
    fields = pass_fields(pass_cls)
    for token in _TOKEN_RE.findall(value):
        key, eq, _ = token.partition("=")
        if not eq or key.replace("-", "_") not in fields:
            return False
    return True


def parse_options_string(pass_cls: type[ModulePass], value: str) -> ModulePass:
    """Build a pass from an options string (the text inside `NAME{...}`)."""
    try:
        spec = parse_spec(f"pass{{{value}}}")
    except ArgSpecParseError as e:
        detail = str(e).splitlines()
        raise PassOptionError(
            f"cannot parse options '{value}' for pass '{pass_cls.name}': "
            + (detail[-1].strip() if detail else "syntax error")
        ) from None
    return instantiate(pass_cls, spec.parameters)


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _convert_scalar(text: str, typ: Any) -> Any:
    """Convert `text` to `typ` (str/int/float/bool/Literal); ValueError if impossible."""
    if typ is str:
        return text
    if typ is bool:
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError("expected a boolean (true/false)")
    if typ is int:
        try:
            return int(text, 0)
        except ValueError:
            return int(text)
    if typ is float:
        return float(text)
    if get_origin(typ) is typing.Literal:
        for choice in get_args(typ):
            if str(choice).lower() == text.lower():
                return choice
        raise ValueError(f"expected one of {', '.join(map(str, get_args(typ)))}")
    raise ValueError(f"unsupported option type {typ}")


def convert_main_value(text: str, typ: Any) -> ParameterListType:
    """Convert a main-option VALUE to the spec parameters for a field of type `typ`."""
    origin = get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        errors: list[str] = []
        for alternative in get_args(typ):
            if alternative is type(None):
                continue
            try:
                return convert_main_value(text, alternative)
            except ValueError as e:
                errors.append(str(e))
        raise ValueError("; ".join(errors) or "no usable type")
    if origin is tuple:
        args = get_args(typ)
        element = args[0] if args else str
        items = [item for item in text.split(",") if item != ""] if text else []
        return tuple(_convert_scalar(item.strip(), element) for item in items)
    return (_convert_scalar(text, typ),)


def build_pass_from_flag(pass_cls: type[ModulePass], flag: PassFlag) -> ModulePass:
    """The pass instance a `--NAME[=VALUE]` flag asks for (see module docstring)."""
    if flag.value is None:
        return instantiate(pass_cls, {})
    if is_options_string(pass_cls, flag.value):
        return parse_options_string(pass_cls, flag.value)
    main = main_option_of(pass_cls)
    if main is None and all("=" in tok for tok in _TOKEN_RE.findall(flag.value)):
        # Meant as options (e.g. a misspelt key): report the offending option.
        return parse_options_string(pass_cls, flag.value)
    if main is None:
        raise PassOptionError(
            f"{flag.spelling}: '{flag.value}' is not an options string of space-separated "
            f"key=value pairs (options of '{pass_cls.name}': {_option_list(pass_cls)}), "
            f"and the pass declares no main option"
        )
    typ = pass_fields(pass_cls)[main]
    try:
        parameters = convert_main_value(flag.value, typ)
    except ValueError as e:
        raise PassOptionError(
            f"{flag.spelling}: invalid value '{flag.value}' for option "
            f"'{main.replace('_', '-')}' of pass '{pass_cls.name}': {e}"
        ) from None
    return instantiate(pass_cls, {main: parameters})


def unknown_pass_error(name: str, registry: PassRegistry) -> PassOptionError:
    """A 'no such pass' error with a did-you-mean suggestion."""
    import difflib  # only for this error message (keeps start-up light)

    hint = difflib.get_close_matches(name, list(registry), n=1)
    did_you_mean = f"; did you mean '{hint[0]}'?" if hint else ""
    return PassOptionError(f"unknown pass '{name}'{did_you_mean} (see 'rlx-opt --list-passes')")


def parse_pipeline_string(spec: str, registry: PassRegistry) -> list[ModulePass]:
    """Build the passes of a `-p` pipeline (`a,b{k=v k2=1,2}`), with clear errors."""
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:
        raise PassOptionError(f"invalid pass pipeline '{spec}':\n{e}") from None
    passes: list[ModulePass] = []
    for pass_spec in specs:
        if pass_spec.name not in registry:
            raise unknown_pass_error(pass_spec.name, registry)
        pass_cls = registry[pass_spec.name]()
        passes.append(instantiate(pass_cls, pass_spec.parameters))
    return passes


def first_doc_line(pass_cls: type) -> str:
    """First line of the class's own docstring ('' if it has none of its own)."""
    doc = pass_cls.__dict__.get("__doc__")
    if not doc or doc.startswith(f"{pass_cls.__name__}("):  # dataclass-generated
        return ""
    for line in doc.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def mlir_pipeline_to_xdsl(text: str) -> str:
    """MLIR's textual pipeline (`builtin.module(a{k=v},func.func(b))`) as an xDSL `-p` spec.

    Anchors (`builtin.module(...)`, `func.func(...)`, any `op.name(...)`) are accepted and
    flattened: rlx passes are module passes and find the functions themselves.
    """
    out: list[str] = []
    depth_braces = 0
    anchors: list[int] = []  # nesting of anchor parentheses
    token = ""
    quoted = False
    for ch in text.strip():
        if quoted:
            token += ch
            quoted = ch != '"'
            continue
        if ch == '"':
            quoted = True
            token += ch
        elif ch == "{":
            depth_braces += 1
            token += ch
        elif ch == "}":
            depth_braces -= 1
            token += ch
        elif depth_braces:
            token += ch
        elif ch == "(":
            if not re.fullmatch(r"\s*[\w$.-]+\s*", token) or "." not in token:
                raise PassOptionError(
                    f"invalid pass pipeline '{text}': '{token.strip()}(' is not an op anchor "
                    "such as builtin.module( or func.func("
                )
            anchors.append(1)
            token = ""
        elif ch == ")":
            if not anchors:
                raise PassOptionError(f"invalid pass pipeline '{text}': unbalanced ')'")
            anchors.pop()
            out.append(token)
            token = ""
        elif ch == ",":
            out.append(token)
            token = ""
        else:
            token += ch
    out.append(token)
    if anchors or depth_braces or quoted:
        raise PassOptionError(f"invalid pass pipeline '{text}': unbalanced brackets or quotes")
    return ",".join(t.strip() for t in out if t.strip())


def build_pipeline(
    passes: str,
    pass_pipeline: str,
    flags: Sequence[PassFlag],
    registry: PassRegistry,
    aliases: dict[str, str],
) -> list[ModulePass]:
    """The passes of `-p` (xDSL spec), `--pass-pipeline` (MLIR text) or the pass flags
    (at most one of them is given; `aliases` maps flag names to pass names)."""
    sources = [
        s
        for s, given in (
            ("-p/--passes", passes),
            ("--pass-pipeline", pass_pipeline),
            ("pass flags", flags),
        )
        if given
    ]
    if len(sources) > 1:
        spelled = ", ".join(f.spelling for f in flags)
        raise PassOptionError(
            f"{sources[0]} cannot be combined with {' and '.join(sources[1:])}"
            + (f" ({spelled})" if spelled else "")
            + "; use one or the other"
        )
    if passes:
        return parse_pipeline_string(passes, registry)
    if pass_pipeline:
        spec = mlir_pipeline_to_xdsl(pass_pipeline)
        return parse_pipeline_string(spec, registry) if spec else []
    built: list[ModulePass] = []
    for flag in flags:
        name = aliases.get(flag.name, flag.name)
        if name not in registry:
            raise unknown_pass_error(flag.name, registry)
        built.append(build_pass_from_flag(registry[name](), flag))
    return built
