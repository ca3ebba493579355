// Node harness for plugins/assets/use/use.js: loads it in a fake `window` (vm context)
// and embeds sentences. Usage: node use_harness.js <use.js> <assets dir> <mode> [repeat]
// (repeat: timed embeds per sentence, default 1; 0 = tokenize only)
// with a JSON array of sentences on stdin; mode is
//   bytes:  load({bytes}) from use-model.bin read off the disk,
//   script: file:// page; load() injects <script src=use-model.js> (fake document),
//   http:   load() fetches use-model.bin from a local HTTP server.
// Prints JSON {load_ms, info, tokens, vectors, embed_ms} (embed_ms: median per sentence).
"use strict";
const fs = require("fs");
const http = require("http");
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
        vm.runInContext(code, context, { filename: el.src });
        el.onload();
      }, 0);
    },
  };
  sandbox.document = { head, createElement: () => ({}) };
}
const context = vm.createContext(sandbox);
vm.runInContext(fs.readFileSync(useJs, "utf8"), context, { filename: useJs });
const USE = sandbox.MemwikiUSE;

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return s[s.length >> 1];
}

async function main() {
  let server = null;
  let base = pathToFileURL(assetDir).href + "/";
  const options = {};
  if (mode === "bytes") {
    options.bytes = fs.readFileSync(path.join(assetDir, "use-model.bin"));
  } else if (mode === "http") {
    server = http.createServer((req, res) => {
      const file = path.join(assetDir, path.basename(decodeURIComponent(req.url)));
      fs.readFile(file, (err, data) => {
        if (err) { res.writeHead(404); res.end("not found"); return; }
        res.writeHead(200, { "Content-Length": data.length, "Content-Type": "application/octet-stream" });
        res.end(data);
      });
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${server.address().port}/`;
  }
  const statuses = [];
  options.status = (msg) => statuses.push(msg);
  const t0 = process.hrtime.bigint();
  await USE.load(base, options);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (server) server.close();
  const out = { load_ms: loadMs, info: USE.info, statuses: statuses.length, tokens: [], vectors: [], embed_ms: [] };
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
