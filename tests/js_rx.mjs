// Test driver of tests/test_js_target.py (the regex matcher against the regex module): stdin is
// {"programs": [...], "cases": [[program index, text, pos, end, partial, probe], ...]} (offsets in
// UTF-16 units); per case the matcher's [start, end, partial, groups] or null.
import { readFileSync } from "node:fs";
import { rxSearch } from "../runtime/js/respc.mjs";

const job = JSON.parse(readFileSync(0, "utf-8"));
const out = [];
for (const [k, text, pos, end, partial, probe] of job.cases) {
  let p = job.programs[k];
  if (probe) p = { tree: ["s", [[">", p.tree], ["!", ["s", []]]]], ngroups: p.ngroups, groups: [], first: p.first, never: true };
  out.push(rxSearch(p, text, pos, end, partial, true));
}
process.stdout.write(JSON.stringify(out));
