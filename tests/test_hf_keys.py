"""archzoo.hf_keys: which config attributes transformers reads, derived from its source and kept under test.

The committed data (archzoo.hf_keys_read) must be what the derivation gives on the pinned transformers, so
a release that starts reading a key fails here. The derivation itself is checked on small sources (each
way a name can reach ``getattr``), and on the real one with a read added. Then the decision it backs: a
key of a published file that is no field of its configuration class and that transformers never reads is
ignored, and changing its value changes neither transformers' parameter count nor its FlopCounterMode
FLOPs (models built from the file on the meta device, the mixtures of experts, whose routing reads
values, with small weights on the CPU).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from archzoo import hf_keys, hf_keys_read
from archzoo.errors import HFConfigError
from archzoo.hf_config import hf_table, load_hf_config
from archzoo.host import PluginHost
from archzoo.report import make_report
from transformers_models import build_model, forward_flops, n_params

DATA = Path(__file__).parent / "data"
PLAIN = json.loads((DATA / "hf_keys" / "plain_attributes.json").read_text(encoding="utf-8"))
PUBLISHED = DATA / "hf_published"
SEQ_LEN = 8


@pytest.fixture(scope="module")
def host():
    return PluginHost().load()


# ---- the committed data is the derivation's -----------------------------------------------------------


def _committed() -> hf_keys.Derivation:
    return hf_keys.Derivation(
        hf_keys_read.TRANSFORMERS_VERSION,
        hf_keys_read.READS,
        hf_keys_read.READ_PATTERNS,
        hf_keys_read.MODEL_SCOPE,
        hf_keys_read.CONFIG_SCOPE,
        hf_keys_read.MEMBERS,
        hf_keys_read.FIELD_TYPES,
        hf_keys_read.FIELD_VALIDATORS,
    )


def test_committed_module_is_the_generators_text():
    """No hand edit: the committed file is exactly what `render` writes for its own data."""
    text = (Path(hf_keys_read.__file__)).read_text(encoding="utf-8")
    assert text == hf_keys.render(_committed())


def _decisions(derivation: hf_keys.Derivation) -> dict[str, dict[str, frozenset[str]]]:
    """What the decisions rest on, per model type: the keys its code and its configuration code read, the
    patterns, and the configuration classes' member names (which modules they come from does not matter)."""
    out = {}
    for model_type, modules in derivation.model_scope.items():
        config = derivation.config_scope[model_type]
        out[model_type] = {
            "model code reads": frozenset().union(*(derivation.reads[m] for m in modules)),
            "configuration code reads": frozenset().union(*(derivation.reads[m] for m in config)),
            "patterns": frozenset().union(*(derivation.patterns.get(m, frozenset()) for m in (*modules, *config))),
            "members": frozenset().union(*(derivation.members.get(m, frozenset()) for m in config)),
        }
    return out


@pytest.mark.reference
def test_committed_reads_are_the_pinned_transformers(host):
    """Derived again from the installed transformers. At the pinned release the data is exactly what it
    derives: a type whose code reads one more key, or one fewer, fails (so does a new member of its
    configuration class). On another release (`make test-latest`) only what would make an ignored key wrong
    fails: a key its code or configuration code newly reads, a new pattern, a new member. A name no longer
    read or defined makes archzoo refuse a key it could ignore: stale, never a wrong count."""
    transformers = pytest.importorskip("transformers")
    pinned = transformers.__version__ == hf_keys_read.TRANSFORMERS_VERSION
    derived, committed = _decisions(hf_keys.derive(hf_keys.supported_model_types())), _decisions(_committed())
    assert set(derived) == set(committed)
    for model_type, parts in derived.items():
        for part, names in parts.items():
            before = committed[model_type][part]
            changed = names != before if pinned else bool(names - before)
            assert not changed, (
                f"{model_type}: {part}: now {sorted(names - before)}, no longer {sorted(before - names)} "
                f"(transformers {transformers.__version__}, data of {hf_keys_read.TRANSFORMERS_VERSION}); run "
                "`python -m archzoo.hf_keys src/archzoo/hf_keys_read.py`"
            )
    # every type a plugin reads with a table was derived (and the data keeps types of plugins not installed)
    tabled = {t for t, found in host.hf_readers().items() if hf_table(found.reader) is not None}
    assert tabled <= set(committed)


@pytest.mark.reference
def test_committed_field_types_are_the_pinned_transformers():
    """Each type's field annotations, derived from the source by ast, are the ones the strict validation of the
    installed classes checks: the dataclass fields whose type is evaluated (a string annotation is skipped by
    huggingface_hub's type_validator), each written as the committed text; and the committed data is the
    derivation's at the pinned release."""
    import dataclasses

    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    derived = hf_keys.field_types(hf_keys.supported_model_types())
    if transformers.__version__ == hf_keys_read.TRANSFORMERS_VERSION:
        assert derived == hf_keys_read.FIELD_TYPES
    for model_type, fields in derived.items():
        config_class = CONFIG_MAPPING[model_type]
        checked = {f.name: f.type for f in dataclasses.fields(config_class) if not isinstance(f.type, str)}
        assert set(fields) == set(checked), model_type
        for name, annotation in fields.items():
            shown = str(checked[name]) if not isinstance(checked[name], type) else checked[name].__name__
            # typing prints the classes by their qualified names: compare the words, not the module paths
            words = shown.replace("typing.", "").replace("transformers.modeling_rope_utils.", "")
            words = words.replace("transformers.models.clip.configuration_clip.", "")
            assert words == annotation, (model_type, name, words, annotation)


@pytest.mark.reference
def test_committed_field_validators_are_the_pinned_transformers():
    """The fields whose value transformers validates beyond its type are exactly those the data names, each with
    the bounds the installed validator closes over (LlamaConfig's initializer_range: 0.0 to 1.0)."""
    import ast
    import dataclasses
    import inspect

    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    derived = hf_keys.field_validators(hf_keys.supported_model_types())
    if transformers.__version__ == hf_keys_read.TRANSFORMERS_VERSION:
        assert derived == hf_keys_read.FIELD_VALIDATORS
    for model_type in hf_keys.supported_model_types():
        installed = {
            f.name: f.metadata["validator"]
            for f in dataclasses.fields(CONFIG_MAPPING[model_type])
            if f.metadata.get("validator")
        }
        assert set(installed) == set(derived.get(model_type, {})), model_type
        for name, validators in installed.items():
            (validator,) = validators
            assert validator.__qualname__ == "interval.<locals>._inner", (model_type, name)
            closed = inspect.getclosurevars(validator).nonlocals
            call = ast.parse(derived[model_type][name], mode="eval").body
            given = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
            assert given.get("min", float("-inf")) == closed["min"], (model_type, name)
            assert given.get("max", float("inf")) == closed["max"], (model_type, name)
            assert given.get("exclude_min", False) == closed["exclude_min"], (model_type, name)
            assert given.get("exclude_max", False) == closed["exclude_max"], (model_type, name)


@pytest.mark.reference
def test_computed_names_reach_what_their_reasons_say(host):
    """COMPUTED_NAMES' claims, checked: a supported class's sub-configurations (CLIP's text_config and
    vision_config) are each read by a nested table of its own, and the outputs a model class can record are among
    the output_* keys listed for the recorder's read."""
    transformers = pytest.importorskip("transformers")
    import importlib

    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    listed = set(hf_keys.COMPUTED_NAMES["wrapper: getattr(self.config, f'output_{k}', False)"][0])
    for model_type, module_name in hf_keys.supported_model_types().items():
        nested = hf_table(host.hf_readers()[model_type].reader).nested
        assert set(CONFIG_MAPPING[model_type].sub_configs) <= set(nested), model_type
        module = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
        for name in dir(module):
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel):
                outputs = getattr(cls, "_can_record_outputs", None) or {}
                assert {f"output_{k}" for k in outputs} <= listed, (model_type, name, outputs)


@pytest.mark.reference
@pytest.mark.parametrize("key", ["use_return_dict", "sub_configs", "to_dict"])
def test_a_key_naming_a_member_of_the_class_is_refused_as_transformers_fails(host, tmp_path, key):
    """A key named like a property without setter, or a method, breaks transformers' loading: archzoo refuses."""
    transformers = pytest.importorskip("transformers")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", **BASES["gpt2"], key: True}))
    with pytest.raises(HFConfigError) as caught:
        load_hf_config(path, host)
    assert str(caught.value) == (
        f"{path}: {key}: names a method, property or class variable of transformers 5.23's GPT2Config "
        "(configuration_utils), which the key would replace on the loaded config: transformers fails to load the "
        "file, or its code finds the value in place of the member, so archzoo refuses it; remove the key"
    )
    with pytest.raises((AttributeError, TypeError)):
        transformers.AutoConfig.from_pretrained(str(path))


def test_the_tables_not_read_claims_hold(host):
    """Each key a plugin's table ignores as not read by transformers is read by no module of the type."""
    from archzoo.hf_config import NOT_READ, _reader_of

    checked = 0
    for model_type, found in host.hf_readers().items():
        table = hf_table(found.reader)
        if table is None or model_type not in hf_keys_read.MODEL_SCOPE:
            continue
        for key, why in table.ignored.items():
            if why.startswith(NOT_READ) or "does not read it" in why:
                assert _reader_of(model_type, key) is None, (model_type, key, why)
                checked += 1
    assert checked >= 20  # the BERT, GPT, BLOOM, OPT and T5 tables' legacy keys


# ---- the derivation on small sources ----------------------------------------------------------------


def _reads(source: str, config_module: bool = False) -> tuple[set[str], set[str]]:
    found = hf_keys._reads("example", ast.parse(source), config_module)
    return set(found.keys), set(found.patterns)


@pytest.mark.parametrize(
    "source, keys, patterns",
    [
        ("def f(config):\n    return config.hidden_size", {"hidden_size"}, set()),
        ("def f(self):\n    return self.config.vocab_size + self.text_config.d", {"vocab_size", "d"}, set()),
        ("def f(config):\n    return getattr(config, 'a', None) or hasattr(config, 'b')", {"a", "b"}, set()),
        ("def f(config, m):\n    return getattr(config, f'{m}_token_id')", set(), {"*_token_id"}),
        ("def f(config):\n    for k in ['x', 'y']:\n        getattr(config, k)", {"x", "y"}, set()),
        ("def f(config):\n    names = ('p', 'q')\n    for k in names:\n        getattr(config, k)", {"p", "q"}, set()),
        ("def f(config, key='head_dim'):\n    return getattr(config, key)", {"head_dim"}, set()),
        (
            "def f(config):\n    for a, b in zip(['u', 'v'], [1, 2]):\n        getattr(config, a)",
            {"u", "v"},
            set(),
        ),
        (
            "def f(config, other):\n    xs = ['m', 'n']\n    xs = [a for a in dir(other) if a in xs]\n"
            "    return [getattr(config, a) for a in xs]",
            {"m", "n"},
            set(),
        ),
        # self is the config only inside a configuration class of a configuration module
        ("class LlamaConfig:\n    def f(self):\n        return self.rope_theta", set(), set()),
        # a write is not a read
        ("def f(config):\n    config.written = 1", set(), set()),
    ],
)
def test_derivation_follows_each_way_to_a_name(source, keys, patterns):
    assert _reads(source) == (keys, patterns)


def test_a_configuration_class_reads_through_self():
    keys, _ = _reads("class LlamaConfig:\n    def f(self):\n        return getattr(self, 'rope_theta', None)", True)
    assert keys == {"rope_theta"}


def test_a_name_it_cannot_follow_stops_the_derivation():
    with pytest.raises(RuntimeError, match=r"example:2: f: getattr\(config, name\)"):
        _reads("def f(config, name):\n    return getattr(config, name)")


@pytest.mark.reference
def test_a_release_that_starts_reading_a_key_is_caught(host, tmp_path, monkeypatch):
    """modeling_llama with one more read: the derivation finds it, and the key is then refused, not ignored."""
    pytest.importorskip("transformers")
    tree = hf_keys._Source.tree

    def with_probe(self, dotted):
        parsed = tree(self, dotted)
        if dotted == "transformers.models.llama.modeling_llama" and not getattr(parsed, "probed", False):
            parsed.body += ast.parse("def _probe(config):\n    return config.is_llama_config").body
            parsed.probed = True  # type: ignore[attr-defined]
        return parsed

    monkeypatch.setattr(hf_keys._Source, "tree", with_probe)
    derived = hf_keys.derive({"llama": "llama"})
    assert "is_llama_config" in derived.reads["transformers.models.llama.modeling_llama"]
    assert "is_llama_config" not in hf_keys_read.READS["transformers.models.llama.modeling_llama"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "is_llama_config": True}))
    assert _disposition(load_hf_config(path, host), "is_llama_config").disposition == "ignored"
    monkeypatch.setattr(hf_keys_read, "READS", dict(derived.reads))
    with pytest.raises(
        HFConfigError, match=r"is_llama_config: not a field of transformers 5\.23's LlamaConfig, but kept"
    ):
        load_hf_config(path, host)


# ---- the decision it backs: ignored keys change no figure -------------------------------------------------

_DECODER = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=80,
    max_position_embeddings=24,
    pad_token_id=None,
)
_BART = dict(
    vocab_size=97,
    d_model=48,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=3,
    decoder_attention_heads=3,
    encoder_ffn_dim=80,
    decoder_ffn_dim=80,
    max_position_embeddings=24,
)
_MOE = dict(_DECODER, intermediate_size=40, num_experts_per_tok=2)
#: a small model of each type, so that the two builds of a flip test take a fraction of a second
BASES: dict[str, dict[str, Any]] = {
    **{t: dict(_DECODER) for t in ("llama", "mistral", "qwen2", "gemma", "olmo", "phi3")},
    "mixtral": dict(_MOE, num_local_experts=4),
    "qwen2_moe": dict(_MOE, moe_intermediate_size=40, shared_expert_intermediate_size=56, num_experts=4),
    "bart": dict(_BART),
    "mbart": dict(_BART),
    "gpt2": dict(vocab_size=97, n_embd=48, n_layer=1, n_head=3, n_positions=24),
    "bert": dict(vocab_size=97, hidden_size=48, num_hidden_layers=1, num_attention_heads=3, intermediate_size=80),
    "roberta": dict(vocab_size=97, hidden_size=48, num_hidden_layers=1, num_attention_heads=3, intermediate_size=80),
    "opt": dict(
        vocab_size=97,
        hidden_size=48,
        num_hidden_layers=1,
        ffn_dim=80,
        num_attention_heads=3,
        max_position_embeddings=24,
        word_embed_proj_dim=48,
    ),
}
_ON_CPU = ("mixtral", "qwen2_moe")  # routing reads the router's scores, which the meta device has none of


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "_changed"
    return None if value is not None else 1


def _flips() -> list:
    cases = {}
    for model_type, keys in PLAIN.items():
        if model_type.startswith("_"):
            continue
        for key, entry in keys.items():
            a, b = entry["values"]
            cases[(model_type, key)] = (a, b, entry["source"])
    # every plain attribute of the published files, once per type and key
    for path in sorted(PUBLISHED.glob("*.json")) if PUBLISHED.is_dir() else []:
        data = json.loads(path.read_text(encoding="utf-8"))
        model_type = data.get("model_type")
        if model_type not in BASES:
            continue
        try:
            reading = load_hf_config(path, PluginHost().load())
        except HFConfigError:
            continue  # refused files are another test's business; here only what archzoo ignores
        for key in reading.keys:
            if (
                key.detail.startswith("stored as a plain attribute, never read by")
                and (model_type, key.key) not in cases
            ):
                cases[(model_type, key.key)] = (data[key.key], _changed(data[key.key]), f"{path.name}")
    return [pytest.param(t, k, a, b, id=f"{t}-{k}") for (t, k), (a, b, _) in sorted(cases.items())]


def _disposition(reading, key: str):
    return next(k for k in reading.keys if k.key == key)


def _transformers_figures(path: Path, model_type: str, model_class: str) -> tuple[int, int]:
    """Parameters and FlopCounterMode FLOPs of ``model_class`` built from the file by transformers."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.from_pretrained(str(path))
    model = build_model(transformers, model_class, config, "cpu" if model_type in _ON_CPU else "meta")
    return n_params(model), forward_flops(model, SEQ_LEN, random_ids=model_type in _ON_CPU)


@pytest.mark.reference
@pytest.mark.parametrize("model_type, key, value, other", _flips())
def test_an_ignored_key_changes_no_figure(host, tmp_path, model_type, key, value, other):
    """archzoo ignores the key as a plain attribute; transformers' parameters and FLOPs are the same with
    the published value and a changed one, and are archzoo's."""
    figures = []
    for i, v in enumerate((value, other)):
        path = tmp_path / f"config{i}.json"
        path.write_text(json.dumps({"model_type": model_type, **BASES[model_type], key: v}))
        reading = load_hf_config(path, host)
        seen = _disposition(reading, key)
        assert seen.disposition == "ignored" and seen.detail.startswith("stored as a plain attribute, never read by"), (
            seen
        )
        ours = make_report(reading.architecture, reading.config, SEQ_LEN)
        figures.append(_transformers_figures(path, model_type, reading.model_class))
        assert (ours.params, ours.flops) == figures[-1]
    assert figures[0] == figures[1]


def test_every_type_with_flips_has_a_base():
    assert {t for t in PLAIN if not t.startswith("_")} <= set(BASES)
    for keys in (v for t, v in PLAIN.items() if not t.startswith("_")):
        for key, entry in keys.items():
            assert len(entry["values"]) == 2 and entry["values"][0] != entry["values"][1], key
