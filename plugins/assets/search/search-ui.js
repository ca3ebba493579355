/* memwiki memory search, the page: a search box over MemwikiSearch.Index, results built as text nodes.
 * Lexical results show at once; with a dense index the query is then embedded by window.MemwikiUSE
 * (loaded on the first search) and the results are re-ranked as `memwiki recall` ranks L2.
 */
(function () {
  "use strict";
  var K = 20;

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

  function why(hit) {
    var parts = [];
    if (hit.denseRank !== undefined) parts.push("meaning " + hit.cosine.toFixed(2) + " (#" + (hit.denseRank + 1) + ")");
    else if (hit.cosine !== undefined) parts.push("meaning " + hit.cosine.toFixed(2));
    if (hit.lexicalRank !== undefined) parts.push("words " + hit.lexical.toFixed(2) + " (#" + (hit.lexicalRank + 1) + ")");
    if (hit.bridgeRank !== undefined) parts.push("English glosses " + hit.bridge.toFixed(2) + " (#" + (hit.bridgeRank + 1) + ")");
    return parts.join(" + ");
  }

  function init() {
    var box = document.getElementById("memwiki-search");
    if (!box || box.dataset.ready) return;
    box.dataset.ready = "1";
    var input = document.getElementById("memwiki-search-q");
    var status = document.getElementById("memwiki-search-status");
    var list = document.getElementById("memwiki-search-results");
    var data = window.MemwikiSearchData;
    if (!data || !window.MemwikiSearch) { status.textContent = "The search index did not load."; return; }
    var root = box.dataset.root || "";
    var index = new window.MemwikiSearch.Index(data, window.MemwikiSearchVectors || null);
    var fields = {};
    data.fields.forEach(function (f, i) { fields[f] = i; });
    var model = null, modelFailed = !index.dense || !window.MemwikiUSE, seq = 0, timer = null;

    function loadModel() {
      if (modelFailed) return Promise.resolve(null);
      if (!model) {
        status.textContent = "Loading the embedding model…";
        model = Promise.resolve(window.MemwikiUSE.load(box.dataset.use || "")).then(function () {
          return window.MemwikiUSE;
        }, function (err) {
          modelFailed = true;
          status.textContent = "The embedding model did not load (" + err + "); results are lexical only.";
          return null;
        });
      }
      return model;
    }

    function show(query, hits, mode) {
      list.textContent = "";
      hits.forEach(function (hit) {
        var doc = index.docs[hit.doc];
        var li = el("li", "memwiki-search-hit");
        var href = safeUrl(root, doc[fields.url]);
        var title = el(href ? "a" : "span", "memwiki-search-title", doc[fields.title]);
        if (href) title.href = href;
        li.appendChild(title);
        var meta = [doc[fields.category], doc[fields.where]].filter(Boolean).join(" · ");
        if (meta) li.appendChild(el("span", "memwiki-search-meta", " " + meta));
        var text = doc[fields.text];
        if (text !== doc[fields.title]) {  // the title is the start of the text; show the rest only when cut
          li.appendChild(el("p", "memwiki-search-snippet", text.length > 280 ? text.slice(0, 279) + "…" : text));
        }
        li.appendChild(el("small", "memwiki-search-why", why(hit)));
        list.appendChild(li);
      });
      status.textContent = hits.length ? hits.length + " results (" + mode + ")" : "No memory matches “" + query + "”.";
    }

    function run() {
      var query = input.value.trim(), mine = ++seq;
      if (!query) { list.textContent = ""; status.textContent = ""; return; }
      show(query, index.search(query, null, K), "words");
      if (modelFailed) return;
      loadModel().then(function (use) {
        if (!use || mine !== seq) return null;
        return Promise.resolve(use.embed(query)).then(function (qvec) {
          if (mine === seq) show(query, index.search(query, qvec, K), "meaning + words, as recall ranks");
        });
      }).catch(function (err) { status.textContent = "Search failed: " + err; });
    }

    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(run, 200); });
    input.form.addEventListener("submit", function (e) { e.preventDefault(); run(); });
    if (index.dense && !window.MemwikiUSE) status.textContent = "The browser embedder did not load; results are lexical only.";
    // not "q": Material's own search opens its dialog over the page for that one
    var q = new URLSearchParams(window.location.search).get("query");
    if (q) { input.value = q; run(); }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(init);
})();
