// Test driver of tests/test_js_target.py (json body reader parity): one JSON-encoded body per stdin
// line (argument `repair`: the errors="recover" repair instead); per line, the value in a canonical form (numbers as their IEEE bits), or the error.
import { readFileSync } from "node:fs";
import { parseJsonBody, repairJsonBody } from "../runtime/js/respc.mjs";

const REPAIR = process.argv[2] === "repair";

function canon(v) {
  if (v === null || typeof v === "boolean" || typeof v === "string") return v;
  if (typeof v === "number") {
    if (Number.isNaN(v)) return ["num", "nan"];
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, v);
    return ["num", view.getBigUint64(0).toString(16).padStart(16, "0")];
  }
  if (Array.isArray(v)) return ["arr", v.map(canon)];
  return ["obj", Object.keys(v).map((k) => [k, canon(v[k])])];
}

const out = [];
for (const line of readFileSync(0, "utf-8").split("\n")) {
  if (!line) continue;
  const text = JSON.parse(line);
  try {
    if (REPAIR) {
      const fixed = repairJsonBody(text);
      out.push(fixed === null ? { repair: null } : { value: canon(fixed.value), notes: fixed.notes });
    } else {
      out.push({ value: canon(parseJsonBody(text)) });
    }
  } catch (e) {
    out.push(e.name === "ContentParseError" ? { error: e.message } : { throws: e.name });
  }
}
process.stdout.write(JSON.stringify(out));
