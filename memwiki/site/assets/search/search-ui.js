/* memwiki search, the box: a search input over MemwikiSearch.Engine, results built as text nodes only.
 *
 * Results by words show at once; when the page has the store's vectors, window.MemwikiUSE (use.js) loads the
 * encoder (with its progress shown) and every query is then ranked as `memwiki recall --all-layers` ranks it.
 * Keyboard: type, ArrowDown / ArrowUp move through the hits, Enter opens one, Esc closes (or clears).
 * `MemwikiSearchUI.mount(opts)` runs one box: the search page's (mounted here) or the theme's header box
 * (mounted by memwiki.js).
 */
(function () {
  "use strict";
  var K = 5; // hits per layer, as `memwiki recall` gives by default
  var LAYER_NAMES = {L1: "hot memory", L2: "semantic memory", L4: "session history", files: "wiki & entities"};
  var SNIPPET = 240;

  function safeUrl(root, url) {
    // only relative paths inside the site: no scheme, no host, no absolute path
    if (typeof url !== "string" || !url || /^[a-z][a-z0-9+.-]*:|^[\/\\]/i.test(url)) return null;
    return root + url;
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  var STOP = {the: 1, and: 1, for: 1, how: 1, what: 1, who: 1, why: 1, when: 1, where: 1, does: 1, did: 1, from: 1,
    with: 1, that: 1, this: 1, are: 1, was: 1, our: 1, your: 1, which: 1, can: 1};

  /* What of the query a reader would look for in a hit: its words (3 letters or more, not the little ones) and
   * each pair of Chinese characters, as one pattern (longest first), or null. */
  function termPattern(query) {
    var terms = {};
    (String(query).toLowerCase().match(/[a-z0-9][a-z0-9_.-]{2,}/g) || []).forEach(function (w) {
      if (!STOP[w]) terms[w] = 1;
    });
    (String(query).match(/[\u4e00-\u9fff]+/g) || []).forEach(function (run) {
      if (run.length === 1) terms[run] = 1;
      for (var i = 0; i + 2 <= run.length; i++) terms[run.slice(i, i + 2)] = 1;
    });
    var list = Object.keys(terms).sort(function (a, b) { return b.length - a.length; });
    if (!list.length) return null;
    return new RegExp("(" + list.map(function (t) { return t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }).join("|") + ")", "gi");
  }

  /* An element whose text has the query's terms marked (text nodes only: the text is never parsed as HTML). */
  function marked(tag, cls, text, pattern) {
    var node = el(tag, cls);
    if (!pattern) { node.textContent = text; return node; }
    String(text).split(pattern).forEach(function (part, i) {
      if (!part) return;
      node.appendChild(i % 2 ? el("mark", "", part) : document.createTextNode(part));
    });
    return node;
  }

  var WIKILINK = /\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|([^\]]+))?\]\]/g;

  /* A memory's Markdown as a reader reads it: a link as its words, no heading, quote or list marks, no bold. */
  function plain(text) {
    return String(text)
      .replace(WIKILINK, function (_, target, label) { return (label || target).trim(); })
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/^[ \t]{0,3}(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+)/gm, "")
      .replace(/[ \t]+#{1,6}[ \t]*$/gm, "")
      .replace(/\*\*|__|`/g, "");
  }

  /* The hit's text under its title: without the title again (a memory's title is its first words). */
  function snippet(hit, title) {
    var text = plain(hit.text);
    if (hit.layer === "files") text = text.replace(/^[^\n]*\n/, ""); // its first line is the title
    text = text.split(/\s+/).filter(Boolean).join(" ");
    var cut = /…$/.test(title), head = title.replace(/…$/, "");
    if (head && text.indexOf(head) === 0) {
      if (cut) { // the title stops mid-text: go on from its last whole word, marked as a continuation
        var from = text.lastIndexOf(" ", head.length);
        text = "…" + text.slice(from > head.length - 24 && from > 0 ? from + 1 : head.length);
      } else text = text.slice(head.length).replace(/^[\s:：,，.。;；—–-]+/, "");
    }
    var chars = Array.from(text);
    return chars.length > SNIPPET ? chars.slice(0, SNIPPET - 1).join("") + "…" : text;
  }

  /* opts: input, status, list (an <ol>), root (site root, ending in "/"), use (folder of use.js), vectors (the
   * folder of the vectors' slices, ending in "/"), header (true in the theme's header box: its items also get the theme's classes),
   * onEscape, loadScript (src -> Promise; default memwiki.js's window.MemwikiLoadScript): the vectors and use.js
   * are loaded behind the first results, which need neither. */
  function mount(opts) {
    var input = opts.input, status = opts.status, list = opts.list, root = opts.root || "";
    var data = window.MemwikiSearchData;
    if (!data || !window.MemwikiSearch) { status.textContent = "The search index did not load."; return null; }
    var engine;
    try {
      engine = new window.MemwikiSearch.Engine(data, null);
    } catch (err) { status.textContent = "The search index did not load (" + (err && err.message || err) + ")."; return null; }
    var load = opts.loadScript || window.MemwikiLoadScript;
    var base = opts.use || root + "assets/memwiki/use/";
    var script = null, vectors = null, modelFailed = !data.dense, progress = "", seq = 0, timer = null;
    var active = -1, shown = [], last = {query: null, mode: ""};

    function say(text) { status.textContent = text; }

    function ready() { return !!(window.MemwikiUSE && window.MemwikiUSE.ready); }

    var loading = {
      status: function (msg, isError) { if (!isError && !ready()) { progress = String(msg); refreshStatus(); } },
      progress: function (done, total) {
        var share = total ? done / total : 0;
        if (share >= 0 && share < 1) progress = "loading the meaning model… " + Math.round(share * 100) + "%";
        else progress = "";
        refreshStatus();
      },
    };

    /* use.js (loaded when the page has not), and the whole model loading behind the first results. */
    function loadModel() {
      if (modelFailed) return Promise.resolve(null);
      if (!script) {
        progress = "loading the meaning model…";
        var own = window.MemwikiUSE || !load ? Promise.resolve() : load(base + "use.js");
        script = own.then(function () {
          if (!window.MemwikiUSE) throw new Error("use.js did not load");
          window.MemwikiUSE.load(base, loading).then(function () { progress = ""; refreshStatus(); }, failed);
          return window.MemwikiUSE;
        }).catch(failed);
      }
      return script;
    }

    /* The store's vectors, loaded after the page, in the slices data.slices names by their content: over http(s)
     * fetched (kept in the Cache API, and the HTTP cache, while their name stays: a second visit fetches none, a
     * change fetches the slices it touched); from file:// (no fetch) each slice's script. */
    function loadVectors() {
      if (!vectors) {
        var folder = opts.vectors || root + "assets/memwiki/search/vectors/";
        var http = typeof fetch === "function" && /^https?:$/.test(location.protocol);
        var rows = !data.slices ? Promise.reject(new Error("the search data lists no vectors")) :
          http ? fetchSlices(folder) : scriptSlices(folder);
        vectors = rows.then(function (got) { engine.setVectors(got); return true; }).catch(failed);
      }
      return vectors;
    }

    function scriptSlices(folder) {
      if (!load) return Promise.reject(new Error("no way to load the search vectors' scripts"));
      return Promise.all(data.slices.map(function (s) { return load(folder + s[0].replace(/\.bin$/, ".js")); }))
        .then(function () { return window.MemwikiSearch.slicedVectors(data, window.MemwikiSearchSlices); });
    }

    function fetchSlices(folder) {
      var width = data.dim, total = 0;
      data.slices.forEach(function (s) { total += s[1] * width; });
      return openVectorCache().then(function (cache) {
        return Promise.all(data.slices.map(function (s) {
          return slice(cache, new URL(folder + s[0], location.href).href, s[1] * width);
        })).then(function (parts) {
          if (cache) forgetOthers(cache, parts);
          var out = new Int8Array(total), at = 0;
          parts.forEach(function (p) { out.set(p.rows, at); at += p.rows.length; });
          return out;
        });
      });
    }

    /* One slice: from the cache when it holds it, else fetched (and kept). */
    function slice(cache, url, length) {
      var kept = cache ? cache.match(url).catch(function () { return null; }) : Promise.resolve(null);
      return kept.then(function (hit) {
        var got = hit || fetch(url).then(function (r) {
          if (!r.ok) throw new Error("HTTP " + r.status + " for " + url);
          if (cache) cache.put(url, r.clone()).catch(function () { /* full or refused: fetched next time */ });
          return r;
        });
        return Promise.resolve(got).then(function (r) { return r.arrayBuffer(); }).then(function (buf) {
          if (buf.byteLength !== length) throw new Error(url + " holds " + buf.byteLength + " of its " + length + " bytes");
          return {url: url, rows: new Int8Array(buf)};
        });
      });
    }

    function openVectorCache() {
      try {
        if (window.caches && typeof window.caches.open === "function") {
          return window.caches.open("memwiki-search-vectors").catch(function () { return null; });
        }
      } catch (e) { /* e.g. a sandboxed or opaque origin */ }
      return Promise.resolve(null);
    }

    /* Slices of this site's folder that this build no longer names: dropped, so the cache holds one site's. */
    function forgetOthers(cache, parts) {
      var keep = new Set(parts.map(function (p) { return p.url; }));
      var folder = parts.length ? parts[0].url.replace(/[^/]*$/, "") : "";
      cache.keys().then(function (requests) {
        requests.forEach(function (q) {
          if (q.url.indexOf(folder) === 0 && !keep.has(q.url)) cache.delete(q).catch(function () {});
        });
      }).catch(function () {});
    }

    function failed(err) {
      modelFailed = true;
      progress = "the meaning model did not load (" + (err && err.message || err) + "); results are by words only";
      refreshStatus();
      return null;
    }

    /* The query's vector: at once when the model is in, else as soon as the rows its words need are. */
    function vectorOf(query) {
      return Promise.all([loadModel(), loadVectors()]).then(function (both) {
        var use = both[0];
        if (!use || !both[1]) return null;
        var text = engine.cut(query);
        if (use.ready || !use.embedAsync) return use.ready ? use.embed(text) : use.load(base, loading).then(function () { return use.embed(text); });
        return use.embedAsync(text, base, loading);
      });
    }

    function refreshStatus() {
      if (last.query === null) { say(progress ? "Search is ready by words; " + progress : ""); return; }
      say(last.text + (progress && last.mode !== "meaning" ? " · " + progress : ""));
    }

    function setActive(n) {
      var items = list.children;
      if (active >= 0 && items[active]) { items[active].classList.remove("memwiki-search-active"); items[active].setAttribute("aria-selected", "false"); }
      active = n;
      if (active >= 0 && items[active]) {
        items[active].classList.add("memwiki-search-active");
        items[active].setAttribute("aria-selected", "true");
        input.setAttribute("aria-activedescendant", items[active].id);
        if (items[active].scrollIntoView) items[active].scrollIntoView({block: "nearest"});
      } else input.removeAttribute("aria-activedescendant");
    }

    function show(query, hits, meaning, ms) {
      var mode = meaning ? "meaning + words, as recall ranks" : modelFailed ? "by words" : "by words; meaning-based ranking on its way";
      list.textContent = "";
      list.dataset.query = query; // what the list shows, for tests and benchmarks
      list.dataset.mode = meaning ? "meaning" : "words";
      shown = hits;
      active = -1;
      var previous = "", pattern = termPattern(query);
      hits.forEach(function (hit, n) {
        var li = el("li", "memwiki-search-hit" + (hit.confident ? "" : " memwiki-search-weak") +
          (hit.layer !== previous ? " memwiki-search-first" : "") + (opts.header ? " md-search-result__item" : ""));
        previous = hit.layer;
        li.id = (opts.header ? "memwiki-hh-" : "memwiki-hit-") + n;
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", "false");
        li.dataset.layer = hit.layer;
        li.dataset.id = hit.id;
        li.dataset.text = plain(hit.text); // the whole text the title and snippet are cut from (tests read it)
        var head = el("div", "memwiki-search-head");
        head.appendChild(el("span", "memwiki-search-layer memwiki-search-layer-" + hit.layer,
          (hit.layer === "files" ? "files" : hit.layer) + " · " + LAYER_NAMES[hit.layer]));
        var href = safeUrl(root, hit.url);
        var shownTitle = plain(hit.title).split(/\s+/).filter(Boolean).join(" ");
        var title = marked(href ? "a" : "span", "memwiki-search-title", shownTitle, pattern);
        if (href) title.href = href;
        head.appendChild(title);
        if (!hit.confident) head.appendChild(el("span", "memwiki-search-weak-label", "less sure"));
        var meta = [hit.category, hit.where, hit.when ? String(hit.when).slice(0, 10) : "", hit.kind === "entity" ? "graph entity" : ""]
          .filter(Boolean).join(" · ");
        if (meta) head.appendChild(el("span", "memwiki-search-meta", meta));
        li.appendChild(head);
        var text = snippet(hit, shownTitle);
        if (text) li.appendChild(marked("p", "memwiki-search-snippet", text, pattern));
        li.title = "why here: score " + hit.score.toFixed(3) + " · " + hit.why; // (for whoever asks, not in the way)
        li.addEventListener("mousemove", function () { if (active !== n) setActive(n); });
        list.appendChild(li);
      });
      var text;
      if (!hits.length) text = "Nothing in memory matches “" + query + "”.";
      else {
        var layers = new Set(hits.map(function (h) { return h.layer; })).size;
        var confident = hits.some(function (h) { return h.confident; });
        text = (confident ? "" : "No sure answer for “" + query + "”; these come closest. ") +
          hits.length + " results in " + layers + (layers === 1 ? " layer" : " layers") + " (" + mode + ")";
      }
      last = {query: query, mode: meaning ? "meaning" : "words", text: text + (ms !== undefined ? " · " + ms.toFixed(0) + " ms" : "")};
      refreshStatus();
    }

    function run() {
      var query = input.value.trim(), mine = ++seq;
      if (!query) { list.textContent = ""; shown = []; last = {query: null}; refreshStatus(); return; }
      var t0 = Date.now();
      if (ready() && engine.dense) {
        var qvec = engine.queryVector(query, function (t) { return window.MemwikiUSE.embed(t); });
        show(query, engine.recall(query, qvec, K), true, Date.now() - t0);
        return;
      }
      show(query, engine.recall(query, null, K), false, Date.now() - t0); // by words, at once
      if (modelFailed) return;
      vectorOf(query).then(function (qvec) {
        if (!qvec || mine !== seq) return;
        var t1 = Date.now();
        show(query, engine.recall(query, qvec, K), true, Date.now() - t1);
      }).catch(function (err) { if (mine === seq) say("Search failed: " + (err && err.message || err)); });
    }

    function open(n) {
      var item = list.children[n];
      var link = item && item.querySelector("a.memwiki-search-title");
      if (link) window.location.href = link.href;
    }

    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(run, 0); }); // queued keystrokes run once
    input.addEventListener("focus", function () { setActive(-1); });
    input.addEventListener("keydown", function (e) {
      var n = list.children.length;
      if (e.key === "ArrowDown" && n) { e.preventDefault(); setActive(active < n - 1 ? active + 1 : 0); }
      else if (e.key === "ArrowUp" && n) { e.preventDefault(); setActive(active > 0 ? active - 1 : n - 1); }
      else if (e.key === "Enter") {
        e.preventDefault();
        clearTimeout(timer);
        if (active < 0) run();
        open(active >= 0 ? active : 0);
      } else if (e.key === "Escape") {
        e.preventDefault();
        if (opts.onEscape) opts.onEscape();
        else { input.value = ""; run(); }
      }
    });
    if (input.form) input.form.addEventListener("submit", function (e) { e.preventDefault(); });
    if (data.dense) { loadVectors(); loadModel(); } // both start loading as soon as the box is there
    else if (data.why_lexical) progress = "";
    return {engine: engine, run: run, loadModel: loadModel, hits: function () { return shown; }};
  }

  window.MemwikiSearchUI = {mount: mount};

  function initPage() {
    var box = document.getElementById("memwiki-search");
    if (!box || box.dataset.ready) return;
    box.dataset.ready = "1";
    var input = document.getElementById("memwiki-search-q");
    var ui = mount({
      input: input,
      status: document.getElementById("memwiki-search-status"),
      list: document.getElementById("memwiki-search-results"),
      root: box.dataset.root || "",
      use: box.dataset.use || "",
      vectors: box.dataset.vectors || "",
    });
    if (!ui) return;
    // not "q": the theme's header box takes that one
    var q = new URLSearchParams(window.location.search).get("query");
    if (q) { input.value = q; ui.run(); }
    input.focus();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initPage);
  else initPage();
})();
