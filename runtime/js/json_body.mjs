// respc JavaScript runtime: the whole-body reader of the ``json`` content format (docs/javascript.md,
// "The json body reader"). It reads a body as the Python runtime's json parser does
// (runtime/formats/json_.py, ``make`` without dialects: ``json.loads`` after CPython's C scanner)
// and fails with the same ContentParseError text, positions counted in code points as Python does.
// Not yet used by generated modules: the json content format is still refused by --target js.
//
// Numbers (docs/javascript.md "Numbers"): a JavaScript number is one IEEE double, so a JSON float
// reads to the same double as Python's float; an integer reads to the same value when it is within
// 2**53 - 1 and otherwise throws JsonNumberError (never a rounded value); ``-0`` (an integer) reads
// as 0 and ``-0.0`` as -0, as in Python; ``NaN``, ``Infinity`` and ``-Infinity`` (accepted by
// Python's json) read as NaN, Infinity and -Infinity. Nesting deeper than MAX_DEPTH throws
// JsonDepthError (Python's limit depends on its stack, so no depth-dependent message is imitated).

import { ContentParseError, pyRepr, pyStrip } from "./respc.mjs";

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

function put(obj, key, value) {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
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
  if (isFloat) return [Number(text), i];
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
function loads(s) {
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
export function parseJsonBody(text) {
  const read = loads(text);
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
export function repairJsonBody(text) {
  const [repaired, notes] = repairJsonText(text);
  if (!notes.length) return null;
  const read = loads(repaired);
  return "value" in read ? { value: read.value, notes } : null;
}
