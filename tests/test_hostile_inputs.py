"""The hostile-input corpus for what users hand archzoo: registry files, --config, --hf-config, --set and
the Python API. Each case is crafted to hang, exhaust, crash or fool archzoo; each must end in bounded
time with one exact error line (or, for the largest sizes archzoo accepts, a correct answer) and never a
traceback. The classes are those of the hardening issue: 4 big numbers, 5 memory and recursion bombs,
6 unbounded reads, 7 the registry loader, 8 YAML 1.1 surprises, 11 the Python API, 12 wrong messages.

Every case is one test marked ``hostile``; ``benchmarks/hostile.py`` runs each in its own process and
prints the largest time and peak memory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import archzoo
from archzoo import files
from archzoo.cli import main
from archzoo.errors import ConfigError
from plugin_selection import only_plugins

pytestmark = pytest.mark.hostile

ENTRY = "architecture: gpt\ntitle: GPT-2 small\nsummary: The 12-layer GPT-2.\nyear: 2019\nconfig:\n"
BIG = "9" * 5000
LIMIT = (
    "is larger than archzoo's limit for a size, 2,147,483,647 (2^31 - 1); no model comes near it, so correct the value"
)
BELOW = (
    "is beyond archzoo's limit for a size, 2,147,483,647 (2^31 - 1) in magnitude; no model comes near it, so correct "
    "the value"
)
DIGITS = "archzoo reads integers of at most 30 digits (no size comes close), so correct the value"
DEEP = "nested more than 32 levels deep; archzoo reads flat configurations, so remove the extra nesting"
GPT_KEYS = (
    "vocab_size, max_positions, d_model, n_layers, n_heads, d_head, d_ff, tie_embeddings, bias, head, "
    "final_norm, activation"
)


@dataclass(frozen=True)
class Case:
    """``setup(tmp)`` writes what the case needs under ``tmp`` and returns the archzoo arguments; ``err``
    is the exact standard error, with ``{tmp}`` for the temporary folder."""

    id: str
    setup: Callable[[Path], list[str]]
    err: str
    code: int = 1


def entry(name: str, text: str) -> Callable[[Path], list[str]]:
    """A registry folder holding one entry file; the case validates it."""

    def setup(tmp: Path) -> list[str]:
        folder = tmp / "registry"
        folder.mkdir()
        (folder / name).write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        return ["validate", str(folder)]

    return setup


def raw_entry(name: str, data: bytes) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        folder = tmp / "registry"
        folder.mkdir()
        (folder / name).write_bytes(data)
        return ["validate", str(folder)]

    return setup


def config_file(name: str, text: str | bytes, *args: str) -> Callable[[Path], list[str]]:
    """A configuration file given to ``archzoo count`` (``--config`` or ``--hf-config`` in ``args``)."""

    def setup(tmp: Path) -> list[str]:
        path = tmp / name
        path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        return [a.replace("{file}", str(path)) for a in args]

    return setup


def argv(*args: str) -> Callable[[Path], list[str]]:
    return lambda tmp: list(args)


def one_problem(line: str) -> str:
    return f"{line}\n1 problem(s) in 1 of 1 file(s)\n"


def _fifo(name: str, *args: str) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        (tmp / name).parent.mkdir(exist_ok=True)
        os.mkfifo(tmp / name)
        return [a.replace("{file}", str(tmp / name)).replace("{tmp}", str(tmp)) for a in args]

    return setup


def _registry_with_symlink(target_text: str, *, folder_link: bool = False) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        secret = tmp / "private"
        secret.mkdir()
        (secret / "notes.yaml").write_text(target_text)
        folder = tmp / "registry"
        folder.mkdir()
        (folder / "gpt2.yaml").write_text(ENTRY + "  n_layers: 12\n")
        if folder_link:
            (folder / "linked").symlink_to(secret, target_is_directory=True)
        else:
            (folder / "notes.yaml").symlink_to(secret / "notes.yaml")
        return ["validate", str(folder)]

    return setup


def _sparse(name: str, size: int, in_registry: bool) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        folder = tmp / "registry" if in_registry else tmp
        folder.mkdir(exist_ok=True)
        path = folder / name
        with open(path, "wb") as f:
            f.truncate(size)  # a sparse file: no disk, no time
        return ["validate", str(folder)] if in_registry else ["count", "gpt", "--config", str(path)]

    return setup


def _nested_yaml(levels: int) -> str:
    return ENTRY + "  n_layers: " + "[" * levels + "]" * levels + "\n"


CASES = [
    # ---- 4: big numbers: bounded, exact or refused by name ----------------------------------------
    Case(
        "set-d-model-1e25",
        argv("count", "gpt", "--set", f"d_model={10**25}", "--json"),
        f"archzoo: error: --set: d_model: {10**25:,} {LIMIT}\n",
    ),
    Case(
        "set-d-model-1e80",
        argv("count", "gpt", "--set", f"d_model={10**80}", "--json"),
        f"archzoo: error: --set d_model: an integer of 81 digits; {DIGITS}\n",
    ),
    Case(
        "set-2200-digits",
        argv("count", "gpt", "--set", "d_model=" + "7" * 2200),
        f"archzoo: error: --set d_model: an integer of 2,200 digits; {DIGITS}\n",
    ),
    Case(
        "set-5000-digits",
        argv("count", "gpt", "--set", f"n_layers={BIG}", "--json"),
        f"archzoo: error: --set n_layers: an integer of 5,000 digits; {DIGITS}\n",
    ),
    Case(
        "set-layers-1e77",
        argv("count", "gpt", "--set", f"n_layers={10**77}"),
        f"archzoo: error: --set n_layers: an integer of 78 digits; {DIGITS}\n",
    ),
    Case(
        "seq-len-1e25",
        argv("count", "gpt", "--seq-len", str(10**25)),
        f"archzoo: error: --seq-len {10**25:,}: larger than archzoo's limit for a size, 2,147,483,647\n",
    ),
    Case(
        "registry-d-model-1e25",
        entry("big.yaml", ENTRY + f"  d_model: {10**25}\n"),
        one_problem(f"{{tmp}}/registry/big.yaml:6: config.d_model: {10**25:,} {LIMIT}"),
    ),
    Case(
        "registry-5000-digits",
        entry("digits.yaml", ENTRY + f"  d_model: {BIG}\n"),
        one_problem(f"{{tmp}}/registry/digits.yaml:6: config.d_model: an integer of 5,000 digits; {DIGITS}"),
    ),
    Case(
        "registry-layers-1e77",
        entry("deep-net.yaml", ENTRY + f"  n_layers: {10**77}\n"),
        one_problem(f"{{tmp}}/registry/deep-net.yaml:6: config.n_layers: an integer of 78 digits; {DIGITS}"),
    ),
    Case(
        "json-5001-digits",
        config_file("config.json", '{\n  "n_layers": ' + "1" * 5001 + "\n}\n", "count", "gpt", "--config", "{file}"),
        f"archzoo: error: {{tmp}}/config.json:2: n_layers: an integer of 5,001 digits; {DIGITS}\n",
    ),
    Case(
        "hf-json-5001-digits",
        config_file(
            "config.json", '{"model_type": "gpt2",\n "n_layer": ' + "1" * 5001 + "}", "count", "--hf-config", "{file}"
        ),
        f"archzoo: error: {{tmp}}/config.json:2: n_layer: an integer of 5,001 digits; {DIGITS}\n",
    ),
    # ---- 5: memory and recursion bombs -------------------------------------------------------------
    Case(
        "registry-alias-bomb-in-kwargs",
        entry(
            "bomb.yaml",
            ENTRY + "  n_layers: 12\nreference:\n"
            "  target: transformers.GPT2Model\n  kwargs:\n"
            "    a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            "    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            "    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "    e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
        ),
        one_problem(
            "{tmp}/registry/bomb.yaml:14: reference.kwargs.e[0]: the aliases expand to more than 20,000 "
            "values; archzoo reads plain, small data, so write the values out instead of repeating "
            "aliases"
        ),
    ),
    Case(
        "registry-1000-levels",
        entry("nested.yaml", _nested_yaml(1000)),
        one_problem(f"{{tmp}}/registry/nested.yaml:6: config: {DEEP}"),
    ),
    Case(
        "registry-100000-levels",
        entry("nested.yaml", _nested_yaml(100_000)),
        one_problem(f"{{tmp}}/registry/nested.yaml:6: config: {DEEP}"),
    ),
    Case(
        "config-yaml-10000-levels",
        config_file(
            "deep.yaml", "n_layers: " + "[" * 10_000 + "]" * 10_000 + "\n", "count", "gpt", "--config", "{file}"
        ),
        f"archzoo: error: {{tmp}}/deep.yaml:1: n_layers: {DEEP}\n",
    ),
    Case(
        "config-json-10000-levels",
        config_file(
            "deep.json", '{"n_layers": ' + "[" * 10_000 + "]" * 10_000 + "}", "count", "gpt", "--config", "{file}"
        ),
        f"archzoo: error: {{tmp}}/deep.json:1: {DEEP}\n",
    ),
    Case(
        "hf-json-10000-levels",
        config_file(
            "config.json",
            '{"model_type": "gpt2", "x": ' + '{"a": ' * 10_000 + "1" + "}" * 10_001,
            "count",
            "--hf-config",
            "{file}",
        ),
        f"archzoo: error: {{tmp}}/config.json:1: {DEEP}\n",
    ),
    Case(
        "config-yaml-alias-bomb",
        config_file(
            "bomb.yaml",
            "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
            "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "n_layers: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
            "count",
            "gpt",
            "--config",
            "{file}",
        ),
        "archzoo: error: {tmp}/bomb.yaml:5: n_layers[0]: the aliases expand to more than 20,000 values; archzoo "
        "reads plain, small data, so write the values out instead of repeating aliases\n",
    ),
    Case(
        "config-python-tag",
        config_file(
            "tag.yaml", "n_layers: !!python/object/apply:os.system [echo]\n", "count", "gpt", "--config", "{file}"
        ),
        "archzoo: error: {tmp}/tag.yaml:1: n_layers: YAML tag '!!python/object/apply:os.system' is not allowed "
        "(configuration files hold plain YAML and nothing is constructed from tags); remove the tag and write a "
        "plain value\n",
    ),
    Case(
        "config-alias-contains-itself",
        config_file("loop.yaml", "n_layers: &a [1, *a]\n", "count", "gpt", "--config", "{file}"),
        "archzoo: error: {tmp}/loop.yaml:1: n_layers[1]: an alias that contains itself; configuration files hold "
        "plain, finite data, so write the value out\n",
    ),
    # ---- 6: unbounded reads ------------------------------------------------------------------------
    Case(
        "hf-config-dev-zero",
        argv("count", "--hf-config", "/dev/zero"),
        "archzoo: error: /dev/zero: is a device, not a regular file; give the path of a file\n",
    ),
    Case(
        "config-dev-zero",
        argv("count", "gpt", "--config", "/dev/zero"),
        "archzoo: error: /dev/zero: is a device, not a regular file; give the path of a file\n",
    ),
    Case(
        "config-fifo",
        _fifo("pipe.yaml", "count", "gpt", "--config", "{file}"),
        "archzoo: error: {tmp}/pipe.yaml: is a named pipe (FIFO), not a regular file; give the path of a file\n",
    ),
    Case(
        "hf-config-fifo",
        _fifo("config.json", "count", "--hf-config", "{file}"),
        "archzoo: error: {tmp}/config.json: is a named pipe (FIFO), not a regular file; give the path of a file\n",
    ),
    Case(
        "config-folder",
        lambda tmp: ["count", "gpt", "--config", str(tmp)],
        "archzoo: error: {tmp}: is a folder, not a regular file; give the path of a file\n",
    ),
    Case(
        "config-1gb-file",
        _sparse("huge.yaml", 2**30, in_registry=False),
        "archzoo: error: {tmp}/huge.yaml: the file is 1,073,741,824 bytes, more than the 1,048,576 archzoo reads; "
        "give the configuration file itself\n",
    ),
    Case(
        "registry-1gb-file",
        _sparse("huge.yaml", 2**30, in_registry=True),
        one_problem(
            "{tmp}/registry/huge.yaml:1: the file is 1,073,741,824 bytes, more than the 1,048,576 archzoo "
            "reads; give the configuration file itself"
        ),
    ),
    Case(
        "registry-fifo",
        _fifo("registry/pipe.yaml", "validate", "{tmp}/registry"),
        one_problem("{tmp}/registry/pipe.yaml:1: is a named pipe (FIFO), not a regular file; give the path of a file"),
    ),
    # ---- 7: the registry loader --------------------------------------------------------------------
    Case(
        "registry-symlink-out",
        _registry_with_symlink("password: hunter2\n"),
        one_problem(
            "{tmp}/registry/notes.yaml:1: a symbolic link to a file outside the registry folder "
            "{tmp}/registry; copy the entry in, or give its folder with --registry"
        ).replace("in 1 of 1 file(s)", "in 1 of 2 file(s)"),
    ),
    Case(
        "registry-symlink-folder-out",
        _registry_with_symlink("password: hunter2\n", folder_link=True),
        one_problem(
            "{tmp}/registry/linked:1: a symbolic link to a folder outside the registry folder "
            "{tmp}/registry; move the entries in, or give that folder with --registry"
        ).replace("in 1 of 1 file(s)", "in 1 of 2 file(s)"),
    ),
    Case(
        "registry-newline-in-name",
        entry("gpt2\n.yaml", ENTRY + "  n_layers: 12\n"),
        one_problem(
            "{tmp}/registry/gpt2\n.yaml:1: id 'gpt2\\n' (the file name) is not a safe slug: use lowercase "
            "letters and digits separated by single '-' or '.'; rename the file to 'gpt2.yaml'"
        ),
    ),
    # ---- 8: YAML 1.1 surprises and duplicate keys --------------------------------------------------
    Case(
        "registry-base-60",
        entry("sexagesimal.yaml", ENTRY + "  n_layers: 1:00\n"),
        one_problem("{tmp}/registry/sexagesimal.yaml:6: config.n_layers: expected an integer, got the string '1:00'"),
    ),
    Case(
        "registry-yes-is-text",
        entry("yes.yaml", ENTRY + "  tie_embeddings: yes\n"),
        one_problem(
            "{tmp}/registry/yes.yaml:6: config.tie_embeddings: expected true or false, got the string "
            "'yes'; write true or false without quotes"
        ),
    ),
    Case(
        "set-base-60",
        argv("count", "gpt", "--set", "n_layers=12:30"),
        "archzoo: error: --set: n_layers: expected an integer, got the string '12:30'\n",
    ),
    Case(
        "set-no-is-text",
        argv("count", "gpt", "--set", "bias=no"),
        "archzoo: error: --set: bias: expected true or false, got the string 'no'; write true or false without "
        "quotes\n",
    ),
    Case(
        "set-twice",
        argv("count", "gpt", "--set", "n_layers=12", "--set", "n_layers=24"),
        "archzoo: error: --set n_layers: given twice; give each key once\n",
    ),
    Case(
        "config-yaml-duplicate",
        config_file("dup.yaml", "n_layers: 12\nd_model: 768\nn_layers: 24\n", "count", "gpt", "--config", "{file}"),
        "archzoo: error: {tmp}/dup.yaml:3: n_layers: duplicate key (first given on line 1); keep one of the two\n",
    ),
    Case(
        "config-json-duplicate",
        config_file("dup.json", '{\n "n_layers": 12,\n "n_layers": 24\n}\n', "count", "gpt", "--config", "{file}"),
        "archzoo: error: {tmp}/dup.json:3: n_layers: duplicate key (given twice in one object); keep one of the two\n",
    ),
    Case(
        "hf-config-duplicate",
        config_file(
            "config.json", '{"model_type": "gpt2",\n "n_layer": 2,\n "n_layer": 48}', "count", "--hf-config", "{file}"
        ),
        "archzoo: error: {tmp}/config.json:3: n_layer: duplicate key (given twice in one object); keep one of "
        "the two\n",
    ),
    # ---- 12: messages that said the wrong thing ----------------------------------------------------
    Case(
        "registry-lone-surrogate",
        entry("surrogate.yaml", ENTRY.replace("GPT-2 small", '"GPT-2 \\ud800"') + "  n_layers: 12\n"),
        one_problem(
            "{tmp}/registry/surrogate.yaml:2: the escape \\ud800 in a double-quoted "
            "value is half of a surrogate pair, not a character; write the character itself, or its "
            "\\U00XXXXXX escape"
        ),
    ),
    Case(
        "registry-latin-1-line-2",
        raw_entry("latin.yaml", b"architecture: gpt\ntitle: Caf\xe9 GPT\n"),
        one_problem("{tmp}/registry/latin.yaml:2: byte 0xe9 at column 11 is not UTF-8 text; save the file as UTF-8"),
    ),
    Case(
        "config-latin-1-line-2",
        config_file("latin.yaml", b"n_layers: 2\nactivation: \xe9lu\n", "count", "gpt", "--config", "{file}"),
        "archzoo: error: {tmp}/latin.yaml:2: byte 0xe9 at column 13 is not UTF-8 text; save the file as UTF-8\n",
    ),
    Case(
        "registry-c1-control-in-title",
        entry("control.yaml", ENTRY.replace("GPT-2 small", '"GPT-2\\x80small"') + "  n_layers: 12\n"),
        one_problem(
            "{tmp}/registry/control.yaml:2: title: the text holds the control character U+0080, which is "
            "not printable; remove it (YAML escapes such as \\x80 or \\u0080 write one)"
        ),
    ),
    Case(
        "registry-raw-delete-in-summary",
        raw_entry("del.yaml", (ENTRY + "  n_layers: 12\n").replace("The 12-layer", "The\x7f 12-layer").encode("utf-8")),
        one_problem(
            "{tmp}/registry/del.yaml:3: the file holds the control character U+007F, which is not "
            "printable; remove it (write plain text)"
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_refused_with_one_line(case: Case, tmp_path: Path, capsys):
    args = case.setup(tmp_path)
    code = main(args)
    out, err = capsys.readouterr()
    assert (code, err) == (case.code, case.err.replace("{tmp}", str(tmp_path))), out
    assert "password" not in err and "hunter2" not in err  # a link's target is named, never echoed
    assert out == ""


def test_the_largest_sizes_count_exactly_and_fast(capsys):
    """Every size at archzoo's limit, 2^31 - 1: still one exact answer (checked against the closed form of
    GPT-2's count, Radford et al. 2019 as built by transformers' GPT2LMHeadModel: V·d + P·d + L(12d² + 13d) + 2d
    with the LM head tied), not a hang or an overflow."""
    top = 2**31 - 1
    code = main(
        [
            "count",
            "gpt",
            "--set",
            f"d_model={top}",
            "--set",
            f"n_layers={top}",
            "--set",
            "n_heads=1",
            "--set",
            f"vocab_size={top}",
            "--set",
            f"max_positions={top}",
            "--seq-len",
            str(top),
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    d = L = V = P = top
    assert data["params"]["total"] == V * d + P * d + L * (12 * d * d + 13 * d) + 2 * d
    assert data["flops"]["attention_overtakes_at"] > top  # attention 4·L·N²·d passes the rest only beyond N = 2^31


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(seq_len=-3), "seq_len -3: must be at least 1 (the number of tokens of one forward pass)"),
        (dict(seq_len=0), "seq_len 0: must be at least 1 (the number of tokens of one forward pass)"),
        (dict(seq_len=True), "seq_len: expected a positive integer, got bool True"),
        (dict(seq_len="128"), "seq_len: expected a positive integer, got str '128'"),
        (
            dict(seq_len=2048),
            "seq_len 2048: longer than the 1,024 positions this configuration has; raise "
            "max_positions or give a shorter seq_len",
        ),
        (dict(d_model=10**25), f"config: d_model: {10**25:,} {LIMIT}"),
        (dict(n_layers=10**80), f"config: n_layers: an integer of about 81 digits {LIMIT}"),
        (dict(vocab_size=10**5000), f"config: vocab_size: an integer of about 5,001 digits {LIMIT}"),
        # a negative size beyond the limit in magnitude is not "larger" than it (a message of before this test)
        (dict(d_model=-(10**25)), f"config: d_model: {-(10**25):,} {BELOW}"),
        (dict(n_layers=-(10**80)), f"config: n_layers: a negative integer of about 81 digits {BELOW}"),
    ],
    ids=[
        "negative",
        "zero",
        "bool",
        "text",
        "beyond-positions",
        "huge-width",
        "layers-1e80",
        "vocab-5001-digits",
        "negative-width",
        "negative-layers-1e80",
    ],
)
def test_python_api_runs_the_same_checks(kwargs, message):
    with pytest.raises(ConfigError) as caught:
        archzoo.count("gpt", **kwargs)
    assert str(caught.value) == message


def test_python_api_refuses_a_length_vit_cannot_take():
    with pytest.raises(ConfigError) as caught:
        archzoo.count("vit", seq_len=1000)
    assert str(caught.value) == (
        "seq_len 1000: vit always runs at N = 197 (196 patches of 16x16 pixels plus 1 "
        "special token(s)); change the configuration instead"
    )


def test_unreadable_registry_folder_is_an_error(tmp_path: Path, monkeypatch, capsys):
    """Tests run as root, who reads everything: the folder's listing is made to fail as it would for a user."""
    folder = tmp_path / "registry"
    (folder / "locked").mkdir(parents=True)
    (folder / "gpt2.yaml").write_text(ENTRY + "  n_layers: 12\n")
    real_scandir = os.scandir

    def scandir(path="."):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code = main(["validate", str(folder)])
    _, err = capsys.readouterr()
    assert code == 1
    assert err == (
        f"{folder}/locked:1: cannot list this folder (Permission denied); its entries would be missing "
        f"from the zoo, so fix its permissions or remove it\n1 problem(s) in 1 of 2 file(s)\n"
    )


def test_unreadable_registry_file_is_an_error(tmp_path: Path, monkeypatch, capsys):
    folder = tmp_path / "registry"
    folder.mkdir()
    locked = folder / "locked.yaml"
    locked.write_text(ENTRY + "  n_layers: 12\n")
    real_open = os.open

    def open_(path, flags, *args, **kwargs):
        if Path(path).name == "locked.yaml":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    code = main(["validate", str(folder)])
    _, err = capsys.readouterr()
    assert code == 1
    assert err == (
        f"{locked}:1: cannot read the file (Permission denied); check its permissions\n1 problem(s) in 1 of 1 file(s)\n"
    )


def test_a_plugin_registry_with_a_broken_entry_never_fails_your_own(tmp_path: Path, capsys):
    """A plugin ships a registry folder holding one good and one broken entry: the broken one is the
    plugin's problem, named as such, left out of every listing and of the site; your own registry loads."""
    import types

    from archzoo import hookimpl
    from archzoo.host import PluginHost, reset_host
    from archzoo.registry import load_registry

    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "shipped-gpt.yaml").write_text(ENTRY + "  n_layers: 2\n")
    (shipped / "shipped-broken.yaml").write_text(ENTRY + "  n_layers: many\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "my-gpt.yaml").write_text(ENTRY + "  n_layers: 12\n")
    plugin = types.ModuleType("zoo_shipper")
    plugin.register_registry_dirs = hookimpl(lambda register: register(shipped))
    host = PluginHost(extra_plugins={"shipper": plugin}).load()
    reset_host(host)
    try:
        assert sorted(load_registry([mine], host).entries) == ["my-gpt"]  # a plugin's entries are opt-in
        registry = load_registry([mine], host, plugin_registries=["shipper"])
        assert registry.problems == []
        assert [str(p) for p in registry.plugin_problems] == [
            f"{shipped}/shipped-broken.yaml:6: config.n_layers: expected an integer, got the string 'many' "
            "(in the registry folder of plugin 'shipper')"
        ]
        assert sorted(registry.entries) == ["my-gpt", "shipped-gpt"]
        code = main(["list", "--registry", str(mine), "--plugin-registry", "shipper", "--json"])
        out, err = capsys.readouterr()
        assert code == 0 and [r["id"] for r in json.loads(out)] == ["my-gpt", "shipped-gpt"]
        assert err == (
            f"archzoo: warning: plugin 'shipper' ships 1 registry problem(s), skipped; the first: "
            f"{shipped}/shipped-broken.yaml:6: config.n_layers: expected an integer, got the string "
            "'many'\n"
        )
    finally:
        reset_host(None)


EXTREME_VIT = (
    "architecture: vit\ntitle: Extreme ViT\nsummary: The largest image with the smallest patch.\n"
    "year: 2024\nconfig: {image_size: 2147483647, patch_size: 1, d_model: 2147483647, "
    "n_layers: 2147483647, n_heads: 1, d_ff: 2147483647, num_classes: 2147483647}\n"
)


def test_an_entry_at_every_limit_shows_and_builds(tmp_path: Path, capsys):
    """A ViT whose every size is 2^31 - 1, over 1-pixel patches: (2^31 - 1)² + 1 tokens, beyond the limit for
    a size given by hand but the configuration's own N. It shows, exactly, and its site builds."""
    folder = tmp_path / "registry"
    folder.mkdir()
    (folder / "extreme-vit.yaml").write_text(EXTREME_VIT)
    code = main(["show", "extreme-vit", "--registry", str(folder), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = L = d_ff = K = 2**31 - 1
    C, p, n = 3, 1, (2**31 - 1) ** 2
    # ViTForImageClassification as transformers 5.23 builds it: patch Conv2d d·C·p² + d, [CLS] d, positions
    # (n + 1)·d, per layer 4(d² + d) attention + 2 LayerNorms 4d + MLP 2·d·d_ff + d_ff + d, final LayerNorm
    # 2d, classifier d·K + K
    expected = (
        (d * C * p * p + d)
        + d
        + (n + 1) * d
        + L * (4 * d * d + 4 * d + 4 * d + 2 * d * d_ff + d_ff + d)
        + 2 * d
        + d * K
        + K
    )
    report = json.loads(out)["report"]
    assert report["params"]["total"] == expected
    assert report["flops"]["seq_len"] == n + 1
    from archzoo.site import build_site

    with only_plugins("vit"):  # the entry's site: its own plugin's pages, not one per installed architecture
        assert build_site(tmp_path / "site", registry=[folder]) == (tmp_path / "site").resolve()
    assert "Extreme ViT" in (tmp_path / "site" / "models" / "extreme-vit" / "index.html").read_text()


class _StopsAtOnce(yaml.SafeLoader):
    """A YAML parser that fails before its first event, as libyaml 0.2.6 (PyYAML 6.0.4) does on deep flow
    nesting: it scans every '[' ahead of the first event and stops at 1,000 levels."""

    def check_event(self, *choices):
        raise yaml.scanner.ScannerError("while increasing flow level", None, "exceeded maximum nesting depth", None)


@pytest.mark.parametrize("levels", [33, 1_000, 100_000])
def test_the_depth_limit_holds_whatever_the_yaml_parser_stops_at(levels: int, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr(files, "_BASE", _StopsAtOnce)
    folder = tmp_path / "registry" / "gpt"
    folder.mkdir(parents=True)
    (folder / "deep.yaml").write_text(_nested_yaml(levels), encoding="utf-8")
    code = main(["validate", str(tmp_path / "registry")])
    _, err = capsys.readouterr()
    assert code == 1
    assert f"deep.yaml:6: config: {DEEP}" in err, err
    with pytest.raises(files.InputError, match=DEEP):
        files.load_yaml(_nested_yaml(levels), "deep.yaml")
