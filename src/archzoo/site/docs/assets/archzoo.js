/* archzoo site: math with the vendored KaTeX, and the sortable, filterable all-models table. */
(function () {
  "use strict";

  /* pymdownx.arithmatex (generic) leaves \( ... \) in span.arithmatex and \[ ... \] in div.arithmatex. */
  function renderMath(root) {
    if (typeof katex === "undefined") return;
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.getAttribute("data-az-math")) return;
      var tex = el.textContent.trim();
      var display = el.tagName === "DIV";
      if (tex.slice(0, 2) === "\\(" && tex.slice(-2) === "\\)") {
        tex = tex.slice(2, -2);
      } else if (tex.slice(0, 2) === "\\[" && tex.slice(-2) === "\\]") {
        tex = tex.slice(2, -2);
        display = true;
      }
      // formulas come from plugins: no trusted commands (\href, \url, \html*), bounded sizes and macros
      katex.render(tex, el, { displayMode: display, throwOnError: false, trust: false, maxSize: 50,
                              maxExpand: 1000 });
      el.setAttribute("data-az-math", "1");
    });
  }

  /* A cell's sort key: data-v when a cell holds one, else a number read from its text, else the text. */
  function cellKey(cell) {
    var marked = cell.querySelector("[data-v]");
    if (marked) return { num: parseFloat(marked.getAttribute("data-v")), text: "" };
    var text = cell.textContent.trim();
    var plain = text.replace(/[,\s%+]/g, "").replace(/\u2212/g, "-");
    if (/^-?\d+(\.\d+)?$/.test(plain)) return { num: parseFloat(plain), text: "" };
    if (text === "\u2014" || text === "") return { num: null, text: "" };
    return { num: null, text: text.toLowerCase() };
  }

  function compare(a, b) {
    if (a.num !== null && b.num !== null) return a.num - b.num;
    if (a.num !== null) return -1;
    if (b.num !== null) return 1;
    if (a.text === b.text) return 0;
    if (a.text === "") return 1;
    if (b.text === "") return -1;
    return a.text < b.text ? -1 : 1;
  }

  function makeSortable(table) {
    if (table.getAttribute("data-az-sortable")) return;
    table.setAttribute("data-az-sortable", "1");
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(headers, function (th, column) {
      th.setAttribute("role", "button");
      th.setAttribute("tabindex", "0");
      th.classList.add("az-sort");
      function sort() {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.map.call(body.rows, function (row, index) {
          return { row: row, key: cellKey(row.cells[column]), index: index };
        });
        rows.sort(function (a, b) {
          var order = compare(a.key, b.key);
          if (!ascending) order = -order;
          return order || a.index - b.index;
        });
        var fragment = document.createDocumentFragment();
        rows.forEach(function (r) { fragment.appendChild(r.row); });
        body.appendChild(fragment);
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  }

  function makeFilter(root) {
    var input = root.querySelector("#az-filter");
    var table = root.querySelector(".az-sortable table");
    if (!input || !table || input.getAttribute("data-az-filter")) return;
    input.setAttribute("data-az-filter", "1");
    var count = root.querySelector("#az-filter-count");
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var texts = rows.map(function (row) { return row.textContent.toLowerCase(); });
    function apply() {
      var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (row, i) {
        var match = terms.every(function (t) { return texts[i].indexOf(t) !== -1; });
        row.hidden = !match;
        if (match) shown += 1;
      });
      if (count) count.textContent = shown + " of " + rows.length + " models";
    }
    input.addEventListener("input", apply);
    apply();
  }

  function init(root) {
    renderMath(root);
    root.querySelectorAll(".az-sortable table").forEach(makeSortable);
    makeFilter(root);
  }

  if (typeof document$ !== "undefined" && document$.subscribe) {
    document$.subscribe(function () { init(document.body); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document.body); });
  } else {
    init(document.body);
  }
})();
