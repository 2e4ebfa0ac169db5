"""The data the compare page and the what-if calculators read (archzoo.site.explore): the exported polynomials,
evaluated in Python with the exported structure alone, give `archzoo count --set ... --json`'s figures for
changed values; keys that change the block tree's structure are refused rather than answered wrongly."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pytest

from archzoo.cli import main
from archzoo.host import get_host
from archzoo.report import make_report
from archzoo.site import explore
from shipped import shipped_registry

pytestmark = pytest.mark.sweep

REPO = Path(__file__).resolve().parents[1]


def _count(capsys, arch: str, values: dict[str, int], seq_len: int | None = None) -> dict:
    """`archzoo count ARCH --set KEY=VALUE ... [--seq-len N] --json`, run in this process."""
    args = ["count", arch, "--json"]
    for key, value in values.items():
        args += ["--set", f"{key}={value}"]
    if seq_len is not None:
        args += ["--seq-len", str(seq_len)]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _figures(report: dict) -> dict[str, int]:
    return {
        "params": report["params"]["total"],
        "active": report["params"]["active"],
        "flops": report["flops"]["forward"],
        "kv_cache": report["memory"]["kv_cache"]["elements_per_token"],
        "cross_kv_cache": report["memory"]["kv_cache"]["cross_elements_per_source_token"],
    }


@functools.cache
def _whatif_file(arch_name: str) -> str:
    """The architecture's export as written (probing every key of every architecture is most of this module's
    time, so each is probed once and its text shared; every test reads its own copy back)."""
    data = explore.architecture_data(get_host().architectures[arch_name])
    assert data is not None
    return explore.to_json(data)


def _whatif(arch_name: str) -> dict:
    # what the browser gets: the file as written, read back (no Python object survives the trip)
    return json.loads(_whatif_file(arch_name))["whatif"]


# what the issue asks of every calculator: the common keys of these architectures are answered exactly
CHANGES = [
    ("bert", {"n_layers": 24, "d_model": 1024, "n_heads": 16, "d_ff": 4096}, None),
    ("bert", {"vocab_size": 50265, "max_positions": 514, "type_vocab_size": 1}, 128),
    ("gpt", {"n_layers": 48, "d_model": 1600, "n_heads": 25}, None),
    ("gpt", {"vocab_size": 50304, "max_positions": 2048}, 1000),
    ("llama", {"n_kv_heads": 8}, None),
    ("llama", {"n_kv_heads": 1, "n_layers": 16, "d_ff": 8192}, 512),
    ("llama", {"d_model": 4096, "n_heads": 32, "n_kv_heads": 8}, None),
    ("moe", {"n_experts": 16, "top_k": 4, "n_kv_heads": 4}, 4096),
    ("vit", {"n_layers": 24, "d_model": 1024, "n_heads": 16, "d_ff": 4096, "num_classes": 10}, None),
    ("t5", {"n_layers": 12, "d_model": 768, "n_heads": 12, "d_ff": 3072}, None),
    ("opt", {"n_layers": 24, "d_model": 1536, "d_ff": 6144}, None),
    ("bloom", {"n_layers": 30, "vocab_size": 1000}, 4096),
]


@pytest.mark.parametrize(
    ("arch", "values", "seq_len"), CHANGES, ids=[f"{a}-{i}" for i, (a, _, _) in enumerate(CHANGES)]
)
def test_exported_polynomials_give_archzoo_counts_figures(capsys, arch, values, seq_len):
    data = _whatif(arch)
    for key in values:
        field = next(f for f in data["fields"] if f["key"] == key)
        assert field["refused"] == "", (key, field["refused"])
    assert explore.evaluate(data, values, seq_len) == _figures(_count(capsys, arch, values, seq_len))


def test_unchanged_configuration_is_the_published_count():
    """bert-base-uncased's what-if, as exported, evaluates to transformers' BertModel(BertConfig()) count:
    109,482,240 parameters (sum(p.numel()) on the meta device, transformers 5.23)."""
    registry = shipped_registry()
    entry = registry.get_model("bert-base-uncased")
    data = json.loads(explore.to_json(explore.model_data(entry)))
    assert explore.evaluate(data["whatif"], {})["params"] == 109_482_240
    assert data["figures"]["params"] == "109482240"
    assert data["tree"][0]["params"] == "109482240" and data["tree"][0]["depth"] == 0


def test_random_changes_agree_with_count():
    """Random values of every key the export accepts, for every architecture, against the rebuilt tree
    (`archzoo count`'s own code path, make_report): equal, or refused by the export."""
    rng = random.Random(12)
    host = get_host()
    checked = 0
    for name, arch in host.architectures.items():
        data = _whatif(name)
        free = [f for f in data["fields"] if not f["refused"]]
        for _ in range(6):
            values = {
                f["key"]: max(f["min"], f["value"] * rng.choice([1, 2, 3]) // rng.choice([1, 2, 4])) for f in free
            }
            values = {k: v for k, v in values.items() if rng.random() < 0.6}
            try:
                config = arch.config_model.model_validate({**data["config"], **values})
            except ValueError:  # an invalid configuration (pydantic's ValidationError): archzoo count refuses it too
                continue
            report = make_report(arch, config)
            try:
                predicted = explore.evaluate(data, values)
            except explore.Refused:
                continue
            assert predicted == _figures(report.to_dict()), (name, values)
            checked += 1
    assert checked >= 20


def test_structure_changes_are_refused():
    """Keys whose change adds or removes blocks are refused with a reason, never answered with a number:
    ViT's image and patch sizes (N follows the number of patches), a mixture of experts' shared expert
    (0 = none), BART's two feed-forward widths (one symbol while they are equal)."""
    vit = _whatif("vit")
    refused = {f["key"]: f["refused"] for f in vit["fields"] if f["refused"]}
    assert set(refused) >= {"image_size", "patch_size"}
    with pytest.raises(explore.Refused, match=r"^image_size: "):
        explore.evaluate(vit, {"image_size": 384})
    moe = _whatif("moe")
    assert next(f for f in moe["fields"] if f["key"] == "d_ff_shared")["refused"]
    bart = _whatif("bart")
    assert next(f for f in bart["fields"] if f["key"] == "d_ff_encoder")["refused"]


def test_divisions_must_come_out_whole(capsys):
    """LLaMA's head width is d_model / n_heads (learnt from the probes: the plugin gives it no definition);
    a width the heads do not divide is refused, as archzoo count refuses it."""
    data = _whatif("llama")
    assert data["symbols"]["d_h"]["derived"] == "d_model / n_heads"
    with pytest.raises(explore.Refused, match=r"not a whole number"):
        explore.evaluate(data, {"n_heads": 30})
    assert main(["count", "llama", "--set", "n_heads=30"]) != 0
    assert "n_heads" in capsys.readouterr().err


def test_rules_between_keys_are_refused(capsys):
    """BERT's heads must divide its width: a figure for d_model 1024 with 12 heads would be a number for a
    model archzoo count refuses to build."""
    data = _whatif("bert")
    assert {"key": "d_model", "divisor": "n_heads"} in data["rules"]
    with pytest.raises(explore.Refused, match=r"^d_model 1,024 is not divisible by n_heads 12"):
        explore.evaluate(data, {"d_model": 1024})
    assert main(["count", "bert", "--set", "d_model=1024"]) != 0
    assert "not divisible" in capsys.readouterr().err


def test_out_of_range_values_are_refused():
    data = _whatif("gpt")
    with pytest.raises(explore.Refused, match=r"^n_layers: expected a whole number from 1"):
        explore.evaluate(data, {"n_layers": 0})
    with pytest.raises(explore.Refused, match=r"^N: expected a whole number from 1 to 1,024"):
        explore.evaluate(data, {}, 1025)


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [("d / h", {"d": 768, "h": 12}, 64), ("(a + b)²", {"a": 2, "b": 3}, 25), ("2 * x - 1", {"x": 5}, 9)],
)
def test_expressions(text, values, expected):
    assert explore.evaluate_expression(text, values) == expected


def test_definitions_that_would_grow_without_end_are_refused():
    """A plugin's definition is text it controls: repeated squaring or a long nesting is refused, not run."""
    with pytest.raises(explore.Refused, match="beyond 1024 bits"):
        explore.evaluate_expression("d" + "²" * 40, {"d": 3})
    with pytest.raises(explore.Refused, match="longer than the 200"):
        explore.evaluate_expression("(" * 5000 + "d" + ")" * 5000, {"d": 3})
    assert explore.evaluate_expression("d²²", {"d": 3}) == 81


def test_unreadable_definitions_are_refused():
    with pytest.raises(explore.Refused):
        explore.evaluate_expression("sqrt(d)", {"d": 4})
    with pytest.raises(explore.Refused):
        explore.evaluate_expression("d / 5", {"d": 12})


def test_compare_page_loads_only_local_data():
    text = explore.compare_page([])
    assert 'class="archzoo-compare"' in text and 'data-models="../models.json"' in text
    assert "http" not in text


# ---- one probe per structure: what each model's export would be, probed on its own --------------------


#: GPT-2's four sizes differ only in integer keys: the first is probed, the three others take its structure
GPT2_SIZES = ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"]
SHIPPED = sorted(e.id for e in shipped_registry())
#: the order a build would meet them in (any order will do: a structure is taken only where the model obeys it),
#: GPT-2's sizes first so that a few exports reach a reused structure
EXPORTED = (
    GPT2_SIZES
    + [m for m in SHIPPED if m not in GPT2_SIZES]
    + [f"architecture:{a}" for a in sorted(get_host().architectures)]
)


class SharedExports:
    """Every shipped model's and architecture's what-if as a build makes it (structures shared by signature,
    one `WhatifProbes` in `EXPORTED` order), and the ids whose export took a structure learnt from another
    configuration; made as far along that order as a test asks, so one case need not export the whole
    registry (the fast subset runs one)."""

    def __init__(self) -> None:
        self.probes = explore.WhatifProbes()
        self.out: dict[str, str] = {}
        self.reused: set[str] = set()
        self._done = 0

    def up_to(self, export_id: str) -> SharedExports:
        """Export every id of `EXPORTED` up to ``export_id`` (those before it first, as a build would)."""
        host = get_host()
        registry = shipped_registry()
        while self._done <= EXPORTED.index(export_id):
            current = EXPORTED[self._done]
            before = self.probes.reused
            if current.startswith("architecture:"):
                data = explore.architecture_data(host.architectures[current.partition(":")[2]], self.probes)
                if data is not None:
                    self.out[current] = explore.to_json(data["whatif"])
            else:
                self.out[current] = explore.to_json(
                    explore.model_data(registry.get_model(current), self.probes)["whatif"]
                )
            if self.probes.reused > before:
                self.reused.add(current)
            self._done += 1
        return self


@pytest.fixture(scope="module")
def shared_exports() -> SharedExports:
    return SharedExports()


# a reused export first: the fast subset's one case then compares a shared structure with its own probe
@pytest.mark.parametrize("model_id", ["gpt2-medium"] + [m for m in EXPORTED if m != "gpt2-medium"])
def test_shared_structure_gives_each_model_its_own_probed_export(shared_exports, model_id):
    """The export a build writes (the structure probed once per signature, filled with the model's values)
    is byte for byte what probing every key of that model alone gives (`explore.whatif`)."""
    exports = shared_exports.up_to(model_id)
    if model_id not in exports.reused:
        if model_id.startswith("architecture:") and model_id not in exports.out:
            assert explore.architecture_data(get_host().architectures[model_id.partition(":")[2]]) is None
        return  # probed on its own: it is `whatif`'s output already
    host = get_host()
    if model_id.startswith("architecture:"):
        arch = host.architectures[model_id.partition(":")[2]]
        config, name = arch.config_model(), ""
    else:
        entry = shipped_registry().get_model(model_id)
        arch, config, name = entry.architecture, entry.config, model_id
    assert exports.out[model_id] == explore.to_json(explore.whatif(arch, config, model=name))


def test_models_of_one_structure_share_one_probe(shared_exports):
    """GPT-2's four sizes differ only in integer keys: one probe serves all four."""
    exports = shared_exports.up_to(GPT2_SIZES[-1])
    assert {"gpt2-medium", "gpt2-large", "gpt2-xl"} <= exports.reused
    assert "gpt2" not in exports.reused  # the first of them is the one probed


@pytest.mark.slow  # it exports the whole registry: `make test`, whose cases above export it anyway
def test_a_build_of_the_registry_probes_fewer_structures_than_it_has_models(shared_exports):
    assert shared_exports.up_to(EXPORTED[-1]).probes.probed < len(SHIPPED)


def test_a_structure_the_model_does_not_obey_is_not_taken():
    """A learnt structure whose key-bound symbol would need another offset for this model is not applied:
    the model is probed on its own, and its export is its own."""
    registry = shipped_registry()
    small, medium = registry.get_model("gpt2"), registry.get_model("gpt2-medium")
    probes = explore.WhatifProbes()
    explore.model_data(small, probes)
    assert probes.probed == 1
    (learnt,) = probes._learnt.values()
    bound = next(name for name, s in learnt["symbols"].items() if s["key"] is not None)
    learnt["symbols"][bound]["offset"] += 1  # a structure gpt2-medium's values do not obey
    data = explore.model_data(medium, probes)["whatif"]
    assert (probes.probed, probes.reused) == (2, 0)
    assert explore.to_json(data) == explore.to_json(
        explore.whatif(medium.architecture, medium.config, model="gpt2-medium")
    )


def test_benchmark_entries_get_their_own_probed_export():
    """Synthetic configurations of the site benchmark (four architectures, widths, depths and heads that
    vary together): the shared structure gives each the export probing it alone gives."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_build", REPO / "benchmarks" / "site_build.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    host = get_host()
    probes = explore.WhatifProbes()
    exports = []
    for i in (0, 1, 2, 3, 77, 150, 301, 466, 523, 742, 901, 999):
        model_id, data = bench.entry(i)
        arch = host.architectures[data["architecture"]]
        config = arch.config_model.model_validate(data["config"])
        exports.append((arch, config, model_id, explore.to_json(probes.whatif(arch, config, model=model_id))))
    assert probes.reused > 0
    for arch, config, model_id, shared in exports:
        assert shared == explore.to_json(explore.whatif(arch, config, model=model_id)), model_id


# ---- configurations are validated as the CLI and the registry validate them ---------------------------------


def _hostile_gpt(fail_when):
    """GPT with a configuration model whose validator talks on stdout and raises a TypeError (which pydantic
    does not turn into a validation error) where ``fail_when(config)`` holds: a broken plugin."""
    from pydantic import model_validator

    arch = get_host().architectures["gpt"]

    class Hostile(arch.config_model):
        @model_validator(mode="after")
        def _crash(self):
            print("plugin chatter")
            if fail_when(self):
                raise TypeError("the plugin's own bug")
            return self

    return arch.model_copy(update={"config_model": Hostile})


def test_a_plugin_failing_on_a_probed_value_refuses_that_value_not_the_build(capsys):
    """The probes validate under the plugin guard (`parse_config`): a plugin raising on one probed value
    (n_layers doubled) makes that value invalid, as `archzoo count` refuses it, and its chatter goes to
    stderr; the other keys are still answered exactly."""
    arch = _hostile_gpt(lambda c: c.n_layers == 2 * 12)
    config = arch.config_model.model_validate({})
    capsys.readouterr()
    data = json.loads(explore.to_json(explore.whatif(arch, config)))
    out, err = capsys.readouterr()
    assert out == "" and "plugin chatter" in err
    refused = {f["key"]: f["refused"] for f in data["fields"]}
    assert refused["d_model"] == "" and refused["vocab_size"] == ""
    assert explore.evaluate(data, {"d_model": 1024, "n_heads": 16}) == _figures(
        _count(capsys, "gpt", {"d_model": 1024, "n_heads": 16})
    )


def test_an_architecture_whose_plugin_fails_on_its_defaults_gets_no_calculator():
    arch = _hostile_gpt(lambda c: True)
    assert explore.architecture_data(arch) is None


def test_a_configuration_with_a_tuple_key_gets_a_calculator(capsys):
    """A configuration model is strict, so a tuple key (Qwen2-MoE's dense_layers, DeBERTa's pos_att_type)
    refuses the list its JSON form holds: the probes rebuild the configuration from its Python form, and the
    browser still gets the list."""
    arch = get_host().architectures["gpt"]

    class WithTuple(arch.config_model):
        layers_listed: tuple[int, ...] = (1, 3)

    tupled = arch.model_copy(update={"config_model": WithTuple})
    data = explore.architecture_data(tupled)
    assert data is not None
    whatif = json.loads(explore.to_json(data))["whatif"]
    assert whatif["config"]["layers_listed"] == [1, 3]
    assert explore.evaluate(whatif, {"n_layers": 24}) == _figures(_count(capsys, "gpt", {"n_layers": 24}))
