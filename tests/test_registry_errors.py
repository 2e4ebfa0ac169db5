"""Malformed registry entries: every one is reported as ``path:line: key.path: what is wrong; how to fix it``.

Each file in ``tests/registry_errors/`` breaks a valid entry (BERT-Base) in one way; EXPECTED gives the exact
problem messages, written from the YAML: the line is the one where the offending key (or character) sits.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from pydantic import Field

from archzoo.hookspecs import hookimpl
from archzoo.host import PluginHost
from archzoo.registry import REASONS, load_registry, parse_published

CORPUS = Path(__file__).parent / "registry_errors"
VALID = Path(__file__).parent.parent / "registry" / "bert" / "bert-base-uncased.yaml"

#: the keys an unknown-key message lists: the bert plugin's configuration fields in their order, asked of the plugin
#: (a key the plugin adds joins the message, and this test with it)
BERT_KEYS = ", ".join(PluginHost(only=["bert"], strict=False).load().architecture("bert").config_model.model_fields)
ENTRY_KEYS = "architecture, config, title, summary, tags, year, published, reference, reconciliation"
SOURCE_KEYS = "title, authors, year, venue, arxiv, url, locator"
REASON_CODES = (
    "rounded, excludes-embeddings, includes-pooler, excludes-pooler, head-differs, tied-weights, "
    "vocab-differs, retracted-by-authors, typo-in-source, tool-omits-parameters"
)
SLUG_RULE = "is not a safe slug: use lowercase letters and digits separated by single '-' or '.'"
EMPTY = "empty file; an entry is a mapping with at least 'architecture', 'title', 'summary' and 'year'"
TAG = "is not allowed (registry files hold plain YAML and nothing is constructed from tags); remove the tag and write a plain value"
PARAMS_FORMAT = "write it as printed, e.g. '110M', '1.3B', '1542M', '65 (x10^6)' or '85,802,501'"

#: file name -> its problems, each "line: key.path: message" (the test puts the file's path in front).
EXPECTED: dict[str, list[str]] = {
    # YAML syntax
    "yaml-bad-indentation.yaml": [
        "3: YAML syntax error: unexpected ':' (mapping values are not allowed here); indent this key like the keys "
        "beside it, or quote a value that contains ': '"
    ],
    "yaml-bad-dedent.yaml": [
        "11: YAML syntax error: this line is indented less than the key above it but more than its parent; indent "
        "it like the keys beside it"
    ],
    "yaml-unclosed-quote.yaml": [  # YAML reads on to the next '"' (line 12) and fails there
        "2: YAML syntax error: the quoted value that starts on this line is not closed on it and runs on to the "
        "next quote, on line 12; add the closing quote"
    ],
    "yaml-unclosed-quote-at-end.yaml": [
        "23: YAML syntax error: the quoted value that starts on this line is never closed; add the closing quote"
    ],
    "yaml-tab-indent.yaml": [
        "8: YAML syntax error: a tab character where YAML expects indentation; indent with spaces only"
    ],
    "yaml-unclosed-bracket.yaml": [  # the flow list reads on into line 5 and fails at 'year:'
        "4: YAML syntax error: the '[' that starts on this line is not closed (found ':' on line 5); add the "
        "missing ',' or ']'"
    ],
    "yaml-text-after-quote.yaml": [
        "2: YAML syntax error: text after a quoted value; a value that starts with a quote ends at the closing "
        "quote, so quote the whole value"
    ],
    "yaml-two-documents.yaml": [
        "9: YAML syntax error: a second document ('---'); a registry file holds one entry, so split it into one "
        "file per entry"
    ],
    # tags that would construct objects, and aliases that never end
    "yaml-python-tag.yaml": [f"4: tags: YAML tag '!!python/object/apply:os.system' {TAG}"],
    "yaml-custom-tag.yaml": [f"3: summary: YAML tag '!include' {TAG}"],
    "recursive-alias.yaml": [
        "4: tags[1]: an alias that contains itself; registry files hold plain, finite data, so write the value out"
    ],
    # duplicate keys
    "duplicate-top-level-key.yaml": ["6: year: duplicate key (first given on line 5); keep one of the two"],
    "duplicate-config-key.yaml": ["9: config.n_layers: duplicate key (first given on line 7); keep one of the two"],
    # ids that are not safe slugs
    "Bert-Base-Uncased.yaml": [
        f"1: id 'Bert-Base-Uncased' (the file name) {SLUG_RULE}; rename the file to 'bert-base-uncased.yaml'"
    ],
    "bert base uncased.yaml": [
        f"1: id 'bert base uncased' (the file name) {SLUG_RULE}; rename the file to 'bert-base-uncased.yaml'"
    ],
    "bert..base.yaml": [f"1: id 'bert..base' (the file name) {SLUG_RULE}; rename the file to 'bert.base.yaml'"],
    # not a mapping
    "empty-file.yaml": [f"1: {EMPTY}"],
    "comments-only.yaml": [f"1: {EMPTY}"],
    "list-not-mapping.yaml": ["1: expected a mapping of keys (architecture: ..., title: ...), got a list"],
    "scalar-not-mapping.yaml": [
        "2: expected a mapping of keys (architecture: ..., title: ...), got a single value 'bert-base-uncased'"
    ],
    # architecture and its configuration
    "unknown-architecture.yaml": [
        "1: architecture: unknown architecture 'brt'; did you mean 'bert'? loaded: bert, gpt, transformer, vit "
        "(install the plugin that provides it, or correct the name)"
    ],
    "unknown-config-key.yaml": [
        f"7: config.n_layer: unknown key; did you mean 'n_layers' or 'shared_layers' or 'num_labels'? valid keys: "
        f"{BERT_KEYS}"
    ],
    "config-string-for-int.yaml": [
        "9: config.d_model: expected an integer, got the string '768'; write the number without quotes"
    ],
    "config-word-for-int.yaml": ["7: config.n_layers: expected an integer, got the string 'twelve'"],
    "config-zero-size.yaml": ["9: config.d_model: must be greater than 0, got 0"],
    "config-negative-size.yaml": ["7: config.n_layers: must be greater than 0, got -2"],
    "config-indivisible-heads.yaml": [
        "8: config.n_heads: d_model 768 is not divisible by n_heads 10; choose a divisor of d_model"
    ],
    "config-not-a-mapping.yaml": ["6: config: expected a mapping (key: value lines), got a list"],
    # keys of the entry
    "unknown-top-level-key.yaml": [f"4: tag: unknown key; did you mean 'tags'? valid keys: {ENTRY_KEYS}"],
    "unknown-nested-key.yaml": [f"16: published.source.doi: unknown key; valid keys: {SOURCE_KEYS}"],
    "missing-title.yaml": ["1: title: required key missing; add 'title:' at the top level"],
    "missing-year.yaml": ["1: year: required key missing; add 'year:' at the top level"],
    "missing-architecture.yaml": ["1: architecture: required key missing; add 'architecture:' at the top level"],
    "missing-source-locator.yaml": [
        "11: published.source.locator: required key missing; add 'locator:' under 'published.source' "
        "(table, section or README heading that prints the figure)"
    ],
    "non-text-key.yaml": ["6: a key must be text, got the number 2019; quote the key"],
    # values of the entry
    "tags-not-a-list.yaml": ["4: tags: expected a list, got the string 'encoder'; write a list, e.g. [encoder]"],
    "tags-item-not-text.yaml": ['4: tags[1]: expected text, got the number 2019; put it in quotes: "2019"'],
    "year-as-string.yaml": ["5: year: expected an integer, got the string '2019'; write the number without quotes"],
    "year-as-date.yaml": [
        "14: published.source.year: expected an integer, got the date 2019-06-02; write the year alone: 2019"
    ],
    "year-impossible-date.yaml": [
        "5: year: '2019-13-01' reads as a date but is not a valid one (month must be in 1..12); write a valid "
        "date, or quote it to keep it as text"
    ],
    "year-out-of-range.yaml": ["5: year: must be at least 1950, got 19"],
    "arxiv-bad-format.yaml": [
        "16: published.source.arxiv: expected a bare arXiv id such as '1810.04805' (no 'arXiv:' prefix, version "
        "or URL), got the string 'arXiv:1810.04805v2'"
    ],
    "arxiv-unquoted.yaml": [  # YAML reads 1810.04850 as the float 1810.0485: the hint keeps the digits as written
        '16: published.source.arxiv: expected text, got the number 1810.0485; put it in quotes: "1810.04850"'
    ],
    "reference-bad-target.yaml": [
        "19: reference.target: expected a dotted name in torch, transformers or timm, such as "
        "'transformers.BertModel', 'torch.nn.Transformer' or 'timm.vit_base_patch16_224', got the string "
        "'BertModel'"
    ],
    # the published figure
    "published-params-about.yaml": [
        f"10: published.params: cannot read 'about 110' as a parameter count; {PARAMS_FORMAT}"
    ],
    "published-params-empty.yaml": [f"10: published.params: cannot read '' as a parameter count; {PARAMS_FORMAT}"],
    "published-params-megabytes.yaml": [
        "10: published.params: '110 MB' reads as a size in bytes ('MB'); write the parameter count as printed "
        "with K, M, B or T, e.g. '110M'"
    ],
    "published-params-unquoted-number.yaml": [
        '10: published.params: expected text, got the number 110000000; put it in quotes: "110000000"'
    ],
    "published-params-zero.yaml": [
        "10: published.params: a published size of '0M' parameters cannot be right; write the figure as printed, "
        "e.g. '110M'"
    ],
    # reconciliation
    "reconciliation-unknown-reason.yaml": [
        f"22: reconciliation.reason: unknown value 'rounding'; did you mean 'rounded'? expected one of: {REASON_CODES}"
    ],
    "reconciliation-short-note.yaml": [
        "23: reconciliation.note: too short (8 characters, at least 10); expected one sentence: why the figures differ"
    ],
    "gap-without-reason.yaml": [
        "10: published.params: computed 109,482,240 differs from published 200M by -45.3% (over 5%); add "
        f"'reconciliation:' with a reason ({REASON_CODES}) and a note, or correct the config"
    ],
}


@pytest.fixture(scope="module")
def host() -> PluginHost:
    """The four built-in plugins only, so messages listing the loaded architectures do not depend on the machine."""
    return PluginHost(only=["bert", "gpt", "transformer", "vit"], strict=False).load()


def problems(paths, host: PluginHost) -> list[str]:
    return [str(p) for p in load_registry(paths, host).problems]


def test_corpus_and_expectations_match():
    files = sorted(p.name for p in CORPUS.iterdir())
    assert files == sorted(EXPECTED)
    assert len(files) >= 30
    assert ", ".join(REASONS) == REASON_CODES


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_malformed_entry(name: str, host: PluginHost):
    path = CORPUS / name
    registry = load_registry([path], host)
    assert [str(p) for p in registry.problems] == [f"{path}:{line}" for line in EXPECTED[name]]
    assert len(registry) == 0


def test_whole_corpus_in_one_pass_and_a_valid_entry_still_loads(host: PluginHost):
    registry = load_registry([CORPUS, VALID], host)
    expected = [f"{CORPUS / name}:{line}" for name in sorted(EXPECTED) for line in EXPECTED[name]]
    assert len(registry.problems) == len(expected) == sum(map(len, EXPECTED.values())) == 52
    assert [str(p) for p in registry.problems] == expected
    assert list(registry.entries) == ["bert-base-uncased"]
    assert registry.get_model("bert-base-uncased").params == 109_482_240


def test_messages_do_not_depend_on_libyaml(monkeypatch, host: PluginHost):
    import yaml

    from archzoo import files as module

    with_libyaml = problems([CORPUS], host)
    monkeypatch.setattr(module, "_LOADER", yaml.SafeLoader)
    assert problems([CORPUS], host) == with_libyaml


def test_python_tag_is_never_executed(tmp_path: Path, host: PluginHost):
    marker = tmp_path / "pwned"
    entry = tmp_path / "evil.yaml"
    entry.write_text(
        "architecture: bert\n"
        "title: Evil\n"
        "summary: Runs a command when loaded with an unsafe loader.\n"
        f'tags: !!python/object/apply:os.system ["touch {marker}"]\n'
        "year: 2019\n"
        f'config: !!python/object/apply:pathlib.Path.touch [!!python/object/apply:pathlib.Path ["{marker}"]]\n'
    )
    assert problems([entry], host) == [
        f"{entry}:4: tags: YAML tag '!!python/object/apply:os.system' {TAG}",
        f"{entry}:6: config: YAML tag '!!python/object/apply:pathlib.Path.touch' {TAG}",
    ]
    assert not marker.exists()


def test_duplicate_ids_across_folders(tmp_path: Path, host: PluginHost):
    first, second = tmp_path / "a" / "same.yaml", tmp_path / "b" / "same.yaml"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(VALID.read_text())
    registry = load_registry([tmp_path / "a", tmp_path / "b"], host)
    assert [str(p) for p in registry.problems] == [
        f"{second}:1: duplicate id 'same': also defined by {first}; ids are file names and must be unique across "
        "folders, so rename one"
    ]
    assert [e.path for e in registry] == [first]


def test_duplicate_id_is_reported_even_when_the_first_file_is_invalid(tmp_path: Path, host: PluginHost):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "same.yaml").write_text("")
    (tmp_path / "b" / "same.yaml").write_text(VALID.read_text())
    assert problems([tmp_path / "a", tmp_path / "b"], host) == [
        f"{tmp_path / 'a' / 'same.yaml'}:1: {EMPTY}",
        f"{tmp_path / 'b' / 'same.yaml'}:1: duplicate id 'same': also defined by {tmp_path / 'a' / 'same.yaml'}; "
        "ids are file names and must be unique across folders, so rename one",
    ]


def test_dot_dot_ids_and_paths(tmp_path: Path, host: PluginHost):
    # a file named '...yaml' has the id '..'
    dots = tmp_path / "...yaml"
    dots.write_text(VALID.read_text())
    assert problems([tmp_path], host) == [
        f"{dots}:1: id '..' (the file name) {SLUG_RULE}; rename the file, e.g. 'bert-base-uncased.yaml'"
    ]
    # a '..' segment in a path given to the loader is only a path: the id is still the file's name,
    # and the same file named twice (directly and through its folder) loads once
    dots.unlink()
    (tmp_path / "sub").mkdir()
    entry = tmp_path / "bert-base.yaml"
    entry.write_text(VALID.read_text())
    registry = load_registry([tmp_path / "sub" / ".." / "bert-base.yaml", tmp_path], host)
    assert registry.problems == []
    assert list(registry.entries) == ["bert-base"]
    # a path that does not exist
    missing = tmp_path / "sub" / ".." / "nope.yaml"
    assert problems([missing], host) == [
        f"{missing}:1: no such file or folder; check the path (registry folders come from --registry, ARCHZOO_REGISTRY or ./registry)"
    ]


def test_every_problem_of_one_file_is_reported(tmp_path: Path, host: PluginHost):
    entry = tmp_path / "many.yaml"
    entry.write_text(
        "architecture: bert\n"
        "title: ''\n"
        "summary: Several things wrong at once.\n"
        "year: 1900\n"
        "config:\n"
        "  n_heads: 0\n"
        "  widht: 768\n"
    )
    assert problems([entry], host) == [
        f"{entry}:2: title: must not be empty",
        f"{entry}:4: year: must be at least 1950, got 1900",
        f"{entry}:6: config.n_heads: must be greater than 0, got 0",
        f"{entry}:7: config.widht: unknown key; valid keys: {BERT_KEYS}",
    ]


def test_a_missing_configuration_key_is_to_be_added_under_config(tmp_path: Path):
    gpt = PluginHost(only=["gpt"]).load().architecture("gpt")

    class NeedsWidth(gpt.config_model):
        width: int = Field(description="a key with no default")

    module = types.ModuleType("archzoo_needs_width")
    module.register_architectures = hookimpl(
        lambda register: register(
            gpt.model_copy(update={"name": "needs_width", "config_model": NeedsWidth, "hf_model_types": {}})
        )
    )
    host = PluginHost(only=["extra"], extra_plugins={"extra": module}).load()
    entry = tmp_path / "needs.yaml"
    entry.write_text(
        "architecture: needs_width\ntitle: Needs width\nsummary: A key without a default.\n"
        "year: 2020\nconfig:\n  n_layers: 2\n"
    )
    assert problems([entry], host) == [
        f"{entry}:5: config.width: required key missing; add 'width:' under 'config' (a key with no default)"
    ]


def test_explicit_null_for_a_derived_key_loads_as_leaving_it_out(tmp_path: Path, host: PluginHost):
    # BERT's pooler: null means "as the head needs" (the plugin's documented default), as with --set pooler=null
    written = tmp_path / "with-null.yaml"
    written.write_text(VALID.read_text().replace("config: {}", "config:\n  pooler: null"))
    assert "  pooler: null\n" in written.read_text()
    registry = load_registry([written, VALID], host)
    assert registry.problems == []
    loaded = registry.get_model("with-null")
    assert loaded.config == registry.get_model("bert-base-uncased").config
    assert loaded.config.pooler is True


@pytest.mark.parametrize(
    ("text", "value", "rounding"),
    [
        ("110M", 110_000_000, 500_000),
        ("1.3B", 1_300_000_000, 50_000_000),
        ("1542M", 1_542_000_000, 500_000),
        ("65 (x10^6)", 65_000_000, 500_000),
        ("13.0B", 13_000_000_000, 50_000_000),
        ("85,802,501", 85_802_501, 0),
    ],
)
def test_parse_published(text: str, value: int, rounding: int):
    assert parse_published(text) == (value, rounding)


@pytest.mark.parametrize("text", ["110 MB", "about 110", "", "1e9", "110m"])
def test_parse_published_rejects(text: str):
    with pytest.raises(ValueError, match="110M"):
        parse_published(text)
