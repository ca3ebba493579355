/* memwiki search, the part without a page: `memwiki recall --all-layers` over the exported layers.
 *
 * Mirrors memwiki/text/tokens.py (CJK bigrams, light English stemmer, stop words, coverage), SQLite FTS5's bm25
 * (k1 = 1.2, b = 0.75) as memwiki/text/lexical.py asks it (OR of the query's tokens within a postings budget) and as
 * memwiki/layers/sessions.py asks it (AND of the query's tokens, else OR; best sessions with their best turns), and
 * memwiki/recall/cascade.py: `fuse` (z-score fusion, each list weighted by how far its best stands out), `rank_l2` (a
 * long memory by its best passage), the small layers' `_rank_texts`, `evidence` / `_mark` (confident hits,
 * `why`) and the layers in priority order L1, L2, L4, files.
 * Every ranking knob is read from the exported RecallConfig (data.config); KNOBS lists those this file knows,
 * and tests/test_search_index.py checks that it is every field of RecallConfig.
 * Runs in a browser (window.MemwikiSearch) and under node (module.exports) for the tests.
 */
(function (root) {
  "use strict";

  var CJK = "\\u3040-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff\\uac00-\\ud7af\\u{20000}-\\u{2ebef}";
  var TOKEN_SRC = "[" + CJK + "]+|(?:(?![" + CJK + "])[\\p{L}\\p{N}])+(?:['\\u2019][a-z]+)?";
  var CJK_RE = new RegExp("^[" + CJK + "]", "u");
  var TOKEN_RE = new RegExp(TOKEN_SRC, "gu");
  var ASCII = /^[\x00-\x7f]*$/;
  var K1 = 1.2, B = 0.75;
  // the fields of memwiki.recall.cascade.RecallConfig this file reads
  var KNOBS = ["dense_weight", "lexical_weight", "peak_weighting", "depth", "min_confidence", "min_coverage", "min_cosine_with_words"];

  function endsWithAny(word, suffixes) {
    for (var i = 0; i < suffixes.length; i++) if (word.endsWith(suffixes[i])) return true;
    return false;
  }

  /* memwiki.text.tokens._stem: plurals (-ies, -es after a sibilant, -s), then -ing / -ed (undoubling a final
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

  /* A word's combining marks removed (before stemming), as memwiki/text/tokens.py's `_latin` does. */
  function fold(token) {
    return token.normalize("NFD").replace(/[\u0300-\u036f]/g, "").normalize("NFC");
  }

  /* A Latin-script word's token (memwiki.text.tokens._latin, cached as there): up to its apostrophe, combining marks
   * removed (non-ASCII words only), stemmed. */
  var LATIN = new Map();
  function latin(run) {
    var done = LATIN.get(run);
    if (done === undefined) {
      var word = run.replace(/\u2019/g, "'").split("'")[0];
      done = stem(ASCII.test(word) ? word : fold(word));
      if (LATIN.size > 65536) LATIN.clear();
      LATIN.set(run, done);
    }
    return done;
  }

  /* Lexical tokens of `text` in order, as memwiki.text.tokens.tokens(text, stop_words=..., unigrams=...) makes
   * them. `stop` is null (keep everything) or {words: Set, chars: Set}: English stop words and CJK grams
   * holding a stop character are dropped. `unigrams` also gives each character of a CJK run (index side). */
  function tokens(text, stop, unigrams) {
    var out = [];
    var re = TOKEN_RE;
    re.lastIndex = 0;
    var s = String(text);
    s = (ASCII.test(s) ? s : s.normalize("NFKC")).toLowerCase(); // NFKC leaves ASCII as it is
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
        out.push(latin(run));
      }
    }
    return out;
  }

  function unique(list) { return Array.from(new Set(list)); }

  /* The query's tokens as memwiki.text.tokens.fts_query uses them: without stop words, else all (deduplicated). */
  function queryTokens(query, stop) {
    var toks = tokens(query, stop);
    if (!toks.length) toks = tokens(query, null);
    return unique(toks);
  }

  /* memwiki.text.tokens.coverage: share of the query's informative tokens that `text` holds. */
  function coverage(query, text, stop) {
    var wanted = new Set(tokens(query, stop));
    if (!wanted.size) wanted = new Set(tokens(query, null));
    if (!wanted.size) return 0;
    var have = new Set(tokens(text, null, true)), n = 0;
    wanted.forEach(function (t) { if (have.has(t)) n++; });
    return n / wanted.size;
  }

  // -- text helpers as Python prints and cuts --------------------------------------------------------

  function utf8Size(text) {
    var n = 0;
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (c < 0x80) n += 1;
      else if (c < 0x800) n += 2;
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) { n += 4; i++; }
      else n += 3;
    }
    return n;
  }

  var BREAKS = [
    /\n[ \t]*\n\s*/g,
    /\n\s*/g,
    /[.!?;:…]["')\]]*\s+|[。！？；：]+[”’」』）]*\s*/g,
    /[\s,，、]+/g,
  ];

  /* memwiki.layers.semantic.passages.cut_to_bytes: the longest head of `text` within `limit` UTF-8 bytes, ended at a break. */
  function cutToBytes(text, limit) {
    if (text.length * 4 <= limit || utf8Size(text) <= limit) return text;
    var chars = Array.from(text).slice(0, limit), size = 0, n = 0;
    for (; n < chars.length; n++) {
      size += utf8Size(chars[n]);
      if (size > limit) break;
    }
    var head = chars.slice(0, n).join("");
    var half = Math.floor(n / 2), halfAt = chars.slice(0, half).join("").length;
    for (var p = 0; p < BREAKS.length; p++) {
      var re = BREAKS[p], m, last = null;
      re.lastIndex = halfAt;
      while ((m = re.exec(head)) !== null) { last = m; if (m[0] === "") re.lastIndex++; }
      if (last && last.index + last[0].length > halfAt) return head.slice(0, last.index + last[0].length);
    }
    return head;
  }

  function splitTurns(query) {
    return String(query).split(/\r\n|\r|\n|\v|\f|\x1c|\x1d|\x1e|\x85|\u2028|\u2029/)
      .map(function (l) { return l.trim(); }).filter(Boolean);
  }

  /* memwiki.recall.cascade.cut_query: a dialogue keeps its last turns, other text its head. */
  function cutQuery(query, limit) {
    if (query.length * 4 <= limit || utf8Size(query) <= limit) return query;
    var turns = splitTurns(query);
    if (turns.length > 1) {
      var kept = [], size = 0;
      for (var i = turns.length - 1; i >= 0; i--) {
        if (kept.length && size + utf8Size(turns[i]) + 1 > limit) break;
        kept.push(cutToBytes(turns[i], limit));
        size += utf8Size(kept[kept.length - 1]) + 1;
      }
      return kept.reverse().join("\n");
    }
    return cutToBytes(query.trim(), limit);
  }

  function fixed(x, digits) { return (x === undefined || x === null ? 0 : x).toFixed(digits); }

  function grouped(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  /* Python's format(share, ".0%"): halves to even. */
  function percent(share) {
    var v = share * 100, r = Math.round(v);
    if (Math.abs(v - Math.floor(v) - 0.5) < 1e-9) r = 2 * Math.round(v / 2);
    return r + "%";
  }

  function decodeInt8(b64) {
    var bin = typeof atob === "function" ? atob(b64) : Buffer.from(b64, "base64").toString("binary");
    var out = new Int8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { var c = bin.charCodeAt(i); out[i] = c > 127 ? c - 256 : c; }
    return out;
  }

  // -- one index: FTS5-style postings over some texts, and their rows of the shared int8 vectors -------

  /* `texts[i]` is indexed as memwiki.text.tokens.fts_text indexes it; opts: ids (strings: bm25 ties break by them,
   * as ORDER BY id does, unless `rowOrder`: by position, as ORDER BY rowid does), lens (a doc's length in
   * tokens when its text was cut: 0 = its own), vectors (a function giving the Int8Array of rows, called on the
   * first dense ranking: the words-only results need none), rows (each doc's row, -1: none), dim, stop, budget. */
  function Index(texts, opts) {
    this.n = texts.length;
    this.ids = opts.ids;
    this.rowOrder = !!opts.rowOrder;
    this.stop = opts.stop;
    this.budget = opts.budget || Infinity;
    this.postings = new Map();
    this.docLen = new Float64Array(this.n);
    var total = 0, self = this;
    var tf = new Map();
    for (var d = 0; d < this.n; d++) {
      var toks = tokens(texts[d], null, true);
      this.docLen[d] = opts.lens && opts.lens[d] ? opts.lens[d] : toks.length;
      total += this.docLen[d];
      tf.clear();
      for (var t = 0; t < toks.length; t++) tf.set(toks[t], (tf.get(toks[t]) || 0) + 1);
      tf.forEach(add);
    }
    function add(count, key) {
      var list = self.postings.get(key);
      if (!list) { list = []; self.postings.set(key, list); }
      list.push(d, count);
    }
    this.avgdl = this.n ? total / this.n : 0;
    this.source = opts.vectors || null;
    this.vectors = null;
    this.dim = opts.dim || 0;
    this.rows = opts.rows || null;
    this.norms = null;
  }

  /* The vectors and their norms, on first use (decoding 10k rows and their norms is ~0.1 s of a page's start). */
  Index.prototype.prepare = function () {
    if (this.norms) return true;
    var vectors = this.source ? this.source() : null;
    if (!vectors) return false; // not loaded (yet)
    this.vectors = vectors;
    this.norms = new Float32Array(this.n);
    for (var r = 0; r < this.n; r++) {
      var row = this.rows[r];
      if (row < 0) continue;
      var s2 = 0, base = row * this.dim;
      for (var j = 0; j < this.dim; j++) s2 += vectors[base + j] * vectors[base + j];
      this.norms[r] = Math.sqrt(s2);  // 0: no vector (a long memory's own row)
    }
    return true;
  };

  function normalised(qvec, dim) {
    var q = new Float32Array(dim), qn = 0, i;
    for (i = 0; i < dim; i++) { q[i] = qvec[i]; qn += q[i] * q[i]; }
    qn = Math.sqrt(qn) || 1;
    for (i = 0; i < dim; i++) q[i] /= qn;
    return q;
  }

  Index.prototype.cosine = function (q, d) {
    if (!this.prepare() || !this.norms[d]) return undefined;
    var s = 0, base = this.rows[d] * this.dim;
    for (var j = 0; j < this.dim; j++) s += q[j] * this.vectors[base + j];
    return s / this.norms[d];
  };

  /* The dot products of `q` with each doc's vector over its norm (NaN: no vector), four components a step. */
  Index.prototype.cosines = function (q) {
    this.prepare();
    var n = this.n, dim = this.dim, v = this.vectors, rows = this.rows, norms = this.norms;
    var scores = new Float64Array(n);
    for (var i = 0; i < n; i++) {
      if (!norms[i]) { scores[i] = NaN; continue; }
      var s0 = 0, s1 = 0, s2 = 0, s3 = 0, base = rows[i] * dim, j = 0;
      for (; j + 3 < dim; j += 4) {
        s0 += q[j] * v[base + j];
        s1 += q[j + 1] * v[base + j + 1];
        s2 += q[j + 2] * v[base + j + 2];
        s3 += q[j + 3] * v[base + j + 3];
      }
      for (; j < dim; j++) s0 += q[j] * v[base + j];
      scores[i] = (s0 + s1 + s2 + s3) / norms[i];
    }
    return scores;
  };

  /* [[doc, cosine], ...] best first over the docs with a vector (`q` normalised); ties by position. With `k`,
   * only the candidates at or above the k-th best score are sorted. */
  Index.prototype.denseRank = function (q, k) {
    if (!this.prepare()) return [];
    var scores = this.cosines(q), n = this.n, floor = -Infinity, i;
    if (k !== undefined && k < n) {
      var sorted = scores.slice().sort(); // NaN sorts last
      var m = 0;
      while (m < n && sorted[m] === sorted[m]) m++;
      if (m > k) floor = sorted[m - k];
    }
    var order = [];
    for (i = 0; i < n; i++) if (scores[i] >= floor) order.push([i, scores[i]]);
    order.sort(function (a, b) { return b[1] - a[1] || a[0] - b[0]; });
    return k === undefined ? order : order.slice(0, k);
  };

  /* The best `k` of a doc -> score map, ties by id (ORDER BY s, id; SQLite compares UTF-8 bytes, JS UTF-16
   * units: the same order but for ids holding characters above U+FFFF) or by position (rowid). */
  Index.prototype.top = function (scores, k) {
    var order = [], ids = this.ids, byRow = this.rowOrder;
    scores.forEach(function (s, i) { order.push([i, s]); });
    order.sort(function (a, b) {
      if (b[1] !== a[1]) return b[1] - a[1];
      if (byRow) return a[0] - b[0];
      return ids[a[0]] < ids[b[0]] ? -1 : ids[a[0]] > ids[b[0]] ? 1 : a[0] - b[0];
    });
    return k === undefined ? order : order.slice(0, k);
  };

  /* The query tokens worth matching, as memwiki/text/lexical.py's `_affordable`: rarest first, as many as
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

  /* bm25 (as -bm25: higher is better) of the docs holding any of `terms` (every one with `all`). */
  Index.prototype.bm25 = function (terms, all) {
    var scores = new Map(), hits = new Map();
    for (var t = 0; t < terms.length; t++) {
      var list = this.postings.get(terms[t]);
      if (!list) { if (all) return new Map(); continue; }
      var n = list.length / 2;
      var idf = Math.log((this.n - n + 0.5) / (n + 0.5));
      if (idf <= 0) idf = 1e-6;
      for (var p = 0; p < list.length; p += 2) {
        var d = list[p], tf = list[p + 1];
        var w = idf * (tf * (K1 + 1)) / (tf + K1 * (1 - B + B * this.docLen[d] / this.avgdl));
        scores.set(d, (scores.get(d) || 0) + w);
        if (all) hits.set(d, (hits.get(d) || 0) + 1);
      }
    }
    if (all) hits.forEach(function (c, d) { if (c < terms.length) scores.delete(d); });
    return scores;
  };

  /* memwiki/text/lexical.py's search: [[doc, score], ...] best first for the OR of the query's tokens. */
  Index.prototype.lexicalRank = function (query, k, budget) {
    var terms = this.affordable(queryTokens(query, this.stop), budget === undefined ? this.budget : budget);
    return terms.length ? this.top(this.bm25(terms, false), k) : [];
  };

  /* memwiki/layers/sessions.py's match: every matching doc best first, the AND of the query's tokens, else their OR. */
  Index.prototype.ftsRank = function (query) {
    var terms = queryTokens(query, this.stop);
    if (!terms.length) return [];
    var found = this.top(this.bm25(terms, true));
    return found.length ? found : this.top(this.bm25(terms, false));
  };

  // -- recall --------------------------------------------------------------------------------------

  /* memwiki.recall.cascade._Ranked.why */
  function whyOf(r) {
    var parts = [];
    if (r.denseRank !== undefined) parts.push("dense " + fixed(r.cosine, 2) + " (#" + (r.denseRank + 1) + ")");
    else if (r.cosine !== undefined) parts.push("dense " + fixed(r.cosine, 2));
    if (r.lexicalRank !== undefined) parts.push("lexical " + fixed(r.lexical, 2) + " (#" + (r.lexicalRank + 1) + ")");
    return parts.join(" + ");
  }

  function title80(text) {
    var flat = String(text).split(/\s+/).filter(Boolean).join(" ");
    var chars = Array.from(flat);
    return chars.length <= 80 ? flat : chars.slice(0, 79).join("") + "…";
  }

  /* The names of the part scripts (assets/memwiki/search/data/<name>.js) that hold the data's long row lists. */
  function partNames(data) {
    var out = [];
    Object.keys(data.parts || {}).forEach(function (list) { data.parts[list].forEach(function (p) { out.push(p[0]); }); });
    return out;
  }

  /* The data with its long row lists put back from their parts (memwiki.site.builders.search.data_parts: each part
   * script sets parts[name] to its rows); throws when one did not load. */
  function assemble(data, parts) {
    if (!data.parts) return data;
    Object.keys(data.parts).forEach(function (list) {
      var rows = [], path = list.split("."), holder = data;
      data.parts[list].forEach(function (p) {
        var got = parts && parts[p[0]];
        if (!got || got.length !== p[1]) throw new Error("a part of the search data did not load (" + p[0] + ")");
        for (var i = 0; i < got.length; i++) rows.push(got[i]);
      });
      for (var i = 0; i < path.length - 1; i++) holder = holder[path[i]];
      holder[path[path.length - 1]] = rows;
    });
    partNames(data).forEach(function (name) { delete parts[name]; });  // (their rows live on in the lists)
    delete data.parts;
    return data;
  }

  /* The rows of data.slices as one Int8Array, from the slice scripts (memwiki.site.builders.search.slice_script:
   * each sets slices[its name] to its rows in base64); each slice's text is let go once decoded. Throws when one
   * did not load. */
  function slicedVectors(data, slices) {
    var width = data.dim, total = 0, at = 0;
    data.slices.forEach(function (s) { total += s[1] * width; });
    var out = new Int8Array(total);
    data.slices.forEach(function (s) {
      var b64 = slices && slices[s[0]];
      if (typeof b64 !== "string") throw new Error("the search vectors' slice " + s[0] + " did not load");
      var rows = decodeInt8(b64);
      if (rows.length !== s[1] * width) throw new Error("the search vectors' slice " + s[0] + " does not match the data");
      out.set(rows, at);
      at += rows.length;
      delete slices[s[0]];
    });
    return out;
  }

  /* Everything the page searches: data from memwiki/site/builders/search.py, vectors as base64 int8 rows. */
  function Engine(data, vectorsB64) {
    data = assemble(data, root.MemwikiSearchParts);
    this.data = data;
    this.config = data.config;
    this.stop = {words: new Set(data.stop_words), chars: new Set(data.stop_chars)};
    this.budget = data.postings_budget || Infinity;
    this.limits = data.limits;
    this.dim = data.dim;
    var counts = data.rows, start = {}, at = 0, decoded = null, dim = this.dim, self = this;
    data.layers_order.forEach(function (layer) { start[layer] = at; at += counts[layer]; });
    this.b64 = null;
    this.dense = false;
    this.vectors = !data.dense ? null : function () {
      if (!decoded && self.b64) {
        decoded = typeof self.b64 === "string" ? decodeInt8(self.b64) : self.b64;
        self.b64 = null;
        if (decoded.length !== at * dim) throw new Error("search vectors do not match the data");
      }
      return decoded;
    };
    this.setVectors(vectorsB64);
    function rows(layer, n) {
      var out = new Int32Array(n);
      for (var i = 0; i < n; i++) out[i] = start[layer] + i;
      return out;
    }
    function make(layer, texts, ids, extra) {
      var opts = {ids: ids, stop: self.stop, budget: self.budget, vectors: self.vectors, dim: self.dim,
                  rows: rows(layer, texts.length)};
      Object.keys(extra || {}).forEach(function (key) { opts[key] = extra[key]; });
      return new Index(texts, opts);
    }
    function positions(n) { var out = []; for (var i = 0; i < n; i++) out.push(String(i)); return out; }
    this.memories = data.L2.memories;
    this.units = data.L2.units;
    this.sessions = data.L4.sessions;
    this.turns = data.L4.turns;
    this.l1 = make("L1", data.L1.map(function (d) { return d[2]; }), positions(data.L1.length));
    this.l2 = make("L2", this.units.map(function (u) { return u[3] || u[2]; }), this.units.map(function (u) { return u[0]; }));
    this.l4 = make("L4", this.turns.map(function (t) { return t[3]; }), this.turns.map(function (t) { return t[1]; }),
                   {rowOrder: true, lens: this.turns.map(function (t) { return t[4]; })});
    this.l4start = start.L4;
    this.files = make("files", data.files.map(function (f) { return f[3]; }), positions(data.files.length));
    this.titles = []; // a memory's title, made when it is first shown (see title)
  }

  /* memwiki.recall.cascade.fuse: z-score fusion of a dense and a lexical ranking ([[key, score]] best first), each
   * list's weight scaled by how far its best stands out (`peak_weighting`); a candidate missing from a list
   * gets that list's lowest z. [{doc, score, cosine, lexical, denseRank, lexicalRank}] best first. */
  Engine.prototype.fuse = function (dense, lexical) {
    var c = this.config, ids = [], seen = new Set();
    var lists = [[dense, c.dense_weight], [lexical, c.lexical_weight]];
    var values = [new Map(), new Map()], ranks = [new Map(), new Map()];
    lists.forEach(function (pair, n) {
      pair[0].forEach(function (x, r) {
        values[n].set(x[0], x[1]);
        ranks[n].set(x[0], r);
        if (!seen.has(x[0])) { seen.add(x[0]); ids.push(x[0]); }
      });
    });
    var parts = [], total = 0, scores = new Map();
    lists.forEach(function (pair, n) {
      var scored = values[n], weight = pair[1];
      if (!scored.size || weight === 0) return;
      var mu = 0, sd = 0, lo = Infinity, hi = -Infinity;
      scored.forEach(function (x) { mu += x; lo = Math.min(lo, x); hi = Math.max(hi, x); });
      mu /= scored.size;
      scored.forEach(function (x) { sd += (x - mu) * (x - mu); });
      sd = Math.sqrt(sd / scored.size) || 1;
      var peak = Math.max((hi - mu) / sd, 0); // how far the retriever's best stands out
      parts.push({values: scored, weight: c.peak_weighting ? weight * peak : weight, mu: mu, sd: sd, floor: (lo - mu) / sd});
    });
    parts.forEach(function (p) { total += p.weight; });
    if (total <= 0) { parts.forEach(function (p) { p.weight = 1; }); total = parts.length; }
    parts.forEach(function (p) {
      var share = p.weight / total;
      ids.forEach(function (i) {
        scores.set(i, (scores.get(i) || 0) + share * (p.values.has(i) ? (p.values.get(i) - p.mu) / p.sd : p.floor));
      });
    });
    var out = ids.map(function (i) {
      return {doc: i, score: scores.get(i) || 0, cosine: values[0].get(i), lexical: values[1].get(i),
              denseRank: ranks[0].get(i), lexicalRank: ranks[1].get(i)};
    });
    out.sort(function (a, b) { return b.score - a.score; }); // stable: ties keep first-seen order
    return out;
  };

  /* memwiki.recall.cascade.Recaller._rank_texts: every text of a small layer, dense and lexical, fused. */
  Engine.prototype.rankTexts = function (index, query, q) {
    if (!index.n) return [];
    var dense = q ? index.denseRank(q) : [];
    var lexical = index.lexicalRank(query, index.n);
    return this.fuse(dense, lexical);
  };

  /* memwiki.recall.cascade.Recaller.evidence / _mark: whether a hit is confident, and what `why` adds. */
  Engine.prototype.mark = function (query, hit) {
    var c = this.config, reason = null;
    if (hit.confidence >= c.min_confidence) reason = "close in meaning";
    else if (this.byMeaning && hit.confidence < c.min_cosine_with_words) reason = null;  // words alone: no answer
    else {
      var share = coverage(query, hit.text, this.stop);
      if (share >= c.min_coverage) reason = "covers " + percent(share) + " of the query's words";
    }
    hit.confident = reason !== null;
    if (reason !== null && reason !== "close in meaning") hit.why += "; " + reason;
    else if (reason === null && hit.layer === "L1" && hit.firstByBoth) hit.why += "; first by meaning and by words in hot memory (weak)";
    else if (reason === null) hit.why += "; weak: below the confidence floor";
  };

  Engine.prototype.hotHits = function (query, q, k) {
    var docs = this.data.L1;
    return this.rankTexts(this.l1, query, q).slice(0, k).map(function (r) {
      var d = docs[r.doc];
      return {layer: "L1", id: d[0], text: d[2], title: title80(d[2]), url: d[1], score: r.score, where: d[4], category: d[3],
              confidence: r.cosine || 0, why: whyOf(r), firstByBoth: r.denseRank === 0 && r.lexicalRank === 0};
    });
  };

  /* The int8 vectors (base64, or the rows as an Int8Array), when they come after the data (the page ranks by
   * words until then). */
  Engine.prototype.setVectors = function (vectorsB64) {
    if (!this.data.dense || !vectorsB64 || this.dense) return;
    this.b64 = vectorsB64;
    this.dense = true;
  };

  /* A memory's title: the start of its text (of its first passage's, for a long one; passages follow its row). */
  Engine.prototype.title = function (memory, unit) {
    if (this.titles[memory] === undefined) {
      var u = unit;
      while (u > 0 && this.units[u - 1][1] === memory) u--;
      while (u < this.units.length && this.units[u][1] === memory && !this.units[u][2]) u++;
      this.titles[memory] = u < this.units.length && this.units[u][1] === memory ? title80(this.units[u][2]) : this.memories[memory][0];
    }
    return this.titles[memory];
  };

  /* memwiki.recall.cascade.Recaller.rank_l2: the hybrid top `k` of semantic memory, a long memory by its best passage. */
  Engine.prototype.l2Hits = function (query, q, k) {
    var c = this.config, depth = Math.max(k, c.depth);
    var dense = q ? this.l2.denseRank(q, depth) : [];
    var lexical = c.lexical_weight > 0 ? this.l2.lexicalRank(query, depth) : [];
    var ranked = this.fuse(dense, lexical);
    var hits = [], shown = new Set();
    for (var i = 0; i < ranked.length && hits.length < k; i++) {
      var r = ranked[i], u = this.units[r.doc], m = this.memories[u[1]];
      if (shown.has(m[0])) continue;
      shown.add(m[0]);
      if (r.cosine === undefined && q) r.cosine = this.l2.cosine(q, r.doc);
      var why = whyOf(r), p = u[4];
      if (p) {
        why += "; passage " + grouped(p[0] + 1) + " of " + grouped(p[1]) + " of memory " + m[0] + " (characters " +
          grouped(p[2]) + "–" + grouped(p[3]) + " of " + grouped(p[4]) + ")";
      }
      hits.push({layer: "L2", id: m[0], text: u[2], title: this.title(u[1], r.doc), url: m[1], score: r.score,
                 confidence: r.cosine || 0, why: why, category: m[2], where: m[3], passage: p ? u[0] : ""});
    }
    return hits;
  };

  /* memwiki/layers/sessions.py's search: the best sessions by their best turn, each with up to 3 of its best turns. */
  Engine.prototype.sessionSearch = function (query, limit) {
    var found = this.l4.ftsRank(query), order = [], by = new Map(), most = this.limits.turns_per_session;
    for (var i = 0; i < found.length; i++) {
      var t = this.turns[found[i][0]], list = by.get(t[0]);
      if (!list) {
        if (order.length >= limit) continue;
        list = [];
        by.set(t[0], list);
        order.push(t[0]);
      }
      if (list.length < most) list.push(found[i][0]);
    }
    return order.map(function (s) { return by.get(s); });
  };

  /* memwiki.recall.cascade.Recaller._recall_sessions: the candidate turns, ranked as a small layer. */
  Engine.prototype.turnHits = function (query, q, k) {
    var turns = [].concat.apply([], this.sessionSearch(query, Math.max(k, this.limits.session_limit)));
    if (!turns.length) return [];
    var self = this, l4 = this.l4;
    var index = new Index(turns.map(function (d) { return self.turns[d][3]; }), {
      ids: turns.map(function (_, i) { return String(i); }), stop: this.stop, budget: this.budget,
      vectors: this.vectors, dim: this.dim, rows: turns.map(function (d) { return l4.rows[d]; }),
    });
    return this.rankTexts(index, query, q).slice(0, k).map(function (r) {
      var t = self.turns[turns[r.doc]], s = self.sessions[t[0]];
      return {layer: "L4", id: s[0] + "#" + t[1], text: t[3], title: (s[1] || s[0]) + " · turn " + t[2].replace(/^msg-/, "#"),
              url: s[2] + "#" + t[2], score: r.score, confidence: r.cosine || 0, why: whyOf(r),
              when: s[3]};
    });
  };

  Engine.prototype.fileHits = function (query, q, k) {
    var docs = this.data.files;
    return this.rankTexts(this.files, query, q).slice(0, k).map(function (r) {
      var f = docs[r.doc];
      return {layer: "files", id: f[0], text: f[3], title: f[1], url: f[2], score: r.score, confidence: r.cosine || 0,
              why: whyOf(r), kind: f[4]};
    });
  };

  /* The query as recall reads it (memwiki.recall.cascade.cut_query). */
  Engine.prototype.cut = function (query) { return cutQuery(String(query), this.limits.max_embed_bytes); };

  /* memwiki.recall.cascade.Recaller.query_vector with `embed(text) -> Float32Array`: the cut query, embedded whole. */
  Engine.prototype.queryVector = function (query, embed) { return embed(this.cut(query)); };

  /* memwiki.recall.cascade.Recaller.recall(query, k, all_layers=True): up to `k` hits of every layer (L1, L2, L4, files),
   * each marked `confident` or weak: the confident ones taken in turn from the layers in priority order, then
   * every layer's best guess, then the other weak ones, closest in meaning first. `qvec` null: by words only (the encoder has not loaded). */
  Engine.prototype.recall = function (query, qvec, k) {
    if (!String(query).trim()) return [];
    query = this.cut(query);
    var q = qvec && this.dense ? normalised(qvec, this.dim) : null, confident = [], weak = [], self = this;
    this.byMeaning = q !== null;  // (words only until the encoder loads: then coverage alone may be confident)
    var layers = {L1: this.hotHits, L2: this.l2Hits, L4: this.turnHits, files: this.fileHits};
    this.data.layers_order.forEach(function (layer) {
      var hits = layers[layer].call(self, query, q, k).slice(0, k);
      hits.forEach(function (h) { self.mark(query, h); });
      confident.push(hits.filter(function (h) { return h.confident; }));
      weak.push(hits.filter(function (h) { return !h.confident; }));
    });
    var out = [], i, c, more;
    for (i = 0, more = true; more; i++) {
      more = false;
      for (c = 0; c < confident.length; c++) if (i < confident[c].length) { out.push(confident[c][i]); more = true; }
    }
    // every layer's best guess in priority order, then the rest closest first (recall.closest_first)
    weak.forEach(function (hits) { if (hits.length) out.push(hits.shift()); });
    for (;;) {
      var best = -1;
      for (c = 0; c < weak.length; c++) {
        if (weak[c].length && (best < 0 || weak[c][0].confidence > weak[best][0].confidence)) best = c;
      }
      if (best < 0) return out;
      out.push(weak[best].shift());
    }
  };

  var api = {KNOBS: KNOBS, tokens: tokens, stem: stem, fold: fold, coverage: coverage, cutQuery: cutQuery, Index: Index, Engine: Engine,
             partNames: partNames, assemble: assemble, slicedVectors: slicedVectors};
  if (typeof module === "object" && module.exports) module.exports = api;
  root.MemwikiSearch = api;
})(typeof window !== "undefined" ? window : globalThis);
