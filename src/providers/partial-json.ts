/**
 * Parsing tool-call arguments while they stream.
 * @module
 */

export { PartialJsonParser } from '../../operators/partial-json-parser.js';

/**
 * Parses JSON that may be cut off anywhere, for previews of streaming tool arguments: open strings, arrays and
 * objects are closed, and a trailing incomplete token (a key without a value, `tru`, `1.`, a dangling comma) is
 * dropped. Returns `undefined` when nothing sensible can be made of the text. Never use it to decide what to execute:
 * {@link parseToolArguments} is the strict parse for that.
 */
export function parsePartialJson(text: string): unknown {
  // No JSON.parse attempt on the raw text first: while arguments stream, it fails on almost every delta, and a thrown
  // SyntaxError costs more than the scan below (which ends with one parse that succeeds).
  // One pass over the text, remembering the last point where everything before it is complete JSON once the open
  // containers are closed. A string value cut mid-way is kept (closed), since previews of long arguments matter.
  const stack: { close: '}' | ']'; expectKey: boolean }[] = [];
  const closers = () => {
    let out = '';
    for (let k = stack.length - 1; k >= 0; k--) out += stack[k]!.close;
    return out;
  };
  let cut = -1;
  let cutClosers = '';
  const complete = (end: number) => {
    cut = end;
    cutClosers = closers();
  };
  const n = text.length;
  let i = 0;
  while (i < n) {
    const ch = text[i]!;
    if (ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t') {
      i++;
    } else if (ch === '{' || ch === '[') {
      stack.push({ close: ch === '{' ? '}' : ']', expectKey: ch === '{' });
      complete(++i);
    } else if (ch === '}' || ch === ']') {
      stack.pop();
      complete(++i);
    } else if (ch === ',' || ch === ':') {
      const top = stack[stack.length - 1];
      if (top && top.close === '}') top.expectKey = ch === ',';
      i++;
    } else if (ch === '"') {
      let j = i + 1;
      let escaped = false;
      let lastEscape = -1;
      for (; j < n; j++) {
        if (escaped) escaped = false;
        else if (text[j] === '\\') {
          escaped = true;
          lastEscape = j;
        } else if (text[j] === '"') break;
      }
      const top = stack[stack.length - 1];
      const isKey = top !== undefined && top.close === '}' && top.expectKey;
      if (j >= n) {
        if (isKey) break;
        // An unterminated string value: drop a dangling escape (a lone `\`, or `\u` with fewer than four hex digits),
        // then close it. Found by the scan, not by a regex on the text's end: in `"C:\\u` the `\u` follows an escaped
        // backslash, is plain text, and stripping it lost the whole string from the preview.
        const cutEscape = escaped || (lastEscape >= 0 && text[lastEscape + 1] === 'u' && n - lastEscape < 6);
        const body = cutEscape ? text.slice(0, lastEscape) : text;
        try {
          return JSON.parse(body + '"' + closers());
        } catch {
          break;
        }
      }
      i = j + 1;
      if (!isKey) complete(i);
    } else {
      // A number or a literal: complete only if something ends it, or it is already valid at the end of the text.
      let j = i;
      while (j < n && !' \n\r\t,]}:'.includes(text[j]!)) j++;
      if (j < n || /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)$/.test(text.slice(i, j))) complete(j);
      i = j;
    }
  }
  if (cut < 0) return undefined;
  try {
    return JSON.parse(text.slice(0, cut) + cutClosers);
  } catch {
    return undefined;
  }
}

/** The outcome of the strict parse of a finished tool call's argument text. */
export type ToolArgumentsParse =
  { readonly ok: true; readonly value: Record<string, unknown> } | { readonly ok: false; readonly error: string };

/**
 * The strict parse at `toolcall_end`: the whole text must be one JSON object. An empty text (or JSON whitespace only)
 * means no arguments (`{}`: Anthropic streams an empty delta for a call without input).
 */
export function parseToolArguments(text: string): ToolArgumentsParse {
  // JSON's whitespace only: `trim()` also strips U+00A0, U+2028, U+FEFF and the like, which JSON.parse rejects, so a
  // text of those was taken for "no arguments" instead of being reported invalid.
  if (/^[ \t\n\r]*$/.test(text)) return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      ok: false,
      error: `expected a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
    };
  }
  return { ok: true, value: value as Record<string, unknown> };
}
