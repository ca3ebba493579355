// Node harness for use.js as a site ships it (with its model manifest): loads it in a `window`
// made of a vm context and embeds sentences. Usage: node use_harness.js <use.js> <assets dir>
// <mode> [repeat] (repeat: timed embeds per sentence, default 1; 0 = tokenize only) with a JSON
// array of sentences on stdin; mode is
//   bytes:  load({bytes}) from the use-model-*.<k>.bin slices read off the disk, put together,
//   script: file:// page; load() adds <script> tags for the parts (a document that runs them),
//   http:   load() fetches the slices from a local HTTP server (gzip, as a static host serves),
//   early:  the same, 40 ms a request, and embedAsync() of each sentence first (out.early).
// Prints JSON {load_ms, info, statuses, progress, requests, tokens, vectors, embed_ms}
// (embed_ms: median per sentence; requests: [status, path] the server answered).
"use strict";
const fs = require("fs");
const http = require("http");
const zlib = require("zlib");
const path = require("path");
const vm = require("vm");
const { pathToFileURL, fileURLToPath } = require("url");

const [useJs, assetDir, mode = "bytes", repeatArg = "1"] = process.argv.slice(2);
const repeat = Math.max(0, parseInt(repeatArg, 10));
const sentences = JSON.parse(fs.readFileSync(0, "utf8"));

const sandbox = { console, TextEncoder, TextDecoder, setTimeout, clearTimeout, Promise, fetch };
sandbox.window = sandbox;
if (mode === "script") {
  sandbox.location = { protocol: "file:" };
  sandbox.fetch = () => Promise.reject(new Error("fetch must not be used on file://"));
  const head = {
    appendChild(el) {
      el.parentNode = { removeChild() {} };
      setTimeout(() => {
        let code;
        try { code = fs.readFileSync(fileURLToPath(el.src), "utf8"); } catch (e) { el.onerror(e); return; }
        scripts.push(path.basename(fileURLToPath(el.src)));
        vm.runInContext(code, context, { filename: el.src });
        el.onload();
      }, 0);
    },
  };
  sandbox.document = { head, createElement: () => ({}) };
}
const scripts = [];
const context = vm.createContext(sandbox);
vm.runInContext(fs.readFileSync(useJs, "utf8"), context, { filename: useJs });
const USE = sandbox.MemwikiUSE;

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return s[s.length >> 1];
}

const requests = [];

async function main() {
  let server = null;
  let base = pathToFileURL(assetDir).href + "/";
  const options = {};
  if (mode === "bytes") {
    const slices = fs.readdirSync(assetDir).map((f) => /^use-model-[0-9a-f]{16}\.(\d+)\.bin$/.exec(f))
      .filter(Boolean).sort((x, y) => x[1] - y[1]);
    options.bytes = Buffer.concat(slices.map((x) => fs.readFileSync(path.join(assetDir, x[0]))));
  } else if (mode === "http" || mode === "early") {
    server = http.createServer((req, res) => {
      const name = path.basename(decodeURIComponent(req.url));
      fs.readFile(path.join(assetDir, name), (err, data) => {
        requests.push([err ? 404 : 200, name]);
        if (err) { res.writeHead(404); res.end("not found"); return; }
        const body = zlib.gzipSync(data, { level: 6 });
        setTimeout(() => { // early: a slow link, so a query's files can come before the others
          res.writeHead(200, { "Content-Length": body.length, "Content-Encoding": "gzip",
            "Content-Type": "application/octet-stream" });
          res.end(body);
        }, mode === "early" ? 40 : 0);
      });
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${server.address().port}/`;
  }
  const statuses = [], progress = [];
  options.status = (msg) => statuses.push(msg);
  options.progress = (loaded, total) => progress.push([loaded, total]);
  const t0 = process.hrtime.bigint();
  let early = null;
  if (mode === "early") { // embedAsync each sentence before load() is over; which requests it took
    early = { vectors: [], requests: [] };
    for (const text of sentences) {
      const v = await USE.embedAsync(text, base, options);
      early.vectors.push(Array.from(v));
    }
    early.requests = requests.map((r) => r[1]);
  }
  await USE.load(base, options);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (server) server.close();
  const out = { early, load_ms: loadMs, info: USE.info, statuses, progress, requests, scripts, tokens: [], vectors: [],
    embed_ms: [] };
  for (const text of sentences) {
    out.tokens.push(USE.tokenize(text));
    if (!repeat) continue;
    const times = [];
    let v = null;
    for (let r = 0; r < repeat; r++) {
      const t = process.hrtime.bigint();
      v = USE.embed(text);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    out.vectors.push(Array.from(v));
    out.embed_ms.push(median(times));
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
