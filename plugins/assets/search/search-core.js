/* memwiki memory search, the part without a page: tokens, dense and lexical ranking, fusion.
 *
 * Mirrors memory/tokens.py (CJK bigrams, light English stemmer, stop words), SQLite FTS5's bm25
 * (k1 = 1.2, b = 0.75) over the OR of the query's tokens as memory/lexical.py asks it, and
 * memory/recall.py's `fuse` (reciprocal-rank or normalised-score fusion of the top `depth` of each).
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
        out.push(stem(run.replace(/\u2019/g, "'").split("'")[0]));
      }
    }
    return out;
  }

  /* FTS5's unicode61 tokenizer folds Latin diacritics on both sides; fold our tokens the same way. */
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
    this.n = data.docs.length;
    this.stop = {words: new Set(data.stop_words), chars: new Set(data.stop_chars)};
    this.fusion = data.fusion;
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
      for (var t = 0; t < toks.length; t++) { var k = fold(toks[t]); tf.set(k, (tf.get(k) || 0) + 1); }
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
    return Array.from(new Set(toks.map(fold)));
  };

  function top(scores, k) {
    var order = [];
    scores.forEach(function (s, i) { order.push([i, s]); });
    order.sort(function (a, b) { return b[1] - a[1] || a[0] - b[0]; });
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

  /* [[doc, score], ...] best first; score = -bm25 as memory/lexical.py returns it. */
  Index.prototype.lexicalRank = function (query, k) {
    var terms = this.queryTokens(query);
    var scores = new Map();
    for (var t = 0; t < terms.length; t++) {
      var list = this.postings.get(terms[t]);
      if (!list) continue;
      var hits = list.length / 2;
      var idf = Math.log((this.n - hits + 0.5) / (hits + 0.5));
      if (idf <= 0) idf = 1e-6;
      for (var p = 0; p < list.length; p += 2) {
        var d = list[p], tf = list[p + 1];
        var w = idf * (tf * (K1 + 1)) / (tf + K1 * (1 - B + B * this.docLen[d] / this.avgdl));
        scores.set(d, (scores.get(d) || 0) + w);
      }
    }
    return top(scores, k);
  };

  /* memory.recall.fuse ("z", "rrf" or "score"): [{doc, score, cosine, lexical, denseRank, lexicalRank}] best first. */
  Index.prototype.fuse = function (dense, lexical) {
    var f = this.fusion, cos = new Map(), lex = new Map(), dr = new Map(), lr = new Map(), ids = [];
    dense.forEach(function (x, r) { cos.set(x[0], x[1]); dr.set(x[0], r); ids.push(x[0]); });
    lexical.forEach(function (x, r) { lex.set(x[0], x[1]); lr.set(x[0], r); if (!dr.has(x[0])) ids.push(x[0]); });
    var scores = new Map();
    function add(i, v) { scores.set(i, (scores.get(i) || 0) + v); }
    if (f.fusion === "rrf") {
      ids.forEach(function (i) {
        var s = 0;
        if (dr.has(i)) s += f.dense_weight / (f.rrf_k + dr.get(i) + 1);
        if (lr.has(i)) s += f.lexical_weight / (f.rrf_k + lr.get(i) + 1);
        scores.set(i, s);
      });
    } else if (f.fusion === "z") {
      [[cos, f.dense_weight], [lex, f.lexical_weight]].forEach(function (pair) {
        var values = pair[0], weight = pair[1];
        if (!values.size || weight === 0) return;
        var v = Array.from(values.values()), mu = 0, sd = 0, lo = Infinity;
        v.forEach(function (x) { mu += x; lo = Math.min(lo, x); });
        mu /= v.length;
        v.forEach(function (x) { sd += (x - mu) * (x - mu); });
        sd = Math.sqrt(sd / v.length) || 1;
        var floor = (lo - mu) / sd;
        ids.forEach(function (i) { add(i, weight * (values.has(i) ? (values.get(i) - mu) / sd : floor)); });
      });
    } else if (f.fusion === "score") {
      var dLo = Infinity, dHi = -Infinity, lHi = -Infinity;
      cos.forEach(function (x) { dLo = Math.min(dLo, x); dHi = Math.max(dHi, x); });
      lex.forEach(function (x) { lHi = Math.max(lHi, x); });
      if (!cos.size) { dLo = 0; dHi = 1; }
      if (!lex.size || !lHi) lHi = 1;
      ids.forEach(function (i) {
        var d = cos.has(i) ? (dHi > dLo ? (cos.get(i) - dLo) / (dHi - dLo) : 1) : 0;
        scores.set(i, f.dense_weight * d + f.lexical_weight * ((lex.get(i) || 0) / lHi));
      });
    } else {
      throw new Error("unknown fusion " + f.fusion);
    }
    var out = ids.map(function (i) {
      return {doc: i, score: scores.get(i) || 0, cosine: cos.get(i), lexical: lex.get(i),
              denseRank: dr.get(i), lexicalRank: lr.get(i)};
    });
    out.sort(function (a, b) { return b.score - a.score; }); // stable: ties keep dense-then-lexical order
    return out;
  };

  /* Ranked hits for a query; `qvec` (Float32Array) may be null for lexical-only ranking. */
  Index.prototype.search = function (query, qvec, k) {
    var depth = Math.max(k, this.fusion.depth);
    var dense = qvec && this.dense ? this.denseRank(qvec, depth) : [];
    var lexical = this.fusion.lexical_weight > 0 || !dense.length ? this.lexicalRank(query, depth) : [];
    var fused = this.fuse(dense, lexical).slice(0, k);
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
