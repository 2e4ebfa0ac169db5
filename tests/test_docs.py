"""The hand-written docs kept in sync with the code: every hook documented with its exact signature,
the worked example plugin actually works, and every page is in the site's navigation.

TinyLlama-1.1B: 1,100,048,384 parameters, ``sum(p.numel() for p in LlamaForCausalLM(config).parameters())``
with transformers 5.23 and TinyLlama's configuration (vocab 32000, hidden 2048, 22 layers, 32 heads,
4 key/value heads, intermediate 5632, untied embeddings).
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import archzoo.hookspecs
from archzoo.host import PluginHost
from archzoo.registry import load_registry

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "src" / "archzoo" / "site" / "docs"  # archzoo's own pages (package data)
PLUGIN_PAGE = DOCS / "writing-plugins.md"
TINYLLAMA_PARAMS = 1_100_048_384


def hookspecs() -> dict[str, object]:
    return {
        name: fn
        for name, fn in vars(archzoo.hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, "archzoo_spec")
    }


def signature_line(name: str, fn) -> str:
    """``def register_architectures(register: Callable[['Architecture'], None]) -> None``, from the spec."""
    sig = inspect.signature(fn)

    def text(annotation) -> str:
        return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    params = ", ".join(
        p.name if p.annotation is inspect.Parameter.empty else f"{p.name}: {text(p.annotation)}"
        for p in sig.parameters.values()
    )
    returns = "" if sig.return_annotation is inspect.Signature.empty else f" -> {text(sig.return_annotation)}"
    return f"def {name}({params}){returns}"


def fenced_blocks(text: str) -> dict[str, str]:
    """The page's code blocks that carry a ``title="path"``, by path."""
    pattern = re.compile(r'^```[a-z]+ title="([^"]+)"\n(.*?)^```$', re.S | re.M)
    return {m.group(1): m.group(2) for m in pattern.finditer(text)}


def test_there_are_hooks():
    assert {"register_architectures", "register_registry_dirs"} <= set(hookspecs())


@pytest.mark.parametrize("name", sorted(hookspecs()))
def test_every_hook_is_documented_with_its_exact_signature(name):
    page = PLUGIN_PAGE.read_text(encoding="utf-8")
    line = signature_line(name, hookspecs()[name])
    assert f"### {name}\n" in page, f"{PLUGIN_PAGE.name} has no section for the hook {name}"
    assert f"```python\n{line}\n```" in page, f"{PLUGIN_PAGE.name} must show the signature `{line}`"


@pytest.mark.parametrize("model", ["Architecture", "Reference"])
def test_every_field_of_architecture_and_reference_is_documented(model):
    """A field added to either model must get a row in its table on the plugin page."""
    import archzoo

    page = PLUGIN_PAGE.read_text(encoding="utf-8")
    start = page.index(f"A{'n' if model == 'Architecture' else ''} `{model}`")
    header = page.index("| Field |", start)
    table = page[header : page.index("\n\n", header)]
    first_cells = [row.split(" | ")[0] for row in table.splitlines()[2:]]
    names = {name for cell in first_cells for name in re.findall(r"`([a-z_]+)", cell)}
    assert names == set(getattr(archzoo, model).model_fields), table


def test_no_documented_hook_is_missing_from_hookspecs():
    page = PLUGIN_PAGE.read_text(encoding="utf-8")
    documented = set(
        re.findall(r"^### (\w+)$", page[page.index("## The hooks") : page.index("## Building blocks")], re.M)
    )
    assert documented == set(hookspecs())


def titled_blocks(text: str, title: str) -> list[str]:
    """Every code block of the page with this ``title``, in order."""
    pattern = re.compile(r'^```[a-z]+ title="' + re.escape(title) + r'"\n(.*?)^```$', re.S | re.M)
    return [m.group(1) for m in pattern.finditer(text)]


def test_the_worked_example_is_the_llama_plugin_word_for_word():
    """Each excerpt on the page is a run of whole lines of the built-in plugin, as it is now."""
    import archzoo_llama

    source = Path(archzoo_llama.__file__).read_text(encoding="utf-8")
    excerpts = titled_blocks(PLUGIN_PAGE.read_text(encoding="utf-8"), "plugins/archzoo_llama/__init__.py")
    assert len(excerpts) >= 8
    for excerpt in excerpts:
        assert "\n" + excerpt in source, f"the page's excerpt is no longer in the plugin:\n{excerpt[:400]}"


@pytest.mark.reference
def test_the_pages_conformance_test_passes_against_the_installed_plugin(tmp_path):
    """The page's test file, run by pytest as a plugin author would: the kit's fixtures come from its
    pytest11 entry point, and the reference checks build transformers' classes."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    (test_file,) = titled_blocks(PLUGIN_PAGE.read_text(encoding="utf-8"), "tests/test_llama_conformance.py")
    (tmp_path / "test_llama_conformance.py").write_text(test_file, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_llama_conformance.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert re.search(r"^5 passed", run.stdout, re.M), run.stdout[-1000:]


def test_the_figures_the_page_quotes_are_what_archzoo_counts():
    """TinyLlama-1.1B: LlamaForCausalLM's 1,100,048,384; Mixtral 8x7B: MixtralForCausalLM's 46,702,792,704
    (transformers 5.23, meta device), of which 12,879,925,248 active (less 6 of 8 experts in 32 layers)."""
    from archzoo.architecture import parse_config
    from archzoo.report import make_report

    host = PluginHost().load()
    page = PLUGIN_PAGE.read_text(encoding="utf-8")
    llama = make_report(host.architecture("llama"), parse_config(host.architecture("llama"), {}))
    moe = make_report(host.architecture("moe"), parse_config(host.architecture("moe"), {}))
    assert llama.params == TINYLLAMA_PARAMS and f"**{TINYLLAMA_PARAMS:,}**" in page
    assert (moe.params, moe.active_params) == (46_702_792_704, 12_879_925_248)
    assert "46,702,792,704 parameters, 12,879,925,248 active" in page


def test_publishing_names_follow_the_convention():
    page = PLUGIN_PAGE.read_text(encoding="utf-8")
    for text in ("**distribution** `archzoo-NAME`", "**module** `archzoo_NAME`", "group **`archzoo`**"):
        assert text in page


def test_methodology_states_the_fused_attention_figures():
    page = (DOCS / "methodology.md").read_text(encoding="utf-8")
    # torch 2.13 FlopCounterMode, TransformerEncoderLayer(512, 8), 128 tokens: fused CPU eval path vs eager
    assert "805,306,368" in page and "838,860,800" in page
    assert "## Conventions" in page and "FLOPs = 2 × multiply–accumulates" in page


def test_every_page_archzoo_ships_can_be_chosen_for_a_site():
    from archzoo.site.plugin import GENERATED_PAGES, PAGES

    listed = {path for name, (_, path) in PAGES.items() if name not in GENERATED_PAGES}
    written = {p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md")}
    assert written == listed
    assert set(GENERATED_PAGES) <= set(PAGES)
    from archzoo.site.pages import PAGE_BLURBS

    assert {path for _, path in PAGES.values()} <= set(PAGE_BLURBS)  # the home page says what each one is


def test_performance_page_records_the_benchmarks():
    """The page's table gives each target's figure with the run it came from (script, date, load), and each ratio
    it states is the ratio of the times beside it (a figure edited by hand, or half-updated, shows)."""
    page = (DOCS / "performance.md").read_text(encoding="utf-8")
    assert re.search(r"on the project's machine: \d+ CPUs", page)
    for script in ("site_build.py", "registry_scale.py", "lookup.py"):
        assert re.search(rf"`{script}`, \d{{4}}-\d\d-\d\d \d\d:\d\d UTC, load", page), script
    stated = re.findall(r"\| ([\d.]+)× \(([\d.,]+) (m?s) against ([\d.,]+) (m?s)\)", page)
    assert len(stated) >= 6  # the site build, its growth, the serve rebuild, show, the warm listing, the lookups
    for ratio, a, unit_a, b, unit_b in stated:
        assert unit_a == unit_b
        assert float(ratio) == pytest.approx(
            float(a.replace(",", "")) / float(b.replace(",", "")),
            rel=0.02,  # the times are rounded, the ratios were taken before rounding
            abs=0.011,
        ), (ratio, a, b)


ENTRY_PAGE = DOCS / "writing-entries.md"


def test_entry_guide_documents_every_field():
    from archzoo.registry import EntryReference, EntrySpec, Published, Reconciliation, Source

    text = ENTRY_PAGE.read_text(encoding="utf-8")
    table_keys = set(re.findall(r"^\| `([a-z_.]+)` \|", text, flags=re.M))
    assert set(EntrySpec.model_fields) <= table_keys
    for prefix, model in (("published.", Published),):
        assert {prefix + k for k in model.model_fields} <= table_keys
    for model in (Source, EntryReference, Reconciliation):  # described inside their parent's row
        for key in model.model_fields:
            assert f"`{key}`" in text, f"{model.__name__}.{key} is not described on {ENTRY_PAGE.name}"


def test_entry_guide_explains_every_reason_code_and_the_rules():
    from archzoo.registry import GAP_LIMIT, REASONS

    text = ENTRY_PAGE.read_text(encoding="utf-8")
    headings = re.findall(r"^### `([a-z-]+)`$", text, flags=re.M)
    assert headings == list(REASONS)
    assert f"more than {GAP_LIMIT:.0%}" in text
    # the statuses the registry gives, each explained in the table
    for status in ("within-rounding", "reconciled", "unexplained", "unpublished"):
        assert f"| `{status}` |" in text


def test_entry_guide_examples_are_real_entries_with_that_reason():
    """An entry named as an example of a reason code carries that reason in the shipped registry."""
    from archzoo.registry import REASONS

    registry = load_registry([REPO / "registry"], PluginHost().load())
    text = ENTRY_PAGE.read_text(encoding="utf-8")
    sections = re.split(r"^### `([a-z-]+)`$", text, flags=re.M)[1:]
    examples = 0
    for reason, body in zip(sections[::2], sections[1::2], strict=True):
        assert reason in REASONS
        for model_id in re.findall(r"`([a-z0-9.-]+)`", body.split("\n## ")[0]):
            if registry.is_model(model_id):
                examples += 1
                assert registry.get_model(model_id).spec.reconciliation.reason == reason, model_id
    assert examples >= 5  # rounded, head-differs, vocab-differs, retracted-by-authors, typo-in-source
