/* archzoo site: the compare page. Two to four models picked from models.json, their headline figures and
 * block trees side by side, read from explore/models/ID.json (exact figures as strings, since JSON numbers
 * above 2^53 lose digits in the browser). The selection is kept in the address (?models=a,b). */
(function () {
  "use strict";

  var SLOTS = 4;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function group(text) {
    var s = String(text);
    var negative = s.charAt(0) === "-";
    var digits = negative ? s.slice(1) : s;
    // groups of three in one pass (a look-ahead regular expression rescans the rest at every digit)
    var head = digits.length % 3 || 3;
    var parts = [digits.slice(0, head)];
    for (var i = head; i < digits.length; i += 3) parts.push(digits.slice(i, i + 3));
    return (negative ? "\u2212" : "") + parts.join(",");
  }

  function human(text) {
    var w = window.archzooWhatif;
    return w ? w.human(BigInt(text)) : group(text);
  }

  function bytes(text) {
    var n = BigInt(text);
    var units = [["TB", 12], ["GB", 9], ["MB", 6], ["kB", 3]];
    for (var i = 0; i < units.length; i++) {
      var scale = 10n ** BigInt(units[i][1]);
      if (n >= scale) {
        var q = (n * 10n + scale / 2n) / scale;
        return group((q / 10n).toString()) + "." + (q % 10n) + " " + units[i][0];
      }
    }
    return n + " B";
  }

  function selected() {
    var params = new URLSearchParams(window.location.search);
    return (params.get("models") || "").split(",").map(function (s) { return s.trim(); }).filter(Boolean);
  }

  function init(root) {
    if (root.getAttribute("data-az-compare")) return;
    root.setAttribute("data-az-compare", "1");
    var dataBase = root.getAttribute("data-data") || "../explore/models/";
    root.textContent = "Loading the models\u2026";
    fetch(root.getAttribute("data-models") || "../models.json").then(function (r) {
      if (!r.ok) throw new Error("models.json: " + r.status);
      return r.json();
    }).then(function (index) {
      build(root, index.models, dataBase);
    }).catch(function (error) {
      root.textContent = "The comparison could not load its data (" + error.message + ").";
      root.setAttribute("data-az-ready", "error");
    });
  }

  function build(root, models, dataBase) {
    root.textContent = "";
    var byId = Object.create(null);  // no inherited names: ?models=constructor is an unknown model, not a function
    models.forEach(function (m) { byId[m.id] = m; });
    var cache = {};
    var form = el("form", { "class": "az-compare-form", "aria-label": "Models to compare" });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    var fieldset = el("fieldset", {}, [el("legend", { text: "Pick two to four models" })]);
    var selects = [];
    for (var i = 0; i < SLOTS; i++) {
      var id = "az-compare-" + (i + 1);
      var select = el("select", { id: id, "data-slot": String(i) });
      select.appendChild(el("option", { value: "", text: i < 2 ? "\u2014 choose a model \u2014" : "\u2014 none \u2014" }));
      models.forEach(function (m) {
        select.appendChild(el("option", { value: m.id, text: m.id + " (" + m.params_human + ")" }));
      });
      selects.push(select);
      fieldset.appendChild(el("div", { "class": "az-compare-slot" }, [
        el("label", { "for": id, text: "Model " + (i + 1) + (i < 2 ? "" : " (optional)") }), select
      ]));
    }
    form.appendChild(fieldset);
    var status = el("p", { "class": "az-compare-status", role: "status", "aria-live": "polite" });
    form.appendChild(status);
    root.appendChild(form);
    var figures = el("div", { "class": "az-compare-figures" });
    var trees = el("div", { "class": "az-compare-trees" });
    root.appendChild(figures);
    root.appendChild(trees);

    // Every id of the address is shown or said: an unknown one, one named twice and those past the fourth
    // are named in the status line, never dropped without a word.
    var unknown = [], repeated = [], extra = [], taken = {}, slot = 0;
    selected().forEach(function (id) {
      if (!byId[id]) { unknown.push(id); return; }
      if (taken[id]) { repeated.push(id); return; }
      if (slot >= SLOTS) { extra.push(id); return; }
      taken[id] = true;
      selects[slot++].value = id;
    });
    var shown = function (ids) { return ids.map(function (id) { return JSON.stringify(id.length > 60 ? id.slice(0, 60) + "\u2026" : id); }).join(", "); };
    var addressNote = (unknown.length ? "No model " + shown(unknown) + " in this zoo. " : "") +
      (repeated.length ? "Named more than once: " + shown(repeated) + ". " : "") +
      (extra.length ? "At most " + SLOTS + " models are compared at once: " + shown(extra) + " left out. " : "");

    function current() {
      var seen = {};
      return selects.map(function (s) { return s.value; }).filter(function (v) {
        if (!v || seen[v]) return false;
        seen[v] = true;
        return true;
      });
    }

    function fetchModel(id) {
      if (!cache[id]) {
        cache[id] = fetch(dataBase + encodeURIComponent(id) + ".json").then(function (r) {
          if (!r.ok) throw new Error(id + ": " + r.status);
          return r.json();
        });
      }
      return cache[id];
    }

    function render() {
      var ids = current();
      var url = new URL(window.location.href);
      if (ids.length) url.searchParams.set("models", ids.join(","));
      else url.searchParams.delete("models");
      window.history.replaceState(null, "", url.pathname + url.search.replace(/%2C/g, ",") + url.hash);
      figures.textContent = "";
      trees.textContent = "";
      var note = addressNote;
      if (ids.length < 2) {
        status.textContent = note + "Pick at least two models.";
        root.setAttribute("data-az-ready", "1");
        return;
      }
      status.textContent = note + "Loading " + ids.join(", ") + "\u2026";
      root.setAttribute("data-az-ready", "0");
      Promise.all(ids.map(fetchModel)).then(function (list) {
        if (current().join(",") !== ids.join(",")) return;  // the selection changed meanwhile
        drawFigures(ids, list);
        drawTrees(ids, list);
        status.textContent = note + "Comparing " + ids.join(", ") + ".";
        root.setAttribute("data-az-ready", "1");
      }).catch(function (error) {
        status.textContent = note + "Could not load " + error.message + ".";
        root.setAttribute("data-az-ready", "error");
      });
    }

    function modelLink(id) {
      return el("a", { href: "../" + byId[id].url, text: id });
    }

    function drawFigures(ids, list) {
      var rows = [
        ["Architecture", function (m) { return el("a", { href: "../architectures/" + m.architecture + "/", text: m.architecture }); }],
        ["Year", function (m) { return String(m.year); }],
        ["Parameters (exact)", function (m, d) { return group(d.figures.params) + " (" + human(d.figures.params) + ")"; }],
        ["Published", function (m) {
          if (!m.published) return "\u2014";
          var diff = m.difference === null ? "" : " (" + (m.difference > 0 ? "+" : "") + group(m.difference) +
            (m.difference_relative === null ? "" : ", " + (m.difference_relative * 100).toFixed(2) + "%") + ")";
          return m.published + diff;
        }],
        ["Status", function (m) { return m.status + (m.reason ? " (" + m.reason + ")" : ""); }],
        ["Active parameters", function (m, d) { return group(d.figures.active) + " (" + human(d.figures.active) + ")"; }],
        ["Sequence length N", function (m, d) { return group(d.seq_len); }],
        ["Forward FLOPs at N", function (m, d) { return group(d.figures.flops) + " (" + human(d.figures.flops) + ")"; }],
        ["of which attention", function (m, d) { return human(d.figures.attention_flops); }],
        ["KV cache per token", function (m, d) {
          return d.figures.kv_cache === "0" ? "\u2014" : group(d.figures.kv_cache) + " elements";
        }],
        ["Weights in fp16", function (m, d) { return bytes(d.figures.weights_fp16_bytes); }]
      ];
      var head = el("tr", {}, [el("th", { scope: "col", text: "" })].concat(ids.map(function (id) {
        return el("th", { scope: "col" }, [modelLink(id)]);
      })));
      var body = el("tbody");
      rows.forEach(function (row) {
        body.appendChild(el("tr", {}, [el("th", { scope: "row", text: row[0] })].concat(list.map(function (d, i) {
          var value = row[1](byId[ids[i]], d);
          return el("td", { "data-model": ids[i] }, [value]);
        }))));
      });
      var table = el("table", { "class": "az-compare-table" }, [el("thead", {}, [head]), body]);
      figures.appendChild(el("h2", { id: "headline-figures", text: "Headline figures" }));
      figures.appendChild(el("div", { "class": "az-compare-scroll", tabindex: "0", role: "region",
                                       "aria-label": "Headline figures" }, [table]));
    }

    function drawTrees(ids, list) {
      trees.appendChild(el("h2", { id: "block-trees", text: "Block trees" }));
      var grid = el("div", { "class": "az-compare-grid", style: "--az-columns: " + ids.length });
      list.forEach(function (d, i) {
        var total = BigInt(d.figures.params);
        var body = el("tbody");
        d.tree.forEach(function (row) {
          var share = total > 0n ? Number(BigInt(row.params) * 10000n / total) / 100 : 0;
          var name = el("td", { "class": "az-compare-block", style: "padding-left: " + (0.4 + row.depth * 0.9) + "em",
                                title: row.formula }, [row.name + (row.copies > 1 ? " \u00d7 " + row.copies : "")]);
          body.appendChild(el("tr", { "data-path": row.path }, [
            name,
            el("td", { "class": "az-num", "data-value": row.params, text: human(row.params) }),
            el("td", { "class": "az-num", text: share.toFixed(1) + "%" })
          ]));
        });
        var table = el("table", { "class": "az-compare-tree" }, [
          el("caption", {}, [modelLink(ids[i]), " \u00b7 " + human(d.figures.params)]),
          el("thead", {}, [el("tr", {}, [
            el("th", { scope: "col", text: "block" }), el("th", { scope: "col", text: "params" }),
            el("th", { scope: "col", text: "share" })
          ])]),
          body
        ]);
        grid.appendChild(el("div", { "class": "az-compare-column", tabindex: "0", role: "region",
                                     "aria-label": "Block tree of " + ids[i], "data-model": ids[i] }, [table]));
      });
      trees.appendChild(grid);
    }

    selects.forEach(function (s) { s.addEventListener("change", render); });
    render();
  }

  function start(root) { root.querySelectorAll(".archzoo-compare").forEach(init); }

  if (typeof document$ !== "undefined" && document$.subscribe) {
    document$.subscribe(function () { start(document.body); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { start(document.body); });
  } else {
    start(document.body);
  }
})();
