// memwiki: open a folded transcript when a link points inside it; make the theme's header search box memwiki's
// search (every layer, ranked as `memwiki recall --all-layers`), so that the site has one search, one scope.
(function () {
  "use strict";

  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
    if (el) { el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", reveal);
  document.addEventListener("DOMContentLoaded", reveal);

  /* A classic script added to the page (works from file:// as from a static host); search-ui.js uses it too. */
  function script(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }
  window.MemwikiLoadScript = script; // search-ui.js loads the vectors and use.js with it

  /* memwiki's search in a box of the theme's (`box`: input, status, list, and more options of
   * MemwikiSearchUI.mount): its style, then its scripts (<script> tags, not fetch: they work from file:// as well
   * as from a static host), then mounted; the promise gives the mounted UI. */
  function mountSearch(root, box) {
    var search = root + "assets/memwiki/search/";
    var css = document.createElement("link");
    css.rel = "stylesheet";
    css.href = search + "search.css";
    document.head.appendChild(css);
    function data(fresh) { // the data, then its long row lists in parts (scripts named by their rows: kept while unchanged)
      return script(search + "search-data.js" + (fresh ? "?fresh=" + Date.now() : ""))
        .then(function () {
          var names = window.MemwikiSearchData ? window.MemwikiSearch.partNames(window.MemwikiSearchData) : [];
          return Promise.all(names.map(function (name) { return script(search + "data/" + name + ".js"); }));
        });
    }
    return script(search + "search-core.js")
      .then(function () { // a copy of the data the browser kept from before a rebuild names parts that are gone:
        return data(false).catch(function () { return data(true); }); // the data is fetched again, past the cache
      })
      .then(function () { return script(search + "search-ui.js"); })
      .then(function () {
        var opts = {root: root, use: root + "assets/memwiki/use/", vectors: search + "vectors/", loadScript: script};
        Object.keys(box).forEach(function (key) { opts[key] = box[key]; });
        return window.MemwikiSearchUI.mount(opts);
      })
      .then(function (ui) { if (ui && box.input.value.trim()) ui.run(); return ui; })
      .catch(function (err) { box.status.textContent = "The memory search did not load (" + (err && err.message || err) + ")."; });
  }

  // -- the header box ------------------------------------------------------------------------------
  // The theme's header box, rendered by memwiki/site/assets/search/theme/partials/search.html without the marks
  // (data-md-component) the theme's JS mounts its lunr search on, runs memwiki's search. A site built without
  // that partial has the theme's own box, on which the theme's JS has already started its search when this
  // script runs: the dialog is replaced by a copy without the marks (and so without the theme's handlers).
  var here = document.currentScript && document.currentScript.src || "";
  var scriptRoot = here.replace(/assets\/memwiki\/memwiki\.js(?:[?#].*)?$/, ""); // the site's root, any theme
  var dialog = document.querySelector(".md-search");
  var toggle = document.getElementById("__search");
  if (!dialog || !toggle) { // (the mkdocs theme puts its search dialog after the scripts)
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", otherTheme);
    else otherTheme();
    return;
  }
  if (dialog.hasAttribute("data-md-component")) {
    var copy = dialog.cloneNode(true);
    [copy].concat(Array.prototype.slice.call(copy.querySelectorAll("[data-md-component]")))
      .forEach(function (node) { node.removeAttribute("data-md-component"); });
    dialog.parentNode.replaceChild(copy, dialog);
    dialog = copy;
    dialog.classList.add("memwiki-header-search");
  }
  var input = dialog.querySelector(".md-search__input");
  var result = dialog.querySelector(".md-search-result");
  if (!input || !result) return;
  input.placeholder = "Search memory · 搜索记忆";
  input.setAttribute("aria-label", "Search every layer of memory");
  var meta = result.querySelector(".md-search-result__meta");
  var list = result.querySelector(".md-search-result__list");
  if (!meta || !list) return;
  meta.classList.add("memwiki-search-status");
  meta.textContent = "Type to search every layer of memory.";
  meta.setAttribute("aria-live", "polite");
  list.classList.add("memwiki-search-results");
  list.setAttribute("role", "listbox");

  var root = "";
  try {
    var config = JSON.parse(document.getElementById("__config").textContent);
    root = (config.base || ".").replace(/\/?$/, "/");
  } catch (e) { root = ""; }
  var ready = null;

  function load() {
    if (!ready) ready = mountSearch(root, {input: input, status: meta, list: list, header: true, onEscape: close});
    return ready;
  }


  var page = document.getElementById("memwiki-search-q"); // the search page's own box: the same search

  function open(query) {
    if (page) { // on the search page the header box is the page's box
      toggle.checked = false;
      if (query !== undefined) { page.value = query; page.dispatchEvent(new Event("input")); }
      page.focus();
      return;
    }
    toggle.checked = true;
    if (query !== undefined) input.value = query;
    input.focus();
    setTimeout(function () { input.focus(); }, 60); // (the dialog may still be fading out of an earlier close)
    if (ready && query !== undefined) ready.then(function (ui) { if (ui) ui.run(); });
    else load();
  }

  function close() {
    toggle.checked = false;
    input.blur();
  }

  toggle.addEventListener("change", function () { if (toggle.checked) open(); });
  input.addEventListener("focus", function () { // a click into the box opens it as `/` does (the theme's JS would)
    if (page) { open(); return; }
    toggle.checked = true;
    load();
  });
  if (input.form) input.form.addEventListener("submit", function (e) { e.preventDefault(); });
  var reset = dialog.querySelector('button[type="reset"]');
  if (reset) reset.addEventListener("click", function () { setTimeout(function () { input.value = ""; input.dispatchEvent(new Event("input")); input.focus(); }, 0); });
  document.addEventListener("keydown", function (e) {
    var target = e.target, typing = target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    if (e.key === "Escape" && toggle.checked) { e.preventDefault(); close(); return; }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/" || e.key === "s" || e.key === "f") { e.preventDefault(); open(); }
  });
  // ?q=… opens the search with that query, as the theme's search did
  var q = new URLSearchParams(window.location.search).get("q");
  if (q) document.addEventListener("DOMContentLoaded", function () { open(q); });

  // -- the mkdocs and readthedocs themes (MkDocs' own, and ProperDocs' with properdocs-* ids) ---------------
  // The plugin leaves out their lunr script (search/main.js); their box becomes memwiki's. mkdocs: the header's
  // Search dialog shows memwiki's results as one types. readthedocs: the side box sends its words to memwiki's
  // search page, as it sent them to the theme's.
  function otherTheme() {
    var modalInput = document.getElementById("mkdocs-search-query") || document.getElementById("properdocs-search-query");
    var results = document.getElementById("mkdocs-search-results") || document.getElementById("properdocs-search-results");
    var sideForm = document.getElementById("rtd-search-form");
    if (sideForm) {
      sideForm.action = scriptRoot + "search/index.html";
      var sideInput = sideForm.querySelector("input[name=q]");
      if (sideInput) { sideInput.name = "query"; sideInput.placeholder = "Search memory · 搜索记忆"; }
    }
    if (!modalInput || !results || document.getElementById("memwiki-search-q")) return;
    modalInput.placeholder = "Search memory · 搜索记忆";
    modalInput.setAttribute("aria-label", "Search every layer of memory");
    results.textContent = "";
    var status = document.createElement("div");
    status.className = "memwiki-search-status";
    status.setAttribute("aria-live", "polite");
    status.textContent = "Type to search every layer of memory.";
    var hits = document.createElement("ol");
    hits.className = "memwiki-search-results";
    hits.setAttribute("role", "listbox");
    results.appendChild(status);
    results.appendChild(hits);
    if (modalInput.form) modalInput.form.addEventListener("submit", function (e) { e.preventDefault(); });
    var mounted = null;
    function mount() {
      mounted = mounted || mountSearch(scriptRoot, {input: modalInput, status: status, list: hits});
      return mounted;
    }
    modalInput.addEventListener("focus", mount);
    modalInput.addEventListener("input", mount);
  }
})();
