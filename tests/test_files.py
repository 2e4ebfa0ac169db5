"""The one YAML reader (`archzoo.files.load_yaml`): text the parser cannot read is a `YAMLSyntaxError`, which
callers catch by type; YAML that reads but holds what archzoo refuses is a plain `InputError`; and reading a
config.json imports no PyYAML."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from archzoo.cli import main
from archzoo.errors import InputError, YAMLSyntaxError
from archzoo.files import load_yaml


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: [1, 2", 2),  # a flow sequence never closed: the parser stops at the end of the text
        ('a: "open', 1),  # a quote never closed
        ("a: b: c", 1),  # a stray ':'
    ],
)
def test_text_the_parser_cannot_read_is_a_syntax_error(text, line):
    with pytest.raises(YAMLSyntaxError, match=rf"^x\.yaml:{line}: not valid YAML: .*; check indentation and quoting$"):
        load_yaml(text, "x.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: !!python/object:os.system x", r"YAML tag '!!python/object:os.system' is not allowed"),
        ("a: 1\na: 2", r"duplicate key \(first given on line 1\)"),
        ("a: \x01", r"the file holds the control character U\+0001"),
    ],
)
def test_yaml_that_reads_but_is_refused_is_no_syntax_error(text, message):
    with pytest.raises(InputError, match=message) as caught:
        load_yaml(text, "x.yaml")
    assert not isinstance(caught.value, YAMLSyntaxError)


def test_set_takes_a_value_that_is_not_yaml_as_the_text_typed(capsys):
    """``--set`` reads its value as YAML; a value the parser cannot read is kept as typed, and validation
    then says what the key expects (the CLI catches the error's type, not its wording)."""
    assert main(["count", "gpt", "--set", "n_layers=[1, 2"]) == 1
    assert capsys.readouterr().err == "archzoo: error: --set: n_layers: expected an integer, got the string '[1, 2'\n"


def test_set_refuses_a_control_character_by_name(capsys):
    assert main(["count", "gpt", "--set", 'n_layers="\\x01"']) == 1
    assert capsys.readouterr().err.startswith(
        "archzoo: error: --set n_layers: the text holds the control character U+0001, which is not printable"
    )


def test_reading_json_imports_no_yaml(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"n_layers": 2}))
    script = (
        "import sys; from pathlib import Path; from archzoo.files import load_config_file; "
        f"print(load_config_file(Path({str(path)!r})), 'yaml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["{'n_layers':", "2}", "False"], done.stderr


def test_a_control_character_typed_into_a_set_value_is_called_the_value(capsys):
    """The reader words the problem for what it reads (``subject``): the CLI passes "the value" rather than
    rewriting the reader's "the file" in its message."""
    assert main(["count", "gpt", "--set", "n_layers=a\x01b"]) == 1
    assert capsys.readouterr().err == (
        "archzoo: error: --set n_layers: the value holds the control character U+0001, which is not printable; "
        "remove it (write plain text)\n"
    )
    with pytest.raises(InputError, match=r"^x\.yaml:1: the file holds the control character U\+0001"):
        load_yaml("a: b\x01", "x.yaml")
