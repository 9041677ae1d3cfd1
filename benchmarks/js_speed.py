"""Streaming speed of the JavaScript target (docs/javascript.md): µs per chunk against a JS floor.

For every catalogue template ``respc compile --target js`` accepts (or ``--templates a,b``), the
benchmark's output of each size (``inputs.build``: reasoning, answer prose holding ``<``) is cut
into 4-character chunks (``inputs.chunks``) and fed under Node, in one process per template:

* ``js``: a fresh ``ResponseParser("")``, ``feed`` of every chunk, ``finalize``;
* ``floor``: the cheapest streaming parser in JavaScript, ``bench.Floor`` written in JavaScript (a
  ``feed`` method returning a fresh list of one event object per chunk), fed through the same loop
  as the parser, so ``js/floor`` is the overhead of actually parsing;
* ``py``: the generated Python module on the same chunks, for comparison.

Each figure is the least of ``--rounds`` interleaved rounds, CPU time (``process.cpuUsage`` under
``node --single-threaded``; ``time.process_time`` in Python). The target (as for the Python
parser): js/floor <= 3. Prints a Markdown table.

With ``--deltas`` it also measures the OpenAI delta adapter (``ChatCompletionStream`` of the runtime,
docs/javascript.md "OpenAI deltas") over the same parser and chunks: ``deltas`` (``feed`` returning
chunk objects) and ``sse`` (``feedSse`` returning their server-sent-event text), each against the
parser alone (``deltas/js``, ``sse/js``), as ``benchmarks/deltas.py`` measures the Python adapter.

Usage: ``python benchmarks/js_speed.py [--templates a,b] [--sizes 10k,100k] [--rounds 5] [--deltas]``
(needs ``node``, Node.js 20 or later).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import inputs

from respc.compiler.api import compile_template
from respc.compiler.emit_js import JS_RUNTIME_PATH, emit_js_module, js_support_problem
from respc.compiler.source import read_template

DRIVER = r"""
import { pathToFileURL } from "node:url";
const job = JSON.parse(process.argv[2]);
const { ResponseParser } = await import(pathToFileURL(job.module).href);
const { ChatCompletionStream } = await import(pathToFileURL(job.runtime).href);
const inputs = JSON.parse(await (await import("node:fs/promises")).readFile(job.inputs, "utf8"));
function cpu() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
// bench.Floor in JavaScript: the same call shape as a parser, one fresh event object per chunk
class Floor {
  feed(text) {
    const events = [];
    events.push({ type: "region_chunk", field: "content", text, dirty: false });
    return events;
  }
  finalize() { return { message: {}, events: [] }; }
}
let sink = 0;  // every event list is read, so neither loop can drop its events
function run(p, chunks) {
  let n = 0;
  for (const c of chunks) n += p.feed(c).length;
  sink += n + p.finalize().events.length;
}
const floor = (chunks) => run(new Floor(), chunks);
const parse = (chunks) => run(new ResponseParser(""), chunks);
// the delta adapter over a fresh parser: chunk objects, or their server-sent-event text
function stream(chunks, sse) {
  const s = new ChatCompletionStream(new ResponseParser(""), { ids: (n) => `call_${n}`, completionId: "x", created: 0 });
  let n = 0;
  if (sse) { for (const c of chunks) n += s.feedSse(c).length; n += s.finalizeSse().length; }
  else { for (const c of chunks) n += s.feed(c).length; n += s.finalize().length; }
  sink += n;
}
const kinds = [["js", parse], ["floor", floor]];
if (job.deltas) kinds.push(["deltas", (chunks) => stream(chunks, false)], ["sse", (chunks) => stream(chunks, true)]);
const out = [];
for (const chunks of inputs) {
  const best = Object.fromEntries(kinds.map(([name]) => [name, 1e9]));
  for (let r = 0; r < job.rounds; r++) {
    for (const [name, f] of kinds) {
      let loops = 0; const t0 = cpu(); let t = t0;
      do { f(chunks); loops++; t = cpu(); } while (t - t0 < 20);
      best[name] = Math.min(best[name], ((t - t0) * 1000) / loops / chunks.length);
    }
  }
  out.push(best);
}
process.stdout.write(JSON.stringify(out));
"""


def _python_us(module, chunks: list[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        loops, t0 = 0, time.process_time()
        while True:
            parser = module.ResponseParser("")
            for c in chunks:
                parser.feed(c)
            parser.finalize()
            loops += 1
            t = time.process_time()
            if t - t0 >= 0.02:
                break
        best = min(best, (t - t0) * 1e6 / loops / len(chunks))
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--templates", type=inputs.templates_arg, default=None)
    ap.add_argument("--sizes", type=inputs.sizes_arg, default=[10_000, 100_000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--deltas", action="store_true", help="also time the OpenAI delta adapter (feed and feedSse)")
    args = ap.parse_args(argv)
    node = shutil.which("node")
    if node is None:
        print("js_speed: node (Node.js 20 or later) is not installed", file=sys.stderr)
        return 2
    names = args.templates or inputs.catalogue()
    extra = " deltas µs/chunk | deltas/js | sse µs/chunk | sse/js |" if args.deltas else ""
    print("| template | size | chunks | js µs/chunk | floor µs/chunk | js/floor | py µs/chunk |" + extra)
    print("|---|---|---|---|---|---|---|" + "---|" * (4 if args.deltas else 0))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copyfile(JS_RUNTIME_PATH, folder / "respc.mjs")
        (folder / "driver.mjs").write_text(DRIVER, encoding="utf-8")
        for name in names:
            path = inputs.TEMPLATES / f"{name}.json"
            read = read_template(str(path))
            if js_support_problem(read.template, read.automaton) is not None:
                continue
            (folder / f"{name}.mjs").write_text(emit_js_module(read.template, read.automaton, command="bench"),
                                                encoding="ascii")
            texts = [inputs.chunks(inputs.build(name, size)) for size in args.sizes]
            (folder / "inputs.json").write_text(json.dumps(texts), encoding="utf-8")
            job = json.dumps({"module": str(folder / f"{name}.mjs"), "inputs": str(folder / "inputs.json"),
                              "rounds": args.rounds, "deltas": args.deltas,
                              "runtime": str(folder / "respc.mjs")})
            done = subprocess.run([node, "--single-threaded", str(folder / "driver.mjs"), job],
                                  capture_output=True, text=True, check=True)
            module = compile_template(str(path))
            for size, chunks, got in zip(args.sizes, texts, json.loads(done.stdout)):
                py = _python_us(module, chunks, args.rounds)
                more = (f" {got['deltas']:.3f} | {got['deltas'] / got['js']:.2f} | {got['sse']:.3f} | "
                        f"{got['sse'] / got['js']:.2f} |") if args.deltas else ""
                print(f"| {name} | {size // 1000}k | {len(chunks)} | {got['js']:.3f} | {got['floor']:.3f} | "
                      f"{got['js'] / got['floor']:.2f} | {py:.3f} |" + more)
    return 0


if __name__ == "__main__":
    sys.exit(main())
