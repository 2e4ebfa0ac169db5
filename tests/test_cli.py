"""The archzoo command: output, JSON schema, and one-line errors with a non-zero exit."""

import json
import re
from pathlib import Path

import pytest

from archzoo.cli import main
from plugin_selection import only_plugins


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_count_json_has_the_documented_keys(capsys):
    code, out, err = run(capsys, "count", "bert", "--seq-len", "128", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["schema"] == "archzoo.report/1"
    # transformers 5.23 BertModel(BertConfig()), meta device: 109,482,240 parameters;
    # FlopCounterMode, eager attention, batch 1, N=128: 22,348,431,360 FLOPs
    assert data["params"]["total"] == 109_482_240
    assert data["flops"]["forward"] == 22_348_431_360
    assert data["flops"]["seq_len"] == 128
    assert {"approx", "non_embedding"} <= set(data["params"])
    assert data["blocks"]["children"][0]["name"] == "embeddings"
    assert data["memory"]["kv_cache_bytes_per_token"] is None  # an encoder caches nothing


def test_count_human_output_has_summary_and_tree(capsys):
    code, out, _ = run(capsys, "count", "gpt")
    assert code == 0
    # transformers GPT2LMHeadModel(GPT2Config()): 124,439,808 parameters (the LM head is tied)
    assert "124,439,808" in out
    assert "KV cache per token" in out
    assert "12·L·d²" in out  # the leading-order GPT stack
    assert "layer (× 12)" in out  # the layer stack: parameters of all 12 copies (issue 10)


def test_count_with_config_file_and_set(tmp_path, capsys):
    config = tmp_path / "big.yaml"
    config.write_text("d_model: 1024\nn_heads: 16\nd_ff: 4096\n")
    code, out, err = run(capsys, "count", "transformer", "--config", str(config), "--json")
    assert code == 0, err
    # torch.nn.Transformer(1024, 16, 6, 6, 4096): 176,361,472 parameters
    assert json.loads(out)["params"]["total"] == 176_361_472
    code, out, err = run(capsys, "count", "transformer", "--set", "bias=false", "--json")
    # torch.nn.Transformer(bias=False): 44,056,576 parameters
    assert json.loads(out)["params"]["total"] == 44_056_576


def test_count_hf_config(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "n_layer": 24, "n_embd": 1024, "n_head": 16}))
    code, out, err = run(capsys, "count", "--hf-config", str(path), "--json")
    assert code == 0, err
    # transformers GPT2Model gpt2-medium: 354,823,168 parameters
    assert json.loads(out)["params"]["total"] == 354_823_168


@pytest.mark.parametrize(
    "args, message",
    [
        # a plugin with a name as close (bart) may be installed
        (["count", "bret"], "archzoo: error: unknown architecture 'bret'; did you mean 'bert'"),
        (["count", "bert", "--set", "n_layers=0"], "archzoo: error: --set: n_layers: must be greater than 0, got 0"),
        (["count", "bert", "--set", "n_layers=-3"], "archzoo: error: --set: n_layers: must be greater than 0, got -3"),
        (
            ["count", "bert", "--set", "d_model=wide"],
            "archzoo: error: --set: d_model: expected an integer, got the string 'wide'",
        ),
        (
            ["count", "gpt", "--set", "n_heads=7"],
            "archzoo: error: --set: n_heads: d_model 768 is not divisible by n_heads 7",
        ),
        (
            ["count", "vit", "--set", "patch_sz=14"],
            "archzoo: error: --set: patch_sz: unknown key; did you mean 'patch_size'?",
        ),
        (["count", "bert", "--set", "n_layers"], "archzoo: error: --set 'n_layers': expected KEY=VALUE"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_1(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 1
    assert out == ""
    assert err.startswith(message)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_malformed_config_file_names_file_and_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("d_model: 512\nn_heads: [8\n")
    code, _, err = run(capsys, "count", "transformer", "--config", str(path))
    assert code == 1
    assert err.startswith(f"archzoo: error: {path}:3: not valid YAML")


def test_missing_architecture_is_a_usage_error(capsys):
    code, _, err = run(capsys, "count")
    assert code == 2
    # every architecture the host knows, sorted (asked of the host: a new plugin changes no test)
    from archzoo.host import get_host

    names = ", ".join(get_host().architectures)
    assert "bert, " in names and names == ", ".join(sorted(get_host().architectures))
    assert f"name an architecture ({names}) or give --hf-config" in err


def test_help_teaches_with_examples(capsys):
    code, out, _ = run(capsys, "count", "--help")
    assert code == 0
    assert "archzoo count --hf-config" in out
    assert "--seq-len" in out


def test_plugins_json_lists_config_fields(capsys):
    code, out, _ = run(capsys, "plugins", "--json")
    assert code == 0
    data = json.loads(out)
    names = {p["name"] for p in data["plugins"]}
    assert names >= {"bert", "gpt", "transformer", "vit"}
    gpt = next(p for p in data["plugins"] if p["name"] == "gpt")["architectures"][0]
    fields = {f["key"]: f["default"] for f in gpt["config"]}
    assert fields["vocab_size"] == 50257 and fields["d_head"] is None


def test_show_unknown_model_names_the_closest(capsys):
    code, _, err = run(capsys, "show", "bert-base-uncase")
    assert code == 1
    assert err.startswith("archzoo: error: unknown model 'bert-base-uncase'; did you mean 'bert-base-uncased'")


def test_show_json_carries_published_and_report(capsys):
    code, out, _ = run(capsys, "show", "bert-base-uncased", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["published"]["params"] == "110M"  # BERT paper, Section 3
    assert data["report"]["params"]["total"] == 109_482_240
    assert data["reconciliation"]["reason"] == "rounded"


def test_show_counts_flops_at_the_seq_len_given(capsys):
    # bert-base-uncased is BertModel(BertConfig()); FlopCounterMode, eager attention, batch 1, N=128:
    # 22,348,431,360 FLOPs (as in test_count_json_has_the_documented_keys)
    code, out, err = run(capsys, "show", "bert-base-uncased", "--seq-len", "128", "--json")
    assert code == 0, err
    assert (json.loads(out)["report"]["flops"]["forward"], json.loads(out)["report"]["flops"]["seq_len"]) == (
        22_348_431_360,
        128,
    )
    code, out, err = run(capsys, "show", "bert-base-uncased", "--seq-len", "128")
    assert code == 0, err
    assert re.search(r"forward FLOPs \(N=128\) +22,348,431,360 ", out)


def test_schema_is_json_schema_of_an_entry(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0
    schema = json.loads(out)
    assert {"architecture", "published", "reconciliation"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_validate_reports_every_problem_and_exits_1(tmp_path, capsys):
    good = Path(__file__).resolve().parents[1] / "registry" / "bert" / "bert-base-uncased.yaml"
    (tmp_path / "bert-base-uncased.yaml").write_text(good.read_text())
    (tmp_path / "one.yaml").write_text(
        "architecture: bert\ntitle: One\nsummary: s\nyear: 2019\nconfig:\n  n_layerz: 2\n"
    )
    (tmp_path / "two.yaml").write_text("architecture: brt\ntitle: Two\nsummary: s\nyear: 2019\n")
    code, _, err = run(capsys, "validate", str(tmp_path))
    assert code == 1
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"{tmp_path / 'one.yaml'}:6: config.n_layerz: unknown key")
    assert lines[1].startswith(f"{tmp_path / 'two.yaml'}:1: architecture: unknown architecture 'brt'")
    assert lines[-1] == "2 problem(s) in 2 of 3 file(s)"


def test_validate_shipped_registry_is_clean(capsys):
    code, out, err = run(capsys, "validate")
    assert code == 0, err
    assert out.endswith("entries valid\n")


def test_list_json_and_csv_agree(capsys):
    code, out, _ = run(capsys, "list", "gpt2*", "--json", "--sort", "params")
    assert code == 0
    rows = json.loads(out)
    # transformers GPT2Model / GPT2LMHeadModel: gpt2 124,439,808 < medium 354,823,168 < large 774,030,080 < xl 1,557,611,200
    assert [r["params"] for r in rows] == [124_439_808, 354_823_168, 774_030_080, 1_557_611_200]
    assert [r["published"] for r in rows] == ["117M", "345M", "762M", "1542M"]  # Radford et al. 2019, as first printed
    code, out, _ = run(capsys, "list", "gpt2*", "--csv", "--sort", "params")
    assert out.splitlines()[0].startswith("id,architecture,title,year,params")
    assert len(out.splitlines()) == 5


def test_compare_shows_block_differences(capsys):
    code, out, _ = run(capsys, "compare", "bert-base-uncased", "distilbert-base-uncased", "--json")
    assert code == 0
    data = json.loads(out)
    blocks = {b["block"]: b for b in data["blocks"]}
    # DistilBertModel has no pooler and no token-type embeddings
    assert blocks["pooler"]["distilbert-base-uncased"] is None
    assert blocks["(total)"]["delta_vs_first"]["distilbert-base-uncased"] == 66_362_880 - 109_482_240


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["count", "vit", "--seq-len", "1000"],
            "archzoo: error: --seq-len 1000: vit always runs at N = 197 (196 patches",
        ),
        (["count", "gpt", "--seq-len", "1025"], "archzoo: error: --seq-len 1025: longer than the 1,024 positions"),
        (
            ["count", "gpt", "--set", "n_layers=true"],
            "archzoo: error: --set: n_layers: expected an integer, got the boolean true",
        ),
        (
            ["count", "bert", "--set", "head=mlmm"],
            "archzoo: error: --set: head: unknown value 'mlmm'; did you mean 'mlm'?",
        ),
        (["schema", "--out", "/"], "archzoo: error: --out /: is a folder"),
    ],
)
def test_more_bad_input(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 1 and out == ""
    assert err.startswith(message), err


def test_set_overrides_an_hf_config_before_validation(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "n_embd": 96, "n_head": 5, "n_layer": 1}))
    code, _, err = run(capsys, "count", "--hf-config", str(path))
    assert code == 1 and "n_heads: d_model 96 is not divisible by n_heads 5" in err
    code, out, err = run(capsys, "count", "--hf-config", str(path), "--set", "n_heads=4", "--json")
    assert code == 0, err
    assert json.loads(out)["config"]["n_heads"] == 4


def test_mlm_head_has_no_pooler_unless_asked(capsys):
    code, out, _ = run(capsys, "count", "bert", "--set", "head=mlm", "--json")
    assert code == 0
    # transformers 5.23 BertForMaskedLM(BertConfig()): 109,514,298 parameters (no pooler)
    assert json.loads(out)["params"]["total"] == 109_514_298


def test_empty_registry_folder_is_an_error(tmp_path, capsys):
    code, _, err = run(capsys, "validate", str(tmp_path))
    assert code == 1
    assert err.startswith(f"archzoo: error: no registry entries (*.yaml) found in {tmp_path}")
    code, _, err = run(capsys, "list", "--registry", str(tmp_path))
    assert code == 1 and "the registry is empty" in err


def test_build_refuses_an_out_that_is_not_a_site(tmp_path, capsys, monkeypatch):
    (tmp_path / "notes.txt").write_text("important")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "build", "--out", ".")
    assert code == 1 and "which is not a built site" in err
    (tmp_path / "afile").write_text("hi")
    code, _, err = run(capsys, "build", "--out", "afile")
    assert code == 1 and err.startswith(f"archzoo: error: --out {tmp_path / 'afile'}: is a file")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.csv").write_text("1")
    code, _, err = run(capsys, "build", "--out", "other")
    assert code == 1 and "holds something other than a built site" in err
    assert (tmp_path / "notes.txt").read_text() == "important" and (tmp_path / "afile").read_text() == "hi"


def test_a_pattern_without_wildcards_matches_as_a_substring(capsys):
    code, out, err = run(capsys, "list", "--json")
    ids = sorted(r["id"] for r in json.loads(out))  # the registry as it is: entries are added every round
    assert {"roberta-base", "roberta-large"} <= set(ids)
    code, out, err = run(capsys, "list", "roberta", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == [i for i in ids if "roberta" in i]
    code, out, err = run(capsys, "list", "*roberta", "--json")  # a glob still matches whole ids only
    assert code == 0 and json.loads(out) == []
    code, out, err = run(capsys, "list", "roberta*", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == [i for i in ids if i.startswith("roberta")]
    code, out, err = run(capsys, "list", "robertaa")
    # the two nearest first; the third is whichever id comes next as the registry grows
    prefix = "archzoo: error: no model matches 'robertaa'; did you mean 'roberta-base', 'roberta-large', '"
    assert code == 1 and err.startswith(prefix) and err.endswith("'?\n")
    assert err.removeprefix(prefix).removesuffix("'?\n") in ids


def test_help_lists_every_environment_variable(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    read = (
        "ARCHZOO_PLUGINS",
        "ARCHZOO_STRICT",
        "ARCHZOO_TRACE_PLUGINS",
        "ARCHZOO_REGISTRY",
        "ARCHZOO_CACHE_DIR",
        "XDG_CACHE_HOME",  # registry_index.cache_dir
        "SOURCE_DATE_EPOCH",  # the site's date stamp
        "COLUMNS",  # rich's and click's width
        "TTY_COMPATIBLE",  # rich: draw for a terminal when piped
        "NO_COLOR",
    )
    for name in read:
        assert f"    {name}=" in out, name


def test_every_environment_variable_archzoo_reads_is_in_the_help(capsys):
    """An os.environ read anywhere in archzoo names a variable that --help lists."""
    import archzoo

    code, out, _ = run(capsys, "--help")
    assert code == 0
    source = Path(archzoo.__file__).parent
    names = set()
    for path in source.rglob("*.py"):
        names.update(re.findall(r"environ(?:\.get)?\(\s*[\"']([A-Z_]+)[\"']", path.read_text(encoding="utf-8")))
        names.update(re.findall(r"environ\[[\"']([A-Z_]+)[\"']\]", path.read_text(encoding="utf-8")))
    from archzoo.host import ENV_PLUGINS, ENV_STRICT, ENV_TRACE

    names |= {ENV_PLUGINS, ENV_STRICT, ENV_TRACE}
    names.discard("PYTEST_CURRENT_TEST")  # archzoo.testing asks whether it runs inside a test: not the user's
    assert "ARCHZOO_REGISTRY" in names and "SOURCE_DATE_EPOCH" in names  # the search finds what it should
    missing = sorted(name for name in names if f"    {name}=" not in out)
    assert not missing, missing


def test_build_says_where_the_site_went_once(tmp_path):
    """Run as a user runs it (a process of its own, MkDocs' logging as it is set up there)."""
    import subprocess
    import sys

    registry = tmp_path / "registry"
    registry.mkdir()
    shipped = Path(__file__).parents[1] / "registry" / "bert" / "bert-tiny.yaml"
    (registry / "bert-tiny.yaml").write_text(shipped.read_text(encoding="utf-8"), encoding="utf-8")
    with only_plugins("bert"):  # what the build says does not depend on how many architecture pages it writes
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "archzoo.cli",
                "build",
                "--registry",
                str(registry),
                "--out",
                str(tmp_path / "site"),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    said = (done.stdout + done.stderr).count("site written to")
    assert said == 1 and done.stdout == f"site written to {tmp_path / 'site'}\n", (done.stdout, done.stderr)


# ---- the plugin authors' kit: plugins --check, new-plugin ----------------------------------------------


@pytest.fixture
def gpt_and_a_broken_plugin():
    """The process-wide host: the gpt plugin, and one registered in process whose configuration key has no
    description and whose build (gpt's) cannot read its configuration."""
    import types

    from pydantic import PositiveInt

    from archzoo import ArchConfig, hookimpl
    from archzoo.host import PluginHost, get_host, reset_host

    class BareConfig(ArchConfig):
        width: PositiveInt = 4

    gpt = PluginHost(only=["gpt"]).load().architecture("gpt")
    broken = types.ModuleType("archzoo_broken")

    @hookimpl
    def register_architectures(register):
        register(gpt.model_copy(update={"name": "bare", "config_model": BareConfig, "reference": None}))

    broken.register_architectures = register_architectures
    reset_host(PluginHost(only=["gpt", "broken"], extra_plugins={"broken": broken}))
    yield get_host()
    reset_host(None)


def test_plugins_check_prints_each_plugins_problems_and_exits_1(capsys, gpt_and_a_broken_plugin):
    code, out, err = run(capsys, "plugins", "--check")
    assert code == 1
    lines = out.splitlines()
    assert lines[:3] == [
        "gpt: ok",
        "broken: 2 problems",
        "  - architecture 'bare': config key 'width' has no description; give Field(..., description=...) "
        "(`archzoo plugins` and the site show it)",
    ]
    assert lines[3].startswith("  - architecture 'bare': the default configuration does not build: ")
    assert len(lines) == 4
    assert err == "1 of 2 plugin(s) pass their self-checks; broken does not\n"
    code, out, _ = run(capsys, "plugins", "--check", "--json")
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False
    assert [(p["name"], p["ok"], len(p["problems"])) for p in data["plugins"]] == [
        ("gpt", True, 0),
        ("broken", False, 2),
    ]


def test_plugins_check_of_well_formed_plugins_passes(capsys, monkeypatch):
    # every installed plugin's checks run in test_testing_kit; here the command's verdict on two of them
    from archzoo.host import PluginHost, reset_host

    monkeypatch.setattr("archzoo.host._HOST", None)
    reset_host(PluginHost(only=["gpt", "vit"]))
    code, out, err = run(capsys, "plugins", "--check")
    assert (code, out, err) == (0, "gpt: ok\nvit: ok\n", "2 of 2 plugin(s) pass their self-checks\n")
    code, out, _ = run(capsys, "plugins", "--check", "--json")
    assert code == 0
    assert json.loads(out) == {
        "plugins": [{"name": "gpt", "ok": True, "problems": []}, {"name": "vit", "ok": True, "problems": []}],
        "ok": True,
    }


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["new-plugin", "Tiny-LM"],
            "archzoo: error: plugin name 'Tiny-LM': expected lowercase letters and digits, words joined by single "
            "underscores, starting with a letter; it becomes the entry point NAME, the module archzoo_NAME and "
            "the architecture NAME, so give a name like that (such as 'tiny_lm')\n",
        ),
        (
            ["new-plugin", "gpt"],
            "archzoo: error: plugin name 'gpt': a built-in plugin or architecture of archzoo has this name, and a "
            "plugin cannot replace a built-in; choose another name, such as 'gpt_variant'\n",
        ),
        (["new-plugin", "class"], "archzoo: error: plugin name 'class': a Python keyword; choose another name\n"),
    ],
)
def test_new_plugin_refuses_a_bad_name(capsys, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *args)
    assert (code, out, err) == (1, "", message)
    assert list(tmp_path.iterdir()) == []


def test_new_plugin_refuses_a_folder_that_is_not_empty(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    code, out, err = run(capsys, "new-plugin", "tiny", "--dir", str(tmp_path))
    assert (code, out) == (1, "")
    assert err == (
        f"archzoo: error: {tmp_path}: the folder is not empty (it holds notes.txt); give a new or empty folder "
        "with --dir (archzoo new-plugin never overwrites or deletes anything)\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_new_plugin_lists_the_files_it_writes(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "new-plugin", "tiny_lm")
    assert code == 0, err
    written = sorted(Path(line) for line in out.splitlines())
    assert written == sorted(p.relative_to(tmp_path) for p in (tmp_path / "archzoo-tiny-lm").rglob("*") if p.is_file())
    assert Path("archzoo-tiny-lm/src/archzoo_tiny_lm/__init__.py") in written
    assert "pip install -e archzoo-tiny-lm" in err


def test_show_gives_a_mixture_of_experts_published_active_figure_beside_the_total(capsys):
    """Mixtral 8x7B: MixtralForCausalLM holds 46,702,792,704 parameters, of which one token uses 12,879,925,248
    (transformers 5.23, meta device; less 6 of 8 experts in 32 layers); Jiang et al. 2024 print 47B and 13B."""
    code, out, _ = run(capsys, "show", "mixtral-8x7b", "--depth", "0")
    assert code == 0
    assert "published: 47B (47,000,000,000); computed 46,702,792,704, difference -297,207,296 (-0.63%)" in out
    assert "published active: 13B (13,000,000,000); computed 12,879,925,248, difference -120,074,752 (-0.92%)" in out
    code, out, _ = run(capsys, "show", "mixtral-8x7b", "--json")
    data = json.loads(out)
    assert (data["params"], data["published_value"], data["active_params"], data["published_active_value"]) == (
        46_702_792_704,
        47_000_000_000,
        12_879_925_248,
        13_000_000_000,
    )
    assert data["status"] == data["active_status"] == "within-rounding"


def test_brackets_in_a_config_file_are_shown_as_written_not_read_as_markup(capsys, tmp_path):
    """The terminal tables render with rich; text from a config.json (or a registry file, or a plugin) is
    plain text there: '[/]' used to end rich markup that was never opened and crash with a traceback."""
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "model_type": "gpt2",
                "n_layer": 1,
                "n_embd": 48,
                "n_head": 3,
                "vocab_size": 97,
                "n_positions": 24,
                "_name_or_path": "[/]x [bold]y",
            }
        )
    )
    code, out, err = run(capsys, "count", "--hf-config", str(config), "--explain")
    assert code == 0, err
    assert '"[/]x [bold]y"' in out


# ---- --units and --memory -----------------------------------------------------------------------------------------
# Reference figures: GPT2LMHeadModel (GPT-2 small), N = 128, transformers 5.23 with eager attention, counted by
# torch.utils.flop_counter.FlopCounterMode: forward 32,228,179,968 FLOPs, one training step 96,684,539,904.


def test_units_macs_halves_the_reference_figures_and_says_so(capsys):
    code, out, err = run(capsys, "show", "gpt2", "--seq-len", "128", "--units", "macs", "--json")
    assert code == 0, err
    flops = json.loads(out)["report"]["flops"]
    assert flops["units"] == "macs"
    assert flops["forward"] == 32_228_179_968 // 2 and flops["training"] == 96_684_539_904 // 2
    code, out, err = run(capsys, "show", "gpt2", "--seq-len", "128", "--units", "macs", "--depth", "1")
    assert code == 0, err
    assert "forward MACs (N=128)" in out and f"{32_228_179_968 // 2:,}" in out
    assert "training MACs (N=128)" in out and f"{96_684_539_904 // 2:,}" in out
    assert "FLOPs (N=" not in out


def test_units_default_to_flops_and_refuse_anything_else(capsys):
    code, out, err = run(capsys, "count", "gpt", "--seq-len", "128", "--json")
    assert code == 0, err
    assert json.loads(out)["flops"]["training"] == 96_684_539_904
    code, out, err = run(capsys, "count", "gpt", "--units", "gflops")
    assert code == 2 and "'gflops' is not one of 'flops', 'macs'" in err


def test_memory_prints_both_peaks_with_their_assumptions(capsys):
    code, out, err = run(capsys, "count", "gpt", "--seq-len", "128", "--depth", "0", "--memory")
    assert code == 0, err
    # GPT-2 small holds 124,439,808 parameters (GPT2LMHeadModel on the meta device): 2 bytes each in bf16.
    assert "weights: 248.9 MB (248,879,616 B)" in out
    assert "inference peak:" in out and "training peak:" in out
    assert out.count("assumes:") >= 4


def test_memory_names_the_reason_when_activations_are_not_known(capsys):
    # T5's sequence classifier saves what the input's end-of-sequence tokens decide, not N: refused with the reason
    code, out, err = run(
        capsys, "count", "t5", "--set", "head=sequence_classification", "--seq-len", "64", "--depth", "0", "--memory"
    )
    assert code == 0, err
    assert "inference peak:" in out and "training peak: " in out and "not known" in out


# ---- the plugin environment variables, and problems found once a command asks for a plugin --------------


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("ARCHZOO_STRICT", "maybe", "ARCHZOO_STRICT='maybe': expected 1 (on) or 0 (off)"),
        ("ARCHZOO_TRACE_PLUGINS", "yes please", "ARCHZOO_TRACE_PLUGINS='yes please': expected 1 (on) or 0 (off)"),
        ("ARCHZOO_PLUGINS", ",", "ARCHZOO_PLUGINS=',': names no plugin"),
        ("ARCHZOO_PLUGINS", "gpt\nbert", "ARCHZOO_PLUGINS: 'gpt\\nbert' is not a plugin name"),
        ("ARCHZOO_PLUGINS", "gtp", "ARCHZOO_PLUGINS='gtp': no installed plugin has that name (did you mean 'gpt'?)"),
    ],
)
def test_a_bad_plugin_variable_is_one_line_and_exit_1(capsys, monkeypatch, name, value, expected):
    # before: ARCHZOO_STRICT=maybe counted as off, ARCHZOO_PLUGINS=',' loaded no plugin and every name was unknown
    monkeypatch.setattr("archzoo.host._HOST", None)
    monkeypatch.setenv(name, value)
    code, out, err = run(capsys, "count", "gpt", "--json")
    assert (code, out) == (1, "")
    assert err.startswith(f"archzoo: error: {expected}") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_a_problem_found_when_a_plugin_is_imported_is_reported(tmp_path):
    """A plugin the manifest routes to, that fails when the command imports it (a module it needs was removed since
    the manifest was written), is named in a warning when the command ends, as at a full load."""
    import os
    import subprocess
    import sys
    import textwrap

    (tmp_path / "archzoo_tiny").mkdir()
    (tmp_path / "archzoo_tiny" / "__init__.py").write_text(
        textwrap.dedent(
            """
            import tiny_dependency
            from archzoo import hookimpl
            from archzoo_gpt import ARCHITECTURE

            @hookimpl
            def register_architectures(register):
                register(ARCHITECTURE.model_copy(update={"name": "tiny-gpt"}))
            """
        )
    )
    (tmp_path / "tiny_dependency.py").write_text("")
    dist = tmp_path / "archzoo_tiny-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: archzoo-tiny\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[archzoo]\ntiny = archzoo_tiny\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHZOO_")}
    env |= {"ARCHZOO_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}

    def archzoo(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "archzoo.cli", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    first = archzoo("count", "tiny-gpt", "--json")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    (tmp_path / "tiny_dependency.py").unlink()
    second = archzoo("count", "tiny-gpt", "--json")
    assert second.returncode == 1 and second.stdout == ""
    assert second.stderr.splitlines() == [
        "archzoo: warning: plugin 'tiny': importing 'archzoo_tiny' raised ModuleNotFoundError: No module named "
        "'tiny_dependency' (skipped; --strict makes this an error)",
        second.stderr.splitlines()[1],
    ]
    assert second.stderr.splitlines()[1].startswith("archzoo: error: unknown architecture 'tiny-gpt'")


def test_json_output_is_strict_json_whatever_floats_it_holds():
    """Every --json path writes through one encoder that never prints a bare NaN or Infinity (RFC 8259 has none;
    strict readers refuse them): such a float is written as the text archzoo.architecture.json_number gives it."""
    from archzoo.cli import _strict_json

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    data = {"cap": float("nan"), "rows": [float("inf"), -float("inf"), 1.5]}
    assert json.loads(_strict_json(data), parse_constant=refuse) == {
        "cap": "NaN",
        "rows": ["Infinity", "-Infinity", 1.5],
    }
    assert _strict_json({"a": 1}, indent=2) == json.dumps({"a": 1}, indent=2)


def test_show_keeps_a_nan_reference_argument_as_nan(capsys, tmp_path):
    """A registry entry's reference argument of .nan (a soft-cap transformers accepts) is "NaN" in ``show --json``,
    strict JSON; it once came out as null, which reads as "no cap", another value than the entry's."""
    shipped = Path(__file__).parents[1] / "registry" / "gemma2" / "gemma-2-2b.yaml"
    text = shipped.read_text(encoding="utf-8").replace(
        "pad_token_id: null}", "pad_token_id: null, final_logit_softcapping: .nan}"
    )
    assert ".nan" in text
    (tmp_path / "gemma2").mkdir()
    (tmp_path / "gemma2" / "gemma-2-2b.yaml").write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "show", "gemma-2-2b", "--registry", str(tmp_path), "--json")
    assert code == 0, err

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    assert json.loads(out, parse_constant=refuse)["reference"]["kwargs"]["final_logit_softcapping"] == "NaN"
