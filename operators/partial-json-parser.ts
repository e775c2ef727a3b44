/**
 * An incremental parser of JSON that streams in: the tolerant value of the text so far, kept up to date delta by
 * delta without re-reading what came before.
 * @module
 */

/** Marks "no value to show" for the token in progress (a key, `tru`, `1.`, a lone `-`). */
const NONE: unique symbol = Symbol('none');
type Shown = unknown;

// Where the parser is: what it expects next, or which token it is inside.
const enum At {
  Value, // a value (the root, after `:` or after `,` in an array)
  ArrayFirst, // a value or `]` (just after `[`)
  ObjectFirst, // a key or `}` (just after `{`)
  Key, // a key (after `,` in an object)
  Colon, // the `:` after a key
  After, // `,` or the container's close, after a value
  String,
  Number,
  Literal,
  Done, // the root value is complete
  Failed,
}

/** One open container, with its complete children (private and mutable until it closes; then frozen, as it is). */
interface Frame {
  readonly array: boolean;
  readonly items: unknown[] | Record<string, unknown>;
  /** In an object: the key whose value is being read (set at its `:`). */
  key: string | undefined;
  /** An array's copy in the latest value built. */
  shown?: readonly unknown[] | undefined;
  /** How many complete children it has. */
  size: number;
}

/** How many elements of an array the parser knows to be complete (the last one shown may still grow). */
const completeCounts = new WeakMap<readonly unknown[], number>();

/**
 * How many elements of `array` are complete, when it is a value of a {@link PartialJsonParser} (a closed array: all
 * of them; an open one: all but one still being read); `undefined` for any other array.
 */
export function completeElementCount(array: readonly unknown[]): number | undefined {
  return completeCounts.get(array);
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const LITERALS: ReadonlyMap<string, unknown> = new Map<string, unknown>([
  ['true', true],
  ['false', false],
  ['null', null],
]);
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/**
 * Parses JSON delta by delta: {@link push} reads only the new text (a state machine that keeps its stack of open
 * containers and resumes inside the token the last delta cut), so a text of n characters costs O(n) in total however
 * it is cut. {@link value} is the value so far under the rule of `parsePartialJson` (the preview of streaming tool
 * arguments), which it agrees with on every prefix of valid JSON: open strings, arrays and objects are closed, a key
 * without a value, an incomplete literal or number (`tru`, `1.`) are left out, a dangling escape is dropped.
 *
 * Values are immutable and share structure: a container that closed is frozen and is the same object in every later
 * value, so building a value costs O(depth + the width of the open containers), never O(text). After the root value
 * is complete ({@link done}) the rest of the text is ignored (a closing Markdown fence, say). Text that is not JSON
 * stops the parser ({@link error} says where); {@link value} stays the last one read.
 *
 * @example
 * const parser = new PartialJsonParser();
 * parser.push('{"city":"Pa'); // parser.value → { city: 'Pa' }
 * parser.push('ris","n":1');  // parser.value → { city: 'Paris', n: 1 }
 */
export class PartialJsonParser {
  private at: At = At.Value;
  private readonly stack: Frame[] = [];
  /** The string token in progress (decoded so far), and whether it is a key. */
  private text = '';
  private isKey = false;
  /** An escape in progress: `\` seen (`escape === ''`), or `\u` and the hex digits so far. */
  private escape: string | undefined;
  /** The number or literal token in progress. */
  private token = '';
  /** The complete root value, once read. */
  private root: unknown = NONE;
  private version = 0;
  private snapshotVersion = -1;
  private snapshot: unknown = undefined;
  private failure: string | undefined;
  private offset = 0;
  private buildSize = 0;
  /**
   * Numbers are the one token whose shown value can go back (`1`, `1.` left out, `1.0`): each number token gets an id,
   * and its shown value at the end of the last push is kept, so a push counts a change only when what it shows differs.
   */
  private numberId = 0;
  private shownNumberId = -1;
  private shownNumber: unknown = NONE;

  /** Whether the root value is complete (the text after it is ignored). */
  get done(): boolean {
    return this.at === At.Done;
  }

  /** Why the text is not JSON (with the character's offset), once it is not; `undefined` until then. */
  get error(): string | undefined {
    return this.failure;
  }

  /**
   * Counts the pushes that changed {@link value}: an equal count means the same value (the same object), a new count a
   * value that differs structurally from the one at the end of the push before.
   */
  get changes(): number {
    return this.version;
  }

  /**
   * What building the latest {@link value} cost: the children of the open containers it copied (their complete
   * children are shared, not copied again). A consumer that builds a value per delta can space its reads by it.
   */
  get lastBuildSize(): number {
    return this.buildSize;
  }

  /** The value of the text so far (see the class); `undefined` before anything can be shown. */
  get value(): unknown {
    if (this.snapshotVersion !== this.version) {
      this.snapshotVersion = this.version;
      const value = this.build();
      this.snapshot = value === NONE ? undefined : value;
    }
    return this.snapshot;
  }

  /** Reads the next piece of the text. Returns whether the value may have changed (see {@link changes}). */
  push(chunk: string): boolean {
    const before = this.version;
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      const at = this.at;
      if (at === At.String) {
        i = this.readString(chunk, i);
        continue;
      }
      if (at === At.Done || at === At.Failed) break;
      const ch = chunk[i]!;
      if (at === At.Number || at === At.Literal) {
        // Scan to the end of the token in this chunk in one step: a long number costs one slice, not a concatenation
        // per digit.
        let j = i;
        while (j < n && !DELIMITERS.has(chunk.charCodeAt(j))) j++;
        if (j > i) {
          this.token += chunk.slice(i, j);
          if (at === At.Literal && LITERALS.has(this.token)) this.version++;
          i = j;
          continue;
        }
        if (!this.endToken(i)) break;
        continue; // the delimiter is read in the state after the value
      }
      i++;
      if (ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t') continue;
      switch (at) {
        case At.Value:
        case At.ArrayFirst:
          if (ch === ']' && at === At.ArrayFirst) this.close(true);
          else this.startValue(ch, i - 1);
          break;
        case At.ObjectFirst:
        case At.Key:
          if (ch === '"') {
            this.at = At.String;
            this.isKey = true;
            this.text = '';
          } else if (ch === '}' && at === At.ObjectFirst) this.close(false);
          else this.fail(ch, i - 1, 'a key');
          break;
        case At.Colon:
          if (ch === ':') this.at = At.Value;
          else this.fail(ch, i - 1, '":"');
          break;
        case At.After: {
          const top = this.stack[this.stack.length - 1]!;
          if (ch === ',') this.at = top.array ? At.Value : At.Key;
          else if (ch === (top.array ? ']' : '}')) this.close(top.array);
          else this.fail(ch, i - 1, top.array ? '"," or "]"' : '"," or "}"');
          break;
        }
      }
    }
    this.offset += n;
    if (this.at === At.Number) {
      const shown = this.shownToken();
      if (!this.showsNumber(shown)) this.version++;
      this.shownNumberId = this.numberId;
      this.shownNumber = shown;
    } else this.shownNumberId = -1;
    return this.version !== before;
  }

  /** Whether the last push ended showing `value` for the number token in progress (nothing, if it began since). */
  private showsNumber(value: unknown): boolean {
    return this.shownNumberId === this.numberId ? Object.is(this.shownNumber, value) : value === NONE;
  }

  private startValue(ch: string, index: number): void {
    if (ch === '"') {
      this.at = At.String;
      this.isKey = false;
      this.text = '';
      this.version++;
    } else if (ch === '{' || ch === '[') {
      this.stack.push({ array: ch === '[', items: ch === '[' ? [] : {}, key: undefined, size: 0 });
      this.at = ch === '[' ? At.ArrayFirst : At.ObjectFirst;
      this.version++;
    } else if (ch === '-' || (ch >= '0' && ch <= '9')) {
      this.at = At.Number;
      this.token = ch;
      this.numberId++;
    } else if (ch === 't' || ch === 'f' || ch === 'n') {
      this.at = At.Literal;
      this.token = ch;
    } else this.fail(ch, index, 'a value');
  }

  /** Ends the number or literal in progress at a delimiter (at `index` of the chunk). */
  private endToken(index: number): boolean {
    const token = this.token;
    let value: unknown;
    if (this.at === At.Number) {
      if (!NUMBER.test(token)) return this.fail(token, index - token.length, 'a number');
      value = Number(token);
      if (!this.showsNumber(value)) this.version++;
    } else {
      if (!LITERALS.has(token)) return this.fail(token, index - token.length, 'true, false or null');
      value = LITERALS.get(token);
    }
    this.token = '';
    this.complete(value);
    return true;
  }

  /** Reads string characters from `i`; returns where it stopped (after the closing quote, or the chunk's end). */
  private readString(chunk: string, i: number): number {
    const n = chunk.length;
    let text = this.text;
    let grew = false;
    while (i < n) {
      if (this.escape !== undefined) {
        const ch = chunk[i++]!;
        if (this.escape === '' && ch !== 'u') {
          const decoded = ESCAPES[ch];
          if (decoded === undefined) {
            this.text = text;
            this.fail('\\' + ch, i - 2, 'an escape');
            return n;
          }
          text += decoded;
          grew = true;
          this.escape = undefined;
        } else if (this.escape === '') this.escape = 'u';
        else {
          if (!/[0-9a-fA-F]/.test(ch)) {
            this.text = text;
            this.fail(ch, i - 1, 'a hex digit');
            return n;
          }
          this.escape += ch;
          if (this.escape.length === 5) {
            text += String.fromCharCode(parseInt(this.escape.slice(1), 16));
            grew = true;
            this.escape = undefined;
          }
        }
        continue;
      }
      // The plain run up to the next quote or backslash, in one slice.
      let j = i;
      let code = 0;
      while (j < n && (code = chunk.charCodeAt(j)) !== 34 && code !== 92) {
        if (code < 0x20) {
          this.text = text + chunk.slice(i, j);
          this.fail(chunk[j]!, j, 'a string character (a control character must be escaped)');
          return n;
        }
        j++;
      }
      if (j > i) {
        text += chunk.slice(i, j);
        grew = true;
      }
      if (j >= n) {
        i = j;
        break;
      }
      if (code === 92) {
        this.escape = '';
        i = j + 1;
        continue;
      }
      // The closing quote.
      this.text = '';
      if (grew && !this.isKey) this.version++;
      if (this.isKey) {
        this.stack[this.stack.length - 1]!.key = text;
        this.at = At.Colon;
      } else this.complete(text, false);
      return j + 1;
    }
    this.text = text;
    if (grew && !this.isKey) this.version++;
    return i;
  }

  /** A value is complete: it joins its container (or is the root). `shows`: whether this changes what is shown. */
  private complete(value: unknown, shows = false): void {
    if (shows) this.version++;
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) {
      this.root = value;
      this.at = At.Done;
      return;
    }
    top.size++;
    if (top.array) (top.items as unknown[]).push(value);
    else {
      setOwn(top.items as Record<string, unknown>, top.key!, value);
      top.key = undefined;
    }
    this.at = At.After;
  }

  private close(array: boolean): void {
    const frame = this.stack.pop()!;
    const value = Object.freeze(frame.items);
    if (array) {
      const length = (value as unknown[]).length;
      completeCounts.set(value as unknown[], length);
      // Closing changes no value, so no newer value will show this array: when nothing changed since the latest
      // value was built, its copy is this array, and is now known complete (what `elements` reads at the end).
      const shown = frame.shown;
      if (shown !== undefined && this.snapshotVersion === this.version && shown.length === length)
        completeCounts.set(shown, length);
    }
    this.complete(value);
  }

  /** Stops at text that is not JSON (`index` in the current chunk); the value stays what was read before it. */
  private fail(found: string, index: number, expected: string): false {
    const shown = this.build();
    this.snapshot = shown === NONE ? undefined : shown;
    this.snapshotVersion = this.version;
    this.failure = `Not JSON at offset ${this.offset + index}: expected ${expected}, found ${JSON.stringify(found)}`;
    this.at = At.Failed;
    return false;
  }

  /** The value shown: the token in progress, wrapped in copies of the open containers (their complete parts shared). */
  private build(): unknown {
    if (this.root !== NONE) return this.root;
    let child: Shown = this.shownToken();
    let size = 0;
    for (const frame of this.stack) size += frame.size;
    this.buildSize = size;
    for (let k = this.stack.length - 1; k >= 0; k--) {
      const frame = this.stack[k]!;
      if (frame.array) {
        const items = frame.items as unknown[];
        const copy = items.slice();
        if (child !== NONE) copy.push(child);
        completeCounts.set(copy, items.length);
        frame.shown = copy;
        child = Object.freeze(copy);
      } else {
        const copy: Record<string, unknown> = { ...(frame.items as Record<string, unknown>) };
        if (child !== NONE && frame.key !== undefined) setOwn(copy, frame.key, child);
        child = Object.freeze(copy);
      }
    }
    return child;
  }

  private shownToken(): Shown {
    switch (this.at) {
      case At.String:
        return this.isKey ? NONE : this.text;
      case At.Number:
        return NUMBER.test(this.token) ? Number(this.token) : NONE;
      case At.Literal:
        return LITERALS.has(this.token) ? LITERALS.get(this.token) : NONE;
      default:
        return NONE;
    }
  }
}

/** Sets an own property, `__proto__` included (as JSON.parse does; an assignment would set the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

// What ends a number or a literal: JSON whitespace, `,`, `]`, `}`, `:`, and the start of a string (as
// `parsePartialJson` scans them; anything else is read into the token and found invalid at its end).
const DELIMITERS = new Set([0x20, 0x0a, 0x0d, 0x09, 0x2c, 0x5d, 0x7d, 0x3a]);
