// respc JavaScript runtime (ES module, no dependencies; Node 20+ or a browser).
//
// A module written by `respc compile T --target js` holds only data: its template's fields, its
// region automaton (per state: the literal delimiters it watches, with rank, action and target)
// and its recover tables. This file runs them with the meaning of the Python runtime
// (runtime/stream.py; docs/events.md, docs/template-language.md "Matching", docs/javascript.md):
// the same events, message and diagnostics for every chunking of the same output (D2).
//
// Scope (docs/javascript.md): literal delimiters, the `text` content format, template language
// v1. The compiler refuses every other template (compiler/emit_js.py), so nothing here guesses.
//
// Offsets in diagnostics count Unicode code points, as Python strings do (a JavaScript string
// counts UTF-16 units); every internal index is a UTF-16 index.

export const RUNTIME_ABI = 1;

export const PREFIX_REQUIRED =
  "ResponseParser/parse_response requires `prefix` (the chat prompt sent to the model before " +
  "generation), because chat templates often pre-write part of the assistant message (e.g. an " +
  "opening `<think>` tag) that the parser must see to parse the output correctly. If the " +
  'generation already contains the complete message, pass prefix="" (or []) to opt out explicitly.';

// each takes its strings as Python's repr already wrote them (StreamParser._repr)
const NOTES = {
  "opener-again": (d) => `opener ${d} written again at the start of its region: consumed`,
  "doubled-closer": (d) => `closer ${d} written twice: the second one was consumed`,
  "stray-closer": (c, owner, slot) =>
    `closer ${c} of ${owner} with no opener before it: kept as text of ${slot}`,
};

/** The error of a body that cannot be read, or of a missing required field (Python's ContentParseError). */
export class ContentParseError extends Error {
  constructor(message) { super(message); this.name = "ContentParseError"; }
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
const OPEN = 0;

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

/** The length of the longest suffix of buf[from:] that is a proper prefix of `lit` (f: its failure table). */
function heldPrefix(buf, from, lit, f) {
  const L = lit.length;
  let k = 0;
  for (let i = from; i < buf.length; i++) {
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
   * @param {{tools?: any[], errors?: "strict"|"recover"}} [options]
   */
  constructor(prefix, options = {}) {
    const errors = options.errors ?? "strict";
    if (prefix === null || prefix === undefined) throw new Error(PREFIX_REQUIRED);
    if (errors !== "strict" && errors !== "recover") {
      throw new Error(`errors must be one of ['strict', 'recover'], got ${JSON.stringify(errors)}`);
    }
    if (typeof prefix !== "string") throw new TypeError("prefix must be a string");
    const T = this.constructor.TABLE;
    this._T = T;
    this._recover = errors === "recover";
    this.diagnostics = [];
    this.initialEvents = [];
    this._eosHold = null;
    this._high = "";  // a chunk's last UTF-16 unit when it is the first half of a surrogate pair (feed)
    this._again = null;
    this._mark = 0;
    this._sunk = 0;
    this._openAt = null;
    this._openText = "";
    // per message key of a field that neither joins nor repeats: the block whose value it holds
    // (Python: StreamParser._spans, the "overwritten" diagnostic)
    this._spans = new Map();
    this._buf = "";
    this._pos = 0;
    this._state = 0;
    this._enter(T.outside);
    this._out = new Map(Object.entries(T.defaults).map(([k, v]) => [k, copy(v)]));
    this._done = false;
    this._rescanAt = 0;
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
    if (this._buf === "" && this._again === null && text !== "") {
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
          return [{ type: "region_chunk", field: this._name, text, dirty: false }];
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
        if (cpLen(this._buf) + this._tailLen < this._rescanAt) return [];
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
  _scan(buf, pos, eos, memo) {
    const st = this._T.states[this._state];
    const n = buf.length;
    let bs = -1, be = -1, br = -1, slot = 0;
    for (const w of st.watches) {
      for (const lit of w.literals) {
        let i = memo[st.slot0 + slot];
        if (i === undefined || (i >= 0 && i < pos)) i = memo[st.slot0 + slot] = buf.indexOf(lit, pos);
        slot++;
        const L = lit.length;
        if (i >= 0 && (bs < 0 || i < bs || (i === bs && (L > be - bs || (L === be - bs && w.rank < br))))) {
          bs = i; be = i + L; br = w.rank;
        }
      }
    }
    let hold = n;
    if (!eos && (bs < 0 || bs >= n - st.span)) {
      // the buffer ends with a proper prefix of a literal: hold it back from the leftmost such start
      // (the longest such suffix of any literal), found with each literal's failure table in time
      // linear in the window, never by comparing every suffix (quadratic in a long literal)
      const from = Math.max(pos, n - st.span);
      let longest = 0;
      for (let k = 0; k < st.lits.length; k++) {
        const lit = st.lits[k];
        const at = buf.indexOf(lit[0], from);
        if (at < 0 || n - at <= longest) continue;
        const held = heldPrefix(buf, at, lit, st.fails[k] ??= failTable(lit));
        if (held > longest) longest = held;
      }
      if (longest > 0) hold = n - longest;
    }
    if (bs >= 0 && bs < hold) return [bs, be, br, hold];
    return [-1, 0, 0, hold];
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
      const state = this._state;
      const [start, end, rank, hold] = this._scan(buf, pos, eos, memo);
      if (start >= 0) {
        if (start > pos) this._route(events, buf.slice(pos, start));
        pos = end;
        const edge = this._T.states[state].edges[rank];
        const delim = buf.slice(start, end);
        if (edge[0] === OPEN) {
          this._begin(events, edge[1], edge[2], delim);
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
    // literal delimiters need no context: keep only the undecided text
    this._buf = buf.slice(pos);
    this._pos = 0;
    // Held text this long (a region's opener may still be written again after a long run of
    // whitespace, errors="recover") is scanned again only once it has doubled (Python: LONG_HOLD)
    const held = this._buf.length < LONG_HOLD ? 0 : cpLen(this._buf);  // (code points <= UTF-16 units)
    this._rescanAt = held >= LONG_HOLD ? 2 * held : 0;
  }

  _begin(events, field, target, opener) {
    const at = this._close(events, "", false);
    this._state = target;
    this._field = field;
    const region = this._region = this._T.fields[field];
    this._name = region.slot;
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
    events.push({ type: "region_chunk", field: this._name, text, dirty: false });
  }

  _close(events, closer, eos) {
    const text = this._blocks.join("") + this._body.join("");
    const at = this._mark + this._sunk + this._bodyCp;
    const region = this._region;
    if (region !== null && this._opened && region.slot !== null) {
      if (this._recover && this._T.stray.length) this._strayClosers(text, at - this._bodyCp, region);
      const value = region.strip ? pyStrip(text) : text;
      this._store(region, value, this._openAt ?? this._mark, at + cpLen(closer), text, closer);
      events.push({ type: "region_close", field: region.slot, value });
    }
    this._opened = false;
    return at + cpLen(closer);
  }

  _strayClosers(text, start, region) {
    const exact = this._exact;
    const fields = this._T.fields;
    for (const [closer, openers, field] of this._T.stray) {
      if (fields[field] === region) continue;
      let j = text.indexOf(closer, exact);
      let since = exact;
      let seen = 0, seenCp = 0;  // code points of text[:seen], counted on as j moves (linear)
      const next = openers.map(() => -2);  // per opener: its first place at or after since (-1: none)
      while (j >= 0) {
        let found = false;
        for (let m = 0; m < openers.length; m++) {
          const o = openers[m];
          if (next[m] === -2 || (next[m] >= 0 && next[m] < since)) next[m] = text.indexOf(o, since);
          const k = next[m];
          if (k >= 0 && k + o.length <= j) { found = true; break; }
        }
        if (!found) {
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
      const previous = out.has(name) ? out.get(name) : null;
      if (previous === null) out.set(name, value);
      else if (!value) { /* an empty piece is never joined (D1) */ }
      else if (previous instanceof Parts) previous.add(join, value);
      else if (!previous) out.set(name, value);
      else out.set(name, new Parts(previous, join, value));
    } else if (region.repeats) {
      if (!out.has(name)) out.set(name, []);
      out.get(name).push(value);
    } else if (!isEmpty(value)) {
      const previous = out.has(name) ? out.get(name) : null;
      if (!isEmpty(previous) && this._spans.has(name)) value = this._overwrite(name, previous, value, start, end);
      out.set(name, value);
      this._spans.set(name, [start, end, this._openText, body, closer, this._gaps]);
    } else if (isEmpty(out.has(name) ? out.get(name) : null)) {
      out.set(name, value);
    }
  }

  /** A field that neither joins nor repeats gets a second non-empty value: report it, and return
   * what the message stores (Python: StreamParser._overwrite). */
  _overwrite(name, previous, value, start, end) {
    const [at, to, opener, body, closer, gaps] = this._spans.get(name);
    const pieces = [opener];
    let k = 0;
    for (const [i, text] of gaps ?? []) { pieces.push(body.slice(k, i), text); k = i; }
    pieces.push(body.slice(k), closer);
    const raw = pieces.join("");
    if (name === "tool_calls") {
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
  let slots = 0;
  table.repr = new Map(table.reprs ?? []);
  for (const s of table.states) {
    s.span = Math.max(0, ...s.watches.flatMap((w) => w.literals.map((l) => l.length - 1)));
    s.lits = s.watches.flatMap((w) => w.literals);
    s.fails = s.lits.map(() => undefined);  // each literal's failure table, built on first use (_scan)
    s.slot0 = slots;
    slots += s.watches.reduce((k, w) => k + w.literals.length, 0);
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
  const parser = new Parser(options.prefix, options);
  parser.feed(text);
  return parser.finalize().message;
}
