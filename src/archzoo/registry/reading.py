"""Reading one registry file: its YAML data, the line of every key, and each problem worded for a person
editing the file by hand (the same words with or without libyaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from ..files import (
    YAML12Loader,
    check_nodes,
    check_yaml_events,
    construct_plain,
    decode_utf8,
    key_path,
    read_user_bytes,
    yaml_character_problem,
)
from ..registry_index import RegistryProblem

__all__ = ["read_entry_yaml"]

_Loader = YAML12Loader


def _syntax_error(path: Path, text: str, exc: yaml.YAMLError) -> RegistryProblem:
    """A YAML syntax error as ``path:line: what; how to fix``, worded the same with or without libyaml."""
    character = yaml_character_problem(exc, text)
    if character:
        return RegistryProblem(path, character[0], "", character[1])
    if _Loader.__mro__[1] is not yaml.SafeLoader:  # libyaml words its errors differently: re-read with PyYAML's parser
        try:
            yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as pure:
            exc = pure
    problem = str(getattr(exc, "problem", None) or exc)
    context = str(getattr(exc, "context", None) or "")
    mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark else 1
    if "quoted scalar" in context and context_mark is not None:
        return RegistryProblem(
            path,
            context_mark.line + 1,
            "",
            "YAML syntax error: the quoted value that starts on this line is never closed; add the closing quote",
        )
    run_on = _run_on_quote(text, line)
    if run_on is not None:  # an unclosed quote ends at the next quote in the file, where reading then fails
        return RegistryProblem(
            path,
            run_on,
            "",
            f"YAML syntax error: the quoted value that starts on this line is "
            f"not closed on it and runs on to the next quote, on line {line}; "
            "add the closing quote",
        )
    if "'\\t'" in problem or "\t" in problem:
        return RegistryProblem(
            path, line, "", "YAML syntax error: a tab character where YAML expects indentation; indent with spaces only"
        )
    if problem.startswith("mapping values are not allowed"):
        return RegistryProblem(
            path,
            line,
            "",
            "YAML syntax error: unexpected ':' (mapping values are not allowed "
            "here); indent this key like the keys beside it, or quote a value "
            "that contains ': '",
        )
    if "single document" in context:
        return RegistryProblem(
            path,
            line,
            "",
            "YAML syntax error: a second document ('---'); a registry file "
            "holds one entry, so split it into one file per entry",
        )
    if "block mapping" in context and "found '<block mapping start>'" in problem:
        return RegistryProblem(
            path,
            line,
            "",
            "YAML syntax error: this line is indented less than the key above "
            "it but more than its parent; indent it like the keys beside it",
        )
    if "block mapping" in context and "found '<scalar>'" in problem:
        return RegistryProblem(
            path,
            line,
            "",
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
        return RegistryProblem(
            path,
            row_index + 1,
            "",
            f"YAML syntax error: the '{opening}' that starts on "
            f"this line is not closed (found {got} "
            f"on line {line}); add the missing ',' or '{closing}'",
        )
    what = f"{context}, {problem}" if context else problem
    return RegistryProblem(path, line, "", f"YAML syntax error: {what}; check indentation and quoting")


def _run_on_quote(text: str, error_line: int) -> int | None:
    """The line of a quoted value that spans lines and ends on ``error_line``: most likely an unclosed quote."""
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


def read_entry_yaml(
    path: Path, problems: list[RegistryProblem], texts: dict[tuple, str] | None = None
) -> tuple[Any, dict[tuple, int]] | None:
    """The file's data and the line of every key path, or None after adding the problems that prevent reading it.

    ``texts`` receives every scalar as written (``2010.11930``, which YAML reads as the float 2010.1193).

    Only the safe loader's plain tags are accepted: a tag such as ``!!python/object/apply`` is reported
    from the node graph and nothing is constructed.
    """
    try:
        text = decode_utf8(read_user_bytes(path), str(path))
        check_yaml_events(text)
    except InputError as exc:
        problems.append(RegistryProblem(path, exc.line or 1, exc.key, exc.message))
        return None
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        problems.append(_syntax_error(path, text, exc))
        return None
    if node is None:
        problems.append(
            RegistryProblem(
                path,
                1,
                "",
                "empty file; an entry is a mapping with at least 'architecture', 'title', 'summary' and 'year'",
            )
        )
        return None
    if not isinstance(node, yaml.MappingNode):
        value = node.value if len(node.value) <= 40 else node.value[:37] + "..."
        kind = "list" if isinstance(node, yaml.SequenceNode) else f"single value {value!r}"
        problems.append(
            RegistryProblem(
                path,
                node.start_mark.line + 1,
                "",
                f"expected a mapping of keys (architecture: ..., title: ...), got a {kind}",
            )
        )
        return None
    lines: dict[tuple, int] = {}
    before = len(problems)

    def refuse(n: yaml.Node, key: tuple, message: str) -> None:
        problems.append(RegistryProblem(path, n.start_mark.line + 1, key_path(key), message))

    check_nodes(node, refuse, holder="registry files", lines=lines, texts=texts)
    if len(problems) > before:
        return None
    try:
        return construct_plain(node), lines
    except InputError as exc:
        problems.append(RegistryProblem(path, exc.line or 1, "", exc.message))
        return None
