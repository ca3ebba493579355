/* memwiki memory search, the part without a page: tokens, dense and lexical ranking, fusion.
 *
 * Mirrors memory/tokens.py (CJK bigrams, light English stemmer, stop words), SQLite FTS5's bm25
 * (k1 = 1.2, b = 0.75) over the OR of the query's tokens as memory/lexical.py asks it, and
 * memory/recall.py's `fuse` (z-score fusion weighted by how far each list's best stands out, reciprocal-rank
 * or normalised-score fusion of the top `depth` of each).
 * Runs in a browser (window.MemwikiSearch) and under node (module.exports) for the tests.
 */
(function (root) {
  "use strict";

  var CJK = "\\u3040-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff\\uac00-\\ud7af\\u{20000}-\\u{2ebef}";
  var TOKEN_SRC = "[" + CJK + "]+|(?:(?![" + CJK + "])[\\p{L}\\p{N}])+(?:['\\u2019][a-z]+)?";
  var CJK_RE = new RegExp("^[" + CJK + "]", "u");
  var K1 = 1.2, B = 0.75;

  function endsWithAny(word, suffixes) {
    for (var i = 0; i < suffixes.length; i++) if (word.endsWith(suffixes[i])) return true;
    return false;
  }

  /* memory.tokens._stem: plurals (-ies, -es after a sibilant, -s), then -ing / -ed (undoubling a final
   * consonant), then a final silent -e. Lengths count code points, as Python's len() does. */
  function stem(word) {
    var ch = Array.from(word);
    if (ch.length <= 2 || !/^\p{L}+$/u.test(word)) return word;
    if (word.endsWith("ies") && ch.length > 4) ch = ch.slice(0, -3).concat(["y"]);
    else if (endsWithAny(word, ["ses", "xes", "zes", "ches", "shes"]) && ch.length > 4) ch = ch.slice(0, -2);
    else if (word.endsWith("s") && !endsWithAny(word, ["ss", "us", "is"])) ch = ch.slice(0, -1);
    var w = ch.join("");
    var suffixes = ["ing", "ed"];
    for (var i = 0; i < suffixes.length; i++) {
      var suffix = suffixes[i];
      if (w.endsWith(suffix) && ch.length - suffix.length >= 3) {
        ch = ch.slice(0, -suffix.length);
        var n = ch.length;
        if (n > 3 && ch[n - 1] === ch[n - 2] && "lsz".indexOf(ch[n - 1]) < 0) ch = ch.slice(0, -1);
        break;
      }
    }
    if (ch[ch.length - 1] === "e" && ch.length > 3) ch = ch.slice(0, -1);
    return ch.join("");
  }

  /* Lexical tokens of `text` in order, as memory.tokens.tokens(text, stop_words=..., unigrams=...) makes
   * them. `stop` is null (keep everything) or {words: Set, chars: Set}: English stop words and CJK grams
   * holding a stop character are dropped. `unigrams` also gives each character of a CJK run (index side). */
  function tokens(text, stop, unigrams) {
    var out = [];
    var re = new RegExp(TOKEN_SRC, "gu");
    var s = String(text).normalize("NFKC").toLowerCase();
    var m;
    while ((m = re.exec(s)) !== null) {
      var run = m[0];
      if (CJK_RE.test(run)) {
        var chars = Array.from(run), grams = [];
        if (chars.length === 1) grams.push(run);
        else for (var i = 0; i + 1 < chars.length; i++) grams.push(chars[i] + chars[i + 1]);
        if (unigrams && chars.length > 1) grams = grams.concat(chars);
        for (var g = 0; g < grams.length; g++) {
          if (stop && Array.from(grams[g]).some(function (c) { return stop.chars.has(c); })) continue;
          out.push(grams[g]);
        }
      } else if (!(stop && stop.words.has(run))) {
        out.push(stem(fold(run.replace(/\u2019/g, "'").split("'")[0])));
      }
    }
    return out;
  }

  /* A word's combining marks removed (before stemming), as memory/tokens.py's `_latin` does. */
  function fold(token) {
    return token.normalize("NFD").replace(/[\u0300-\u036f]/g, "").normalize("NFC");
  }

  function decodeInt8(b64) {
    var bin = typeof atob === "function" ? atob(b64) : Buffer.from(b64, "base64").toString("binary");
    var out = new Int8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { var c = bin.charCodeAt(i); out[i] = c > 127 ? c - 256 : c; }
    return out;
  }

  function Index(data, vectorsB64) {
    this.data = data;
    this.docs = data.docs;
    this.ids = data.docs.map(function (doc) { return doc[0]; });
    this.n = data.docs.length;
    this.stop = {words: new Set(data.stop_words), chars: new Set(data.stop_chars)};
    this.fusion = data.fusion;
    this.budget = data.postings_budget || Infinity;  // memory/lexical.py's POSTINGS_BUDGET
    // memory/crosslingual.py: headword -> the English of its glosses that these memories hold
    this.bridge = data.bridge ? new Map(Object.entries(data.bridge.table)) : null;
    this.bridgeBudget = data.bridge ? data.bridge.postings : 0;
    this.bridgeMaxWord = data.bridge ? data.bridge.max_word : 0;
    var textAt = data.fields.indexOf("text");
    // lexical: postings token -> [doc, tf, ...], doc lengths in tokens (as memory.tokens.fts_text indexes)
    this.postings = new Map();
    this.docLen = new Float64Array(this.n);
    var total = 0;
    for (var d = 0; d < this.n; d++) {
      var toks = tokens(this.docs[d][textAt], null, true);
      this.docLen[d] = toks.length;
      total += toks.length;
      var tf = new Map();
      for (var t = 0; t < toks.length; t++) tf.set(toks[t], (tf.get(toks[t]) || 0) + 1);
      var self = this;
      tf.forEach(function (count, key) {
        var list = self.postings.get(key);
        if (!list) { list = []; self.postings.set(key, list); }
        list.push(d, count);
      });
    }
    this.avgdl = this.n ? total / this.n : 0;
    // dense: int8 rows (scale-free: cosine only needs each row's norm)
    this.dense = !!(data.dense && vectorsB64);
    if (this.dense) {
      this.dim = data.dim;
      this.vectors = decodeInt8(vectorsB64);
      if (this.vectors.length !== this.n * this.dim) throw new Error("search vectors do not match the memories");
      this.norms = new Float32Array(this.n);
      for (var r = 0; r < this.n; r++) {
        var s2 = 0, base = r * this.dim;
        for (var j = 0; j < this.dim; j++) s2 += this.vectors[base + j] * this.vectors[base + j];
        this.norms[r] = Math.sqrt(s2) || 1;
      }
    }
  }

  /* The query's tokens as memory.tokens.fts_query(query, mode="OR") uses them (deduplicated). */
  Index.prototype.queryTokens = function (query) {
    var toks = tokens(query, this.stop);
    if (!toks.length) toks = tokens(query, null);
    return Array.from(new Set(toks));
  };

  /* The best `k` of a doc -> score map; ties by memory id, as memory/lexical.py's ORDER BY (SQLite compares
   * UTF-8 bytes, JS UTF-16 units: the same order but for ids holding characters above U+FFFF). */
  function top(scores, k, ids) {
    var order = [];
    scores.forEach(function (s, i) { order.push([i, s]); });
    order.sort(function (a, b) {
      return b[1] - a[1] || (ids[a[0]] < ids[b[0]] ? -1 : ids[a[0]] > ids[b[0]] ? 1 : a[0] - b[0]);
    });
    return order.slice(0, k);
  }

  /* [[doc, cosine], ...] best first. */
  Index.prototype.denseRank = function (qvec, k) {
    if (!this.dense) return [];
    var q = new Float32Array(this.dim), qn = 0, i, j;
    for (i = 0; i < this.dim; i++) { q[i] = qvec[i]; qn += q[i] * q[i]; }
    qn = Math.sqrt(qn) || 1;
    var scores = new Float32Array(this.n);
    for (i = 0; i < this.n; i++) {
      var s = 0, base = i * this.dim;
      for (j = 0; j < this.dim; j++) s += q[j] * this.vectors[base + j];
      scores[i] = s / (qn * this.norms[i]);
    }
    var order = [];
    for (i = 0; i < this.n; i++) order.push([i, scores[i]]);
    order.sort(function (a, b) { return b[1] - a[1] || a[0] - b[0]; });
    return order.slice(0, k);
  };

  /* The query tokens worth matching, as memory/lexical.py's `_affordable`: rarest first, as many as
   * `budget` postings allow. */
  Index.prototype.affordable = function (terms, budget) {
    var self = this, present = [], total = 0;
    terms.forEach(function (t, at) { if (self.postings.has(t)) present.push([t, self.postings.get(t).length / 2, at]); });
    present.sort(function (a, b) { return a[1] - b[1] || a[2] - b[2]; });  // stable, as Python's sorted
    present.forEach(function (x) { total += x[1]; });
    if (total <= budget) return present.map(function (x) { return x[0]; });
    var kept = [];
    total = 0;
    for (var i = 0; i < present.length; i++) {
      if (present[i][1] > this.n / 2 || total + present[i][1] > budget) break;
      kept.push(present[i][0]);
      total += present[i][1];
    }
    return kept;
  };

  /* [[doc, score], ...] best first; score = -bm25 as memory/lexical.py returns it. */
  Index.prototype.lexicalRank = function (query, k, budget) {
    var terms = this.affordable(this.queryTokens(query), budget === undefined ? this.budget : budget);
    var scores = new Map();
    for (var t = 0; t < terms.length; t++) {
      var list = this.postings.get(terms[t]);
      var hits = list.length / 2;
      var idf = Math.log((this.n - hits + 0.5) / (hits + 0.5));
      if (idf <= 0) idf = 1e-6;
      for (var p = 0; p < list.length; p += 2) {
        var d = list[p], tf = list[p + 1];
        var w = idf * (tf * (K1 + 1)) / (tf + K1 * (1 - B + B * this.docLen[d] / this.avgdl));
        scores.set(d, (scores.get(d) || 0) + w);
      }
    }
    return top(scores, k, this.ids);
  };

  /* memory.crosslingual.english_glosses over the shipped part of the glossary: every dictionary word of
   * the query's Chinese runs (overlaps included), its English words, each once. */
  Index.prototype.glosses = function (query) {
    var out = [], seen = new Set(), re = new RegExp("[" + CJK + "]+", "gu"), m;
    if (!this.bridge) return out;
    while ((m = re.exec(String(query))) !== null) {
      var chars = Array.from(m[0]);
      for (var i = 0; i + 1 < chars.length; i++) {
        for (var size = 2; size <= Math.min(this.bridgeMaxWord, chars.length - i); size++) {
          var words = this.bridge.get(chars.slice(i, i + size).join(""));
          if (words) words.forEach(function (w) { if (!seen.has(w)) { seen.add(w); out.push(w); } });
        }
      }
    }
    return out;
  };

  /* The lexical ranking of the query's English glosses, within the bridge's smaller budget. */
  Index.prototype.bridgeRank = function (query, k) {
    var glosses = this.glosses(query);
    return glosses.length ? this.lexicalRank(glosses.join(" "), k, this.bridgeBudget) : [];
  };

  /* memory.recall.fuse ("z", "rrf" or "score") of dense, lexical and bridge rankings:
   * [{doc, score, cosine, lexical, bridge, denseRank, lexicalRank, bridgeRank}] best first. */
  Index.prototype.fuse = function (dense, lexical, bridge) {
    var f = this.fusion, ids = [], seen = new Set();
    var lists = [[dense, f.dense_weight], [lexical, f.lexical_weight], [bridge || [], f.lexical_weight]];
    var values = lists.map(function () { return new Map(); }), ranks = lists.map(function () { return new Map(); });
    lists.forEach(function (pair, n) {
      pair[0].forEach(function (x, r) {
        values[n].set(x[0], x[1]);
        ranks[n].set(x[0], r);
        if (!seen.has(x[0])) { seen.add(x[0]); ids.push(x[0]); }
      });
    });
    var scores = new Map();
    function add(i, v) { scores.set(i, (scores.get(i) || 0) + v); }
    if (f.fusion === "rrf") {
      ids.forEach(function (i) {
        var s = 0;
        lists.forEach(function (pair, n) { if (ranks[n].has(i)) s += pair[1] / (f.rrf_k + ranks[n].get(i) + 1); });
        scores.set(i, s);
      });
    } else if (f.fusion === "z") {
      var parts = [], total = 0;
      lists.forEach(function (pair, n) {
        var scored = values[n], weight = pair[1];
        if (!scored.size || weight === 0) return;
        var v = Array.from(scored.values()), mu = 0, sd = 0, lo = Infinity, hi = -Infinity;
        v.forEach(function (x) { mu += x; lo = Math.min(lo, x); hi = Math.max(hi, x); });
        mu /= v.length;
        v.forEach(function (x) { sd += (x - mu) * (x - mu); });
        sd = Math.sqrt(sd / v.length) || 1;
        var peak = Math.max((hi - mu) / sd, 0); // how far the retriever's best stands out
        parts.push({values: scored, weight: f.peak_weighting ? weight * peak : weight, mu: mu, sd: sd, floor: (lo - mu) / sd});
      });
      parts.forEach(function (p) { total += p.weight; });
      if (total <= 0) { parts.forEach(function (p) { p.weight = 1; }); total = parts.length; }
      parts.forEach(function (p) {
        var share = p.weight / total;
        ids.forEach(function (i) { add(i, share * (p.values.has(i) ? (p.values.get(i) - p.mu) / p.sd : p.floor)); });
      });
    } else if (f.fusion === "score") {
      var cos = values[0], dLo = Infinity, dHi = -Infinity;
      cos.forEach(function (x) { dLo = Math.min(dLo, x); dHi = Math.max(dHi, x); });
      if (!cos.size) { dLo = 0; dHi = 1; }
      var his = values.slice(1).map(function (scored) {
        var hi = -Infinity;
        scored.forEach(function (x) { hi = Math.max(hi, x); });
        return scored.size && hi ? hi : 1;
      });
      ids.forEach(function (i) {
        var s = f.dense_weight * (cos.has(i) ? (dHi > dLo ? (cos.get(i) - dLo) / (dHi - dLo) : 1) : 0);
        values.slice(1).forEach(function (scored, n) { s += f.lexical_weight * ((scored.get(i) || 0) / his[n]); });
        scores.set(i, s);
      });
    } else {
      throw new Error("unknown fusion " + f.fusion);
    }
    var out = ids.map(function (i) {
      return {doc: i, score: scores.get(i) || 0, cosine: values[0].get(i), lexical: values[1].get(i),
              bridge: values[2].get(i), denseRank: ranks[0].get(i), lexicalRank: ranks[1].get(i),
              bridgeRank: ranks[2].get(i)};
    });
    out.sort(function (a, b) { return b.score - a.score; }); // stable: ties keep first-seen order
    return out;
  };

  /* Ranked hits for a query; `qvec` (Float32Array) may be null for lexical-only ranking. */
  Index.prototype.search = function (query, qvec, k) {
    var depth = Math.max(k, this.fusion.depth);
    var dense = qvec && this.dense ? this.denseRank(qvec, depth) : [];
    var words = this.fusion.lexical_weight > 0 || !dense.length;
    var lexical = words ? this.lexicalRank(query, depth) : [];
    var bridge = words && this.fusion.bridge ? this.bridgeRank(query, depth) : [];
    var fused = this.fuse(dense, lexical, bridge).slice(0, k);
    if (qvec && this.dense) {
      for (var i = 0; i < fused.length; i++) if (fused[i].cosine === undefined) fused[i].cosine = this.cosine(qvec, fused[i].doc);
    }
    return fused;
  };

  Index.prototype.cosine = function (qvec, doc) {
    var s = 0, qn = 0, base = doc * this.dim;
    for (var j = 0; j < this.dim; j++) { s += qvec[j] * this.vectors[base + j]; qn += qvec[j] * qvec[j]; }
    return s / ((Math.sqrt(qn) || 1) * this.norms[doc]);
  };

  var api = {tokens: tokens, stem: stem, fold: fold, Index: Index};
  if (typeof module === "object" && module.exports) module.exports = api;
  root.MemwikiSearch = api;
})(typeof window !== "undefined" ? window : globalThis);
