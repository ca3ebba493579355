// Node harness for memwiki/site/assets/search/search-core.js: loads a site's exported search files as a browser
// would (<script> files that assign globals) and answers queries as the page ranks them.
// Usage: node search_recall.js <site dir>, with JSON {queries: [{query, vector|null}], k} on stdin.
// Prints JSON [{query, hits: [{layer, id, confident, score, confidence, why}], ms}] (ms: the ranking's time).
"use strict";
const fs = require("fs");
const path = require("path");

globalThis.window = globalThis; // the files are browser scripts
const site = process.argv[2];
const req = JSON.parse(fs.readFileSync(0, "utf8"));
const dir = path.join(site, "assets/memwiki/search");
for (const name of ["search-data.js", "search-core.js"]) {
  (0, eval)(fs.readFileSync(path.join(dir, name), "utf8"));
}
const S = globalThis.MemwikiSearch, data = globalThis.MemwikiSearchData;
for (const name of S.partNames(data)) {
  (0, eval)(fs.readFileSync(path.join(dir, "data", name + ".js"), "utf8")); // the data's long lists, in parts
}
for (const [name] of data.slices || []) {  // the vectors, in slices (as a page opened from file:// loads them)
  (0, eval)(fs.readFileSync(path.join(dir, "vectors", name.replace(/\.bin$/, ".js")), "utf8"));
}
const t0 = process.hrtime.bigint();
const engine = new S.Engine(data, data.slices ? S.slicedVectors(data, globalThis.MemwikiSearchSlices) : null);
const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
const out = [];
for (const { query, vector } of req.queries) {
  const t = process.hrtime.bigint();
  const hits = engine.recall(query, vector ? Float32Array.from(vector) : null, req.k || 5);
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  out.push({
    query,
    ms,
    hits: hits.map((h) => ({ layer: h.layer, id: h.id, confident: h.confident, score: h.score, confidence: h.confidence, why: h.why })),
  });
}
process.stdout.write(JSON.stringify({ load_ms: loadMs, results: out }));
