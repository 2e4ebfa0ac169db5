"""Every command's terminal output at 60, 80, 100 and 160 columns, drawn for a terminal (rich, fixed width)
and piped (plain text): no line wider than the terminal, no number split or cut (every digit-grouped number
in the text is one the command's --json output holds), columns left out in the order the command states,
and piped output one row a line with nothing cut."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from archzoo import terminal
from archzoo.cli import main

WIDTHS = (60, 80, 100, 160)

#: (command as typed, the same command's --json, or None when it has none)
COMMANDS = {
    "list": (["list"], ["list", "--json"]),
    "list-gpt": (["list", "--arch", "gpt"], ["list", "--arch", "gpt", "--json"]),
    "show-bert": (["show", "bert-base-uncased"], ["show", "bert-base-uncased", "--json"]),
    "show-gpt3": (["show", "gpt3-175b", "--depth", "4"], ["show", "gpt3-175b", "--depth", "4", "--json"]),
    "show-mixtral": (["show", "mixtral-8x7b"], ["show", "mixtral-8x7b", "--json"]),
    "count-t5": (["count", "t5"], ["count", "t5", "--json"]),
    "count-gpt": (
        ["count", "gpt", "--set", "n_layers=24", "--set", "d_model=2048", "--set", "n_heads=16", "--depth", "1"],
        ["count", "gpt", "--set", "n_layers=24", "--set", "d_model=2048", "--set", "n_heads=16", "--json"],
    ),
    "compare-2": (
        ["compare", "bert-base-uncased", "distilbert-base-uncased"],
        ["compare", "bert-base-uncased", "distilbert-base-uncased", "--json"],
    ),
    "compare-3": (
        ["compare", "bert-base-uncased", "roberta-base", "vit-base-patch16-224", "gpt3-175b"],
        ["compare", "bert-base-uncased", "roberta-base", "vit-base-patch16-224", "gpt3-175b", "--json"],
    ),
    "plugins": (["plugins"], ["plugins", "--json"]),
    "checkpoint-help": (["checkpoint", "--help"], None),
    "help": (["--help"], None),
}

#: The order each table states for leaving columns out (cli.list_models' and terminal.TREE_COLUMNS' docs).
LIST_DROP_ORDER = ["arch", "params", "published", "status", "difference"]
TREE_DROP_ORDER = ["share", "formula", "FLOPs"]

GROUPED = re.compile(r"\d[\d,]*")
WHOLE = re.compile(r"\d{1,3}(?:,\d{3})+")


def render(monkeypatch, capsys, args: list[str], width: int | None) -> str:
    """The command's standard output: drawn for a terminal ``width`` columns wide, or piped (None)."""
    shown = (
        Console(force_terminal=True, width=width, color_system=None, highlight=False)
        if width
        else Console(force_terminal=False, highlight=False)
    )
    monkeypatch.setattr(terminal, "console", shown)
    monkeypatch.setenv("COLUMNS", str(width or 80))  # click's help reads the width from COLUMNS
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def json_numbers(data: Any) -> set[int]:
    """Every integer in the JSON (and every digit-grouped number in its text), and the differences archzoo
    show prints beside the published figures."""
    found: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            found.add(abs(value))
        elif isinstance(value, str):  # a registry note or a description quoting a figure
            found.update(int(token.replace(",", "")) for token in grouped_numbers(value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    if isinstance(data, dict) and data.get("published_value") is not None:
        found.add(abs(data["params"] - data["published_value"]))
        if data.get("published_active_value") is not None:
            found.add(abs(data["active_params"] - data["published_active_value"]))
    return found


def grouped_numbers(text: str) -> Iterator[str]:
    """Each digit-grouped number of the text (1,536 and up), as written: a number split over two lines or
    cut at the edge shows as a bad grouping (``124,439,8``) or as another number (``11,683,``)."""
    for token in GROUPED.findall(text):
        token = token.rstrip(",")
        if "," in token:
            yield token


def cases() -> Iterator[Any]:
    """Every command at every width; the fast subset runs each command at one width, the widths in turn, so
    that every command and every width (piped too) is still reached there."""
    widths = (*WIDTHS, None)
    for i, name in enumerate(COMMANDS):
        for j, width in enumerate(widths):
            marks = [] if j == i % len(widths) else [pytest.mark.slow]
            yield pytest.param(name, width, id=f"{name}-{width or 'piped'}", marks=marks)


@pytest.fixture(scope="module")
def json_of() -> dict[str, set[int]]:
    return {}


@pytest.mark.parametrize("name, width", list(cases()))
def test_no_number_is_split_and_no_line_is_too_wide(monkeypatch, capsys, json_of, name, width):
    args, json_args = COMMANDS[name]
    text = render(monkeypatch, capsys, args, width)
    if width is not None:
        too_wide = [line for line in text.splitlines() if cell_len(line) > width]
        assert not too_wide, too_wide
    else:
        assert not set("┃│┏┗━") & set(text), "piped output draws no table"
    if json_args is None:
        for token in grouped_numbers(text):
            assert WHOLE.fullmatch(token), token
        return
    if name not in json_of:
        json_of[name] = json_numbers(json.loads(render(monkeypatch, capsys, json_args, None)))
    for token in grouped_numbers(text):
        assert WHOLE.fullmatch(token), f"{token!r} is not a whole number"
        assert int(token.replace(",", "")) in json_of[name], f"{token!r} is not a figure of {' '.join(json_args)}"


def headers(text: str, first: str) -> list[str]:
    """The column headers of the boxed table whose first header is ``first``."""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("┃")[1:-1]]
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no table headed {first!r} in:\n{text}")


def left_out(dropped: list[str], order: list[str]) -> None:
    assert dropped == order[: len(dropped)], f"{dropped} left out, not the first of {order}"


@pytest.mark.parametrize("width", WIDTHS)
def test_list_leaves_columns_out_in_the_stated_order_and_never_wraps(monkeypatch, capsys, width):
    rows = json.loads(render(monkeypatch, capsys, ["list", "--arch", "gpt", "--json"], None))
    text = render(monkeypatch, capsys, ["list", "--arch", "gpt"], width)
    shown = headers(text, "id")
    assert "exact" in shown
    dropped = [h for h in ["id", "arch", "params", "exact", "published", "difference", "status"] if h not in shown]
    left_out(dropped, LIST_DROP_ORDER)
    if dropped:
        note = f"left out at {width} columns: {', '.join(dropped)} (a wider window shows them)"
        assert note in " ".join(text.split())
    else:
        assert "left out" not in text
    body = [line for line in text.splitlines() if line.startswith("│")]
    assert len(body) == len(rows), "one line a model: nothing wraps"
    for line, row in zip(body, rows, strict=True):
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        assert cells[shown.index("exact")] == f"{row['params']:,}"
        status = row["status"] + (f" ({row['reason']})" if row["reason"] else "")
        if "status" in shown:  # whole, or cut short with an ellipsis: never split over lines
            got = cells[shown.index("status")]
            assert got == status or (got.endswith("…") and status.startswith(got[:-1])), got
    if width == 160:
        assert not dropped
    if width == 60:
        assert dropped


def test_piped_list_is_one_line_a_model_with_nothing_cut(monkeypatch, capsys):
    rows = json.loads(render(monkeypatch, capsys, ["list", "--json"], None))
    lines = render(monkeypatch, capsys, ["list"], None).splitlines()
    assert lines[0].split() == ["id", "arch", "params", "exact", "published", "difference", "status"]
    assert len(lines) == 1 + len(rows)
    for line, row in zip(lines[1:], rows, strict=True):
        status = row["status"] + (f" ({row['reason']})" if row["reason"] else "")
        assert line.startswith(row["id"] + " ") and line.endswith(status) and f" {row['params']:,} " in line


@pytest.mark.parametrize("width", WIDTHS)
def test_the_block_tree_leaves_columns_out_in_the_stated_order(monkeypatch, capsys, width):
    text = render(monkeypatch, capsys, ["show", "bert-base-uncased"], width)
    shown = headers(text, "block")
    assert "params" in shown
    left_out([h for h in ["share", "formula", "FLOPs"] if h not in shown], TREE_DROP_ORDER)
    # transformers 5.23 BertModel(BertConfig()): 109,482,240 parameters, whole in the summary and the tree
    assert text.count("109,482,240") >= 2
    if width >= 100:
        assert shown == ["block", "params", "share", "FLOPs", "formula"]


def test_piped_report_has_every_column_and_one_line_a_block(monkeypatch, capsys):
    data = json.loads(render(monkeypatch, capsys, ["count", "bert", "--json"], None))
    text = render(monkeypatch, capsys, ["count", "bert"], None)
    lines = text.splitlines()
    assert any(line.split() == ["block", "params", "share", "FLOPs", "formula"] for line in lines)
    formula = data["blocks"]["formula"]["text"]
    assert any(line.endswith(formula) for line in lines), "the root's formula on one line"
    symbols = "  ".join(f"{s['name']}={s['value']:,}" for s in data["symbols"] if s["value"] is not None)
    assert f"symbols: {symbols}" in lines


@pytest.mark.parametrize("width", (*WIDTHS, None))
def test_compare_gives_one_difference_a_cell_and_none_where_neither_has_the_block(monkeypatch, capsys, width):
    ids = ["bert-base-uncased", "distilbert-base-uncased", "vit-base-patch16-224"]
    data = json.loads(render(monkeypatch, capsys, ["compare", *ids, "--json"], None))
    blocks = {b["block"]: b for b in data["blocks"]}
    # DistilBertModel has no pooler; only ViTModel has a patch embedding and a classifier head
    assert blocks["head"]["delta_vs_first"]["distilbert-base-uncased"] is None
    assert blocks["pooler"]["delta_vs_first"]["distilbert-base-uncased"] == -blocks["pooler"]["bert-base-uncased"]
    text = render(monkeypatch, capsys, ["compare", *ids], width)
    assert "+0" not in text and ", " not in "".join(line for line in text.splitlines() if "│" in line)
    # every model runs at one N: ViT's 197 tokens (196 patches and [CLS]), which BERT can run at too
    assert {f["seq_len"] for f in data["flops"].values()} == {197} and data["seq_len"] == 197
    assert "forward FLOPs of every model at N = 197 (the shortest of the models' own contexts)" in " ".join(
        text.split()
    )
    if width is None:
        line = next(line for line in text.splitlines() if line.startswith("head "))
        # the head row: bert and distilbert have none (no Δ for distilbert), ViT's Δ is its head
        assert line.split() == ["head", "-", "-", f"{blocks['head'][ids[2]]:,}", f"+{blocks['head'][ids[2]]:,}"]


def test_compare_evaluates_flops_at_the_seq_len_given(monkeypatch, capsys):
    data = json.loads(render(monkeypatch, capsys, ["compare", "bert-base-uncased", "gpt2", "--json"], None))
    # transformers 5.23 BertModel(BertConfig()), eager attention, (1, 512), FlopCounterMode: 96,637,943,808;
    # gpt2's own 1,024 is longer than BERT's 512 positions, so both run at 512
    assert data["seq_len"] == 512 and data["flops"]["bert-base-uncased"]["forward"] == 96_637_943_808
    args = ["compare", "bert-base-uncased", "gpt2", "--seq-len", "128"]
    data = json.loads(render(monkeypatch, capsys, [*args, "--json"], None))
    # transformers 5.23 BertModel(BertConfig()), eager attention, (1, 128), FlopCounterMode: 22,348,431,360
    assert data["seq_len"] == 128 and data["flops"]["bert-base-uncased"]["forward"] == 22_348_431_360
    text = render(monkeypatch, capsys, args, None)
    assert "forward FLOPs of every model at N = 128 (--seq-len)" in text
    assert "22,348,431,360" in text


def test_compare_names_the_model_a_seq_len_does_not_suit(capsys):
    code = main(["compare", "bert-base-uncased", "vit-base-patch16-224", "--seq-len", "128"])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("archzoo: error: vit-base-patch16-224: --seq-len 128: vit always runs at N = 197"), err


@pytest.mark.parametrize("width", (60, 160))
def test_verify_fits_the_terminal(monkeypatch, capsys, width):
    pytest.importorskip("transformers")
    numbers = json_numbers(json.loads(render(monkeypatch, capsys, ["verify", "bert-tiny", "--json"], None)))
    text = render(monkeypatch, capsys, ["verify", "bert-tiny"], width)
    assert all(cell_len(line) <= width for line in text.splitlines())
    for token in grouped_numbers(text):
        assert WHOLE.fullmatch(token) and int(token.replace(",", "")) in numbers, token


def test_a_glob_that_matches_nothing_suggests_the_glob_that_would(capsys):
    code = main(["list", "*roberta"])
    _, err = capsys.readouterr()
    assert code == 1
    assert err == (
        "archzoo: error: no model matches '*roberta' (a glob matches whole ids); '*roberta*' finds it anywhere "
        "in an id\n"
    )


# ---- hostile: COLUMNS and text that would control the terminal -------------------------------------------

COLUMNS_WARNING = (
    "archzoo: warning: COLUMNS='{}' is not a terminal width (expected a whole number of columns from 20 to "
    "10,000); it is ignored and the terminal's own width used: unset COLUMNS or set it to the window's width\n"
)


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("columns", "args"),
    [
        pytest.param(columns, ["list", "--arch", "gpt"], id=f"{columns!r}-list --arch gpt")
        for columns in ("0", "-5", "abc", "99999999999999999999", "19", " 80")
    ]
    # the other commands read COLUMNS through the same code: `make test` runs them, the fast subset every value
    + [
        pytest.param("0", args, id=f"'0'-{' '.join(args)}", marks=pytest.mark.slow)
        for args in (["show", "gpt2"], ["count", "gpt"])
    ],
)
def test_a_columns_that_is_no_width_is_named_and_ignored(columns, args):
    """rich took COLUMNS=0 as a width of 0 and printed nothing, exit 0. Whatever COLUMNS holds, the command
    prints what it prints without it, and says once, on standard error, that COLUMNS was ignored and why."""
    import os
    import subprocess
    import sys

    def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "archzoo.cli", *args], capture_output=True, text=True, timeout=120, env=env
        )

    unset = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    plain, given = run(unset), run({**unset, "COLUMNS": columns})
    assert (given.returncode, plain.returncode) == (0, 0), given.stderr
    assert given.stdout == plain.stdout and given.stdout.strip()
    assert given.stderr == COLUMNS_WARNING.format(columns)


@pytest.mark.hostile
def test_printable_escapes_what_would_control_the_terminal():
    text = "a\x1b]0;title\x07b\x1b[2Jc\rd\u202ee\x85f\ud800g\x7fh"
    assert terminal.printable(text) == "a\\x1b]0;title\\x07b\\x1b[2Jc\\x0dd\\u202ee\\x85f\\ud800g\\x7fh"
    assert terminal.printable("name\nforged\tline") == "name\\x0aforged\\x09line"
    assert terminal.printable("prose\nkept\ttabs", one_line=False) == "prose\nkept\ttabs"
    assert terminal.printable("Ünïcödé 模型 🦒 tab-free") == "Ünïcödé 模型 🦒 tab-free"


@pytest.mark.hostile
def test_every_line_and_cell_printed_goes_through_the_cleaner(capsys):
    shown = Console(force_terminal=True, width=80, color_system=None, highlight=False)
    terminal.print_lines(["line \x1b[31mred"], out=shown)
    terminal.print_table(["name"], [["cell \x1b]0;x\x07"]], out=shown, title="t\x1b")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "line \\x1b[31mred" in out and "cell \\x1b]0;x\\x07" in out and "t\\x1b" in out
