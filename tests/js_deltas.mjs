// Test driver (tests/test_js_target.py, the delta adapter's parity): reads {"jobs": [{"module": path,
// "cases": [{prefix, chunks, errors, recover}]}]} as JSON on stdin, streams every case through the
// runtime's ChatCompletionStream over the generated parser (ids call_0, call_1, ..., completion id
// "x", created 0) and writes one JSON array per job of outcomes: {feeds: [[chunk, ...] per feed and
// finalize], sse: [the server-sent-event text of each, from feedSse and finalizeSse], message (openaiMessage), diagnostics} or,
// when the parser throws, {error: name, feeds so far}.
import { pathToFileURL } from "node:url";

let input = "";
process.stdin.setEncoding("utf8");
for await (const piece of process.stdin) input += piece;
const all = [];
for (const job of JSON.parse(input).jobs) {
  const mod = await import(pathToFileURL(job.module).href);
  const { ChatCompletionStream, sse } = await import(pathToFileURL(job.module.replace(/[^/]*$/, "respc.mjs")).href);
  const results = [];
  for (const c of job.cases) {
    const feeds = [];
    try {
      const parser = new mod.ResponseParser(c.prefix, { errors: c.errors });
      const stream = new ChatCompletionStream(parser, { ids: (n) => `call_${n}`, completionId: "x", created: 0,
        recoverArguments: c.recover });
      for (const chunk of c.chunks) feeds.push(stream.feed(chunk));
      feeds.push(stream.finalize());
      // the same output through feedSse / finalizeSse on a second stream: its text per feed
      const again = new ChatCompletionStream(new mod.ResponseParser(c.prefix, { errors: c.errors }),
        { ids: (n) => `call_${n}`, completionId: "x", created: 0, recoverArguments: c.recover });
      const texts = c.chunks.map((chunk) => again.feedSse(chunk));
      texts.push(again.finalizeSse(null, null, false));
      if (texts.join("") !== feeds.map(sse).join("")) throw new Error("feedSse differs from sse(feed)");
      results.push({ feeds, sse: texts, message: stream.openaiMessage(), diagnostics: stream.diagnostics });
    } catch (exc) {
      results.push({ error: exc.name, feeds });
    }
  }
  all.push(results);
}
process.stdout.write(JSON.stringify(all));
