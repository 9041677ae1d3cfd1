// respc JavaScript runtime (ES module, no dependencies; Node 20+ or a browser).
//
// A module written by `respc compile T --target js` holds only data: its template's fields, its
// region automaton (per state: the literal delimiters it watches, with rank, action and target)
// and its recover tables. This file runs them with the meaning of the Python runtime
// (runtime/stream.py; docs/events.md, docs/template-language.md "Matching", docs/javascript.md):
// the same events, message and diagnostics for every chunking of the same output (D2).
//
// Scope (docs/javascript.md): literal delimiters, the `text` and `json` content formats (json
// without dialects), transforms, template language v1 and the v2 subset that adds roles, json
// openers the body may reject, end-if-unclosed opens, `end: "value"` and v2 transforms. The
// compiler refuses every other template (compiler/emit_js.py), so nothing here guesses.
//
// Offsets in diagnostics count Unicode code points, as Python strings do (a JavaScript string
// counts UTF-16 units); every internal index is a UTF-16 index.

export const RUNTIME_ABI = 3;

export const PREFIX_REQUIRED =
  "ResponseParser/parse_response requires `prefix` (the chat prompt sent to the model before " +
  "generation), because chat templates often pre-write part of the assistant message (e.g. an " +
  "opening `<think>` tag) that the parser must see to parse the output correctly. If the " +
  'generation already contains the complete message, pass "" to opt out explicitly: ' +
  'new ResponseParser("", options), parseResponse(text, { prefix: "" }).';

// each takes the template strings it quotes as Python's repr already wrote them (StreamParser._repr)
const NOTES = {
  "opener-again": (d) => `opener ${d} written again at the start of its region: consumed`,
  "doubled-closer": (d) => `closer ${d} written twice: the second one was consumed`,
  "stray-closer": (c, owner, slot) =>
    `closer ${c} of ${owner} with no opener before it: kept as text of ${slot}`,
  "opener-inside": (o) => `the region's opener ${o} written again inside its body: the start before the ` +
    "last copy was abandoned (dropped; the body after it is the value)",
  "one-object": () => "one object where a list of them is expected: read as a list of one",
  "arguments": (name) => `arguments of ${pyValueRepr(name)} were a JSON-encoded string: decoded`,
};

/** The error of a body that cannot be read, or of a missing required field (Python's ContentParseError). */
export class ContentParseError extends Error {
  constructor(message) { super(message); this.name = "ContentParseError"; }
}

/** A transform placeholder that cannot be filled (Python's PlaceholderError, a ContentParseError). */
export class PlaceholderError extends ContentParseError {
  constructor(message) { super(message); this.name = "PlaceholderError"; }
}

/** A placeholder whose root name is not in the scope (Python's UnknownPlaceholderError). */
export class UnknownPlaceholderError extends PlaceholderError {
  constructor(message) { super(message); this.name = "UnknownPlaceholderError"; }
}

/** A parser used after finalize or after an earlier error (Python's ParserStateError). */
export class ParserStateError extends Error {
  constructor(message) { super(message); this.name = "ParserStateError"; }
}

// Python's str.isspace() characters.
const SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
  0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

/** Python's ``c.isspace()`` for one UTF-16 unit (every such character is in the BMP). */
export function isSpace(ch) { return SPACE.has(ch.charCodeAt(0)); }

/** Python's ``str.strip()`` (its whitespace, not String.prototype.trim's). */
export function pyStrip(s) {
  let a = 0, b = s.length;
  while (a < b && SPACE.has(s.charCodeAt(a))) a++;
  while (b > a && SPACE.has(s.charCodeAt(b - 1))) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

/** At most this many code points of the text a "the message replaced text already sent" diagnostic
 * names are kept in it (Python: respc.openai.EXCERPT). */
const EXCERPT = 80;

/** Python's ``s[:n]``: the first ``n`` code points of ``s`` (a surrogate pair counts one). */
function cpHead(s, n) {
  if (s.length <= n) return s;
  let i = 0;
  for (let k = 0; k < n && i < s.length; k++) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff ? 2 : 1;
  }
  return s.slice(0, i);
}

/** Python's ``len(s)``: code points (a surrogate pair counts one). */
export function cpLen(s) {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { n--; i++; }
    }
  }
  return n;
}

const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/** Python's ``repr(s)`` of a str (used in diagnostic messages, as the Python runtime writes them). */
export function pyRepr(s) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else if (c < 0x7f || (ch !== " " && !NON_PRINTABLE.test(ch))) out += ch;
    else if (c <= 0xff) out += "\\x" + c.toString(16).padStart(2, "0");
    else if (c <= 0xffff) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += "\\U" + c.toString(16).padStart(8, "0");
  }
  return out + quote;
}

/**
 * A float the body wrote with an integral value (``1.0``, ``2e3``), while a field's value is read
 * and checked: a JavaScript number cannot tell it from the int ``1``, but Python's messages do
 * (``float 1e+16``). Unwrapped to a plain number before the value is returned (see unwrapFloats).
 */
class PyFloat extends Number {}

// set by the json reader when it wrapped a float (only readers asked to: see loads)
let floatsWrapped = false;

/** ``v`` with every PyFloat in it made a plain number again (containers changed in place). */
function unwrapFloats(v) {
  if (v instanceof PyFloat) return v.valueOf();
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (v[i] !== null && typeof v[i] === "object") v[i] = unwrapFloats(v[i]);
  } else if (v !== null && typeof v === "object") {
    for (const k of Object.keys(v)) if (v[k] !== null && typeof v[k] === "object") put(v, k, unwrapFloats(v[k]));
  }
  return v;
}

/** A copy of ``v`` that keeps its PyFloat numbers (unwrapFloats changes containers in place). */
function keepFloats(v) {
  if (Array.isArray(v)) return v.map(keepFloats);
  if (v !== null && typeof v === "object" && !(v instanceof Number)) {
    const out = {};
    for (const k of Object.keys(v)) put(out, k, keepFloats(v[k]));
    return out;
  }
  return v;
}

function isDict(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Number); }

/** Whether a number read from JSON is a Python float (not an int): see docs/javascript.md "Numbers". */
function isPyFloat(v) { return v instanceof PyFloat || !Number.isInteger(v) || Object.is(v, -0); }

/** Python's ``type(v).__name__`` of a value read from JSON. */
export function pyTypeName(v) {
  if (v === null || v === undefined) return "NoneType";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "string") return "str";
  if (typeof v === "number") return isPyFloat(v) ? "float" : "int";
  if (v instanceof PyFloat) return "float";
  return Array.isArray(v) ? "list" : "dict";
}

/** Python's ``repr(x)`` of a float: the shortest digits (as JavaScript's), Python's layout. */
export function pyFloatRepr(x) {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mantissa, e] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exp = Number(e);
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
    return sign + m + "e" + (exp < 0 ? "-" : "+") + String(Math.abs(exp)).padStart(2, "0");
  }
  if (exp < 0) return sign + "0." + "0".repeat(-exp - 1) + digits;
  if (digits.length <= exp + 1) return sign + digits + "0".repeat(exp + 1 - digits.length) + ".0";
  return sign + digits.slice(0, exp + 1) + "." + digits.slice(exp + 1);
}

/** Python's ``repr`` of a value read from JSON (dict, list, str, int, float, bool, None). */
export function pyValueRepr(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return pyRepr(v);
  if (typeof v === "number") return isPyFloat(v) ? pyFloatRepr(v) : String(v);
  if (v instanceof PyFloat) return pyFloatRepr(v.valueOf());
  if (Array.isArray(v)) return "[" + v.map(pyValueRepr).join(", ") + "]";
  return "{" + Object.keys(v).map((k) => `${pyRepr(k)}: ${pyValueRepr(v[k])}`).join(", ") + "}";
}

/** Strings in Python's order (code points; JavaScript's sort compares UTF-16 units). */
function pySorted(keys) {
  const cmp = (a, b) => {
    const x = Array.from(a, (c) => c.codePointAt(0)), y = Array.from(b, (c) => c.codePointAt(0));
    for (let k = 0; k < x.length && k < y.length; k++) if (x[k] !== y[k]) return x[k] - y[k];
    return x.length - y.length;
  };
  return [...keys].sort(cmp);
}

function pyList(strings) { return "[" + strings.map(pyRepr).join(", ") + "]"; }

function lead(buf, pos, limit) {
  let n = pos;
  while (n < limit && isSpace(buf[n])) n++;
  return n - pos;
}

function isEmpty(v) {
  return v === null || v === undefined || (typeof v === "string" && v === "") ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === "object" && !Array.isArray(v) && !(v instanceof Parts) && Object.keys(v).length === 0);
}

function copy(v) { return v === null || typeof v !== "object" ? v : JSON.parse(JSON.stringify(v)); }

/** The pieces of a `join` field's value, joined once when the message is read. */
class Parts {
  constructor(first, join, value) { this.items = [first, join, value]; }
  add(join, value) { this.items.push(join, value); }
  toString() { return this.items.join(""); }
}

// A key of the message is data from the template: defined as an own property, so that a field or
// default named "__proto__" is a key like any other, never the object's prototype.
function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function joined(out) {
  const r = {};
  for (const [k, v] of out) put(r, k, v instanceof Parts ? v.toString() : v);
  return r;
}

// transition actions (compiler/automaton.py): an edge is [action, field, target]; 2 closes
const OPEN = 0, CLOSE = 2, DEFER = 4;

// what the first significant character of a json body says (runtime/formats/base.py Boundary)
const UNDECIDED = 0, ACCEPTED = 1, REJECTED = 2;

// what a walk of a regex open's sequence from one start gives (see walk)
const FAIL = 0, PARTIAL = 1, COMPLETE = 2;

function inRanges(ranges, c) {
  let lo = 0, hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (c < ranges[mid][0]) hi = mid - 1;
    else if (c > ranges[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/**
 * One start of a regex open (compiler/emit_js.py ``_sequence``: literals and greedy runs of one
 * class, each run ended by a character it cannot take, so a start has one path): [FAIL], [PARTIAL]
 * when the path runs into ``n`` (more text could complete it), or [COMPLETE, end, groups].
 */
function walk(items, buf, s, n) {
  let i = s;
  let groups = null;
  for (const item of items) {
    if (item[0] === "l") {
      const lit = item[1];
      const m = Math.min(lit.length, n - i);
      if (!lit.startsWith(buf.slice(i, i + m))) return [FAIL];
      if (m < lit.length) return [PARTIAL];
      i += lit.length;
    } else {
      const [, ranges, min, group] = item;
      const from = i;
      let count = 0;
      while (i < n) {
        const c = buf.codePointAt(i);
        if (!inRanges(ranges, c)) break;
        i += c > 0xffff ? 2 : 1;
        count++;
      }
      if (i >= n) return [PARTIAL];
      if (count < min) return [FAIL];
      if (group !== null) {
        if (groups === null) groups = {};
        put(groups, group, buf.slice(from, i));
      }
    }
  }
  return [COMPLETE, i, groups];
}

/**
 * The leftmost start at or after ``pos`` of regex open ``w`` (``{regex, lead}``) in ``buf[:n]``
 * that is complete, or (``partial`` allowed: not the end of the output) runs into ``n``:
 * [start, status, end, groups], or null. Starts are where its lead literal is, or a proper prefix
 * of it ends the text; a run cannot take the lead's first character, so walks do not overlap.
 */
function findSequence(w, buf, pos, n, complete) {
  const items = w.regex;
  const lead = items[0][1];
  let k = buf.indexOf(lead, pos);
  while (k >= 0 && k + lead.length <= n) {
    const [status, end, groups] = walk(items, buf, k, n);
    if (status === COMPLETE) return [k, COMPLETE, end, groups];
    if (status === PARTIAL && !complete) return [k, PARTIAL, 0, null];
    k = buf.indexOf(lead, k + 1);
  }
  if (!complete) {
    // the text ends with a proper prefix of the lead: the longest one (its leftmost start), found
    // with the lead's failure table in time linear in the lead, not by comparing every suffix
    const held = heldPrefix(buf, Math.max(pos, n - lead.length + 1), lead, w.fail ??= failTable(lead), n);
    if (held > 0) return [n - held, PARTIAL, 0, null];
  }
  return null;
}

// --- regex delimiters the sequence walker does not read (compiler/emit_js.py _program) ---------
// A backtracking matcher over the pattern's parse tree as the compiler wrote it, in the regex
// module's order (alternatives left to right, greedy repeats longest first, lazy ones shortest
// first, an atomic group keeps its first way through), reading code points; each character class
// is the code point ranges the regex module gives it. It answers a search as the regex module's
// ``search(buf, pos, endpos, partial=True)`` does: the leftmost complete match if there is one;
// else (partial) the leftmost start from which some way tried runs into ``endpos`` (more text
// could still complete it), tried in the same order and, under an atomic group, only up to its
// first way through, so the compiled probe ``(?>P)(?!)`` finds where more text could change P's
// answer (compiler/automaton.py, edge_probe). Nodes: ["c", ranges] one character, ["s", items],
// ["l", text] literal characters, ["|", alternatives], ["g", number, node] a group, ["r", min, max (-1: none), greedy, node],
// ["=", node] / ["!", node] lookaheads, [">", node] an atomic group, ["^"] the text's start.

class RxRun {
  constructor(buf, end, ngroups, start0) {
    this.buf = buf; this.end = end; this.hit = false; this.partial = false; this.start0 = start0;
    this.caps = new Array(ngroups + 1).fill(null);
  }

  // one character of `ranges` at i: its code point's width in UTF-16 units, 0 when it is not one
  one(ranges, i) {
    if (i >= this.end) { this.hit = true; return 0; }
    const c = this.buf.codePointAt(i);
    if (!inRanges(ranges, c)) return 0;
    return c > 0xffff && i + 1 < this.end ? 2 : 1;
  }

  m(node, i, k) {
    if (this.partial && this.hit) return false;  // a partial search's answer is known: stop
    switch (node[0]) {
      case "c": {
        const w = this.one(node[1], i);
        return w > 0 && k(i + w);
      }
      case "l": {
        const t = node[1], buf = this.buf;
        for (let x = 0; x < t.length; x++) {
          if (i + x >= this.end) { this.hit = true; return false; }
          if (buf.charCodeAt(i + x) !== t.charCodeAt(x)) return false;
        }
        return k(i + t.length);
      }
      case "s": return this.seq(node[1], 0, i, k);
      case "|": {
        for (const alt of node[1]) if (this.m(alt, i, k)) return true;
        return false;
      }
      case "g": {
        const n = node[1], old = this.caps[n];
        if (this.m(node[2], i, (j) => {
          const before = this.caps[n];
          this.caps[n] = [i, j];
          if (k(j)) return true;
          this.caps[n] = before;
          return false;
        })) return true;
        this.caps[n] = old;
        return false;
      }
      case "r": return node[4][0] === "c" ? this.run(node, i, k) : this.rep(node, 0, i, k);
      case "=": case "!": {
        const saved = this.caps.slice();
        const found = this.m(node[1], i, () => true);
        if (node[0] === "!") { this.caps = saved; return !found && k(i); }
        if (!found) { this.caps = saved; return false; }
        if (k(i)) return true;
        this.caps = saved;
        return false;
      }
      case ">": {
        const saved = this.caps.slice();
        let to = -1;
        if (!this.m(node[1], i, (j) => { to = j; return true; })) { this.caps = saved; return false; }
        if (k(to)) return true;
        this.caps = saved;
        return false;
      }
      case "^": return i === 0 && this.start0 && k(i);
      default: throw new Error(`unknown regex node ${node[0]}`);
    }
  }

  seq(items, x, i, k) {
    if (x === items.length) return k(i);
    return this.m(items[x], i, (j) => this.seq(items, x + 1, j, k));
  }

  // a repeat of one character class, without recursion per character
  run(node, i, k) {
    const [, min, max, greedy, item] = node;
    const ranges = item[1];
    if (greedy) {
      const at = [i];
      let j = i;
      while (max < 0 || at.length - 1 < max) {
        const w = this.one(ranges, j);
        if (w === 0) break;
        j += w;
        at.push(j);
      }
      if (this.partial && this.hit) return false;
      for (let c = at.length - 1; c >= min; c--) if (k(at[c])) return true;
      return false;
    }
    let j = i;
    for (let c = 0; ; c++) {
      if (c >= min && k(j)) return true;
      // followed by a literal (compiler/emit_js.py _mark_lazy_tails): the regex module reports a
      // partial match when the character the literal was not found at is the text's last one
      if (c >= min && node[5] === true && j < this.end && j + (this.buf.codePointAt(j) > 0xffff ? 2 : 1) >= this.end) this.hit = true;
      if (this.partial && this.hit) return false;
      if (max >= 0 && c >= max) return false;
      const w = this.one(ranges, j);
      if (w === 0) return false;
      j += w;
    }
  }

  // a repeat of anything else; a pass that takes nothing ends the repeat (as the regex module does)
  rep(node, c, i, k) {
    const [, min, max, greedy, body] = node;
    const more = () => (max < 0 || c < max) && this.m(body, i, (j) => (j === i && c >= min ? false : this.rep(node, c + 1, j, k)));
    if (greedy) return more() || (c >= min && k(i));
    return (c >= min && k(i)) || more();
  }
}

/**
 * The regex module's ``search(buf, pos, end, partial=...)`` of compiled pattern ``p`` (``{tree,
 * groups, first}``): [start, end, partial, groups by name or null], or null. ``start0``: offset 0
 * of ``buf`` is the text's start (``^`` may match there). ``last``: no start after it is tried
 * (the scanner asks whether a probe starts at or before a match: starts past it cannot answer,
 * and trying them would read the rest of the buffer once per match).
 */
export function rxSearch(p, buf, pos, end, partial, start0, last = end) {
  const first = p.first;
  let to = -1;
  const found = (j) => { to = j; return true; };
  const runs = p.never ? [] : [false];  // a probe never matches: only its partial phase
  if (partial) runs.push(true);
  for (const phase of runs) {
    const r = new RxRun(buf, end, p.ngroups, start0);
    r.partial = phase;
    for (let s = pos; s <= last; s += (s + 1 < end && buf.charCodeAt(s) >= 0xd800 && buf.charCodeAt(s) <= 0xdbff &&
      buf.charCodeAt(s + 1) >= 0xdc00 && buf.charCodeAt(s + 1) <= 0xdfff) ? 2 : 1) {
      if (first !== null && s < end && !inRanges(first, buf.codePointAt(s))) continue;
      r.hit = false;
      if (p.ngroups) r.caps.fill(null);
      to = -1;
      const ok = r.m(p.tree, s, found);
      if (ok && !phase) {
        let groups = null;
        if (p.groups.length) {
          groups = {};
          for (const [n, name] of p.groups) put(groups, name, r.caps[n] === null ? null : buf.slice(r.caps[n][0], r.caps[n][1]));
        }
        return [s, to, false, groups];
      }
      if (phase && r.hit) return [s, end, true, null];
    }
  }
  return null;
}

// held characters from which a pending hold is scanned again only once it has doubled (runtime/stream.py)
const LONG_HOLD = 1024;

// body pieces joined into one block (memory follows the body's size, not its chunk count)
const BLOCK = 64;

/**
 * True when no watched literal of state `st` can start anywhere in `text` (read with nothing held
 * before it): no literal occurs in it, and it does not end with a proper prefix of one. A scan would
 * then route the whole chunk. Each literal costs one search and one failure-table pass over the
 * chunk's last `span` characters, never a comparison per occurrence of its first character (which
 * is quadratic in a long literal made of one repeated character).
 */
function plainChunk(text, st) {
  if (!st.plain) return false;
  const n = text.length;
  for (let k = 0; k < st.lits.length; k++) {
    const lit = st.lits[k];
    const at = text.indexOf(lit[0]);
    if (at < 0) continue;
    if (text.indexOf(lit, at) >= 0) return false;
    if (heldPrefix(text, Math.max(at, n - lit.length + 1), lit, st.fails[k] ??= failTable(lit)) > 0) return false;
  }
  return true;
}

/** Knuth-Morris-Pratt failure table of `lit`: f[i] is the longest proper border of lit[0:i] (f[0] = -1). */
function failTable(lit) {
  const f = new Int32Array(lit.length + 1);
  f[0] = -1;
  let k = -1;
  for (let i = 0; i < lit.length; i++) {
    while (k >= 0 && lit.charCodeAt(k) !== lit.charCodeAt(i)) k = f[k];
    f[i + 1] = ++k;
  }
  return f;
}

/** The length of the longest suffix of buf[from:end] that is a proper prefix of `lit` (f: its failure table). */
function heldPrefix(buf, from, lit, f, end = buf.length) {
  const L = lit.length;
  let k = 0;
  for (let i = from; i < end; i++) {
    if (k === L) k = f[k];
    const c = buf.charCodeAt(i);
    while (k >= 0 && lit.charCodeAt(k) !== c) k = f[k];
    k++;
  }
  return k === L ? f[L] : k;
}

/**
 * The streaming parser of one template (docs/events.md "The parser object"; docs/javascript.md).
 * A generated module makes its class with `makeParser(TABLE)`.
 */
export class StreamParser {
  /**
   * @param {string} prefix the prompt before generation (required; "" opts out).
   * @param {{tools?: any[], errors?: "strict"|"recover"}} [options] (tools: none or [] only, see below)
   */
  constructor(prefix, options = {}) {
    const errors = options.errors ?? "strict";
    if (prefix === null || prefix === undefined) throw new Error(PREFIX_REQUIRED);
    if (errors !== "strict" && errors !== "recover") {
      throw new Error(`errors must be one of ['strict', 'recover'], got ${JSON.stringify(errors)}`);
    }
    if (typeof prefix !== "string") throw new TypeError("prefix must be a string");
    const tools = options.tools;
    if (tools !== undefined && tools !== null && !(Array.isArray(tools) && tools.length === 0)) {
      // the Python parser types tool-call arguments by the tools' schemas (docs/template-language.md
      // "Tool-argument typing"); without that here the answer could differ, so it is refused
      throw new Error("tools: the JavaScript runtime does not type tool-call arguments by their schemas yet " +
        "(docs/javascript.md); pass no tools (the calls keep the types the output wrote)");
    }
    const T = this.constructor.TABLE;
    this._T = T;
    this._recover = errors === "recover";
    this.diagnostics = [];
    // a WeakMap set by the delta adapter: region_close event -> its value with integral floats kept
    this.floatValues = null;
    this.initialEvents = [];
    this._eosHold = null;
    this._high = "";  // a chunk's last UTF-16 unit when it is the first half of a surrogate pair (feed)
    this._again = null;
    // errors="recover": a closer met inside an open JSON string, held until a later closer leaves
    // the value whole or the output ends: [start, end, scan from, InString reader, fed up to]
    this._cdefer = null;
    // v2: an opener whose body the json reader may still reject (nothing emitted yet):
    // [opener start, opener end, state before, field, target] (Python: StreamParser._tent)
    this._tent = null;
    // v2 end-if-unclosed: [opener start, opener end, field, target, scan from] (Python: _defer)
    this._defer = null;
    this._held = 0;
    this._mark = 0;
    this._sunk = 0;
    this._openAt = null;
    this._openText = "";
    // per message key of a field that neither joins nor repeats: the block whose value it holds
    // (Python: StreamParser._spans, the "overwritten" diagnostic)
    this._spans = new Map();
    this._buf = "";
    this._pos = 0;
    this._cut = false;  // whether text was dropped from the buffer's front (see _run)
    this._state = 0;
    this._enter(T.outside);
    this._out = new Map(Object.entries(T.defaults).map(([k, v]) => [k, copy(v)]));
    this._done = false;
    this._rescanAt = 0;
    this._heldCp = 0;
    this._tail = [];
    this._tailLen = 0;
    if (prefix) {
      const last = this._anchorEnd(prefix);
      let rest;
      if (last === null) {
        this.diagnostics.push({
          kind: "prefix-without-anchor", field: null, start: 0, end: 0,
          message: "the start anchor is not in the prefix; " +
            (this._recover ? "the prefix is ignored (errors='recover')"
              : "the whole prefix was parsed as the start of the response") +
            this._escapedNewlineHint(prefix),
        });
        rest = this._recover ? "" : prefix;
      } else {
        rest = prefix.slice(last);
      }
      if (rest) {
        this._mark = -cpLen(rest);
        this._buf = rest;
        this._guarded(this.initialEvents, false);
      }
    }
  }

  /** Alias of `initialEvents` under the Python name. */
  get initial_events() { return this.initialEvents; }

  _anchorEnd(prefix) {
    // Python's finditer over the anchor's alternation (longest literal first): the leftmost
    // match, the longest literal there, the next search from its end; the end of the last one
    const lits = this._T.anchors;
    const next = lits.map((a) => prefix.indexOf(a));
    let last = null, from = 0;
    for (;;) {
      let best = -1, len = 0;
      for (let k = 0; k < lits.length; k++) {
        if (next[k] >= 0 && next[k] < from) next[k] = prefix.indexOf(lits[k], from);
        const i = next[k];
        if (i >= 0 && (best < 0 || i < best || (i === best && lits[k].length > len))) { best = i; len = lits[k].length; }
      }
      if (best < 0) return last;
      last = from = best + len;
    }
  }

  _escapedNewlineHint(prefix) {
    if (!prefix.includes("\\n")) return "";
    const fixed = prefix.replaceAll("\\r", "\r").replaceAll("\\n", "\n");
    if (!this._T.anchors.some((a) => fixed.includes(a))) return "";
    return "; the prefix holds a backslash and 'n' (\\n) where the start anchor has a newline: pass a real " +
      "newline (in a shell: --prefix $'...\\n', or --prefix-file)";
  }

  /**
   * Feed the next piece of output; returns its events (region_open / region_chunk / region_close).
   * @param {string} text
   * @returns {object[]}
   */
  feed(text) {
    if (this._done) throw new ParserStateError("ResponseParser already finalized (or failed earlier)");
    if (typeof text !== "string") throw new TypeError("feed() takes a string");
    // A chunk that ends with the first half of a surrogate pair: the half waits for the next chunk,
    // so a character split between chunks is read as one character, as in the whole text (D2:
    // offsets count code points, and a delimiter is never found across the halves)
    if (this._high) { text = this._high + text; this._high = ""; }
    const last = text.length ? text.charCodeAt(text.length - 1) : 0;
    if (last >= 0xd800 && last <= 0xdbff) { this._high = text.slice(-1); text = text.slice(0, -1); }
    return this._feed(text);
  }

  _feed(text) {
    if (this._buf === "" && this._again === null && this._cdefer === null && this._tent === null &&
        this._defer === null && this._bd === null && text !== "") {
      // Fast path: nothing held and no character of the chunk can start a watched literal, so a
      // scan would route the whole chunk to the current region (runtime/stream.py's fast path)
      if (plainChunk(text, this._T.states[this._state])) {
        if (this._opened && this._name !== null) {
          // _route, written out (the commonest chunk)
          const body = this._body;
          body.push(text);
          if (body.length >= BLOCK) { this._blocks.push(body.join("")); body.length = 0; }
          this._bodyCp += cpLen(text);
          this._bodyU += text.length;
          return [{ type: "region_chunk", field: this._name, text, dirty: this._region.dirty }];
        }
        const events = [];
        this._route(events, text);
        return events;
      }
    }
    if (this._rescanAt) {
      // A long pending hold (see _run): collect chunks and scan again once the held text has
      // doubled, as the Python runtime does (LONG_HOLD), so no text is searched again per chunk.
      if (text !== "") {
        this._tail.push(text);
        this._tailLen += cpLen(text);
        if (this._heldCp + this._tailLen < this._rescanAt) return [];
        this._flushTail();
      }
    } else {
      this._buf += text;
    }
    const events = [];
    this._guarded(events, false);
    return events;
  }

  _flushTail() {
    if (this._tail.length) {
      this._buf += this._tail.join("");
      this._tail = [];
      this._tailLen = 0;
    }
  }

  /**
   * End the stream: close the open region; returns `{message, events}` (docs/template-language.md "Finalizing").
   */
  finalize() {
    if (this._done) throw new ParserStateError("ResponseParser already finalized (or failed earlier)");
    const events = [];
    if (this._high) {
      // the output ended with the first half of a surrogate pair: a lone surrogate, one code point
      const high = this._high;
      this._high = "";
      try {
        events.push(...this._feed(high));
      } catch (exc) {
        exc.events = events.concat(exc.events ?? []);
        throw exc;
      }
    }
    const collected = this._tail.length > 0;
    this._flushTail();
    if (this._recover && collected) this._guarded(events, false);
    if (this._recover && this._pos < this._buf.length) {
      let cut = this._pos;
      if (this._again !== null) cut += lead(this._buf, cut, this._buf.length);
      this._eosHold = cut < this._buf.length ? cut : null;
    }
    this._guarded(events, true);
    const defaults = this._T.defaults;
    const all = joined(this._out);
    const message = {};
    for (const k of Object.keys(all)) {
      if (Object.prototype.hasOwnProperty.call(defaults, k) || !isEmpty(all[k])) put(message, k, all[k]);
    }
    this._done = true;
    const missing = this._T.required.filter((k) => !Object.prototype.hasOwnProperty.call(message, k));
    if (missing.length) {
      throw new ContentParseError(
        `Required response_template fields missing from parsed output: [${missing.map((k) => this._repr(k)).join(", ")}]`);
    }
    return { message, events };
  }

  // --- machinery (runtime/stream.py, the same names without the underscore's Python meaning) ---
  _guarded(events, eos) {
    try {
      this._run(events, eos);
    } catch (exc) {
      this._done = true;
      exc.events = events;
      throw exc;
    }
  }

  _here() { return this._mark + this._sunk + this._bodyCp; }

  _enter(field) {
    this._field = field;
    if (field === null) { this._region = null; this._name = null; }
    else { this._region = this._T.fields[field]; this._name = this._region.slot; }
    this._bd = this._region !== null && this._region.ends ? new JsonEnd(this._region.accept) : null;
    this._groups = null;
    this._opened = false;
    this._body = [];
    this._blocks = [];
    this._bodyCp = 0;
    this._bodyU = 0;
    this._gaps = null;
    this._exact = 0;
  }

  /**
   * Leftmost committable literal at or after pos, and where text must be held from (D2;
   * docs/template-language.md "Choosing the next delimiter"): the earliest hit, the longest
   * literal there, then the lowest rank; a hit is committed only before the leftmost proper
   * prefix of a watched literal that ends the buffer. `memo` keeps each literal's last hit over
   * this buffer, so no text is searched twice (linear in the buffer).
   */
  _scan(buf, pos, eos, memo, state = this._state) {
    const st = this._T.states[state];
    const n = buf.length;
    let bs = -1, be = -1, br = -1, slot = 0, bg = null;
    let hold = n;
    for (const w of st.watches) {
      if (w.rx) {
        // a regex open the walker does not read (compiler/emit_js.py _program): the regex
        // module's partial search, then its probe decides whether more text could change the
        // answer (runtime/scanners.py state_scanner, the same steps)
        const x = w.rx;
        let m = memo[st.slot0 + slot];
        if (m === undefined || (m !== -1 && m[0] < pos)) {
          // every match starts with a lead: the search starts at the first one, or at a proper
          // prefix of one ending the buffer (a start before either can neither match nor run into
          // the end), and with neither there is nothing to find (runtime/scanners.py lead_search)
          let from = pos;
          if (x.leads !== null) {
            from = n;
            for (let k = 0; k < x.leads.length; k++) {
              const lead = x.leads[k];
              const at = buf.indexOf(lead, pos);
              if (at >= 0 && at < from) from = at;
              if (!eos) {
                const held = heldPrefix(buf, Math.max(pos, n - lead.length + 1), lead, (x.fails ??= [])[k] ??= failTable(lead));
                if (held > 0 && n - held < from) from = n - held;
              }
            }
          }
          m = (from < n || x.leads === null) ? rxSearch(x, buf, from, n, !eos, !this._cut) : null;
          if (m !== null) m.push(from);  // where its probe starts too (m[4])
          memo[st.slot0 + slot] = m ??= -1;
        }
        slot++;
        if (m === -1) continue;
        let i = m[0];
        const e = m[1];
        if (!eos) {
          if (m[2] || e === n) {
            // partial, or complete at the buffer's edge: held from its start, or from an earlier
            // start of the probe's that runs into its start (searched up to it, the text then
            // ending there: a lead's proper prefix just before it counts, so from pos)
            if (!m[2]) {
              const q = rxSearch(x.probe, buf, x.edgeFull ? Math.max(m[4], pos) : pos, x.edgeFull ? n : i, true, !this._cut, i);
              if (q !== null && q[0] < i) i = q[0];
            }
            if (i < hold) hold = i;
            continue;
          }
          const q = rxSearch(x.probe, buf, Math.max(m[4], pos), n, true, !this._cut, i);
          if (q !== null && q[0] <= i) {
            if (q[0] < hold) hold = q[0];
            continue;
          }
        }
        const L = e - i;
        if (bs < 0 || i < bs || (i === bs && (L > be - bs || (L === be - bs && w.rank < br)))) {
          bs = i; be = e; br = w.rank; bg = m[3];
        }
        continue;
      }
      if (w.regex) {
        // a regex open (compiler/emit_js.py _sequence): its leftmost start that is complete or,
        // before the end of the output, runs into the end of the text (held: D2)
        let m = memo[st.slot0 + slot];
        if (m === undefined || (m !== -1 && m[0] < pos)) m = memo[st.slot0 + slot] = findSequence(w, buf, pos, n, eos) ?? -1;
        slot++;
        if (m === -1) continue;
        const [i, status, e, groups] = m;
        if (status === COMPLETE && (eos || e < n)) {
          const L = e - i;
          if (bs < 0 || i < bs || (i === bs && (L > be - bs || (L === be - bs && w.rank < br)))) {
            bs = i; be = e; br = w.rank; bg = groups;
          }
        } else if (!eos && i < hold) {
          hold = i;  // a partial match, or a complete one at the buffer's edge: more text may change it
        }
        continue;
      }
      for (const lit of w.literals) {
        let i = memo[st.slot0 + slot];
        if (i === undefined || (i >= 0 && i < pos)) i = memo[st.slot0 + slot] = buf.indexOf(lit, pos);
        slot++;
        const L = lit.length;
        if (i >= 0 && (bs < 0 || i < bs || (i === bs && (L > be - bs || (L === be - bs && w.rank < br))))) {
          bs = i; be = i + L; br = w.rank; bg = null;
        }
      }
    }
    if (!eos && (bs < 0 || bs >= n - st.span)) {
      // the buffer ends with a proper prefix of a literal: hold it back from the leftmost such start
      // (the longest such suffix of any literal), found with each literal's failure table in time
      // linear in the window, never by comparing every suffix (quadratic in a long literal); a
      // regex open's partial start was held above (findSequence)
      const from = Math.max(pos, n - st.span);
      let longest = 0;
      for (let k = 0; k < st.held.length; k++) {
        const lit = st.held[k];
        const at = buf.indexOf(lit[0], from);
        if (at < 0 || n - at <= longest) continue;
        const held = heldPrefix(buf, at, lit, st.heldFails[k] ??= failTable(lit));
        if (held > longest) longest = held;
      }
      if (longest > 0 && n - longest < hold) hold = n - longest;
    }
    if (bs >= 0 && bs < hold) return [bs, be, br, hold, bg];
    return [-1, 0, 0, hold, null];
  }

  _run(events, eos) {
    let buf = this._buf;
    let pos = this._pos;
    const memo = [];  // per state and literal: its last hit in buf (see _scan)
    for (;;) {
      if (this._again !== null) {
        const verdict = this._reopened(events, buf, pos, eos);
        if (verdict === null) break;
        pos = verdict;
      }
      if (this._cdefer !== null) {
        // errors="recover": a closer inside an open value, waiting for a later closer
        const verdict = this._closeDeferred(events, buf, pos, eos, memo);
        if (verdict === null) break;
        pos = verdict;
        continue;
      }
      const state = this._state;
      const [start, end, rank, hold, groups] = this._scan(buf, pos, eos, memo);
      if (this._defer !== null) {
        // v2: an open that counts only if this region's close never follows
        const verdict = this._deferred(events, buf, pos, eos, memo);
        if (verdict === null) break;
        pos = verdict;
        continue;
      }
      if (this._tent !== null) {
        // v2: an open whose body the json reader may still reject (nothing emitted yet)
        const verdict = this._probe(events, buf, pos, eos, start, hold);
        if (verdict === null) break;  // undecided: hold the opener and what follows it
        if (verdict >= 0) {  // rejected: the opener went back to the enclosing region
          pos = verdict;
          continue;
        }
        // accepted: the region is open now, go on with the same scan result
      }
      if (this._bd !== null) {
        // v2 end: "value": a region that ends where its value ends; its reader sees every body piece
        const limit = start >= 0 ? start : eos ? buf.length : hold;
        if (limit > pos) {
          const k = this._bd.feed(buf.slice(pos, limit));
          if (k >= 0) {
            if (k) this._route(events, buf.slice(pos, pos + k));
            pos += k;
            this._leave(this._close(events, "", false));
            continue;
          }
          this._route(events, buf.slice(pos, limit));
          pos = limit;
        }
      }
      if (start >= 0) {
        if (start > pos) this._route(events, buf.slice(pos, start));
        pos = end;
        const edge = this._T.states[state].edges[rank];
        const delim = buf.slice(start, end);
        if (edge[0] === DEFER) {
          // v2 end-if-unclosed: an open that counts only if this region's own close never
          // follows; the opener stays in the buffer until that is decided (_deferred)
          pos = start;
          this._defer = [start, end, edge[1], edge[2], end, groups];
          continue;
        }
        if (edge[0] === OPEN) {
          if (this._T.fields[edge[1]].reject) {
            // nothing happens until the json reader saw the body start (_probe)
            this._tent = [start, end, state, edge[1], edge[2], groups];
            this._state = edge[2];
          } else {
            this._begin(events, edge[1], edge[2], delim, groups);
          }
        } else if (this._recover && this._insideAtClose(edge[1], start, end)) {
          // a closer inside an open JSON string: held until a later closer leaves the value
          // whole, or the output ends (docs/security.md, "Closers inside an open value")
          pos = start;
        } else {
          const hadText = this._opened;
          const slot = this._name;
          this._leave(this._close(events, delim, false));
          if (this._recover && end > start) this._watchAgain(delim, "doubled-closer", slot);
          if (!hadText && start === end) break;
        }
        continue;
      }
      if (eos) {
        const cut = this._eosHold;
        if (cut !== null && pos <= cut && cut < buf.length) {
          const at = this._here() + cpLen(buf.slice(pos, cut));
          const held = buf.slice(cut);
          this._report("truncated-delimiter", at, at + cpLen(held),
            "the stream ended inside what may be a delimiter (kept as text)", held, this._name);
        }
        if (pos < buf.length) this._route(events, buf.slice(pos));
        pos = buf.length;
        this._close(events, "", true);
        this._state = 0;
        this._enter(this._T.outside);
        break;
      }
      if (hold > pos) {
        this._route(events, buf.slice(pos, hold));
        pos = hold;
      }
      break;
    }
    // literal delimiters need no context: keep only the undecided text (and a tentative opener)
    const keep = this._tent === null ? pos : Math.min(pos, this._tent[0]);
    this._buf = buf.slice(keep);
    this._pos = pos - keep;
    if (keep > 0) this._cut = true;  // offset 0 of the buffer is no longer the text's start (^)
    const d = this._cdefer;
    if (d !== null) { d[0] -= keep; d[1] -= keep; d[2] -= keep; d[4] -= keep; }
    if (this._tent !== null) { this._tent[0] -= keep; this._tent[1] -= keep; }
    const f = this._defer;
    if (f !== null) { f[0] -= keep; f[1] -= keep; f[4] -= keep; }
    // Held text this long (a region's opener may still be written again after a long run of
    // whitespace, errors="recover") is scanned again only once it has doubled (Python: LONG_HOLD)
    // (code points <= UTF-16 units; counted once here: feed compares them with every chunk, linear)
    const held = this._buf.length - this._pos < LONG_HOLD ? 0 : cpLen(this._buf.slice(this._pos));
    this._heldCp = held >= LONG_HOLD ? cpLen(this._buf) : 0;  // the whole buffer, as Python's len(buf)
    this._rescanAt = held >= LONG_HOLD ? this._heldCp + held : 0;
  }

  /**
   * v2: decide a tentative open from the text after the opener (Python: StreamParser._probe):
   * null while undecided (held), -1 once accepted (the region is open), or where to scan from
   * after a rejection. Only the first significant character counts (runtime/formats/json_.py
   * ``_json_verdict``): one of the field's accept characters accepts, any other rejects.
   */
  _probe(events, buf, pos, eos, start, hold) {
    const [openStart, openEnd0, state, field, target, groups] = this._tent;
    let openEnd = openEnd0;
    const limit = start >= 0 ? start : eos ? buf.length : hold;
    let i = pos;
    while (i < limit && " \t\n\r".includes(buf[i])) i++;
    const status = i === limit ? UNDECIDED : this._T.fields[field].accept.includes(buf[i]) ? ACCEPTED : REJECTED;
    if (status === ACCEPTED || (status === UNDECIDED && (start >= 0 || eos))) {
      // accepted, or a delimiter / the end of the stream came first: an empty region
      this._tent = null;
      this._state = state;
      this._begin(events, field, target, buf.slice(openStart, openEnd), groups);
      this._again = null;  // the body starts with what the content parser accepts
      return -1;
    }
    if (status === UNDECIDED) return null;
    for (const alternative of this._T.fields[field].alternatives) {
      // the next field with the identical open gets to read the body
      for (const edge of this._T.states[state].edges) {
        if (edge[1] === alternative && edge[0] === OPEN) {
          this._state = edge[2];
          if (this._T.fields[alternative].reject) {
            this._tent = [openStart, openEnd, state, alternative, edge[2], groups];
          } else {
            this._tent = null;
            this._state = state;
            this._begin(events, alternative, edge[2], buf.slice(openStart, openEnd), groups);
          }
          return pos;
        }
      }
    }
    let opener = buf.slice(openStart, openEnd);
    if (this._recover && pyStrip(opener)) {
      // errors="recover" policy *doubled opener*: the opener written twice (whitespace between
      // allowed); the first one is consumed, the second one opens the region
      const again = openEnd + lead(buf, openEnd, buf.length);
      if (!buf.startsWith(opener, again)) {
        if (!eos && buf.length - again < opener.length && buf.startsWith(opener.slice(0, buf.length - again), again)) {
          return null;  // may still be the opener again: wait
        }
        opener = "";
      }
    }
    // not an opener after all: its text belongs to the enclosing region
    this._tent = null;
    this._state = state;
    if (pyStrip(opener) && this._recover) {
      const at = this._here();
      const n = cpLen(opener);
      this._report("repaired", at, at + n, `doubled opener ${this._repr(opener)}: the first one was consumed`,
        opener, this._T.fields[field].slot);
      this._sunk += n;
      if (this._T.stray.length) this._exact = this._bodyU;
      if (this._gaps === null) this._gaps = [];
      this._gaps.push([this._bodyU, opener]);
      return openEnd;
    }
    if (openStart === openEnd) openEnd += 1;
    this._route(events, buf.slice(openStart, openEnd));
    return openEnd;
  }

  /** v2: decide a DEFER open at pos (Python: StreamParser._deferred): look on for the current
   * region's own close. Null while undecided (the text from the opener on is held), else where to
   * go on from: after that close (the opener was the region's text), or after the opener when the
   * stream ended first (the open counts). */
  _deferred(events, buf, pos, eos, memo) {
    let [start, end, field, target, scan, groups] = this._defer;
    const state = this._state;
    const edges = this._T.states[state].edges;
    let hold = scan;
    for (;;) {
      let s, e, rank;
      [s, e, rank, hold] = this._scan(buf, scan, eos, memo, state);
      if (s < 0) break;
      if (edges[rank][0] === CLOSE) {
        // the region closes after all: the opener and what followed were its text
        this._defer = null;
        this._route(events, buf.slice(pos, s));
        const slot = this._name;
        this._leave(this._close(events, buf.slice(s, e), false));
        if (this._recover && e > s) this._watchAgain(buf.slice(s, e), "doubled-closer", slot);
        return e;
      }
      scan = e > s ? e : s + 1;  // another opener inside: look past it
    }
    if (!eos) {
      this._defer = [start, end, field, target, hold > scan ? hold : scan, groups];
      return null;
    }
    this._defer = null;
    if (this._T.fields[field].reject) {
      this._tent = [start, end, state, field, target, groups];
      this._state = target;
    } else {
      this._begin(events, field, target, buf.slice(start, end), groups);
    }
    return end;
  }

  _begin(events, field, target, opener, groups = null) {
    const at = this._close(events, "", false);
    this._state = target;
    this._field = field;
    const region = this._region = this._T.fields[field];
    this._name = region.slot;
    this._bd = region.ends ? new JsonEnd(region.accept) : null;
    this._groups = groups;  // the named groups of a regex opener (D4), for the transform
    this._body = [];
    this._blocks = [];
    this._bodyCp = 0;
    this._bodyU = 0;
    this._gaps = null;
    this._exact = 0;
    this._mark = at + cpLen(opener);
    this._sunk = 0;
    this._openAt = at;
    this._openText = opener;
    this._opened = true;
    if (this._recover) this._watchAgain(opener, "opener-again", region.slot);
    if (region.slot !== null) events.push({ type: "region_open", field: region.slot });
  }

  _watchAgain(delimiter, note, slot) {
    const text = pyStrip(delimiter);
    this._again = cpLen(text) >= 3 ? [text, note, slot] : null;
  }

  _reopened(events, buf, pos, eos) {
    const [again, note, slot] = this._again;
    const at = pos + lead(buf, pos, buf.length);
    if (buf.startsWith(again, at)) {
      this._again = null;
      if (at > pos) this._route(events, buf.slice(pos, at));
      const here = this._here();
      const n = cpLen(again);
      this._report("repaired", here, here + n, NOTES[note](this._repr(again)), again, slot);
      this._sunk += n;
      if (this._T.stray.length) this._exact = this._bodyU;
      if (this._gaps === null) this._gaps = [];
      this._gaps.push([this._bodyU, again]);
      return at + again.length;
    }
    if (!eos && buf.length - at < again.length && again.startsWith(buf.slice(at))) return null;
    this._again = null;
    return pos;
  }

  _leave(at) {
    this._state = 0;
    this._enter(this._T.outside);
    this._mark = at;
    this._sunk = 0;
    this._openAt = null;
    this._openText = "";
  }

  _route(events, text) {
    if (this._name === null) {
      this._sunk += cpLen(text);
      return;
    }
    if (!this._opened) {
      this._opened = true;
      events.push({ type: "region_open", field: this._name });
    }
    const body = this._body;
    body.push(text);
    if (body.length >= BLOCK) { this._blocks.push(body.join("")); body.length = 0; }
    this._bodyCp += cpLen(text);
    this._bodyU += text.length;
    events.push({ type: "region_chunk", field: this._name, text, dirty: this._region.dirty });
  }

  _close(events, closer, eos) {
    const text = this._blocks.join("") + this._body.join("");
    const at = this._mark + this._sunk + this._bodyCp;
    const end = at + cpLen(closer);
    const region = this._region;
    if (region !== null && this._opened && region.slot !== null) {
      if (this._recover && this._T.stray.length && !region.dirty) this._strayClosers(text, at - this._bodyCp, region);
      const start = this._openAt ?? this._mark;
      const cut = eos && !closer && this._cutOff(region, text);
      let value = null, wrapped = null;
      floatsWrapped = false;
      if (region.empty_none && pyStrip(text) === "" && !cut) {
        // v2: an empty body has no value (a format that cannot read one)
      } else try {
        if (cut) {
          // the output ended inside the region: its value is not finished, so it is never
          // returned (docs/events.md, "Truncated regions")
          throw new ContentParseError(`Field ${region.qslot}: the output ended inside this region before ` +
            `${region.ends ? "its value ended" : "its close"} (truncated); a value the output did not finish is not returned.`);
        }
        let notes = null;
        if (this._recover) [value, notes] = this._recovered(region, text, closer, eos);
        else value = processBody(region, text, this._T.v2, this._captures(region));
        if (typeof value !== "string") {
          if (region.typed) checkToolCallNames(value, region.slot === null ? null : region.qslot);
          const bad = nonFinite(value);
          if (bad !== null) {
            throw new ContentParseError(`Field ${region.qname}: the value holds a number that is not finite ` +
              `(${pyFloatRepr(bad)}): the body wrote NaN, Infinity or a number too large for a float (1e999999), ` +
              "which JSON cannot represent");
          }
        }
        if (floatsWrapped) {
          // the delta adapter writes a value's JSON as Python's json.dumps does (2.0, not 2): it
          // asks for the value with its integral floats kept (ChatCompletionStream, floatValues)
          if (this.floatValues) wrapped = keepFloats(value);
          value = unwrapFloats(value);
        }
        if (notes !== null && notes.length) {
          const raw = this._raw(text, closer);
          for (const note of notes) this._report("repaired", start, end, note, raw, region.slot);
        }
      } catch (exc) {
        if (!(exc instanceof ContentParseError) || !this._recover) throw exc;
        this._malformed(events, region, text, closer, exc, start, end, eos && !closer && (cut || this._hasClose()));
        this._opened = false;
        return end;
      }
      this._store(region, value, start, end, text, closer);
      const event = { type: "region_close", field: region.slot, value };
      if (wrapped !== null) this.floatValues.set(event, wrapped);
      events.push(event);
    }
    this._opened = false;
    return end;
  }

  /** Whether a region the end of the output closed is truncated (Python: StreamParser._cut_off;
   * docs/events.md "Truncated regions"): a text region never; a json one whose state has a closer
   * when its body holds no value at all (a cut value never parses, so the parse decides); a v2
   * tool-call region of text (its program) when its state has a closer. */
  _cutOff(region, text) {
    if (!region.dirty && !region.calls) return false;
    if (region.ends) return true;  // its reader would have closed it at the value's end
    return this._hasClose() && (!region.dirty || pyStrip(text) === "");
  }

  /** The current state watches a close of its region. */
  _hasClose() { return this._T.states[this._state].edges.some((e) => e[0] === CLOSE); }

  /** The region's text in the output, opener to ``closer``, the consumed copies put back (Python: _raw). */
  _raw(body, closer, opener = this._openText, gaps = this._gaps) {
    const pieces = [opener];
    let k = 0;
    for (const [i, text] of gaps ?? []) { pieces.push(body.slice(k, i), text); k = i; }
    pieces.push(body.slice(k), closer);
    return pieces.join("");
  }

  /** errors="recover": the value, repaired where the strict read fails, and the policy *opener
   * inside the body* (Python: StreamParser._recovered). */
  _recovered(region, text, closer, eos) {
    if (this._held === 2) {
      throw new ContentParseError(
        `Field ${region.qslot}: a closer stands inside an open value of the body and an opener of this ` +
        "field follows it: the body is ambiguous (one call whose value holds that text, or calls that " +
        "end and begin there), so no call is read from it (docs/security.md, \"Closers inside an open " +
        "value\").");
    }
    if (this._held) return [processBody(region, text, this._T.v2, this._captures(region)), []];
    try {
      return this._repaired(region, text, closer, eos);
    } catch (exc) {
      if (!(exc instanceof ContentParseError)) throw exc;
      const opener = this._openText;
      const k = pyStrip(opener) && !(this._gaps && this._gaps.length) && closer ? text.lastIndexOf(opener) : -1;
      if (k < 0) throw exc;
      let got = null;
      try {
        got = this._repaired(region, text.slice(k + opener.length), closer, eos);
      } catch (again) {
        if (!(again instanceof ContentParseError)) throw again;
      }
      if (got === null) throw exc;
      const start = this._openAt ?? this._mark;
      const dropped = opener + text.slice(0, k + opener.length);
      this._report("repaired", start, start + cpLen(dropped), NOTES["opener-inside"](this._repr(opener)), dropped, region.slot);
      return got;
    }
  }

  /** The transform's scope of groups (D4, D5): every named group of the field's open pattern,
   * null when it did not take part, else what the opener matched (Python: _close's scope). */
  _captures(region) {
    const scope = new Map();
    for (const name of region.groups) scope.set(name, null);
    if (this._groups !== null) for (const [k, v] of Object.entries(this._groups)) scope.set(k, v);
    return scope;
  }

  /** errors="recover": [value, notes], the body repaired where the strict read fails (Python:
   * StreamParser._repaired; runtime/repair.py). Not tried on a body the output cut off. */
  _repaired(region, text, closer, eos) {
    let value, notes = [];
    try {
      value = processBody(region, text, this._T.v2, this._captures(region));
    } catch (exc) {
      if (!(exc instanceof ContentParseError) || (eos && !closer)) throw exc;
      let got = null;
      try {
        got = repairBody(region, text, this._T.v2, this._captures(region));
      } catch (again) {
        if (!(again instanceof ContentParseError)) throw again;
      }
      if (got === null) throw exc;
      [value, notes] = got;
    }
    if (region.typed) value = decodeStringArguments(value, notes);
    return [value, notes];
  }

  /** errors="recover": a body that cannot be read ends its region with region_malformed; a closed
   * one's raw text also goes to the implicit field (Python: StreamParser._malformed). */
  _malformed(events, region, body, closer, exc, start, end, cut) {
    const raw = this._raw(body, closer);
    const error = `${exc.name}: ${exc.message}`;
    const kind = cut ? "truncated" : "malformed";
    const implicit = this._T.outside;
    const into = kind === "malformed" && implicit !== null ? this._T.fields[implicit].slot : null;
    events.push({ type: "region_malformed", field: region.slot, text: raw, error, start, end, into });
    this._report(kind, start, end, error, raw, region.slot);
    if (into !== null) {
      const target = this._T.fields[implicit];
      const out = this._out;
      const previous = out.has(into) ? out.get(into) : null;
      if (target.repeats && target.join === null) {
        if (!out.has(into)) out.set(into, []);
        out.get(into).push(raw);
      } else if (previous instanceof Parts) previous.add(target.join ?? "", raw);
      else if (typeof previous === "string" && previous) out.set(into, new Parts(previous, target.join ?? "", raw));
      else out.set(into, raw);
    }
  }

  /** errors="recover": whether the closer at start..end stands inside an open JSON string of the
   * body; if so it is held (_cdefer) and true is returned (Python: StreamParser._inside_at_close). */
  _insideAtClose(field, start, end) {
    if (field !== this._field || end <= start || this._region.content !== "json") return false;
    const reader = new InString();
    if (!reader.feed(this._blocks.join("") + this._body.join(""))) return false;
    this._cdefer = [start, end, end, reader, start];
    return true;
  }

  /** Whether buf[lo:hi] holds an opener of the current field (with ``anything``: any delimiter) as
   * state 0, where a v1 region returns, finds it (Python: StreamParser._opener_inside). */
  _openerInside(buf, lo, hi, anything) {
    const piece = buf.slice(lo, hi);
    const edges = this._T.states[0].edges;
    const memo = [];
    let at = 0;
    while (at < piece.length) {
      const [s, e, rank] = this._scan(piece, at, true, memo, 0);
      if (s < 0) return false;
      if (anything || (edges[rank][0] !== CLOSE && edges[rank][1] === this._field)) return true;
      at = e > s ? e : s + 1;
    }
    return false;
  }

  /** Decide a close held by _insideAtClose (Python: StreamParser._close_deferred): null while
   * undecided, else where to go on from. Each character is fed and scanned once (linear). */
  _closeDeferred(events, buf, pos, eos, memo) {
    let [start, end, scan, reader, fed] = this._cdefer;
    const state = this._state;
    const edges = this._T.states[state].edges;
    let hold = scan;
    for (;;) {
      let s, e, rank;
      [s, e, rank, hold] = this._scan(buf, scan, eos, memo, state);
      if (s < 0) break;
      if (edges[rank][0] === CLOSE && e > s) {
        const inside = reader.feed(buf.slice(fed, s));
        fed = s;
        if (!inside) {
          this._cdefer = null;
          const at = this._here();
          const closer = buf.slice(start, end);
          this._report("repaired", at, at + cpLen(closer),
            `closer ${this._repr(closer)} stands inside an open value of ${this._region.qname} (a parameter or ` +
            `string its format reads): kept as the value's text; the closer at offset ${at + cpLen(buf.slice(pos, s))} ` +
            "leaves the value whole", closer, this._name);
          this._route(events, buf.slice(pos, s));
          const slot = this._name;
          this._held = this._openerInside(buf, end, s, false) ? 2 : 1;
          let endAt;
          try {
            endAt = this._close(events, buf.slice(s, e), false);
          } finally {
            this._held = 0;
          }
          this._leave(endAt);
          this._watchAgain(buf.slice(s, e), "doubled-closer", slot);
          return e;
        }
      }
      scan = e > s ? e : s + 1;
    }
    if (!eos) {
      this._cdefer = [start, end, hold > scan ? hold : scan, reader, fed];
      return null;
    }
    // the output ended with the value still open after every later closer: the held closer
    // closes the region after all, and what followed it is text, never read for delimiters
    this._cdefer = null;
    const name = this._region.name;
    const closer = buf.slice(start, end);
    this._leave(this._close(events, closer, false));
    if (end < buf.length) {
      const at = this._here();
      const rest = buf.slice(end);
      if (this._openerInside(buf, end, buf.length, true)) {
        this._report("repaired", at, at + cpLen(rest),
          `the output ended inside an open value of ${this._repr(name)} that a closer ${this._repr(closer)} met inside ` +
          `it did not end: the region closes there, and the ${cpLen(rest)} characters after it are ` +
          "kept as text, not read for delimiters", rest, this._name);
      }
      this._route(events, rest);
    }
    return buf.length;
  }

  _strayClosers(text, start, region) {
    const exact = this._exact;
    const fields = this._T.fields;
    const reported = new Set();  // (offset, closer) already reported: fields can share a closer
    for (const [closer, openers, field] of this._T.stray) {
      if (fields[field] === region) continue;
      let j = text.indexOf(closer, exact);
      let since = exact;
      let seen = 0, seenCp = 0;  // code points of text[:seen], counted on as j moves (linear)
      const next = Array.isArray(openers) ? openers.map(() => -2) : null;  // per opener: its first place at or after since (-1: none)
      while (j >= 0) {
        // a regex opener: a complete match inside text[since:j] (Python: opener.search(text, since, j))
        let found = !Array.isArray(openers) && (openers.rx ? rxSearch(openers.rx, text, since, j, false, true) !== null
          : findSequence(openers, text, since, j, true) !== null);
        for (let m = 0; next !== null && m < openers.length; m++) {
          const o = openers[m];
          if (next[m] === -2 || (next[m] >= 0 && next[m] < since)) next[m] = text.indexOf(o, since);
          const k = next[m];
          if (k >= 0 && k + o.length <= j) { found = true; break; }
        }
        if (!found && !reported.has(`${j}:${closer}`)) {
          reported.add(`${j}:${closer}`);
          const owner = fields[field];
          seenCp += cpLen(text.slice(seen, j));
          seen = j;
          const at = start + seenCp;
          this._report("stray-closer", at, at + cpLen(closer),
            NOTES["stray-closer"](this._repr(closer), this._repr(owner.name), this._repr(region.slot)), closer,
            owner.slot);
        }
        since = j + closer.length;
        j = text.indexOf(closer, since);
      }
    }
  }

  /** Python's repr of a template string, as the compiler wrote it into the table (the runtime's
   * pyRepr follows its own Unicode version's printable characters, not Python's). */
  _repr(s) { return this._T.repr.get(s) ?? pyRepr(s); }

  _report(kind, start, end, message, text, field = null) {
    this.diagnostics.push({ kind, field, start, end, message, text });
  }

  /** Put one block's value into the message (Python: StreamParser._store, with its
   * "overwritten" diagnostic, docs/events.md "Overwritten values"). */
  _store(region, value, start = -1, end = -1, body = "", closer = "") {
    const out = this._out;
    const name = region.slot;
    const join = region.join;
    if (join !== null) {
      if (value === null && region.empty_none) return;
      if (typeof value !== "string") {
        throw new ContentParseError(
          `Field ${region.qname}: 'join' requires each match to parse to a string, got ${pyTypeName(value)}.`);
      }
      const previous = out.has(name) ? out.get(name) : null;
      if (previous === null) out.set(name, value);
      else if (!value) { /* an empty piece is never joined (D1) */ }
      else if (previous instanceof Parts) previous.add(join, value);
      else if (!previous) out.set(name, value);
      else out.set(name, new Parts(previous, join, value));
    } else if (region.repeats) {
      if (value === null && region.empty_none) return;
      if (!out.has(name)) out.set(name, []);
      // (one push per element: a spread passes every element as an argument, and a list of some
      // 100,000 calls overflows the call stack, a RangeError on model output)
      if (region.extend && Array.isArray(value)) { const list = out.get(name); for (const item of value) list.push(item); }
      else out.get(name).push(value);
    } else if (!isEmpty(value)) {
      const previous = out.has(name) ? out.get(name) : null;
      if (!isEmpty(previous) && this._spans.has(name)) value = this._overwrite(region, name, previous, value, start, end);
      out.set(name, value);
      this._spans.set(name, [start, end, this._openText, body, closer, this._gaps]);
    } else if (isEmpty(out.has(name) ? out.get(name) : null)) {
      out.set(name, value);
    }
  }

  /** A field that neither joins nor repeats gets a second non-empty value: report it, and return
   * what the message stores (Python: StreamParser._overwrite). */
  _overwrite(region, name, previous, value, start, end) {
    const [at, to, opener, body, closer, gaps] = this._spans.get(name);
    const raw = this._raw(body, closer, opener, gaps);
    if (name === "tool_calls" || region.calls) {
      if (!this._recover) {
        const error = new ContentParseError(
          `Field ${this._repr(name)}: a second block (offsets ${start} to ${end}) would replace the tool calls of ` +
          `the block at offsets ${at} to ${to}; the field does not repeat, and dropping a call is a wrong ` +
          "answer (errors='recover' keeps both).");
        Object.assign(error, { field: name, start, end });
        throw error;
      }
      this._report("overwritten", at, to,
        `Field ${this._repr(name)} does not repeat but was written again (offsets ${start} to ${end}): the later ` +
        "calls are appended to those of this block, not put in their place.", raw, name);
      return (Array.isArray(previous) ? previous : [previous]).concat(Array.isArray(value) ? value : [value]);
    }
    this._report("overwritten", at, to,
      `Field ${this._repr(name)} does not repeat: the value of this block was replaced by the block at offsets ` +
      `${start} to ${end}.`, raw, name);
    return value;
  }
}

/** The parser class of one generated module's table. */
export function makeParser(table) {
  if (table.abi !== RUNTIME_ABI) {
    throw new Error(`${table.source}: generated for respc JS runtime ABI ${table.abi}, this runtime is ${RUNTIME_ABI}; ` +
      "regenerate it with respc compile --target js");
  }
  // v2 roles: some region is not typed, so the typed ones are exactly the tool-call regions
  for (const f of table.fields) f.calls = f.typed && table.fields.some((o) => !o.typed);
  let slots = 0;
  table.repr = new Map(table.reprs ?? []);
  // Python's repr of each field's name and slot, as messages quote them (StreamParser._repr)
  for (const f of table.fields) {
    f.qname = table.repr.get(f.name) ?? pyRepr(f.name);
    f.qslot = f.slot === null ? null : table.repr.get(f.slot) ?? pyRepr(f.slot);
  }
  const probe = (x) => {
    // the D2 probe of a regex open (compiler/automaton.py edge_probe): (?>(?:P))(?!), searched
    // partially only (it never matches), starting where P can
    if (x.probe === undefined) x.probe = { tree: ["s", [[">", x.tree], ["!", ["s", []]]]], ngroups: x.ngroups, groups: [], first: x.first, never: true };
  };
  // a regex opener the matcher runs is written once (table.patterns) and named by its index
  const patterns = table.patterns ?? [];
  for (const x of patterns) probe(x);
  for (const entry of table.stray) if (!Array.isArray(entry[1]) && typeof entry[1].rx === "number") entry[1].rx = patterns[entry[1].rx];
  for (const s of table.states) {
    for (const w of s.watches) if (typeof w.rx === "number") w.rx = patterns[w.rx];
    s.span = Math.max(0, ...s.watches.flatMap((w) => w.literals.map((l) => l.length - 1)));
    // the literals a chunk is searched for: each literal, and each regex open's lead (a chunk
    // holding none, and ending with no proper prefix of one, is plain text: plainChunk); held: the
    // literals whose proper prefix ending the buffer is held back (_scan; a regex open holds its own)
    s.lits = s.watches.flatMap((w) => (w.regex ? [w.lead] : w.rx ? w.rx.leads ?? [] : w.literals));
    // a regex open without leads can start anywhere: every chunk is scanned
    s.plain = !s.watches.some((w) => w.rx && w.rx.leads === null);
    s.fails = s.lits.map(() => undefined);  // each one's failure table, built on first use
    s.held = s.watches.flatMap((w) => w.literals);
    s.heldFails = s.held.map(() => undefined);
    s.slot0 = slots;
    slots += s.watches.reduce((k, w) => k + w.literals.length + (w.regex || w.rx ? 1 : 0), 0);
  }
  return class ResponseParser extends StreamParser {
    static TABLE = table;
  };
}

/**
 * Parse one whole output: `parseResponse(text, {prefix, tools, errors})` -> message
 * (docs/events.md "The parser object").
 */
export function parseWith(Parser, text, options = {}) {
  if (typeof options === "string") {
    // parseResponse(text, "") reads like Python's positional prefix; here the prefix is an option
    throw new TypeError("parseResponse(text, options): the prefix is an option, " +
      `parseResponse(text, { prefix: ${JSON.stringify(options.length > 40 ? "..." : options)} })`);
  }
  const parser = new Parser(options.prefix, options);
  parser.feed(text);
  return parser.finalize().message;
}

// --- the json content format's body reader (docs/javascript.md, "The json body reader") ----------
// It reads a body as the Python runtime's json parser does (runtime/formats/json_.py, ``make``
// without dialects: ``json.loads`` after CPython's C scanner) and fails with the same
// ContentParseError text, positions counted in code points as Python does.
//
// Numbers (docs/javascript.md "Numbers"): a JavaScript number is one IEEE double, so a JSON float
// reads to the same double as Python's float; an integer reads to the same value when it is within
// 2**53 - 1 and otherwise throws JsonNumberError (never a rounded value); ``-0`` (an integer) reads
// as 0 and ``-0.0`` as -0, as in Python; ``NaN``, ``Infinity`` and ``-Infinity`` (accepted by
// Python's json) read as NaN, Infinity and -Infinity. Nesting deeper than MAX_DEPTH throws
// JsonDepthError (Python's limit depends on its stack, so no depth-dependent message is imitated).

/** The deepest nesting of objects and arrays read (deeper: JsonDepthError). */
export const MAX_DEPTH = 500;

/** An integer a JavaScript number cannot hold exactly (beyond 2**53 - 1 in size). */
export class JsonNumberError extends RangeError {
  constructor(message) { super(message); this.name = "JsonNumberError"; }
}

/** Objects and arrays nested deeper than MAX_DEPTH. */
export class JsonDepthError extends RangeError {
  constructor(message) { super(message); this.name = "JsonDepthError"; }
}

// the first integer beyond 2**53 - 1 of the body being read: [text, UTF-16 offset], or null
let bigInteger = null;

class Fail {
  constructor(msg, pos) { this.msg = msg; this.pos = pos; }
}

class Stop {
  constructor(pos) { this.pos = pos; }
}

const WS = " \t\n\r";
const ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

function skipWs(s, i) { while (i < s.length && WS.includes(s[i])) i++; return i; }
function isDigit(s, i) { const c = s.charCodeAt(i); return c >= 48 && c <= 57; }
function hex4(s, i) {
  const digits = s.slice(i, i + 4);
  return /^[0-9a-fA-F]{4}$/.test(digits) ? parseInt(digits, 16) : -1;
}

function scanString(s, end) {
  const begin = end - 1;
  let out = "";
  for (;;) {
    let next = end;
    let c = "";
    for (; next < s.length; next++) {
      c = s[next];
      if (c === '"' || c === "\\") break;
      if (s.charCodeAt(next) <= 0x1f) throw new Fail("Invalid control character at", next);
    }
    if (next >= s.length) throw new Fail("Unterminated string starting at", begin);
    out += s.slice(end, next);
    next++;
    if (c === '"') return [out, next];
    if (next === s.length) throw new Fail("Unterminated string starting at", begin);
    c = s[next];
    if (c !== "u") {
      end = next + 1;
      if (!Object.hasOwn(ESCAPES, c)) throw new Fail("Invalid \\escape", end - 2);
      out += ESCAPES[c];
      continue;
    }
    next++;
    end = next + 4;
    if (end >= s.length) throw new Fail("Invalid \\uXXXX escape", next - 1);
    let u = hex4(s, next);
    if (u < 0) throw new Fail("Invalid \\uXXXX escape", end - 5);
    if (u >= 0xd800 && u <= 0xdbff && end + 6 < s.length && s[end] === "\\" && s[end + 1] === "u") {
      const u2 = hex4(s, end + 2);
      if (u2 < 0) throw new Fail("Invalid \\uXXXX escape", end + 1);
      if (u2 >= 0xdc00 && u2 <= 0xdfff) {
        out += String.fromCharCode(u, u2);
        end += 6;
        continue;
      }
    }
    out += String.fromCharCode(u);
  }
}


function scanOnce(s, idx, depth) {
  if (idx >= s.length) throw new Stop(idx);
  const c = s[idx];
  if (c === '"') return scanString(s, idx + 1);
  if (c === "{" || c === "[") {
    if (depth >= MAX_DEPTH) {
      throw new JsonDepthError(`json body nested deeper than ${MAX_DEPTH} objects and arrays (at char ${idx})`);
    }
    return c === "{" ? scanObject(s, idx + 1, depth + 1) : scanArray(s, idx + 1, depth + 1);
  }
  if (c === "n" && s.startsWith("null", idx)) return [null, idx + 4];
  if (c === "t" && s.startsWith("true", idx)) return [true, idx + 4];
  if (c === "f" && s.startsWith("false", idx)) return [false, idx + 5];
  if (c === "N" && s.startsWith("NaN", idx)) return [NaN, idx + 3];
  if (c === "I" && s.startsWith("Infinity", idx)) return [Infinity, idx + 8];
  if (c === "-" && s.startsWith("-Infinity", idx)) return [-Infinity, idx + 9];
  return scanNumber(s, idx);
}

function scanNumber(s, start) {
  let i = start;
  if (s[i] === "-") { i++; if (i >= s.length) throw new Stop(start); }
  if (s[i] >= "1" && s[i] <= "9") { i++; while (i < s.length && isDigit(s, i)) i++; }
  else if (s[i] === "0") i++;
  else throw new Stop(start);
  let isFloat = false;
  if (i + 1 < s.length && s[i] === "." && isDigit(s, i + 1)) {
    isFloat = true;
    i += 2;
    while (i < s.length && isDigit(s, i)) i++;
  }
  if (i + 1 < s.length && (s[i] === "e" || s[i] === "E")) {
    const eStart = i;
    i++;
    if (i + 1 < s.length && (s[i] === "-" || s[i] === "+")) i++;
    while (i < s.length && isDigit(s, i)) i++;
    if (isDigit(s, i - 1)) isFloat = true; else i = eStart;
  }
  const text = s.slice(start, i);
  if (isFloat) {
    const value = Number(text);
    if (wrapFloats && Number.isInteger(value) && !Object.is(value, -0)) {
      floatsWrapped = true;
      return [new PyFloat(value), i];
    }
    return [value, i];
  }
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    // reported once the body read (a body Python cannot read gives Python's error instead)
    if (bigInteger === null) bigInteger = [text, start];
  }
  return [value === 0 ? 0 : value, i];
}

function scanObject(s, idx, depth) {
  const obj = {};
  idx = skipWs(s, idx);
  if (idx >= s.length || s[idx] !== "}") {
    for (;;) {
      if (idx >= s.length || s[idx] !== '"') throw new Fail("Expecting property name enclosed in double quotes", idx);
      const [key, next] = scanString(s, idx + 1);
      idx = skipWs(s, next);
      if (idx >= s.length || s[idx] !== ":") throw new Fail("Expecting ':' delimiter", idx);
      idx = skipWs(s, idx + 1);
      const [value, after] = scanOnce(s, idx, depth);
      put(obj, key, value);
      idx = skipWs(s, after);
      if (idx < s.length && s[idx] === "}") break;
      if (idx >= s.length || s[idx] !== ",") throw new Fail("Expecting ',' delimiter", idx);
      idx = skipWs(s, idx + 1);
    }
  }
  return [obj, idx + 1];
}

function scanArray(s, idx, depth) {
  const arr = [];
  idx = skipWs(s, idx);
  if (idx >= s.length || s[idx] !== "]") {
    for (;;) {
      const [value, after] = scanOnce(s, idx, depth);
      arr.push(value);
      idx = skipWs(s, after);
      if (idx < s.length && s[idx] === "]") break;
      if (idx >= s.length || s[idx] !== ",") throw new Fail("Expecting ',' delimiter", idx);
      idx = skipWs(s, idx + 1);
    }
  }
  return [arr, idx + 1];
}

/** Python's code point index of UTF-16 offset ``i`` of ``s``. */
function cpIndex(s, i) {
  let n = i;
  for (let k = 0; k + 1 < i; k++) {
    const c = s.charCodeAt(k);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(k + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { n--; k++; }
    }
  }
  return n;
}

/** Python's JSONDecodeError text: ``msg: line L column C (char P)``, positions in code points. */
function decodeError(s, msg, pos) {
  const lastNl = s.lastIndexOf("\n", pos - 1);
  let line = 1;
  for (let k = 0; k < pos; k++) if (s.charCodeAt(k) === 10) line++;
  const cp = cpIndex(s, pos);
  const col = lastNl < 0 ? cp + 1 : cp - cpIndex(s, lastNl);
  return `${msg}: line ${line} column ${col} (char ${cp})`;
}

/** ``json.loads(text)`` as CPython 3.11 reads a str: the value, or [message] of its JSONDecodeError. */
// whether the read in progress wraps integral floats (PyFloat): only for a field's value
let wrapFloats = false;

function loads(s, wrap = false) {
  wrapFloats = wrap;
  if (s.startsWith("\ufeff")) return { error: decodeError(s, "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0) };
  bigInteger = null;
  try {
    const [value, end] = scanOnce(s, skipWs(s, 0), 0);
    const rest = skipWs(s, end);
    if (rest !== s.length) return { error: decodeError(s, "Extra data", rest) };
    if (bigInteger !== null) {
      throw new JsonNumberError(`json body holds the integer ${bigInteger[0]} (at char ${cpIndex(s, bigInteger[1])}), ` +
        "beyond 2**53 - 1: a JavaScript number cannot hold it exactly");
    }
    return { value };
  } catch (e) {
    if (e instanceof Stop) return { error: decodeError(s, "Expecting value", e.pos) };
    if (e instanceof Fail) return { error: decodeError(s, e.msg, e.pos) };
    throw e;
  }
}

/**
 * The json body reader without dialects (runtime/formats/json_.py ``make``): the value of ``text``.
 * Throws ContentParseError with the Python runtime's text (without the ``Field '...': `` the parser
 * adds), JsonNumberError or JsonDepthError (see the head of this file).
 */
export function parseJsonBody(text, wrap = false) {
  const read = loads(text, wrap);
  if ("value" in read) return read.value;
  throw new ContentParseError(
    `json parser could not parse region as JSON.\nContent: ${pyRepr(text)}\nError: ${read.error}`);
}

// --- errors="recover": the repair of a body that does not read (runtime/repair.py) ----------------

const CLOSERS = { "{": "}", "[": "]" };
const LITERALS = { True: "true", False: "false", None: "null" };
const RAW = { "\n": ["\\n", "raw newline"], "\t": ["\\t", "raw tab"], "\r": ["\\r", "raw carriage return"] };
// Python's str.isalpha() / str.isalnum() of one code point (Unicode letters; letters and numbers)
const ALPHA = /^\p{L}$/u;
const ALNUM = /^[\p{L}\p{N}]$/u;

function isPySpace(piece) { return piece !== "" && pyStrip(piece) === ""; }

/**
 * ``repair_json_text`` of runtime/repair.py: [the rewritten text, its notes] (one note per kind of
 * rewrite, in the order first needed; none when nothing was rewritten). Reads code points, as Python.
 */
export function repairJsonText(text) {
  const t = Array.from(text);
  const out = [];
  const notes = [];
  const stack = [];
  const note = (m) => { if (!notes.includes(m)) notes.push(m); };
  const dropComma = () => {
    let j = out.length - 1;
    while (j >= 0 && isPySpace(out[j])) j--;
    if (j >= 0 && out[j] === ",") { out.splice(j, 1); return true; }
    return false;
  };
  let i = 0;
  const n = t.length;
  while (i < n) {
    let c = t[i];
    if (c === '"' || c === "'") {
      const quote = c;
      if (quote === "'") note("single-quoted string read as a JSON string");
      out.push('"');
      i++;
      while (i < n) {
        c = t[i];
        if (c === "\\" && i + 1 < n) {
          const nxt = t[i + 1];
          out.push(nxt === "'" ? "'" : c + nxt);
          i += 2;
          continue;
        }
        if (c === quote) break;
        if (c === '"') out.push('\\"');
        else if (Object.hasOwn(RAW, c)) {
          out.push(RAW[c][0]);
          note(`${RAW[c][1]} in a string escaped`);
        } else if (c.codePointAt(0) < 0x20) {
          out.push("\\u" + c.codePointAt(0).toString(16).padStart(4, "0"));
          note("raw control character in a string escaped");
        } else out.push(c);
        i++;
      }
      if (i >= n) note("string still open at the region's close: closed");
      out.push('"');
      i++;
      continue;
    }
    if (Object.hasOwn(CLOSERS, c)) stack.push(CLOSERS[c]);
    else if (c === "}" || c === "]") {
      if (dropComma()) note(`trailing comma before ${pyRepr(c)} removed`);
      if (stack.length && stack[stack.length - 1] === c) stack.pop();
    } else if (ALPHA.test(c) || c === "_") {
      let j = i + 1;
      while (j < n && (ALNUM.test(t[j]) || t[j] === "_")) j++;
      let word = t.slice(i, j).join("");
      if (Object.hasOwn(LITERALS, word)) {
        note(`Python literal ${word} read as ${LITERALS[word]}`);
        word = LITERALS[word];
      }
      out.push(word);
      i = j;
      continue;
    }
    out.push(c);
    i++;
  }
  if (stack.length) {
    dropComma();
    const closers = stack.reverse().join("");
    out.push(closers);
    note(`missing ${pyRepr(closers)} added at the region's close`);
  }
  return [out.join(""), notes];
}

/**
 * The json format's errors="recover" repair without dialects (runtime/formats/json_.py ``repair``):
 * ``{value, notes}`` when a rewrite made the body read, else null. Throws JsonNumberError or
 * JsonDepthError as parseJsonBody does.
 */
export function repairJsonBody(text, wrap = false) {
  const [repaired, notes] = repairJsonText(text);
  if (!notes.length) return null;
  const read = loads(repaired, wrap);
  return "value" in read ? { value: read.value, notes } : null;
}

// --- close-time processing of a field: content format, transform, checks --------------------------
// (runtime/transforms.py make_field_processor; runtime/tools.py check_tool_call_names;
// runtime/stream.py _non_finite; runtime/repair.py decode_string_arguments)

/** One transform node (compiler/emit_js.py ``_transform``) built in ``scope`` (a Map). */
function build(node, scope) {
  switch (node[0]) {
    case "=": return node[1];
    case "{": {
      const out = {};
      for (const [k, sub] of node[1]) put(out, k, build(sub, scope));
      return out;
    }
    case "[": return node[1].map((sub) => build(sub, scope));
    case "?": {
      // v2 {"$first": [A, B, ..., DEFAULT]}: the first alternative whose placeholders all resolve
      const reasons = [];
      for (const alternative of node[1]) {
        try {
          return build(alternative, scope);
        } catch (exc) {
          if (!(exc instanceof PlaceholderError)) throw exc;
          reasons.push(exc.message);
        }
      }
      throw new PlaceholderError("no alternative of '$first' resolved: " + reasons.join("; "));
    }
    default: {
      const [, root, keys, strict] = node;
      const path = [root, ...keys].join(".");
      if (!scope.has(root)) {
        throw new UnknownPlaceholderError(
          `transform placeholder '{${path}}' is not defined. Available: ${pyList(pySorted(scope.keys()))}`);
      }
      let value = scope.get(root);
      for (const key of keys) {
        if (key === "$key" || key === "$value") {
          // v2: the only key / value of a one-key dict (only v2 placeholders have such segments)
          const names = isDict(value) ? Object.keys(value) : null;
          if (names === null || names.length !== 1) {
            const what = names === null ? pyTypeName(value) : `a dict with ${names.length} keys ${pyList(pySorted(names))}`;
            throw new PlaceholderError(`transform placeholder '{${path}}': '${key}' needs a dict with exactly one key, got ${what}`);
          }
          value = key === "$key" ? names[0] : value[names[0]];
          continue;
        }
        if (!isDict(value)) {
          throw new PlaceholderError(`transform placeholder '{${path}}' cannot index into ${pyTypeName(value)} at '${key}'`);
        }
        if (!Object.prototype.hasOwnProperty.call(value, key)) {
          throw new PlaceholderError(
            `transform placeholder '{${path}}' is missing key '${key}'. Available: ${pyList(pySorted(Object.keys(value)))}`);
        }
        value = value[key];
      }
      if (strict && value === null) throw new PlaceholderError(`transform placeholder '{${path}}' is null`);
      return value;
    }
  }
}

function prefixed(region, exc) {
  if (!(exc instanceof ContentParseError)) return exc;
  const again = new exc.constructor(`Field ${region.qname}: ${exc.message}`);
  return again;
}

/** The transform part of a field's processing (``finish``): the value as the message stores it. */
function finish(region, value, body, v2, captures = new Map()) {
  const transform = region.transform;
  if (transform === null) return value;
  const built = (scope) => {
    try { return build(transform, scope); } catch (exc) { throw prefixed(region, exc); }
  };
  if (!region.each) return built(new Map(captures).set("content", value));
  const prefix = `Field ${region.qname}: `;
  if (!Array.isArray(value)) {
    throw new ContentParseError(`${prefix}transform_each requires the parsed content to be a list, ` +
      `got ${pyTypeName(value)}.\nContent: ${pyRepr(body)}`);
  }
  const out = [];
  for (const item of value) {
    if (!isDict(item)) {
      throw new ContentParseError(`${prefix}transform_each requires each list element to be a dict, ` +
        `got ${pyTypeName(item)}.\nContent: ${pyRepr(body)}`);
    }
    const scope = new Map(captures);
    for (const [k, v] of Object.entries(item)) scope.set(k, v);
    if (v2) scope.set("content", item);  // v2: {content} names the element
    out.push(built(scope));
  }
  return out;
}

/** The content format's reading of a body (``parse_body``): errors name the field. */
function parseBody(region, body) {
  if (region.content === "text") return region.strip ? pyStrip(body) : body;
  try {
    return parseJsonBody(body, true);
  } catch (exc) {
    throw prefixed(region, exc);
  }
}

/** ``process(body)``: content format, then transform (errors="strict"). */
function processBody(region, body, v2, captures) { return finish(region, parseBody(region, body), body, v2, captures); }

/** The errors="recover" repair of the field (``process.repair``): [value, notes], or null. */
function repairBody(region, body, v2, captures) {
  const got = region.content === "json" ? repairJsonBody(body, true) : null;
  let value, notes;
  if (got === null) { value = parseBody(region, body); notes = []; }
  else { value = got.value; notes = [...got.notes]; }
  if (region.each && region.transform !== null && isDict(value)) {
    value = [value];
    notes.push(NOTES["one-object"]());
  }
  value = finish(region, value, body, v2, captures);
  return notes.length ? [value, notes] : null;
}

const NOT_A_NAME = /[<>{}[\]()"']/;

function goodName(name) {
  if (typeof name !== "string" || name === "" || NOT_A_NAME.test(name)) return false;
  for (let i = 0; i < name.length; i++) if (SPACE.has(name.charCodeAt(i))) return false;
  return true;
}

/** Refuse a tool call without a function name, or whose arguments are no object (runtime/tools.py
 * ``check_tool_call_names``; docs/template-language.md "Tool calls need a name"). `field`: the
 * field's slot as Python's repr quotes it (region.qslot), or null. */
function checkToolCallNames(value, field) {
  if (typeof value === "string") return;
  const calls = Array.isArray(value) ? value : [value];
  const where = field !== null ? `Field ${field}: ` : "";
  for (const call of calls) {
    if (!isDict(call) || !Object.prototype.hasOwnProperty.call(call, "function")) continue;
    const fn = call.function;
    const has = (k) => isDict(fn) && Object.prototype.hasOwnProperty.call(fn, k);
    const name = has("name") ? fn.name : null;
    if (goodName(name)) {
      if (!has("arguments")) continue;
      const args = fn.arguments;
      if (isDict(args) || typeof args === "string") continue;
      throw new ContentParseError(`${where}tool call whose arguments are no object: its 'arguments' is ` +
        `${pyTypeName(args)} ${pyValueRepr(args)}, not an object of arguments`);
    }
    let why;
    if (!isDict(fn)) why = `its 'function' is ${pyTypeName(fn)} ${pyValueRepr(fn)}, not an object with a name`;
    else if (!has("name")) why = `its 'function' has no 'name' (keys ${pyList(pySorted(Object.keys(fn)))})`;
    else if (typeof name !== "string") why = `its name is ${pyTypeName(name)} ${pyValueRepr(name)}, not a string`;
    else why = `its name ${pyRepr(name)} is not a function name`;
    throw new ContentParseError(`${where}tool call without a function name: ${why}`);
  }
}

/** The first number of ``value`` that is not finite (NaN, an infinity), or null (depth first). */
function nonFinite(value) {
  if (typeof value === "number") return Number.isFinite(value) ? null : value;
  if (value === null || typeof value !== "object") return null;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    const bad = nonFinite(item);
    if (bad !== null) return bad;
  }
  return null;
}

/** errors="recover": decode ``arguments`` strings that hold a JSON object in values that look like
 * tool calls (runtime/repair.py ``decode_string_arguments``); one note per decoded call. */
function decodeStringArguments(value, notes) {
  for (const item of Array.isArray(value) ? value : [value]) {
    if (!isDict(item)) continue;
    for (const call of [item, Object.prototype.hasOwnProperty.call(item, "function") ? item.function : null]) {
      if (!isDict(call) || !Object.prototype.hasOwnProperty.call(call, "name") || typeof call.arguments !== "string" ||
          !Object.prototype.hasOwnProperty.call(call, "arguments")) continue;
      const raw = call.arguments;
      let a = 0;
      while (a < raw.length && SPACE.has(raw.charCodeAt(a))) a++;
      if (raw[a] !== "{") continue;
      const read = loads(raw, true);
      if (!("value" in read) || !isDict(read.value)) continue;
      put(call, "arguments", read.value);
      notes.push(NOTES.arguments(call.name));
    }
  }
  return value;
}

/**
 * Whether a json body stands inside a string of its first value as errors="recover" reads strings
 * (runtime/formats/json_.py ``InString`` and ``_Quoted``, as ``runtime/repair.py`` reads them):
 * outside a string a ``"`` or a ``'`` (a Python dict, which the repair reads as JSON) opens one
 * that ends at the same quote, a backslash escaping the next character. Fed each piece once; once
 * the first value (an object or array: its brackets closed again; a string: closed) has ended, or
 * the body starts with anything else, it is never inside again.
 */
class InString {
  constructor() { this.quote = ""; this.escape = false; this.depth = 0; this.started = false; this.over = false; }

  feed(data) {
    if (this.over) return false;
    let q = this.quote, esc = this.escape, d = this.depth, started = this.started;
    for (let i = 0; i < data.length; i++) {
      const c = data[i];
      if (q) {
        if (esc) esc = false;
        else if (c === "\\") esc = true;
        else if (c === q) {
          q = "";
          if (d === 0) { this.over = true; return false; }
        }
      } else if (c === '"' || c === "'") { q = c; started = true; }
      else if (c === "{" || c === "[") { d++; started = true; }
      else if (c === "}" || c === "]") {
        if (d > 0 && --d === 0) { this.over = true; return false; }
      } else if (!started && !isSpace(c)) { this.over = true; return false; }
    }
    this.quote = q;
    this.escape = esc;
    this.depth = d;
    this.started = started;
    return q !== "";
  }
}

/**
 * Where the first JSON value of a body ends (runtime/formats/json_.py ``JsonBoundary`` without
 * string_delims, for bodies that start an object, an array or a string): ``feed(text)`` returns the
 * offset in ``text`` just past the value's last character, or -1 while it goes on (or once the
 * body was rejected: its first significant character is not one of ``accept``). Only strings and
 * brackets matter, each character read once.
 */
class JsonEnd {
  constructor(accept) { this.accept = accept; this.state = "start"; this.depth = 0; }

  feed(data) {
    let st = this.state, d = this.depth;
    if (st === "rejected") return -1;
    for (let i = 0; i < data.length; i++) {
      const c = data[i];
      if (st === "code") {
        if (c === '"') st = "string";
        else if (c === "{" || c === "[") d++;
        else if ((c === "}" || c === "]") && --d === 0) { this.state = "done"; return i + 1; }
      } else if (st === "string") {
        if (c === "\\") st = "escape";
        else if (c === '"') {
          if (d === 0) { this.state = "done"; return i + 1; }
          st = "code";
        }
      } else if (st === "escape") {
        st = "string";
      } else if (c !== " " && c !== "\t" && c !== "\n" && c !== "\r") {  // "start"
        if (!this.accept.includes(c)) { this.state = "rejected"; return -1; }
        if (c === "{" || c === "[") { d = 1; st = "code"; } else st = "string";
      }
    }
    this.state = st;
    this.depth = d;
    return -1;
  }
}

// --- OpenAI Chat Completions deltas (docs/javascript.md "OpenAI deltas"; docs/openai.md) ---------
// The Python adapter (respc_pkg/openai.py ChatCompletionStream) for what this runtime parses: text
// regions streamed as the message will hold them, json tool-call bodies whose arguments are
// forwarded as written (a call object, a list of them, the arguments object named by the opener's
// group, name-as-key calls), every other tool region at its close; errors="recover" with
// recoverArguments "hold" or "stream". Same chunks, ids and fragments for the same feeds.

// a lone UTF-16 surrogate (a pair is one code point under the u flag): no UTF-8 text can hold one
const LONE_SURROGATE = /[\ud800-\udfff]/gu;

/** Argument JSON text with each lone surrogate written as its JSON escape (Python:
 * runtime/formats/base.py surrogates_escaped; docs/openai.md "What the chunks carry"). */
function surrogatesEscaped(text) {
  return text.replace(LONE_SURROGATE, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/**
 * Python's ``json.dumps(value, ensure_ascii=False)`` of a value read from JSON, as text: ``", "`` and
 * ``": "`` separators, floats as Python writes them (``2.0``, ``1e+16``, ``NaN``), a lone surrogate
 * as its escape (what the Python adapter's text holds after its surrogate escape).
 * @param {any} v  @returns {string}
 */
export function pyJson(v) {
  if (v === null || v === undefined) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || v instanceof PyFloat) {
    const x = v.valueOf();
    if (Number.isNaN(x)) return "NaN";
    if (x === Infinity) return "Infinity";
    if (x === -Infinity) return "-Infinity";
    return isPyFloat(v) ? pyFloatRepr(x) : String(x);
  }
  if (Array.isArray(v)) return "[" + v.map(pyJson).join(", ") + "]";
  return "{" + Object.keys(v).map((k) => JSON.stringify(k) + ": " + pyJson(v[k])).join(", ") + "}";
}

/** Python's ``==`` of two values read from JSON (``True == 1``, ``1 == 1.0``, dicts by keys). */
function pyEqual(a, b) {
  const num = (x) => (typeof x === "boolean" ? Number(x) : x instanceof Number ? x.valueOf() : x);
  a = num(a); b = num(b);
  if (typeof a === "number" || typeof b === "number") return a === b;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => pyEqual(x, b[i]));
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && pyEqual(a[k], b[k]));
}

/** ``text`` is JSON text of ``value`` (Python: respc/openai.py _same_json). */
function sameJson(text, value) {
  let read;
  try { read = loads(text); } catch { return false; }
  return "value" in read && pyEqual(read.value, value);
}

/** Python's ``json.loads('"' + raw + '"')`` of a key or name's inside (throws on a bad escape). */
function decodedString(raw) {
  if (!raw.includes("\\")) return raw;
  const read = loads('"' + raw + '"');
  if (!("value" in read)) throw new SyntaxError(read.error);
  return read.value;
}

/** What closes the cut-off JSON text ``text``: its open string's quote and open brackets,
 * innermost first; null when it cannot (Python: runtime/formats/json_.py closers). */
function closersOf(text) {
  const stack = [];
  let instr = false, esc = false;
  for (const c of text) {
    if (instr) {
      if (esc) esc = false;
      else if (c === "\\") esc = true;
      else if (c === '"') instr = false;
    } else if (c === '"') instr = true;
    else if (c === "{" || c === "[") stack.push(c === "{" ? "}" : "]");
    else if (c === "}" || c === "]") { if (!stack.length || stack.pop() !== c) return null; }
  }
  if (esc) return null;
  return (instr ? '"' : "") + stack.reverse().join("");
}

const CONTROL_ESCAPES = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };
const JSON_BLANK = " \t\r\n";
const PY_LITERALS = { True: "true", False: "false", None: "null", NaN: "NaN" };
const ENDED = -2;

/**
 * The json format's incremental argument reader (Python: runtime/formats/json_.py ArgumentReader,
 * read character by character as tests/old_json_argument_reader.py does; no tool typing, which this
 * runtime refuses): fed a tool body piece by piece, it calls ``out(kind, n, payload)`` with
 * ``"call"``, ``"name"``, ``"start"``, ``"args"`` (the arguments object's text as written: raw
 * control characters escaped, a trailing comma dropped, Python literals as JSON's) and ``"end"``.
 * Something it does not forward stops it (``dead``): the close decides.
 */
class ArgumentReader {
  constructor(mode, keys, out) {
    this.end = -1;
    this.pos = 0;
    this.mode = mode;                       // "object": call objects; "args": the body is the arguments
    [this.namekey, this.keys] = keys ?? ["", []];
    this.stack = [];
    this.instr = false;
    this.esc = false;
    this.expect = "";
    this.keybuf = null;
    this.curkey = null;
    this.n = -1;
    this.name = null;
    this.namebuf = null;
    this.argdepth = 0;
    this.dead = false;
    this.out = out;
    this.seen = new Set();
    this.comma = null;
    this.word = null;
  }

  feed(text) {
    if (this.dead) { this.pos += text.length; return; }
    const emit = [];
    let i = 0;
    try {
      for (; i < text.length; i++) {
        this._char(text[i], emit);
        if (this.end === ENDED) this.end = this.pos + i + 1;
        if (this.dead) return;
      }
    } catch (exc) {
      if (!(exc instanceof SyntaxError)) throw exc;
      this.dead = true;  // a key or name that does not decode (errors="recover" damage)
      return;
    } finally {
      this.pos += text.length;
    }
    if (emit.length) this.out("args", this.n, emit.join(""));
  }

  _char(c, emit) {
    const stack = this.stack, depth = stack.length, argdepth = this.argdepth;
    const forwarding = argdepth && depth >= argdepth;
    if (this.instr) {
      let closing = false;
      if (c < " " && !this.esc) c = CONTROL_ESCAPES[c] ?? "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0");
      if (this.esc) this.esc = false;
      else if (c === "\\") this.esc = true;
      else if (c === '"') { this.instr = false; closing = true; }
      if (forwarding) {
        emit.push(c);
        if (this.keybuf !== null) {
          if (closing) this._endKey(); else this.keybuf.push(c);
        }
        return;
      }
      if (this.keybuf !== null) {
        if (closing) {
          this.curkey = decodedString(this.keybuf.join(""));
          this.keybuf = null;
          this.expect = ":";
        } else this.keybuf.push(c);
      } else if (this.namebuf !== null) {
        if (closing) {
          this.name = decodedString(this.namebuf.join(""));
          this.namebuf = null;
          this.out("name", this.n, this.name);
          this.expect = ",";
        } else this.namebuf.push(c);
      }
      return;
    }
    if (forwarding) {
      if (this.word !== null) {
        if (ALPHA.test(c)) { this.word.push(c); return; }
        this._endWord(emit);
        if (this.dead) return;
      }
      if (this.comma !== null) {
        if (JSON_BLANK.includes(c)) { this.comma += c; return; }
        if (c !== "}" && c !== "]") emit.push(this.comma);  // not a trailing comma: it goes out with what follows
        this.comma = null;  // (a trailing comma is dropped, as the recover repair drops it)
      }
    }
    if (JSON_BLANK.includes(c)) {
      if (forwarding) emit.push(c);
      return;
    }
    if (forwarding) {
      if (depth === argdepth) {
        if (this._keyOrColon(c, emit)) return;
        if (this.expect === "value") {
          this.expect = ",";
          this._valueChar(c, emit, depth);
          return;
        }
        if (this.expect === ",") {
          if (c === "," || c === "}") {
            if (c === ",") { this.comma = c; this.expect = "key"; } else this._closeArgs(emit);
            return;
          }
          if (c === "]" || c === ":") { this.dead = true; return; }
          emit.push(c);  // the rest of a scalar
          return;
        }
        this.dead = true;
        return;
      }
      this._valueChar(c, emit, depth);
      return;
    }
    if (this.mode === "args") {
      if (depth === 0 && c === "{" && this.n < 0) {
        this.n = 0;
        this.out("call", 0, "");
        stack.push("{");
        this.argdepth = 1;
        this.expect = "key";
        emit.push(c);
        return;
      }
      this.dead = true;
      return;
    }
    if (depth === 0) {
      if (c === "[") { stack.push("["); this.expect = "value"; return; }
      if (c === "{") { this._openCall(); return; }
      this.dead = true;
      return;
    }
    const top = stack[depth - 1];
    const calllevel = (depth === 1 && top === "{") || (depth === 2 && top === "{" && stack[0] === "[");
    if (depth === 1 && top === "[") {
      if (c === "{" && this.expect === "value") this._openCall();
      else if (c === "," && this.expect === ",") this.expect = "value";
      else if (c === "]") { stack.pop(); this._ended(); } else this.dead = true;
      return;
    }
    if (calllevel) {
      if (this._keyOrColon(c, null)) return;
      if (this.expect === "value") {
        const key = this.curkey;
        if (this.seen.has(key) || (this.keys.includes(key) && this.keys.some((k) => this.seen.has(k)))) {
          this.dead = true;  // a repeated key, or both argument keys: sent at close
          return;
        }
        this.seen.add(key);
        if (key === this.namekey && c === '"') { this.instr = true; this.namebuf = []; return; }
        if (this.keys.includes(key) && c === "{") {
          stack.push("{");
          this.argdepth = stack.length;
          this.expect = "key";
          this.out("start", this.n, "");
          emit.push(c);
          return;
        }
        if (key === this.namekey || this.keys.includes(key)) { this.dead = true; return; }
        this.expect = ",";
        this._skipChar(c);
        return;
      }
      if (this.expect === ",") {
        if (c === ",") this.expect = "key";
        else if (c === "}") this._closeCall();
        else this._skipChar(c);
        return;
      }
      this.dead = true;
      return;
    }
    this._skipChar(c);
  }

  _keyOrColon(c, emit) {
    if (this.expect === "key") {
      if (c === '"') {
        this.instr = true;
        this.keybuf = [];
        if (emit !== null) emit.push(c);
      } else if (c === "}") {
        if (emit !== null) this._closeArgs(emit); else this._closeCall();
      } else this.dead = true;
      return true;
    }
    if (this.expect === ":") {
      if (c !== ":") { this.dead = true; return true; }
      if (emit !== null) emit.push(c);
      this.expect = "value";
      return true;
    }
    return false;
  }

  _skipChar(c) {
    if (c === '"') this.instr = true;
    else if (c === "{" || c === "[") this.stack.push(c);
    else if (c === "}" || c === "]") {
      if (!this.stack.length || this.stack[this.stack.length - 1] !== (c === "}" ? "{" : "[")) { this.dead = true; return; }
      this.stack.pop();
    }
  }

  _valueChar(c, emit, depth) {
    if (c === "T" || c === "F" || c === "N") { this.word = [c]; return; }
    if (c === ",") { this.comma = c; return; }
    if (c === '"') this.instr = true;
    else if (c === "{" || c === "[") this.stack.push(c);
    else if (c === "}" || c === "]") {
      if (this.stack[this.stack.length - 1] !== (c === "}" ? "{" : "[") || depth <= this.argdepth) {
        this.dead = true;
        return;
      }
      this.stack.pop();
    }
    emit.push(c);
  }

  _endWord(emit) {
    const word = this.word.join("");
    this.word = null;
    const literal = Object.prototype.hasOwnProperty.call(PY_LITERALS, word) ? PY_LITERALS[word] : undefined;
    if (literal === undefined) { this.dead = true; return; }
    emit.push(literal);
  }

  _endKey() {
    this.keybuf = null;
    this.expect = ":";
  }

  _openCall() {
    this.stack.push("{");
    this.n += 1;
    this.name = null;
    this.curkey = null;
    this.seen = new Set();
    this.expect = "key";
    this.out("call", this.n, "");
  }

  _ended() {
    if (!this.stack.length && this.end < 0) this.end = ENDED;
  }

  _closeArgs(emit) {
    emit.push("}");
    this.stack.pop();
    this._ended();
    this.argdepth = 0;
    if (emit.length) { this.out("args", this.n, emit.join("")); emit.length = 0; }
    this.out("end", this.n, "");
    this.expect = this.mode === "object" ? "," : "";
    if (this.mode === "args") this.dead = true;  // nothing more to read
  }

  _closeCall() {
    this.stack.pop();
    this._ended();
    this.expect = this.stack.length ? "," : "";
  }
}

/** Name-as-key calls (``[{"f": {...}}]``) rewritten as call objects as they stream, in front of an
 * ArgumentReader (Python: runtime/formats/json_.py NameKeyed with Converted). */
class NameKeyed {
  constructor(scanner) {
    this.scanner = scanner;
    this.stack = [];
    this.instr = false;
    this.esc = false;
    this.key = null;
    this.expect = "";
  }

  feed(text) {
    const out = [];
    for (const c of text) this._char(c, out);
    if (out.length) this.scanner.feed(out.join(""));
  }

  finish() {
    const key = this.key;
    this.key = null;
    if (key !== null && key.length) this.scanner.feed(key.join(""));
  }

  _calllevel() { return this.stack.length === 2 && this.stack[0] === "[" && this.stack[1] === "{"; }

  _char(c, out) {
    if (this.instr) {
      if (this.esc) this.esc = false;
      else if (c === "\\") this.esc = true;
      else if (c === '"') this.instr = false;
      (this.key !== null ? this.key : out).push(c);
      return;
    }
    if (this.key !== null) {
      this.key.push(c);
      if (c === ":") {
        const raw = this.key.slice(0, -1).join("").replace(/[ \t\r\n]+$/, "");
        this.key = null;
        this.expect = "";
        out.push('"name": ' + raw + ', "arguments":');
      } else if (!JSON_BLANK.includes(c)) {
        out.push(this.key.join(""));
        this.key = null;
        this.expect = "";
      }
      return;
    }
    out.push(c);
    if (c === '"') {
      if (this.expect === "key" && this._calllevel()) { out.pop(); this.key = [c]; }
      this.instr = true;
    } else if (c === "{" || c === "[") {
      this.stack.push(c);
      this.expect = this._calllevel() ? "key" : "";
    } else if (c === "}" || c === "]") {
      if (this.stack.length) this.stack.pop();
      this.expect = "";
    } else if (c === "," && this._calllevel()) this.expect = "key";
  }
}

/** One tool call of the stream: what was sent of it so far. */
class StreamCall {
  // index: its place in the stream's calls (the readers' call numbers); wire: the index its deltas
  // carry, the calls announced before it, and id, both set when it is announced (Python: _Call)
  constructor(index) {
    Object.assign(this, { index, wire: index, id: "", name: null, fwd: [], nsent: 0, sentHeader: false, sentName: false,
      streaming: false, done: false, shown: false });
  }

  /** The argument text sent so far. */
  get args() { return this.fwd.slice(0, this.nsent).join(""); }
}

function pyRstripLength(s) {
  let n = s.length;
  while (n > 0 && isSpace(s[n - 1])) n--;
  return n;
}

function pyLstrip(s) {
  let i = 0;
  while (i < s.length && isSpace(s[i])) i++;
  return s.slice(i);
}

function randomHex(n) {
  const bytes = new Uint8Array(Math.ceil(n / 2));
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("").slice(0, n);
}

/** The tool calls of one region value (Python: runtime/formats/base.py calls_of). */
function callsOf(value) {
  if (isDict(value)) return [value];
  if (Array.isArray(value)) return value.filter(isDict);
  return [];
}

/** A call's ``function`` object, or the call itself (Python: function_of). */
function functionOf(call) { return isDict(call.function) ? call.function : call; }

/** Server-sent events of chunks: ``data: <json>`` and a blank line each, the JSON as Python's
 * ``json.dumps(chunk, ensure_ascii=False)`` writes it (Python: respc.openai.sse). */
export function sse(chunks) {
  return chunks.map((chunk) => "data: " + pyJson(chunk) + "\n\n").join("");
}

/**
 * OpenAI ``chat.completion.chunk`` objects from a generated parser's events: the JavaScript
 * ChatCompletionStream (Python: respc.openai.ChatCompletionStream; docs/openai.md states the
 * contract, docs/javascript.md "OpenAI deltas" what this one covers). The same chunks as the Python
 * adapter for the same parser, output and feeds.
 *
 * @param {StreamParser} parser a fresh generated ResponseParser (its initialEvents are read too)
 * @param {{model?: string, reasoningField?: string, ids?: (n: number) => string, includeUsage?: boolean,
 *   completionId?: string, created?: number, recoverArguments?: "hold"|"stream"}} [options]
 *   ids(n): the n-th call's id (default "call_" + 24 random hex digits); recoverArguments: with
 *   errors "recover", "hold" (default: each call in one fragment at its close) or "stream" (as with
 *   errors "strict"; a call sent whose region then ends malformed stays, named in diagnostics).
 * @throws {Error} recoverArguments is neither "hold" nor "stream".
 */
export class ChatCompletionStream {
  constructor(parser, options = {}) {
    const recoverArguments = options.recoverArguments ?? "hold";
    if (recoverArguments !== "hold" && recoverArguments !== "stream") {
      throw new Error(`ChatCompletionStream: recoverArguments must be 'hold' or 'stream', got ${JSON.stringify(recoverArguments)}`);
    }
    const T = parser.constructor.TABLE;
    this.parser = parser;
    this.recoverArguments = recoverArguments;
    this._streamingRecover = parser._recover && recoverArguments === "stream";
    this.model = options.model ?? "m";
    this.reasoningField = options.reasoningField ?? "reasoning_content";
    this.includeUsage = Boolean(options.includeUsage);
    this._ids = options.ids ?? (() => "call_" + randomHex(24));
    this.id = options.completionId ?? "chatcmpl-" + randomHex(32);
    this.created = options.created ?? Math.floor(Date.now() / 1000);
    /** what could not be streamed faithfully (docs/openai.md): text a later block replaced, and with
     * recoverArguments "stream" calls kept as sent */
    this.diagnostics = [];
    /** the parser's message once finalized */
    this.message = null;
    // a text slot (Python: _Text): what was sent (parts); the message's value described, not rebuilt:
    // non-empty (has), where it begins in the text sent (start characters, part first); the parts and
    // characters sent up to the last close (mark, size); see _catchUp. A non-empty default the message
    // holds is sent after the role chunk (owed).
    const slot = (key, name) => {
      const stored = T.defaults[name];
      const text = { key, join: "", parts: [], has: false, mark: 0, size: 0, start: 0, first: 0, started: false,
        pending: [] };
      if (typeof stored === "string" && stored) Object.assign(text, { parts: [stored], has: true, mark: 1, size: cpLen(stored) });
      return text;
    };
    this._texts = { content: slot("content", "content"), reasoning_content: slot(this.reasoningField, "reasoning_content") };
    this._textOf = new Map(Object.entries(this._texts));  // slot -> its text state
    this._owed = Object.values(this._texts).filter((t) => t.parts.length).map((t) => ["text", t.key, t.parts[0]]);
    this._fields = T.fields;
    this._regions = new Map();  // slot -> its (last) field, as the events name only the slot
    for (const f of T.fields) if (f.slot !== null) this._regions.set(f.slot, f);
    const hold = parser._recover && recoverArguments === "hold";
    this._plans = new Map();
    for (const f of T.fields) {
      if ((f.slot === "content" || f.slot === "reasoning_content") && !f.dirty) this._plans.set(f, f.text_plan ?? "close");
      else if (f.slot === "tool_calls") this._plans.set(f, hold ? null : f.args_plan ?? null);
    }
    this._calls = [];
    // calls announced so far: the next one's index on the wire. A call never announced (its region
    // ended malformed before its name came) takes no index, so the client's indices have no gap
    this._wired = 0;
    this._open = new Map();   // field -> [reader or null, first call number]
    this._toolOpen = null;    // the tool field opened last (its chunks' region)
    this._roleSent = false;
    this._pending = [...parser.initialEvents];
    this._deltas = [];
    this._floats = new WeakMap();
    parser.floatValues = this._floats;
    // a chunk's server-sent-event text is this head, its delta's JSON and this tail (feedSse)
    [this._sseHead, this._sseTail] = ("data: " + pyJson(this._chunk("\0")) + "\n\n").split('"\\u0000"');
    this._sseKeys = new Map();  // a text delta's key -> the head of its chunk's text, up to the string
    this._sseKeyTail = "}" + this._sseTail;
  }

  /** Feed the next piece of model output; returns the chunks it produced (maybe none). */
  feed(text) {
    let events = this.parser.feed(text);
    if (this._pending.length) { events = this._pending.concat(events); this._pending = []; }
    return this._chunks(events);
  }

  /** feed(text) as server-sent-event text (``""`` when no chunk), as Python's feed_sse. */
  feedSse(text) {
    let events = this.parser.feed(text);
    if (this._pending.length) { events = this._pending.concat(events); this._pending = []; }
    return this._chunksSse(events);
  }

  /**
   * End the stream: the last deltas, then the chunk with ``finish_reason`` (given, e.g. "length",
   * else "tool_calls" when a call was sent, else "stop"); with includeUsage one more chunk with
   * ``choices: []`` and ``usage``.
   */
  finalize(finishReason = null, usage = null) {
    const { message, events } = this.parser.finalize();
    this.message = message;
    const chunks = this._chunks(this._pending.concat(events));
    this._pending = [];
    chunks.push(this._chunk({}, finishReason || (this._wired ? "tool_calls" : "stop")));
    if (this.includeUsage) {
      const chunk = this._chunk({}, null);
      chunk.choices = [];
      chunk.usage = usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
      chunks.push(chunk);
    }
    return chunks;
  }

  /** finalize() as server-sent-event text, then (``done``) ``data: [DONE]``. */
  finalizeSse(finishReason = null, usage = null, done = true) {
    return sse(this.finalize(finishReason, usage)) + (done ? "data: [DONE]\n\n" : "");
  }

  /** The final message in OpenAI shape (after finalize), with the stream's ids and argument text. */
  openaiMessage() {
    if (this.message === null) throw new Error("openaiMessage() needs finalize() first");
    const out = { role: "assistant", content: this._sent(this._texts.content) || null };
    const reasoning = this._sent(this._texts.reasoning_content);
    if (reasoning) out[this.reasoningField] = reasoning;
    // (a call never announced was never sent)
    const calls = this._calls.filter((call) => call.sentHeader).map((call) => ({ id: call.id, type: "function",
      function: { name: call.name || "", arguments: call.args } }));
    if (calls.length) out.tool_calls = calls;
    return out;
  }

  _sent(text) { return text.parts.join(""); }

  _chunk(delta, finishReason = null) {
    return { id: this.id, object: "chat.completion.chunk", created: this.created, model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] };
  }

  _chunks(events) {
    this._read(events);
    const deltas = this._deltas, chunks = [];
    if (!this._roleSent) {
      this._roleSent = true;
      chunks.push(this._chunk({ role: "assistant" }));
    }
    const items = deltas.length > 1 ? merged(deltas) : deltas;
    for (let i = 0; i < items.length; i++) {
      const item = items[i], key = item[1];
      if (item[0] === "text") {
        const delta = {};
        delta[key] = item[2];
        chunks.push(this._chunk(delta));
      } else {
        const call = this._calls[key];
        call.shown = true;
        chunks.push(this._chunk({ tool_calls: [item[0] === "args" ? { index: call.wire, function: { arguments: item[2] } } : item[2]] }));
      }
    }
    return chunks;
  }

  /** _chunks as server-sent-event text, without building the chunk objects of text and argument
   * deltas: the stream's pre-serialized text around the delta's JSON (Python: _built_sse). */
  _chunksSse(events) {
    this._read(events);
    const deltas = this._deltas, head = this._sseHead, tail = this._sseTail;
    let out = "";
    if (!this._roleSent) {
      this._roleSent = true;
      out = head + '{"role": "assistant"}' + tail;
    }
    const items = deltas.length > 1 ? merged(deltas) : deltas;
    for (let i = 0; i < items.length; i++) {
      const item = items[i], key = item[1];
      if (item[0] === "text") {
        let keyHead = this._sseKeys.get(key);
        if (keyHead === undefined) this._sseKeys.set(key, keyHead = head + "{" + JSON.stringify(key) + ": ");
        out += keyHead + JSON.stringify(item[2]) + this._sseKeyTail;
      }
      else {
        const call = this._calls[key];
        call.shown = true;
        out += head + (item[0] === "args" ? '{"tool_calls": [{"index": ' + call.wire + ', "function": {"arguments": ' +
          JSON.stringify(item[2]) + "}}]}" : '{"tool_calls": [' + pyJson(item[2]) + "]}") + tail;
      }
    }
    return out;
  }

  /** Read one feed's events into this._deltas (Python: the event loop of _chunks). */
  _read(events) {
    this._deltas = [];
    if (this._owed.length) [this._deltas, this._owed] = [this._owed, []];  // (the first chunks: after the role)
    const texts = this._textOf;
    for (let i = 0; i < events.length; i++) {
      const event = events[i], kind = event.type, slot = event.field;
      const text = texts.get(slot);
      if (kind === "region_chunk") {
        if (text !== undefined && !event.dirty) {
          const plan = this._plans.get(this._regions.get(slot));
          if (plan === "strip") this._stripText(text, event.text);
          else if (plan === "raw") this._sendText(text, event.text);
        } else if (slot === "tool_calls") {
          const state = this._open.get(this._toolOpen);
          if (state !== undefined && state[0] !== null) state[0].feed(event.text);
        }
        continue;
      }
      const region = this._regions.get(slot);
      if (kind === "region_open") {
        if (text !== undefined) {
          text.started = false;
          text.pending = [];
          text.join = (region !== undefined ? region.join : null) || "";
        } else if (slot === "tool_calls") this._openTools(region);
      } else if (kind === "region_close") {
        if (text !== undefined) this._closeText(text, region, event.value);
        else if (slot === "tool_calls") this._closeTools(region, this._floats.get(event) ?? event.value);
      } else if (kind === "region_malformed") {
        const kept = slot === "tool_calls" ? this._malformedTools(region, event) : false;
        const into = texts.get(event.into);
        if (into !== undefined && !kept) this._malformedText(into, event.text);
      }
    }
    this._nameFromGroups();
  }

  // --- text ---
  _sendText(text, piece) {
    if (piece) {
      text.parts.push(piece);
      this._deltas.push(["text", text.key, piece]);
    }
  }

  _stripText(text, piece) {
    if (!text.started) {
      piece = pyLstrip(piece);
      if (!piece) return;
      text.started = true;
      if (text.has && text.join) {  // (empty pieces are never joined)
        text.parts.push(text.join);
        this._deltas.push(["text", text.key, text.join]);
      }
    }
    // trailing whitespace is held in the pieces it came in and joined once, when a character after
    // it is sent: a long run of whitespace chunks is not copied and scanned again per chunk (linear)
    const cut = pyRstripLength(piece);
    if (!cut) { text.pending.push(piece); return; }
    const held = text.pending;
    text.pending = cut < piece.length ? [piece.slice(cut)] : [];
    this._sendText(text, held.length ? held.join("") + piece.slice(0, cut) : piece.slice(0, cut));
  }

  /** The message's store of one block (Python: _close_text): _catchUp with what it appends to the
   * value, or with the value that replaces it (a field that neither joins nor repeats, written again). */
  _closeText(text, region, value) {
    text.pending = [];
    text.started = false;
    if (value === null && region !== undefined && region.empty_none) { this._catchUp(text, "", false); return; }
    if (typeof value !== "string") {
      this.diagnostics.push({ field: text.key, problem: "a text block whose value is not a string" });
      return;
    }
    const join = region !== undefined ? region.join : null;
    if (join !== null && join !== undefined) this._catchUp(text, value ? (text.has ? join + value : value) : "", false);
    else if (region !== undefined && region.repeats) this._catchUp(text, value, false);
    else this._catchUp(text, value, Boolean(value) && text.has);
  }

  /** Send what ``target`` (appended to the message's value, or replacing it) holds beyond the open
   * block's text sent so far (parts after mark): each close costs its block, never the whole slot.
   * Text the client holds that the message does not is reported once, with offsets in code points
   * and an excerpt (Python: _catch_up). */
  _catchUp(text, target, replace) {
    const parts = text.parts, mark = text.mark;
    if (parts.length > mark + 1) parts.splice(mark, parts.length - mark, parts.slice(mark).join(""));
    const since = parts.length > mark ? parts[mark] : "";
    const size = text.size + cpLen(since);
    let rest;
    if (target.startsWith(since)) {
      rest = target.slice(since.length);
      if (replace) {
        this._replaced(text, text.start, text.size, text.first, mark);
        text.start = text.size;
        text.first = mark;
      }
    } else {  // (no plan sends text a block's value does not begin with; kept exact should one ever)
      rest = target;
      if (replace) {
        this._replaced(text, text.start, size, text.first, parts.length);
        text.start = size;
        text.first = parts.length;
      } else this._replaced(text, text.size, size, mark, parts.length);
    }
    if (rest) { parts.push(rest); this._deltas.push(["text", text.key, rest]); }
    text.size = size + cpLen(rest);
    text.mark = parts.length;
    text.has = text.has || Boolean(target);
  }

  /** Report characters ``start`` to ``end`` of the key's accumulated text (parts first..last) as
   * text the message does not hold, with at most EXCERPT code points of it (Python: _replaced). */
  _replaced(text, start, end, first, last) {
    if (start >= end) return;
    let excerpt = "", need = EXCERPT;
    for (let i = first; i < last && need > 0; i++) {
      const piece = cpHead(text.parts[i], need);
      excerpt += piece;
      need -= cpLen(piece);
    }
    this.diagnostics.push({ field: text.key, problem: "the message replaced text already sent", start, end, text: excerpt });
  }

  _malformedText(text, raw) {
    const region = this._fields.find((f) => f.slot === text.key && !f.dirty);
    const join = (region !== undefined ? region.join : null) || "";
    this._catchUp(text, text.has ? join + raw : raw, false);
  }

  // --- tool calls ---
  _call(n) {
    while (this._calls.length <= n) this._calls.push(new StreamCall(this._calls.length));
    return this._calls[n];
  }

  _openTools(region) {
    this._toolOpen = region;
    const plan = this._plans.get(region) ?? null;
    const base = this._calls.length;
    let reader = null;
    if (plan !== null) {
      const out = (kind, n, payload) => this._scanned(base + n, kind, payload);
      reader = plan.call === "object" ? new ArgumentReader("object", [plan.name_key, plan.arg_keys], out)
        : new ArgumentReader("args", null, out);
      if (plan.convert === "name-keyed") reader = new NameKeyed(reader);
    }
    this._open.set(region, [reader, base]);
  }

  _scanned(n, kind, payload) {
    const call = this._call(n);
    if (kind === "args") {
      call.streaming = true;
      call.fwd.push(surrogatesEscaped(payload));
      if (call.sentName) this._sendArgs(call);
    } else if (kind === "name") {
      call.name = payload;
      this._sendName(call);
    } else if (kind === "start") call.streaming = true;
    else if (kind === "end") call.done = true;
  }

  _announce(call) {
    call.sentName = true;
    if (!call.sentHeader) {
      call.sentHeader = true;
      call.wire = this._wired++;
      call.id = this._ids(call.wire);
      this._deltas.push(["tool", call.index, { index: call.wire, id: call.id, type: "function", function: { name: call.name } }]);
    } else this._deltas.push(["tool", call.index, { index: call.wire, function: { name: call.name } }]);
  }

  _sendName(call) {
    if (!call.sentName && call.name) {
      this._announce(call);
      if (call.fwd.length) this._sendArgs(call);
    }
  }

  _sendArgs(call) {
    const rest = call.fwd.slice(call.nsent).join("");
    call.nsent = call.fwd.length;
    if (rest) this._deltas.push(["args", call.index, rest]);
  }

  /** The call's name from the open delimiter's group, while its region is open (Python:
   * ArgumentStream.tick, read after each feed). */
  _nameFromGroups() {
    const parser = this.parser, region = parser._region;
    if (region === null || region === undefined || !parser._opened) return;
    const state = this._open.get(region);
    const plan = this._plans.get(region);
    if (state === undefined || state[0] === null || !plan || plan.call !== "args" || !plan.name_group) return;
    const groups = parser._groups;
    if (groups === null || groups === undefined) return;
    const call = this._call(state[1]);
    if (call.name === null) {
      const name = groups[plan.name_group];
      if (typeof name === "string" && name) {
        call.name = name;
        this._sendName(call);
      }
    }
  }

  _malformedTools(region, event) {
    const state = this._open.get(region);
    this._open.delete(region);
    const base = state !== undefined ? state[1] : this._calls.length;
    const calls = this._calls.slice(base);
    if (!calls.length) return false;
    if (!calls.some((call) => call.shown)) {
      // (a new list, not splice(0, n, ...kept): a spread of a feed's 100,000 deltas overflows the call stack)
      this._deltas = this._deltas.filter((d) => d[0] === "text" || d[1] < base);
      for (const call of calls) if (call.sentHeader) this._wired--;  // (their indices were never sent)
      this._calls.length = base;
      return false;
    }
    // the parser's diagnostic of this region, read from the end (a copy of the whole list per
    // region, as [...list].reverse() made, costs quadratic time over many malformed regions)
    const diagnostics = this.parser.diagnostics;
    let found;
    for (let k = diagnostics.length - 1; k >= 0 && found === undefined; k--) {
      const d = diagnostics[k];
      if ((d.kind === "truncated" || d.kind === "malformed") && d.start === event.start) found = d;
    }
    const cause = found !== undefined ? found.kind : "malformed";
    for (const call of calls) {
      // never announced (its name never came): it was never in the stream, so it is not kept; its
      // forwarded arguments would go out as a call with no id and no name
      if (!call.sentHeader) continue;
      this._sendArgs(call);
      this.diagnostics.push({ kind: "streamed-call-malformed", field: "tool_calls", index: call.wire, cause,
        text: event.text, error: event.error ?? null, start: event.start ?? null, end: event.end ?? null,
        into: event.into ?? null, sent: call.args });
    }
    return true;
  }

  _complete(call, args) {
    const sent = call.args;
    let rest = closersOf(sent);
    if (rest === null || !sameJson(sent + rest, args)) {
      const whole = surrogatesEscaped(pyJson(args));
      if (!whole.startsWith(sent)) return false;
      rest = whole.slice(sent.length);
    }
    call.fwd.push(surrogatesEscaped(rest));
    call.done = true;
    this._sendArgs(call);
    return true;
  }

  _closeTools(region, value) {
    const state = this._open.get(region) ?? [null, this._calls.length];
    this._open.delete(region);
    const [reader, base] = state;
    const calls = callsOf(value);
    if (reader instanceof NameKeyed) reader.finish();
    calls.forEach((callValue, k) => {
      const fn = functionOf(callValue);
      const name = fn.name, args = fn.arguments;
      const call = this._call(base + k);
      if (call.name === null || !call.sentName) {
        call.name = typeof name === "string" ? name : "";
        if (call.name && !call.sentName) this._announce(call);
        if (!call.sentName) return;  // a call without a name is not sent (docs/openai.md, "tool_calls")
      } else if (call.name !== name) {
        this.diagnostics.push({ field: "tool_calls", problem: "a name sent differs from the message", sent: call.name, message: name ?? null });
      }
      if (call.nsent) {
        if (!(call.done && sameJson(call.args, args)) &&
            !(this._streamingRecover && !call.done && this._complete(call, args))) {
          this.diagnostics.push({ kind: "streamed-arguments-differ", field: "tool_calls", index: call.wire,
            problem: "streamed arguments differ from the message", sent: call.args, message: args ?? null });
        }
      } else {
        const text = surrogatesEscaped(typeof args === "string" ? args : pyJson(args ?? {}));
        call.fwd = [text];
        call.nsent = 1;
        this._deltas.push(["args", call.index, text]);
      }
    });
    if (this._calls.length > base + calls.length) {
      this.diagnostics.push({ field: "tool_calls", problem: "the stream announced calls the message lacks" });
    }
  }
}

/** Adjacent deltas of one text key or one tool call as one (Python: respc/openai.py _merged). */
function merged(deltas) {
  const out = [];
  for (const item of deltas) {
    const last = out[out.length - 1];
    if (last !== undefined && last[0] !== "text" && item[0] !== "text" && last[1] === item[1]) {
      if (item[0] === "args") {
        if (last[0] === "args") out[out.length - 1] = ["args", item[1], last[2] + item[2]];
        else {
          const fn = last[2].function ?? {};
          out[out.length - 1] = ["tool", item[1], { ...last[2], function: { ...fn, arguments: (fn.arguments ?? "") + item[2] } }];
        }
        continue;
      }
      const both = mergeCall(last[0] === "tool" ? last[2] : { index: item[2].index, function: { arguments: last[2] } }, item[2]);
      if (both !== null) { out[out.length - 1] = ["tool", item[1], both]; continue; }
    } else if (last !== undefined && last[0] === "text" && item[0] === "text" && last[1] === item[1]) {
      out[out.length - 1] = ["text", item[1], last[2] + item[2]];
      continue;
    }
    out.push(item);
  }
  return out;
}

function mergeCall(a, b) {
  const fa = a.function ?? {}, fb = b.function ?? {};
  if ("id" in b) return null;
  if ("name" in fb && ("name" in fa || "arguments" in fa)) return null;
  const fn = { ...fa };
  for (const [key, value] of Object.entries(fb)) fn[key] = (fn[key] ?? "") + value;
  return { ...a, function: fn };
}
