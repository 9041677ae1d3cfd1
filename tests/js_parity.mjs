// Test driver (tests/test_js_target.py): reads {"module": path, "cases": [{prefix, chunks, errors}]}
// (or {"jobs": [such objects]})
// as JSON on stdin, runs every case through the generated JavaScript parser and writes one JSON
// array of outcomes: {message, events, diagnostics} or {error: [name, message], events, diagnostics}.
import { pathToFileURL } from "node:url";

let input = "";
process.stdin.setEncoding("utf8");
for await (const piece of process.stdin) input += piece;
// {"jobs": [job, ...]} runs several modules in one process and writes one array per job
const parsed = JSON.parse(input);
const jobs = parsed.jobs ?? [parsed];
const all = [];
for (const job of jobs) {
  const mod = await import(pathToFileURL(job.module).href);
  const results = [];
  for (const c of job.cases) {
    const events = [];
    let parser = null;
    try {
      parser = new mod.ResponseParser(c.prefix, { errors: c.errors });
      events.push(...parser.initialEvents);
      for (const chunk of c.chunks) events.push(...parser.feed(chunk));
      const { message, events: last } = parser.finalize();
      events.push(...last);
      results.push({ message, events, diagnostics: parser.diagnostics });
    } catch (exc) {
      results.push({ error: [exc.name, exc.message], events, diagnostics: parser ? parser.diagnostics : [] });
    }
  }
  all.push(results);
}
process.stdout.write(JSON.stringify(parsed.jobs ? all : all[0]));
