/* archzoo site: the what-if calculator of architecture and model pages.
 *
 * A page holds <div class="archzoo-whatif" data-architecture="ARCH" data-model="ID"></div>; this script
 * reads explore/models/ID.json (or explore/architectures/ARCH.json when data-model is empty), written by
 * archzoo.site.explore, and fills the div with a field per integer configuration key. As the reader types,
 * parameters, forward FLOPs and the KV cache are recomputed from the exported polynomials with exact integer
 * arithmetic (BigInt): the same terms the CLI evaluates. A key the export refuses (it changes the block
 * tree's structure), a value out of range or a derived symbol that does not come out whole is reported
 * instead of a figure. `evaluate` here is the twin of archzoo.site.explore.evaluate.
 */
(function () {
  "use strict";

  var MAX_SIZE = 2147483647n;
  /* archzoo reads integers of at most 30 digits (files.MAX_INT_DIGITS): no size comes close, and a longer
   * one is refused before it is read as a number, so that its size costs nothing. */
  var MAX_DIGITS = 30;

  function Refused(message) { this.message = message; }

  /* ---- exact arithmetic ------------------------------------------------------------------------ */

  function tokens(text) {
    var re = /\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*\/()²^·×]))/y;
    var out = [];
    var s = text.trim();
    re.lastIndex = 0;
    while (re.lastIndex < s.length) {
      var start = re.lastIndex;
      var m = re.exec(s);
      if (!m || re.lastIndex === start) throw new Refused("definition " + text + ": cannot read " + s.slice(start));
      out.push(m[1] || m[2] || m[3]);
    }
    return out;
  }

  /* A derived symbol's definition (d_model / n_heads), evaluated exactly: a division must come out whole. */
  function expression(text, values) {
    var list = tokens(text);
    var pos = 0;
    function peek() { return pos < list.length ? list[pos] : null; }
    function take() { return list[pos++]; }
    function atom() {
      var token = peek() === null ? "" : take();
      var value;
      if (token === "(") {
        value = add();
        if (take() !== ")") throw new Refused("definition " + text + ": a parenthesis is not closed");
      } else if (token === "-") {
        value = -atom();
      } else if (/^\d+$/.test(token)) {
        value = BigInt(token);
      } else if (Object.prototype.hasOwnProperty.call(values, token)) {
        value = values[token];
      } else {
        throw new Refused("definition " + text + ": " + token + " is not a symbol of this model");
      }
      while (peek() === "²" || peek() === "^" || peek() === "**") {
        if (take() === "²") {
          value = value * value;
        } else {
          var exponent = atom();
          if (exponent < 0n || exponent > 64n) throw new Refused("definition " + text + ": exponent out of range");
          value = value ** exponent;
        }
      }
      return value;
    }
    function mul() {
      var value = atom();
      while (["*", "·", "×", "/"].indexOf(peek()) !== -1) {
        var op = take();
        var right = atom();
        if (op === "/") {
          if (right === 0n || value % right !== 0n) {
            throw new Refused(text + " = " + group(value) + " / " + group(right) + " is not a whole number");
          }
          value = value / right;
        } else {
          value = value * right;
        }
      }
      return value;
    }
    function add() {
      var value = mul();
      while (peek() === "+" || peek() === "-") {
        value = take() === "+" ? value + mul() : value - mul();
      }
      return value;
    }
    var result = add();
    if (pos !== list.length) throw new Refused("definition " + text + ": unexpected " + list[pos]);
    return result;
  }

  function namesIn(text) {
    try {
      return tokens(text).filter(function (t) { return /^[A-Za-z_]/.test(t); });
    } catch (e) {
      return [];
    }
  }

  function integerKeys(config) {
    var out = {};
    Object.keys(config).forEach(function (k) {
      var v = config[k];
      if (typeof v === "bigint") out[k] = v;
      else if (typeof v === "number" && Number.isInteger(v)) out[k] = BigInt(v);
    });
    return out;
  }

  /* Every symbol's value with the changed keys in `config` (bound symbols follow their key, derived ones
   * their definition, the rest keep their value). */
  function symbolValues(data, config) {
    var keys = integerKeys(config);
    var out = {};
    var names = Object.keys(data.symbols);
    names.forEach(function (name) {
      var s = data.symbols[name];
      if (s.key !== null) out[name] = keys[s.key] + BigInt(s.offset);
      else if (!s.derived) out[name] = BigInt(s.value);
    });
    for (var round = 0; round < names.length; round++) {
      names.forEach(function (name) {
        var s = data.symbols[name];
        if (!s.derived || Object.prototype.hasOwnProperty.call(out, name)) return;
        var ready = namesIn(s.derived).every(function (n) { return n in out || n in keys; });
        if (ready) out[name] = expression(s.derived, Object.assign({}, out, keys));
      });
    }
    return out;
  }

  function bound(rule, keys) {
    if (rule.key !== null) return keys[rule.key] + BigInt(rule.offset);
    return rule.value === null ? null : BigInt(rule.value);
  }

  /* The figures with `values` (key -> BigInt) changed, at N (BigInt, or null for the configuration's own). */
  function evaluate(data, values, n) {
    var fields = {};
    data.fields.forEach(function (f) { fields[f.key] = f; });
    Object.keys(values).forEach(function (key) {
      var f = fields[key];
      if (!f) throw new Refused(key + ": not a key this calculator can change");
      if (f.refused) throw new Refused(key + ": " + f.refused);
      var v = values[key];
      if (v < BigInt(f.min) || v > MAX_SIZE) {
        throw new Refused(key + ": expected a whole number from " + f.min + " to " + group(MAX_SIZE) + ", got " + group(v));
      }
    });
    var keys = Object.assign(integerKeys(data.config), values);
    (data.rules || []).forEach(function (r) {
      var divisor = keys[r.divisor];
      if (divisor === 0n || keys[r.key] % divisor !== 0n) {
        throw new Refused(r.key + " " + group(keys[r.key]) + " is not divisible by " + r.divisor + " " +
          group(divisor) + "; the configuration requires it (archzoo count refuses it)");
      }
    });
    var rule = data.n;
    var seq = bound(rule, keys);
    if (n === null || rule.fixed) {
      /* N's rule, learnt below the longest N, holds no further (Gemma 2's N is its window only while the window
       * is shorter than the context) */
      var most = bound(rule.max, keys);
      if (most !== null && seq > most) {
        throw new Refused("N: this change makes the configuration's own N " + group(seq) + ", beyond its " +
          group(most) + " positions, where these formulas do not follow how archzoo sets N; give N explicitly");
      }
    }
    if (n !== null && !rule.fixed) {
      var longest = bound(rule.max, keys);
      var top = longest === null ? MAX_SIZE : longest;
      if (n < 1n || n > top) throw new Refused("N: expected a whole number from 1 to " + group(top) + ", got " + group(n));
      seq = n;
    }
    var symbols = symbolValues(data, keys);
    symbols.N = seq;
    var out = { N: seq, symbols: symbols };
    Object.keys(data.figures).forEach(function (name) {
      var total = 0n;
      data.figures[name].terms.forEach(function (term) {
        var value = BigInt(term[0]);
        term[1].forEach(function (factor) {
          var v = symbols[factor[0]];
          if (v === undefined) throw new Refused("symbol " + factor[0] + " has no value");
          value *= v ** BigInt(factor[1]);
        });
        total += value;
      });
      out[name] = total;
    });
    return out;
  }

  /* ---- formatting ------------------------------------------------------------------------------ */

  /* Digits in groups of three, in one pass: a look-ahead regular expression rescans the rest of the number
   * at every digit, seconds for a number of 60,000 digits. */
  function groupDigits(s) {
    var head = s.length % 3 || 3;
    var parts = [s.slice(0, head)];
    for (var i = head; i < s.length; i += 3) parts.push(s.slice(i, i + 3));
    return parts.join(",");
  }

  function group(n) {
    return (n < 0n ? "\u2212" : "") + groupDigits((n < 0n ? -n : n).toString());
  }

  /* A value as typed, for a message: quoted, and cut after 40 characters. */
  function typed(text) {
    return JSON.stringify(text.length > 40 ? text.slice(0, 40) + "\u2026" : text);
  }

  /* 109482240 -> 109.5M, as archzoo.report.human_count: three significant digits below 10, else one
   * decimal, rounded half up from the exact value. */
  function human(n) {
    var units = [["T", 12], ["B", 9], ["M", 6], ["K", 3]];
    var sign = n < 0n ? "-" : "";
    var a = n < 0n ? -n : n;
    function scaled(exponent, decimals) {
      var step = 10n ** BigInt(exponent - decimals);
      var q = (a + step / 2n) / step;
      var d = 10n ** BigInt(decimals);
      return { q: q, d: d, text: (q / d) + "." + (q % d).toString().padStart(decimals, "0") };
    }
    for (var i = 0; i < units.length; i++) {
      var scale = 10n ** BigInt(units[i][1]);
      if (a < scale) continue;
      var r = scaled(units[i][1], a < 10n * scale ? 2 : 1);
      if (r.d === 100n && r.q >= 1000n) r = scaled(units[i][1], 1);  // 9.996 -> 10.0, not 10.00
      if (r.q / r.d >= 1000n && i > 0) return sign + scaled(units[i - 1][1], 2).text + units[i - 1][0];
      return sign + r.text + units[i][0];
    }
    return sign + a.toString();
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  /* ---- the calculator ---------------------------------------------------------------------------- */

  var LABELS = {
    params: "Parameters",
    active: "Active parameters per token",
    flops: "Forward FLOPs at N",
    kv_cache: "KV cache elements per token",
    cross_kv_cache: "Cross-attention KV cache per source token"
  };

  function shownFigures(data) {
    return Object.keys(LABELS).filter(function (name) {
      var f = data.figures[name];
      if (!f || !f.terms.length) return false;
      return !(name === "active" && f.text === data.figures.params.text);
    });
  }

  function siteBase() {
    var config = document.getElementById("__config");
    try {
      var base = JSON.parse(config.textContent).base;
      if (typeof base === "string" && base) return base.replace(/\/$/, "") + "/";
    } catch (e) { /* not a Material page: the site's root is this page's folder */ }
    return "./";
  }

  var counter = 0;

  function build(root, data) {
    counter += 1;
    var prefix = "az-wi" + counter + "-";
    root.textContent = "";
    var baseFigures = evaluate(data, {}, null);
    var form = el("form", { "class": "az-whatif", "aria-label": "What if: change the configuration" });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.appendChild(el("p", { "class": "az-whatif-intro", text:
      "Change a configuration key: parameters, forward FLOPs and the KV cache are recomputed exactly, " +
      "in your browser, from the formulas below (the same polynomials archzoo count evaluates)." }));
    var grid = el("div", { "class": "az-whatif-fields" });
    var inputs = {};
    function field(key, value, hint, title) {
      var id = prefix + key;
      var input = el("input", { id: id, type: "text", inputmode: "numeric", autocomplete: "off",
                                 spellcheck: "false", value: String(value), "data-key": key,
                                 "aria-describedby": id + "-hint" });
      if (title) input.setAttribute("title", title);
      inputs[key] = input;
      grid.appendChild(el("div", { "class": "az-whatif-field" }, [
        el("label", { "for": id }, [el("code", { text: key })]),
        input,
        el("small", { id: id + "-hint", text: hint })
      ]));
    }
    data.fields.forEach(function (f) {
      var hint = f.symbols.length ? f.symbols.join(", ") : "no symbol in these figures";
      if (f.refused) hint = "changes the tree: see below";
      field(f.key, f.value, hint, f.description);
    });
    if (!data.n.fixed) field("N", data.n.value, "sequence length", "tokens of one forward pass");
    form.appendChild(grid);

    var table = el("table", { "class": "az-whatif-results" });
    var head = el("thead", {}, [el("tr", {}, [
      el("th", { scope: "col", text: "Figure" }),
      el("th", { scope: "col", text: "This configuration" }),
      el("th", { scope: "col", text: "What if" }),
      el("th", { scope: "col", text: "Change" })
    ])]);
    var body = el("tbody");
    var cells = {};
    shownFigures(data).forEach(function (name) {
      var what = el("td", { "class": "az-whatif-value", "data-figure": name, "data-label": "What if" });
      var change = el("td", { "class": "az-whatif-change", "data-label": "Change" });
      cells[name] = { what: what, change: change };
      body.appendChild(el("tr", {}, [
        el("th", { scope: "row", text: LABELS[name] }),
        el("td", { "data-base": name, "data-value": baseFigures[name].toString(), "data-label": "This configuration",
                   text: group(baseFigures[name]) }),
        what,
        change
      ]));
    });
    table.appendChild(head);
    table.appendChild(body);
    form.appendChild(el("div", { "class": "az-whatif-scroll", tabindex: "0", role: "region",
                                 "aria-label": "What-if figures" }, [table]));
    var status = el("p", { "class": "az-whatif-status", role: "status", "aria-live": "polite" });
    form.appendChild(status);

    var formulas = el("details", { "class": "az-whatif-formulas" });
    formulas.appendChild(el("summary", { text: "Formulas and symbol values" }));
    var list = el("dl");
    shownFigures(data).forEach(function (name) {
      list.appendChild(el("dt", { text: LABELS[name] }));
      list.appendChild(el("dd", {}, [el("code", { text: data.figures[name].text })]));
    });
    formulas.appendChild(list);
    var symbolsList = el("ul", { "class": "az-whatif-symbols" });
    formulas.appendChild(symbolsList);
    form.appendChild(formulas);

    var refusedKeys = data.fields.filter(function (f) { return f.refused; });
    var rules = (data.rules || []).map(function (r) { return r.divisor + " divides " + r.key; });
    var note = "The browser checks that each value is a whole number in range, that every division " +
      "comes out whole" + (rules.length ? " and that " + rules.join(", ") : "") + "; the configuration's " +
      "other rules (for example that n_kv_heads divides n_heads, or an even head width) are checked by " +
      "archzoo count only.";
    form.appendChild(el("p", { "class": "az-whatif-note", text: note }));
    var reset = el("button", { type: "button", "class": "md-button az-whatif-reset", text: "Reset" });
    form.appendChild(reset);
    root.appendChild(form);

    function describeSymbols(values) {
      symbolsList.textContent = "";
      Object.keys(data.symbols).concat(["N"]).forEach(function (name) {
        var s = data.symbols[name];
        var v = values ? values[name] : null;
        var text = name + " = " + (v === null || v === undefined ? "?" : group(v));
        if (s && s.key) text += " (" + s.key + (s.offset ? (s.offset > 0 ? " + " : " \u2212 ") + Math.abs(s.offset) : "") + ")";
        else if (s && s.derived) text += " (" + s.derived + ")";
        else if (s) text += " (fixed: " + s.meaning + ")";
        else text += data.n.fixed ? " (" + data.n.meaning + ")" : " (sequence length)";
        symbolsList.appendChild(el("li", { text: text }));
      });
    }

    function update() {
      var values = {};
      var problems = [];
      var n = null;
      Object.keys(inputs).forEach(function (key) {
        var input = inputs[key];
        var text = input.value.replace(/[\s,_]/g, "");
        var ok = /^\d+$/.test(text);
        input.setAttribute("aria-invalid", ok ? "false" : "true");
        if (!ok) { problems.push(key + ": expected a whole number, got " + typed(input.value)); return; }
        if (text.length > MAX_DIGITS) {
          problems.push(key + ": expected a whole number of at most " + MAX_DIGITS + " digits (no size comes close), got one of " +
                        groupDigits(String(text.length)) + " digits");
          return;
        }
        var v = BigInt(text);
        if (key === "N") { n = v; return; }
        var f = data.fields.filter(function (x) { return x.key === key; })[0];
        if (v !== BigInt(f.value)) values[key] = v;
      });
      var result = null;
      if (!problems.length) {
        try {
          result = evaluate(data, values, n);
        } catch (e) {
          if (!(e instanceof Refused)) throw e;
          problems.push(e.message);
        }
      }
      Object.keys(cells).forEach(function (name) {
        var c = cells[name];
        if (result) {
          var v = result[name];
          var d = v - baseFigures[name];
          c.what.textContent = group(v);
          c.what.setAttribute("data-value", v.toString());
          c.change.textContent = d === 0n ? "" : (d > 0n ? "+" : "") + group(d) + " (" + human(v) + ")";
        } else {
          c.what.textContent = "\u2014";
          c.what.setAttribute("data-value", "");
          c.change.textContent = "";
        }
      });
      form.classList.toggle("az-whatif-refused", !result);
      var changed = Object.keys(values).length || (n !== null && n !== baseFigures.N);
      status.textContent = result
        ? (changed ? "Recomputed at N = " + group(result.N) + "." : "The configuration as published, at N = " + group(result.N) + ".")
        : "No figure: " + problems.join("; ");
      describeSymbols(result ? result.symbols : null);
    }

    Object.keys(inputs).forEach(function (key) { inputs[key].addEventListener("input", update); });
    reset.addEventListener("click", function () {
      data.fields.forEach(function (f) { inputs[f.key].value = String(f.value); });
      if (inputs.N) inputs.N.value = String(data.n.value);
      update();
    });
    if (refusedKeys.length) {
      var why = el("ul", { "class": "az-whatif-refusals" });
      refusedKeys.forEach(function (f) {
        var item = el("li", {}, [el("code", { text: f.key })]);
        item.appendChild(document.createTextNode(": " + f.refused));
        why.appendChild(item);
      });
      form.insertBefore(el("details", { "class": "az-whatif-why" }, [
        el("summary", { text: "Keys answered only by archzoo count (" + refusedKeys.length + ")" }), why
      ]), formulas);
    }
    update();
    root.setAttribute("data-az-ready", "1");
  }

  function load(root) {
    if (root.getAttribute("data-az-whatif")) return;
    root.setAttribute("data-az-whatif", "1");
    var model = root.getAttribute("data-model") || "";
    var arch = root.getAttribute("data-architecture") || "";
    var safe = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
    if (!(model ? safe.test(model) : safe.test(arch))) return;
    var url = siteBase() + "explore/" + (model ? "models/" + model : "architectures/" + arch) + ".json";
    root.textContent = "Loading the what-if calculator\u2026";
    fetch(url).then(function (response) {
      if (!response.ok) throw new Error(url + ": " + response.status);
      return response.json();
    }).then(function (data) {
      build(root, data.whatif);
    }).catch(function (error) {
      root.textContent = "The what-if calculator could not load its data (" + error.message + ").";
      root.setAttribute("data-az-ready", "error");
    });
  }

  function init(root) { root.querySelectorAll(".archzoo-whatif").forEach(load); }

  window.archzooWhatif = { evaluate: evaluate, expression: expression, human: human, group: group };

  if (typeof document$ !== "undefined" && document$.subscribe) {
    document$.subscribe(function () { init(document.body); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document.body); });
  } else {
    init(document.body);
  }
})();
