"""Looking one model up reads one file: `find_model` answers as a full load's `get_model` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from archzoo import files
from archzoo.cli import main
from archzoo.errors import RegistryError, UnknownModelError
from archzoo.host import PluginHost
from archzoo.registry import find_model, load_registry, reading

REPO = Path(__file__).resolve().parents[1]
ENTRY = "architecture: gpt\ntitle: GPT-2 small\nsummary: The 12-layer GPT-2.\nyear: 2019\nconfig:\n  n_layers: {n}\n"


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost().load()


def test_every_shipped_model_is_found_alone(host):
    full = load_registry([REPO / "registry"], host)
    for model_id, entry in full.entries.items():
        alone = find_model(model_id, [REPO / "registry"], host)
        assert (alone.id, alone.path, alone.params, alone.status) == (model_id, entry.path, entry.params, entry.status)


def test_only_the_named_file_is_read(tmp_path, host):
    """A broken neighbour does not matter: it is never read."""
    (tmp_path / "good.yaml").write_text(ENTRY.format(n=2))
    (tmp_path / "bad.yaml").write_text("title: [unclosed\n")
    assert (
        find_model("good", [tmp_path], host).params
        == load_registry([tmp_path / "good.yaml"], host).get_model("good").params
    )


def _messages(tmp_path, host, model_id):
    with pytest.raises((RegistryError, UnknownModelError)) as alone:
        find_model(model_id, [tmp_path], host)
    with pytest.raises((RegistryError, UnknownModelError)) as full:
        load_registry([tmp_path], host).get_model(model_id)
    return str(alone.value), str(full.value)


def test_an_invalid_entry_gives_the_same_error(tmp_path, host):
    (tmp_path / "bad.yaml").write_text(ENTRY.format(n="many"))
    alone, full = _messages(tmp_path, host, "bad")
    assert (
        alone
        == full
        == (
            f"registry entry 'bad' is invalid: {tmp_path}/bad.yaml:6: config.n_layers: expected an "
            f"integer, got the string 'many' (`archzoo validate {tmp_path}/bad.yaml` lists every "
            "problem)"
        )
    )


def test_an_unknown_id_names_the_closest(tmp_path, host):
    (tmp_path / "gpt2-medium.yaml").write_text(ENTRY.format(n=24))
    alone, full = _messages(tmp_path, host, "gpt2-mediun")
    assert alone == full == ("unknown model 'gpt2-mediun'; did you mean 'gpt2-medium'? (`archzoo list` shows every id)")


def test_an_id_defined_twice_is_an_error(tmp_path, host):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "twin.yaml").write_text(ENTRY.format(n=2))
    (tmp_path / "b" / "twin.yaml").write_text(ENTRY.format(n=3))
    with pytest.raises(RegistryError) as caught:
        find_model("twin", [tmp_path], host)
    assert str(caught.value) == (
        f"registry entry 'twin' is invalid: {tmp_path}/b/twin.yaml:1: duplicate id 'twin': also defined by "
        f"{tmp_path}/a/twin.yaml; ids are file names and must be unique across folders, so rename one "
        f"(`archzoo validate {tmp_path}/b/twin.yaml` lists every problem)"
    )


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Every registry file read, by path (the one reader `read_entry_yaml` and the index use)."""
    seen: list[str] = []
    real = files.read_user_bytes

    def counting(path, *args, **kwargs):
        seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(files, "read_user_bytes", counting)
    monkeypatch.setattr(reading, "read_user_bytes", counting)
    return seen


@pytest.fixture
def zoo(tmp_path) -> Path:
    """Fifty entries in two folders, and a broken one that would fail any load that parses it."""
    for n in range(1, 51):
        folder = tmp_path / "zoo" / ("deep" if n % 2 else "shallow")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"gpt-{n}.yaml").write_text(ENTRY.format(n=n))
    (tmp_path / "zoo" / "broken.yaml").write_text("title: [unclosed\n")
    return tmp_path / "zoo"


def test_find_model_reads_one_file(zoo, host, reads):
    assert find_model("gpt-7", [zoo], host).id == "gpt-7"
    assert reads == [str(zoo / "deep" / "gpt-7.yaml")]


def test_show_reads_one_file(zoo, reads, capsys):
    assert main(["show", "gpt-8", "--json", "--registry", str(zoo)]) == 0
    assert reads == [str(zoo / "shallow" / "gpt-8.yaml")]
    assert '"id": "gpt-8"' in capsys.readouterr().out


def test_validate_file_reads_that_file_only(zoo, reads, capsys):
    assert main(["validate", str(zoo / "deep" / "gpt-9.yaml")]) == 0
    assert reads == [str(zoo / "deep" / "gpt-9.yaml")]
    assert capsys.readouterr().out == "1 entry valid\n"
