"""Reading what a user hands archzoo (registry entries, --config, --hf-config, --set), within fixed limits.

Every file is read with a bounded read after checking that it is a regular file, so a FIFO, a device
or a folder is refused without reading and a huge file costs nothing. YAML is read as YAML 1.2 (no
base-60 integers, no ``yes``/``no`` booleans, ``017`` is seventeen) with duplicate keys refused, and its
event stream is checked for nesting depth and alias expansion (``&a [*a, *a, ...]`` bombs) before any
node tree is built, so neither libyaml nor Python can recurse or allocate without bound. JSON gets the
same limits. Integers with more digits than any size needs are refused by name before Python parses them.

PyYAML is imported by the functions that read YAML, when they first run: reading a config.json (the lookup
``archzoo count --hf-config``) goes through this module too and needs no YAML.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ArchzooError, InputError, YAMLSyntaxError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "PLAIN_TAGS",
    "check_nodes",
    "check_yaml_events",
    "construct_plain",
    "decode_utf8",
    "entry_syntax_problem",
    "find_bad_scalars",
    "key_path",
    "load_json",
    "load_yaml",
    "read_user_bytes",
    "read_user_text",
    "read_yaml",
    "yaml12_loader",
]

#: The largest file archzoo reads: a registry entry or a config.json is a few kilobytes.
MAX_FILE_BYTES = 1024 * 1024
#: The deepest nesting of mappings and lists (a registry entry needs 4 levels, a config.json 3).
MAX_DEPTH = 32
#: The most values (scalars, mappings and lists) one document may hold once its aliases are expanded.
MAX_NODES = 20_000
#: The most digits an integer literal may have (every size archzoo accepts has at most 10).
MAX_INT_DIGITS = 30


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def key_path(key: tuple) -> str:
    """``("published", "source", "authors", 0)`` -> ``published.source.authors[0]``; a key that is not a
    plain name is shown quoted, escapes and all (``config.'a\\nb'``), so a message stays one line."""
    text = ""
    for part in key:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
            continue
        name = str(part)
        shown = name if _PLAIN_KEY.fullmatch(name) else ascii(name)
        text += f".{shown}" if text else shown
    return text


# ---- bounded reads --------------------------------------------------------------------------------


def read_user_bytes(path: Path, error: type[ArchzooError] = InputError, *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or ``error`` saying why not.

    The file is checked before it is opened (a FIFO would block the open, a device never ends), opened
    without blocking, checked again, and read with a bounded read.
    """
    try:
        return _read_bounded(path, limit)
    except InputError as exc:
        if error is InputError:
            raise
        raise error(str(exc)) from None


def _read_bounded(path: Path, limit: int) -> bytes:
    def error(text: str) -> InputError:
        return InputError(text.removeprefix(f"{path}: "), source=str(path))

    try:
        info = os.stat(path)
    except OSError as exc:
        raise error(f"{path}: cannot read the file ({exc.strerror or exc}); check the path") from None
    kind = _kind(info.st_mode)
    if kind:
        raise error(f"{path}: is {kind}, not a regular file; give the path of a file")
    if info.st_size > limit:
        raise error(
            f"{path}: the file is {info.st_size:,} bytes, more than the {limit:,} archzoo reads; "
            "give the configuration file itself"
        )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise error(f"{path}: cannot read the file ({exc.strerror or exc}); check its permissions") from None
    try:
        kind = _kind(os.fstat(fd).st_mode)  # the path may have been swapped between stat and open
        if kind:
            raise error(f"{path}: is {kind}, not a regular file; give the path of a file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise error(
            f"{path}: the file is more than the {limit:,} bytes archzoo reads; give the configuration file itself"
        )
    return data


def _kind(mode: int) -> str:
    """What a non-regular file is, in words; empty for a regular file."""
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def decode_utf8(data: bytes, source: str, error: type[ArchzooError] = InputError) -> str:
    """UTF-8 text (a byte-order mark is dropped), or ``error`` naming the line and byte that is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        problem = InputError(
            f"byte 0x{data[start]:02x} at column {column} is not UTF-8 text; save the file as UTF-8",
            source=source,
            line=line,
        )
        raise (problem if error is InputError else error(str(problem))) from None


def read_user_text(path: Path, error: type[ArchzooError] = InputError) -> str:
    """The file's UTF-8 text, read within `MAX_FILE_BYTES`, or ``error`` saying what went wrong."""
    return decode_utf8(read_user_bytes(path, error), str(path), error)


# ---- YAML 1.2 -------------------------------------------------------------------------------------


@cache
def _safe_loader() -> type:
    """PyYAML's safe loader, libyaml's (``CSafeLoader``) when it is installed."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


#: The parser `check_yaml_events` walks first, when set (a test sets one that stops before its first event, as
#: libyaml does on deep nesting); None is `_safe_loader`'s.
_BASE: type | None = None


_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    (
        "tag:yaml.org,2002:timestamp",
        r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
        r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?)$",
        "0123456789",
    ),
]


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body.startswith("0o"):
        return sign * int(body[2:], 8)
    if body.startswith("0x"):
        return sign * int(body[2:], 16)
    return sign * int(body, 10)


@cache
def yaml12_loader() -> type:
    """The YAML 1.2 loader (`YAML12Loader`), made when YAML is first read: it subclasses PyYAML's loader."""

    class YAML12Loader(_safe_loader()):  # type: ignore[misc]
        """PyYAML's safe loader with YAML 1.2's core schema for plain scalars.

        ``1:00`` and ``12:30`` stay text (YAML 1.1 reads them as base-60 integers), ``yes``, ``no``, ``on``
        and ``off`` stay text, ``017`` is seventeen, ``0o17`` fifteen; dates are still read as dates so that a
        registry ``year: 2019-01-01`` can be reported as what it is.
        """

    YAML12Loader.yaml_implicit_resolvers = {}
    for tag, pattern, first in _RESOLVERS:
        YAML12Loader.add_implicit_resolver(tag, re.compile(pattern), list(first))
    YAML12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    YAML12Loader.__module__ = __name__
    return YAML12Loader


_CORE = "tag:yaml.org,2002:"
#: The tags plain YAML resolves to; any other (``!!python/object``, ``!include``) is refused before construction.
PLAIN_TAGS = frozenset(_CORE + t for t in ("null", "bool", "int", "float", "str", "seq", "map", "timestamp", "merge"))


def show_tag(tag: str) -> str:
    """``tag:yaml.org,2002:python/object`` -> ``!!python/object``."""
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


#: What YAML 1.2 reads as a line break (section 5.4), in the order that makes CR LF one break.
_YAML_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def yaml_character_problem(exc: yaml.YAMLError, text: str, subject: str = "the file") -> tuple[int, str] | None:
    """``(line, what is wrong)`` for a character YAML refuses: a control character written into the file,
    a lone surrogate or an unknown backslash escape in a double-quoted value. None for other errors.

    PyYAML reports the first with a character offset and the others "while parsing a quoted scalar",
    which reads like an unclosed quote.
    """
    import yaml

    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        return line, (
            f"{subject} holds the control character U+{code:04X}, which is not printable; remove it (write plain text)"
        )
    problem = str(getattr(exc, "problem", "") or "")
    mark = getattr(exc, "problem_mark", None)
    if mark is None or "escape" not in problem:
        return None
    lines = _YAML_LINE_BREAK.split(text)  # the mark counts lines as YAML does: a lone CR breaks one too
    row = lines[mark.line] if mark.line < len(lines) else ""
    escapes = [
        m
        for m in re.finditer(r"\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)", row)
        if m.start() <= mark.column
    ]  # the mark sits on, or just inside, the escape that failed
    shown = escapes[-1].group() if escapes else "\\"
    if "Unicode" in problem:
        fix = "write the character itself"
        pair = (
            re.match(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})", row[escapes[-1].start() :])
            if escapes
            else None
        )
        if pair:  # JSON writes a character beyond U+FFFF as two escapes; YAML wants one
            code = 0x10000 + ((int(pair[1], 16) - 0xD800) << 10) + (int(pair[2], 16) - 0xDC00)
            fix = f"write the character itself, or \\U{code:08X} for the pair {pair[0]}"
        else:
            fix += ", or its \\U00XXXXXX escape"
        return (
            mark.line + 1,
            f"the escape {shown} in a double-quoted value is half of a surrogate pair, not a character; {fix}",
        )
    return (
        mark.line + 1,
        f"the escape {shown} in a double-quoted value is not a YAML escape; write \\\\ for a backslash",
    )


_INT = re.compile(r"[-+]?(?:0o|0x)?([0-9a-fA-F]+)")


def _digits(text: str) -> int:
    match = _INT.fullmatch(text.strip())
    return len(match.group(1)) if match else 0


def _unprintable(text: str) -> str | None:
    """The first character that is not text (a C0 or C1 control other than tab and newline, DEL, or half
    of a surrogate pair), as ``U+0080``; None when every character is printable."""
    for char in text:
        code = ord(char)
        if (code < 0x20 and char not in "\t\n") or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
            return f"U+{code:04X}"
    return None


def _event_line(event: yaml.Event) -> int:
    """The 1-based line an event of ``yaml.parse`` starts on (the parser marks every event it yields)."""
    return event.start_mark.line + 1 if event.start_mark is not None else 1


def check_yaml_events(text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Walk the YAML event stream (no tree is built) and raise `InputError` when the document nests
    deeper than ``max_depth`` or holds more than ``max_nodes`` values once aliases are expanded.

    The error's ``line`` and ``key`` say where: the collection that went too deep, or the alias whose
    expansion crossed the limit. YAML syntax errors are left for the caller's own parse to report.

    libyaml is walked first (fast); when it stops on an error, the walk is repeated with PyYAML's own parser,
    a state machine with no nesting limit of its own and no recursion. libyaml 0.2.6 (PyYAML 6.0.4's wheels)
    stops at 1,000 levels of flow nesting before yielding a single event, so without the second walk such
    a file would reach the caller's parse unchecked, and PyYAML's recursive composer after it.
    """
    import yaml

    first = _BASE or _safe_loader()
    try:
        _walk_yaml_events(yaml.parse(text, Loader=first), max_depth, max_nodes)
    except yaml.YAMLError:
        if first is yaml.SafeLoader:
            return
        try:
            _walk_yaml_events(yaml.parse(text, Loader=yaml.SafeLoader), max_depth, max_nodes)
        except yaml.YAMLError:
            return


def _walk_yaml_events(events: Iterator[yaml.Event], max_depth: int, max_nodes: int) -> None:
    import yaml

    frames: list[list[Any]] = []  # [is_mapping, key path, expecting a key, current key, index, size]
    anchors: dict[str, int] = {}
    open_anchors: list[tuple[str | None, int]] = []
    total = 0

    def child_key(frame: list[Any]) -> tuple:
        if frame[0]:
            return frame[1] + (frame[3],)
        return frame[1] + (frame[4],)

    def finish(size: int, anchor: str | None) -> None:
        if anchor:
            anchors[anchor] = size
        if frames:
            parent = frames[-1]
            parent[5] += size
            if parent[0]:
                parent[2] = not parent[2]
            else:
                parent[4] += 1

    for event in events:
        if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.CollectionStartEvent)):
            parent = frames[-1] if frames else None
            is_key = bool(parent and parent[0] and parent[2])
            key = child_key(parent) if parent and not is_key else (parent[1] if parent else ())
            if isinstance(event, yaml.ScalarEvent):
                if is_key:
                    parent[3] = event.value  # type: ignore[index]
                total += 1
                finish(1, event.anchor)
            elif isinstance(event, yaml.AliasEvent):
                size = anchors.get(event.anchor or "", 1)
                total += size
                if total > max_nodes:
                    raise InputError(
                        f"the aliases expand to more than {max_nodes:,} values; archzoo reads "
                        "plain, small data, so write the values out instead of repeating "
                        "aliases",
                        line=_event_line(event),
                        key=key_path(key),
                    )
                finish(size, None)
            else:
                if len(frames) >= max_depth:
                    raise InputError(
                        f"nested more than {max_depth} levels deep; archzoo reads flat "
                        "configurations, so remove the extra nesting",
                        line=_event_line(event),
                        key=key_path(key[:1]),
                    )
                total += 1
                frames.append([isinstance(event, yaml.MappingStartEvent), key, True, None, 0, 1])
                open_anchors.append((event.anchor, _event_line(event) - 1))
        elif isinstance(event, yaml.CollectionEndEvent):
            frame = frames.pop()
            anchor, _ = open_anchors.pop()
            finish(frame[5], anchor)
        if total > max_nodes:
            raise InputError(
                f"holds more than {max_nodes:,} values; archzoo reads plain, small data",
                line=_event_line(event),
                key="",
            )


def find_bad_scalars(
    node: yaml.Node, report: Callable[[yaml.Node, tuple, str], None], key: tuple = (), seen: set[int] | None = None
) -> None:
    """Call ``report(node, key, message)`` for every scalar that is an integer with more than
    `MAX_INT_DIGITS` digits, or text holding a character that is not printable."""
    import yaml

    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if node.tag == "tag:yaml.org,2002:int" and _digits(node.value) > MAX_INT_DIGITS:
            report(
                node,
                key,
                f"an integer of {_digits(node.value):,} digits; archzoo reads integers of at most "
                f"{MAX_INT_DIGITS} digits (no size comes close), so correct the value",
            )
        else:
            bad = _unprintable(node.value)
            if bad:
                report(
                    node,
                    key,
                    f"the text holds the control character {bad}, which is not printable; "
                    "remove it (YAML escapes such as \\x80 or \\u0080 write one)",
                )
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                find_bad_scalars(k, report, key, seen)
                find_bad_scalars(v, report, key + (k.value,), seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            find_bad_scalars(item, report, key + (i,), seen)


def check_nodes(
    root: yaml.Node,
    refuse: Callable[[yaml.Node, tuple, str], None],
    *,
    holder: str,
    lines: dict[tuple, int] | None = None,
    texts: dict[tuple, str] | None = None,
) -> None:
    """Call ``refuse(node, key, message)`` for everything in a composed document that is not plain, finite
    data: an alias that contains itself, a tag beyond the core schema's (``!!python/object``,
    ``!include``), a key that is not plain text, a duplicate key, a date that does not exist, and the
    scalars `find_bad_scalars` refuses. Nothing is constructed. ``holder`` names the files in messages
    ("registry files"); ``lines`` receives the line of every key path, ``texts`` every scalar as written.
    """
    import yaml

    visited: set[int] = set()
    dates = yaml12_loader()("")

    def walk(n: yaml.Node, key: tuple, ancestors: frozenset[int]) -> None:
        if lines is not None:
            lines.setdefault(key, n.start_mark.line + 1)
        if texts is not None and isinstance(n, yaml.ScalarNode):
            texts.setdefault(key, n.value)
        if id(n) in ancestors:
            refuse(n, key, f"an alias that contains itself; {holder} hold plain, finite data, so write the value out")
            return
        if n.tag not in PLAIN_TAGS:
            refuse(
                n,
                key,
                f"YAML tag {show_tag(n.tag)!r} is not allowed ({holder} hold plain YAML and nothing is "
                "constructed from tags); remove the tag and write a plain value",
            )
            return
        if id(n) in visited:  # an alias of a node already checked
            return
        if n.tag == _CORE + "timestamp":
            try:
                dates.construct_yaml_timestamp(n)
            except (ValueError, OverflowError) as exc:
                refuse(
                    n,
                    key,
                    f"{n.value!r} reads as a date but is not a valid one ({exc}); write a valid date, "
                    "or quote it to keep it as text",
                )
                return
        visited.add(id(n))
        ancestors = ancestors | {id(n)}
        if isinstance(n, yaml.MappingNode):
            seen: dict[str, int] = {}
            for k, v in n.value:
                if not isinstance(k, yaml.ScalarNode):
                    refuse(k, key, "a key must be plain text, not a list or mapping")
                    continue
                if k.tag not in PLAIN_TAGS:
                    refuse(k, key, f"YAML tag {show_tag(k.tag)!r} on a key is not allowed; write the key as plain text")
                    continue
                name = k.value
                if name in seen:
                    refuse(k, key + (name,), f"duplicate key (first given on line {seen[name]}); keep one of the two")
                    continue
                seen[name] = k.start_mark.line + 1
                if lines is not None:
                    lines[key + (name,)] = k.start_mark.line + 1
                walk(v, key + (name,), ancestors)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                walk(item, key + (i,), ancestors)

    try:
        walk(root, (), frozenset())
    finally:
        dates.dispose()
    find_bad_scalars(root, refuse)


#: The loader every YAML document is composed with, when set (a test sets PyYAML's own); None is
#: `yaml12_loader`'s (libyaml's when installed). The wording of syntax errors does not depend on it.
_LOADER: type | None = None


def _loader() -> type:
    return _LOADER or yaml12_loader()


#: A problem found reading a document: (1-based line, key path as `key_path` writes it, message).
YAMLProblem = tuple[int, str, str]


def _terse_syntax_problem(exc: yaml.YAMLError, text: str, subject: str = "the file") -> tuple[int, str]:
    """A YAML syntax error as ``(line, message)``, as the parser words it (a value typed on the command line,
    a --config file)."""
    character = yaml_character_problem(exc, text, subject)
    if character:
        return character
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    what = f"{context}, {problem}" if context else problem
    return (mark.line + 1 if mark else 1, f"not valid YAML: {what}; check indentation and quoting")


def entry_syntax_problem(exc: yaml.YAMLError, text: str) -> tuple[int, str]:
    """A YAML syntax error as ``(line, what is wrong; how to fix it)`` for a person editing a file by hand (a
    registry entry), worded the same with or without libyaml."""
    import yaml

    character = yaml_character_problem(exc, text)
    if character:
        return character
    # libyaml words its errors differently: re-read with PyYAML's parser
    if _loader().__mro__[1] is not yaml.SafeLoader:
        try:
            yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as pure:
            exc = pure
    problem = str(getattr(exc, "problem", None) or exc)
    context = str(getattr(exc, "context", None) or "")
    mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark else 1
    if "quoted scalar" in context and context_mark is not None:
        return (
            context_mark.line + 1,
            "YAML syntax error: the quoted value that starts on this line is never closed; add the closing quote",
        )
    run_on = _run_on_quote(text, line)
    if run_on is not None:  # an unclosed quote ends at the next quote in the file, where reading then fails
        return (
            run_on,
            f"YAML syntax error: the quoted value that starts on this line is "
            f"not closed on it and runs on to the next quote, on line {line}; "
            "add the closing quote",
        )
    if "'\\t'" in problem or "\t" in problem:
        return (line, "YAML syntax error: a tab character where YAML expects indentation; indent with spaces only")
    if problem.startswith("mapping values are not allowed"):
        return (
            line,
            "YAML syntax error: unexpected ':' (mapping values are not allowed "
            "here); indent this key like the keys beside it, or quote a value "
            "that contains ': '",
        )
    if "single document" in context:
        return (
            line,
            "YAML syntax error: a second document ('---'); a registry file "
            "holds one entry, so split it into one file per entry",
        )
    if "block mapping" in context and "found '<block mapping start>'" in problem:
        return (
            line,
            "YAML syntax error: this line is indented less than the key above "
            "it but more than its parent; indent it like the keys beside it",
        )
    if "block mapping" in context and "found '<scalar>'" in problem:
        return (
            line,
            "YAML syntax error: text after a quoted value; a value that starts "
            "with a quote ends at the closing quote, so quote the whole value",
        )
    if context.startswith("while parsing a flow") and context_mark is not None:
        lines_ = text.splitlines()
        row_index = min(context_mark.line, len(lines_) - 1)
        while row_index > 0 and not ("[" in lines_[row_index] or "{" in lines_[row_index]):
            row_index -= 1  # at the end of the file the mark sits past the opener: walk back to it
        row = lines_[row_index] if lines_ else ""
        at = max(("[", "{"), key=row.rfind) if ("[" in row or "{" in row) else ("[" if "sequence" in context else "{")
        opening, closing = (at, "]" if at == "[" else "}")
        got = problem.split("got ")[-1].replace("'<stream end>'", "the end of the file")
        return (
            row_index + 1,
            f"YAML syntax error: the '{opening}' that starts on "
            f"this line is not closed (found {got} "
            f"on line {line}); add the missing ',' or '{closing}'",
        )
    what = f"{context}, {problem}" if context else problem
    return (line, f"YAML syntax error: {what}; check indentation and quoting")


def _run_on_quote(text: str, error_line: int) -> int | None:
    """The line of a quoted value that spans lines and ends on ``error_line``: most likely an unclosed quote."""
    import yaml

    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.line + 1 > error_line:
                break
            if (
                isinstance(token, yaml.ScalarToken)
                and token.style in ('"', "'")
                and token.start_mark.line < token.end_mark.line
                and token.end_mark.line + 1 == error_line
            ):
                return token.start_mark.line + 1
    except yaml.YAMLError:
        pass
    return None


def read_yaml(
    text: str,
    *,
    holder: str,
    syntax: Callable[[yaml.YAMLError, str], tuple[int, str]] = _terse_syntax_problem,
    root: Callable[[yaml.Node | None], YAMLProblem | None] | None = None,
    lines: dict[tuple, int] | None = None,
    texts: dict[tuple, str] | None = None,
) -> tuple[Any, list[YAMLProblem]]:
    """The one YAML reader: a small YAML 1.2 document as plain Python data, and every problem that prevents
    reading it, as ``(data, problems)`` (``data`` is None when there are problems).

    In order, each step only when the ones before it found nothing: a character that is not UTF-8 text (kept
    by Python as half a surrogate), the depth, size and digit limits (`check_yaml_events`), the syntax (worded
    by ``syntax``: `entry_syntax_problem` for a file edited by hand), the document as a whole (``root``, given
    None for an empty document, may refuse it), then every node (`check_nodes`, all its problems, in the
    order found; ``holder`` names the files in its messages, ``lines`` and ``texts`` receive each key path's
    line and scalar as written), and last the values' construction.
    """
    import yaml

    surrogate = re.search(r"[\ud800-\udfff]", text)
    if surrogate:  # a byte that is not UTF-8, kept by Python as half a surrogate (sys.argv, os.environ)
        byte = ord(surrogate.group()) - 0xDC00 if ord(surrogate.group()) >= 0xDC80 else None
        what = f"byte 0x{byte:02x}" if byte is not None and byte >= 0x80 else f"U+{ord(surrogate.group()):04X}"
        line = text.count("\n", 0, surrogate.start()) + 1
        return None, [(line, "", f"the {what} is not UTF-8 text; type the value as UTF-8")]
    try:
        check_yaml_events(text)
    except InputError as exc:
        return None, [(exc.line or 1, exc.key, exc.message)]
    try:
        node = yaml.compose(text, Loader=_loader())
    except yaml.YAMLError as exc:
        line, message = syntax(exc, text)
        return None, [(line, "", message)]
    refused = root(node) if root is not None else None
    if refused is not None:
        return None, [refused]
    if node is None:
        return None, []
    problems: list[YAMLProblem] = []

    def refuse(n: yaml.Node, key: tuple, message: str) -> None:
        problems.append((n.start_mark.line + 1, key_path(key), message))

    check_nodes(node, refuse, holder=holder, lines=lines, texts=texts)
    if problems:
        return None, problems
    try:
        return construct_plain(node), []
    except InputError as exc:
        return None, [(exc.line or 1, "", exc.message)]


def load_yaml(text: str, source: str, error: type[ArchzooError] = InputError, *, subject: str = "the file") -> Any:
    """A small YAML 1.2 document as Python data (`read_yaml`), or ``error`` for its first problem, as
    ``source:line: key: message``; with ``error`` `InputError`, text the YAML parser cannot read at all is
    its subclass `YAMLSyntaxError` (``--set`` then takes such a value as the text typed). ``subject`` is
    what a message calls the text (``the value`` of a ``--set``).

    Plain YAML only (no tags beyond the core schema's), one document, no duplicate keys, within the
    depth, size and digit limits above.
    """
    unparsed: list[bool] = []

    def syntax(exc: yaml.YAMLError, text: str) -> tuple[int, str]:
        unparsed.append(yaml_character_problem(exc, text) is None)  # a refused character is no syntax error
        return _terse_syntax_problem(exc, text, subject)

    data, problems = read_yaml(text, holder="configuration files", syntax=syntax)
    if not problems:
        return data
    line, key, message = min(problems)
    if error is InputError:
        raise (YAMLSyntaxError if any(unparsed) else InputError)(message, source=source, line=line, key=key)
    raise error(f"{source}:{line}: {key + ': ' if key else ''}{message}")


def construct_plain(node: yaml.Node) -> Any:
    """The Python data of a document `check_nodes` let through, or `InputError` (with its ``line``) for a
    value that still cannot be built."""
    import yaml

    loader = yaml12_loader()("")
    try:
        return loader.construct_document(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:  # e.g. a date such as 2019-13-01
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"cannot read a value ({getattr(exc, 'problem', None) or exc}); quote it to keep it as text",
            line=mark.line + 1 if mark else 1,
        ) from None
    finally:
        loader.dispose()


# ---- JSON -----------------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class _HugeInt(str):
    """An integer literal with too many digits, kept as text so it can be reported by key."""


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    at = -1
    for _ in range(occurrence):
        at = text.find(needle, at + 1)
        if at < 0:
            return 1
    return text.count("\n", 0, at) + 1


def load_json(text: str, source: str, error: type[ArchzooError] = InputError) -> Any:
    """JSON as Python data, or ``error`` as ``source:line: key: message``: no duplicate keys, no integer of
    more than `MAX_INT_DIGITS` digits, no text that is not printable, nesting within `MAX_DEPTH`."""

    def fail(line: int, key: str, message: str) -> ArchzooError:
        return error(f"{source}:{line}: {key + ': ' if key else ''}{message}")

    depth = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_DEPTH:
            stripped = _JSON_STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)
            line = stripped.count("\n", 0, match.start()) + 1
            raise fail(
                line,
                "",
                f"nested more than {MAX_DEPTH} levels deep; archzoo reads flat configurations, "
                "so remove the extra nesting",
            )
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out and not duplicates:
                duplicates.append(key)
            out[key] = value
        return out

    def parse_int(literal: str) -> int | str:
        return _HugeInt(literal) if len(literal.lstrip("-")) > MAX_INT_DIGITS else int(literal)

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise fail(exc.lineno, "", f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise fail(1, "", f"not valid JSON: {exc}") from None
    if duplicates:
        name = duplicates[0]
        line = _line_of(text, json.dumps(name), 2)
        raise fail(line, name, "duplicate key (given twice in one object); keep one of the two")

    def walk(value: Any, key: tuple) -> None:
        if isinstance(value, _HugeInt):
            raise fail(
                _line_of(text, str(value)),
                key_path(key),
                f"an integer of {len(value.lstrip('-')):,} digits; archzoo reads integers of at most "
                f"{MAX_INT_DIGITS} digits (no size comes close), so correct the value",
            )
        if isinstance(value, str):
            bad = _unprintable(value)
            if bad:
                raise fail(
                    _line_of(text, json.dumps(key[-1]) if key else "\n"),
                    key_path(key),
                    f"the text holds the control character {bad}, which is not printable; remove it",
                )
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, key + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, key + (i,))

    walk(data, ())
    return data


def load_config_file(path: Path, error: type[ArchzooError] = InputError) -> Any:
    """A ``.json`` file as JSON, anything else as YAML 1.2, read within the limits above."""
    text = read_user_text(path, error)
    if path.suffix.lower() == ".json":
        return load_json(text, str(path), error)
    return load_yaml(text, str(path), error)
