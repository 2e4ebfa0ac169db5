"""The what-if calculators and the compare page in a real browser (Chromium driven by Playwright, offline):
the numbers the page computes as values are typed equal `archzoo count --set ... --json`'s, and the compare
page shows two to four models side by side from the site's own files, its selection kept in the address.

Until the model and architecture pages carry the calculator themselves, it is tested on a page of the
site's owner that holds the same ``<div class="archzoo-whatif">`` markers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archzoo.cli import main
from archzoo.site import build_site
from browsing import browser, require_browser, screenshot, served, watched_tab  # noqa: F401

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]

WHATIF_PAGE = """# What if

<div class="archzoo-whatif" data-architecture="bert" data-model="bert-base-uncased"></div>

<div class="archzoo-whatif" data-architecture="gpt" data-model=""></div>

<div class="archzoo-whatif" data-architecture="llama" data-model=""></div>

<div class="archzoo-whatif" data-architecture="vit" data-model=""></div>
"""


@pytest.fixture(scope="module")
def site_url(tmp_path_factory):
    require_browser()
    project = tmp_path_factory.mktemp("explore")
    (project / "docs").mkdir()
    (project / "docs" / "whatif.md").write_text(WHATIF_PAGE, encoding="utf-8")
    (project / "mkdocs.yml").write_text(
        "site_name: archzoo model zoo\ntheme:\n  name: material\nplugins:\n  - search\n  - archzoo\n", encoding="utf-8"
    )
    out = build_site(project / "site", registry=[REPO / "registry"], config_file=project / "mkdocs.yml")
    with served(out) as url:
        yield url


@pytest.fixture
def page(browser, site_url):  # noqa: F811 (the fixture imported from browsing)
    with watched_tab(browser, site_url, "") as (tab, watched):
        yield tab
    assert not watched.errors, watched.errors
    assert watched.outside == [], f"requests left localhost: {watched.outside}"


def _count(capsys, arch: str, values: dict[str, int], seq_len: int | None = None) -> dict[str, int]:
    """`archzoo count ARCH --set KEY=VALUE ... [--seq-len N] --json`: the figures the page must show."""
    args = ["count", arch, "--json"] + [a for k, v in values.items() for a in ("--set", f"{k}={v}")]
    if seq_len is not None:
        args += ["--seq-len", str(seq_len)]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    return {
        "params": data["params"]["total"],
        "flops": data["flops"]["forward"],
        "kv_cache": data["memory"]["kv_cache"]["elements_per_token"],
    }


def _shown(calculator) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for cell in calculator.locator("td[data-figure]").all():
        value = cell.get_attribute("data-value")
        out[cell.get_attribute("data-figure") or ""] = int(value) if value else None
    return out


CASES = [
    # (which calculator, architecture, values typed, N typed)
    (0, "bert", {"n_layers": 24, "d_model": 1024, "n_heads": 16, "d_ff": 4096}, None),
    (1, "gpt", {"n_layers": 48, "d_model": 1600, "n_heads": 25}, 512),
    (2, "llama", {"n_kv_heads": 8}, None),
    (2, "llama", {"n_kv_heads": 1, "n_layers": 16, "d_ff": 8192}, 1000),
    (3, "vit", {"n_layers": 24, "d_model": 1024, "n_heads": 16, "d_ff": 4096}, None),
]


def test_whatif_figures_equal_archzoo_count(page, site_url, capsys):
    page.goto(site_url + "whatif/")
    page.wait_for_function("document.querySelectorAll('.archzoo-whatif[data-az-ready=\"1\"]').length === 4")
    calculators = page.locator(".archzoo-whatif")
    for index, arch, values, seq_len in CASES:
        calculator = calculators.nth(index)
        calculator.locator("button.az-whatif-reset").click()
        for key, value in values.items():
            calculator.locator(f"input[data-key='{key}']").fill(str(value))
        if seq_len is not None:
            calculator.locator("input[data-key='N']").fill(str(seq_len))
        expected = _count(capsys, arch, values, seq_len)
        shown = _shown(calculator)
        assert shown["params"] == expected["params"], (arch, values)
        assert shown["flops"] == expected["flops"], (arch, values)
        if "kv_cache" in shown:
            assert shown["kv_cache"] == expected["kv_cache"], (arch, values)
        assert "Recomputed" in calculator.locator(".az-whatif-status").inner_text()
    screenshot(page, "whatif")


def test_whatif_refuses_rather_than_guess(page, site_url, capsys):
    page.goto(site_url + "whatif/")
    page.wait_for_function("document.querySelectorAll('.archzoo-whatif[data-az-ready=\"1\"]').length === 4")
    vit = page.locator(".archzoo-whatif").nth(3)
    vit.locator("input[data-key='image_size']").fill("384")  # N follows the patches: not a symbol's value
    assert _shown(vit)["params"] is None
    assert "image_size" in vit.locator(".az-whatif-status").inner_text()
    bert = page.locator(".archzoo-whatif").nth(0)
    bert.locator("input[data-key='d_model']").fill("1000")  # 12 heads do not divide 1000: count refuses it
    assert _shown(bert)["params"] is None
    assert "not divisible by n_heads" in bert.locator(".az-whatif-status").inner_text()
    assert main(["count", "bert", "--set", "d_model=1000"]) != 0
    capsys.readouterr()
    llama = page.locator(".archzoo-whatif").nth(2)
    llama.locator("input[data-key='n_heads']").fill("30")  # d_h = 2048 / 30 is not whole
    assert "not a whole number" in llama.locator(".az-whatif-status").inner_text()
    llama.locator("input[data-key='n_layers']").fill("twelve")
    assert llama.locator("input[data-key='n_layers']").get_attribute("aria-invalid") == "true"


def test_compare_page(page, site_url):
    page.goto(site_url + "compare/?models=bert-base-uncased,gpt2")
    compare = page.locator(".archzoo-compare")
    page.wait_for_selector(".archzoo-compare[data-az-ready='1'] .az-compare-tree")
    models = json.loads(page.evaluate("fetch('../models.json').then(r => r.text())"))["models"]
    params = {m["id"]: m["params"] for m in models}
    text = compare.locator(".az-compare-table").inner_text()
    assert f"{params['bert-base-uncased']:,}" in text and f"{params['gpt2']:,}" in text
    assert compare.locator(".az-compare-column").count() == 2
    first = compare.locator(".az-compare-column[data-model='gpt2'] tbody tr").first
    assert first.locator("td[data-value]").get_attribute("data-value") == str(params["gpt2"])
    screenshot(page, "compare-1280")

    # keyboard: the third slot is reached with Tab and set with the arrow keys; the address follows
    page.locator("#az-compare-2").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "az-compare-3"
    page.locator("#az-compare-3").select_option("llama-2-7b")
    page.wait_for_selector(".az-compare-column[data-model='llama-2-7b']")
    assert page.url.endswith("?models=bert-base-uncased,gpt2,llama-2-7b")
    assert compare.locator(".az-compare-column").count() == 3

    page.set_viewport_size({"width": 390, "height": 844})
    overflow = page.evaluate("document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    assert overflow <= 0
    screenshot(page, "compare-390")


def test_compare_link_with_an_unknown_model(page, site_url):
    page.goto(site_url + "compare/?models=gpt2,no-such-model")
    page.wait_for_selector(".archzoo-compare[data-az-ready='1']")
    assert 'No model "no-such-model" in this zoo.' in page.locator(".az-compare-status").inner_text()


@pytest.mark.hostile
def test_every_id_of_the_compare_address_is_shown_or_said(page, site_url):
    """An id that is a name every JavaScript object inherits (constructor), one named twice and those past the
    fourth model are each named in the status line; none is dropped without a word."""
    ids = "constructor,gpt2,gpt2,bert-base-uncased,__proto__,t5-small,vit-base-patch16-224,opt-125m,bloom-560m"
    page.goto(site_url + "compare/?models=" + ids)
    page.wait_for_selector(".archzoo-compare[data-az-ready='1'] .az-compare-tree")
    assert page.locator(".az-compare-status").inner_text() == (
        'No model "constructor", "__proto__" in this zoo. Named more than once: "gpt2". At most 4 models are '
        'compared at once: "opt-125m", "bloom-560m" left out. Comparing gpt2, bert-base-uncased, t5-small, vit-base-patch16-224.'
    )
    assert page.locator(".az-compare-column").count() == 4


@pytest.mark.hostile
@pytest.mark.parametrize("digits", [60_000, 31])
def test_a_value_of_thousands_of_digits_is_refused_at_once(page, site_url, digits):
    """A value longer than any size (archzoo reads at most 30 digits) is refused by its length before it is
    read as a number: the message is one short line, and grouping its digits (once quadratic: seconds for
    60,000 digits) never happens. benchmarks/hostile.py times it."""
    page.goto(site_url + "whatif/")
    page.wait_for_function("document.querySelectorAll('.archzoo-whatif[data-az-ready=\"1\"]').length === 4")
    gpt = page.locator(".archzoo-whatif").nth(1)
    gpt.locator("input[data-key='d_model']").fill("7" * digits)
    assert gpt.locator(".az-whatif-status").inner_text() == (
        f"No figure: d_model: expected a whole number of at most 30 digits (no size comes close), got one of "
        f"{digits:,} digits"
    )
    assert _shown(gpt)["params"] is None
    gpt.locator("input[data-key='d_model']").fill("x" * digits)
    assert gpt.locator(".az-whatif-status").inner_text() == (
        f'No figure: d_model: expected a whole number, got "{"x" * min(digits, 40)}{"…" if digits > 40 else ""}"'
    )


#: what the fuzzer types: digits, the separators the calculator drops, signs and what is not a number
TYPED = st.text(alphabet="0123456789 ,_-+.ex\u0663", min_size=0, max_size=40) | st.integers(0, 2**40).map(str)


@pytest.mark.hostile
@example(typed="0")
@example(typed="1" + "0" * 30)
@example(typed="2147483648")
@example(typed="1,024")
@example(typed="\u0663")  # an Arabic-Indic three: a digit to Python, not to the page
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(typed=TYPED)
def test_whatever_is_typed_the_page_agrees_with_archzoo_count(page, site_url, capsys, typed):
    """Typed into GPT's d_model: either the page shows the figures ``archzoo count gpt --set d_model=V`` gives
    for the whole number V the text holds (once spaces, commas and underscores are dropped), or it shows none
    and archzoo count refuses V too (or the text is no whole number of at most 30 digits)."""
    if page.url != site_url + "whatif/":
        page.goto(site_url + "whatif/")
        page.wait_for_function("document.querySelectorAll('.archzoo-whatif[data-az-ready=\"1\"]').length === 4")
    gpt = page.locator(".archzoo-whatif").nth(1)
    gpt.locator("button.az-whatif-reset").click()
    gpt.locator("input[data-key='n_heads']").fill("1")  # so that every d_model is divisible by the heads
    gpt.locator("input[data-key='d_model']").fill(typed)
    shown = _shown(gpt)
    status = gpt.locator(".az-whatif-status").inner_text()
    assert "\n" not in status.strip()
    digits = "".join(c for c in typed if c not in " ,_")
    if not (digits and all(c in "0123456789" for c in digits) and len(digits) <= 30):
        assert shown["params"] is None and status.startswith("No figure: d_model: expected a whole number"), status
        return
    code = main(["count", "gpt", "--json", "--set", "n_heads=1", "--set", f"d_model={int(digits)}"])
    out, err = capsys.readouterr()
    if code != 0:
        assert shown["params"] is None and status.startswith("No figure: "), (status, err)
        return
    data = json.loads(out)
    assert (shown["params"], shown["flops"]) == (data["params"]["total"], data["flops"]["forward"]), status


def test_model_and_architecture_pages_carry_the_calculator(page, site_url, capsys):
    """The model and architecture pages hold the calculator's marker: it loads there too, and what it
    computes for the model as published is the model page's own exact count."""
    page.goto(site_url + "models/llama-3-8b/")
    calculator = page.locator(".archzoo-whatif")
    assert calculator.count() == 1
    page.wait_for_selector(".archzoo-whatif[data-az-ready='1']")
    base = int(calculator.locator("td[data-base='params']").get_attribute("data-value") or "0")
    models = json.loads(page.evaluate("fetch('../../models.json').then(r => r.text())"))["models"]
    assert base == next(m["params"] for m in models if m["id"] == "llama-3-8b")
    calculator.locator("input[data-key='n_kv_heads']").fill("4")
    assert "Recomputed" in calculator.locator(".az-whatif-status").inner_text()
    page.goto(site_url + "architectures/vit/")
    page.wait_for_selector(".archzoo-whatif[data-az-ready='1']")
    screenshot(page, "whatif-architecture-vit")


def test_the_calculator_fits_a_phone(page, site_url):
    """At 390 px the figures stack, one per block: nothing of the calculator reaches past its column, on the
    model with the longest figures (qwen2-72b: 15-digit FLOPs) and on an architecture page."""
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("models/qwen2-72b/", "architectures/llama/"):
        page.goto(site_url + path)
        page.wait_for_selector(".archzoo-whatif[data-az-ready='1']")
        beyond = page.evaluate(
            """() => {
              const box = document.querySelector('.archzoo-whatif').getBoundingClientRect();
              return [...document.querySelectorAll('.archzoo-whatif *')]
                .filter(e => e.getClientRects().length && e.getBoundingClientRect().right > box.right + 0.5)
                .map(e => e.tagName + '.' + e.className + ' ' + e.getBoundingClientRect().right + ' > ' + box.right);
            }"""
        )
        assert beyond == [], (path, beyond[:5])
        scroll = page.evaluate(
            "(() => { const s = document.querySelector('.az-whatif-scroll'); return s.scrollWidth - s.clientWidth; })()"
        )
        assert scroll <= 0, path
    screenshot(page, "whatif-390")
