/**
 * The assertions of the testing kit, without `node:assert`, so `cubepi/testing` runs in browsers and edge runtimes.
 * @module
 */

/**
 * A failed assertion. Carries `actual`, `expected` and `showDiff`, from which vitest, jest and mocha print a diff;
 * `code` is node's (`ERR_ASSERTION`).
 */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
  readonly code = 'ERR_ASSERTION';
  readonly actual: unknown;
  readonly expected: unknown;
  readonly operator: string;
  readonly showDiff: boolean;

  constructor(message: string, details: { actual: unknown; expected: unknown; operator: string; showDiff?: boolean }) {
    super(message);
    this.actual = details.actual;
    this.expected = details.expected;
    this.operator = details.operator;
    this.showDiff = details.showDiff ?? false;
  }
}

/** The assertions the conformance suite and the marble kit use. */
export interface Assert {
  /** Fails unless `value` is truthy. */
  ok(value: unknown, message?: string): asserts value;
  /** Fails unless `Object.is(actual, expected)`. */
  equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
  /**
   * Fails unless `actual` and `expected` are deeply and strictly equal, with the rules of node's `deepStrictEqual`:
   * `Object.is` for primitives, the same prototypes, the same own enumerable keys (a key set to `undefined` is not a
   * missing key), Dates by time, RegExps by source and flags, Errors also by name and message, Maps and Sets by
   * content, typed arrays by bytes, cycles allowed. The message names the path of the first difference.
   */
  deepEqual<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
  /**
   * Fails unless `promise` (or what `promise()` returns) rejects. `check` is a function that must return `true` for
   * the rejection (what it throws fails the assertion with its own message), or, as a string, the message.
   */
  rejects(
    promise: PromiseLike<unknown> | (() => PromiseLike<unknown>),
    check?: ((error: unknown) => boolean) | string,
    message?: string,
  ): Promise<void>;
}

/** See {@link Assert}. */
export const assert: Assert = {
  ok(value, message) {
    if (!value) {
      throw new AssertionError(prefix(message) + `expected a truthy value, got ${show(value)}`, {
        actual: value,
        expected: true,
        operator: '==',
      });
    }
  },
  equal(actual, expected, message) {
    if (!Object.is(actual, expected)) {
      throw new AssertionError(prefix(message) + `expected ${show(expected)}, got ${show(actual)}`, {
        actual,
        expected,
        operator: 'strictEqual',
        showDiff: true,
      });
    }
  },
  deepEqual(actual, expected, message) {
    const difference = firstDifference(actual, expected, '$', new Map());
    if (difference !== undefined) {
      throw new AssertionError(prefix(message) + `values differ at ${difference}`, {
        actual,
        expected,
        operator: 'deepStrictEqual',
        showDiff: true,
      });
    }
  },
  async rejects(promise, check, message) {
    const text = typeof check === 'string' ? check : message;
    let error: unknown;
    try {
      await (typeof promise === 'function' ? promise() : promise);
    } catch (caught) {
      error = { caught };
    }
    if (error === undefined) {
      throw new AssertionError(prefix(text) + 'expected a rejection, but it resolved', {
        actual: undefined,
        expected: 'a rejection',
        operator: 'rejects',
      });
    }
    const { caught } = error as { caught: unknown };
    if (typeof check === 'function' && check(caught) !== true) {
      throw new AssertionError(prefix(text) + `the rejection failed the check: ${show(caught)}`, {
        actual: caught,
        expected: 'a rejection passing the check',
        operator: 'rejects',
      });
    }
  },
};

function prefix(message: string | undefined): string {
  return message === undefined ? '' : `${message}: `;
}

/**
 * Where `actual` first differs from `expected` (a path from `$`, and what differs there), or `undefined` when they are
 * deeply and strictly equal. `seen` pairs the objects already being compared, so cycles end.
 */
function firstDifference(
  actual: unknown,
  expected: unknown,
  path: string,
  seen: Map<object, object>,
): string | undefined {
  if (Object.is(actual, expected)) return undefined;
  const here = `${path}: expected ${show(expected)}, got ${show(actual)}`;
  if (typeof actual !== 'object' || typeof expected !== 'object' || actual === null || expected === null) return here;
  if (Object.getPrototypeOf(actual) !== Object.getPrototypeOf(expected)) {
    return `${path}: expected ${kindOf(expected)}, got ${kindOf(actual)}`;
  }
  if (seen.get(actual) === expected) return undefined;
  seen.set(actual, expected);

  if (actual instanceof Date) return actual.getTime() === (expected as Date).getTime() ? undefined : here;
  if (actual instanceof RegExp) {
    const other = expected as RegExp;
    return actual.source === other.source && actual.flags === other.flags ? undefined : here;
  }
  if (actual instanceof Error) {
    const error = expected as Error;
    if (actual.name !== error.name) return `${path}.name: expected ${show(error.name)}, got ${show(actual.name)}`;
    if (actual.message !== error.message) {
      return `${path}.message: expected ${show(error.message)}, got ${show(actual.message)}`;
    }
  }
  if (ArrayBuffer.isView(actual)) {
    const a = new Uint8Array(actual.buffer, actual.byteOffset, actual.byteLength);
    const view = expected as ArrayBufferView;
    const b = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    if (a.length !== b.length) return `${path}: expected ${b.length} bytes, got ${a.length}`;
    const at = a.findIndex((byte, i) => byte !== b[i]);
    return at === -1 ? undefined : `${path}: bytes differ from byte ${at}`;
  }
  if (actual instanceof Map) {
    const map = expected as Map<unknown, unknown>;
    if (actual.size !== map.size) return `${path}: expected a Map of ${map.size} entries, got ${actual.size}`;
    for (const [key, value] of map) {
      const keys = actual.has(key) ? [key] : [...actual.keys()].filter((candidate) => isDeepEqual(candidate, key));
      if (keys.length === 0) return `${path}: the key ${show(key)} is missing`;
      const difference = firstDifference(actual.get(keys[0]), value, `${path}.get(${show(key)})`, seen);
      if (difference !== undefined) return difference;
    }
    return keysDifference(actual, expected, path, seen);
  }
  if (actual instanceof Set) {
    const set = expected as Set<unknown>;
    if (actual.size !== set.size) return `${path}: expected a Set of ${set.size} values, got ${actual.size}`;
    for (const value of set) {
      if (actual.has(value)) continue;
      if (![...actual].some((candidate) => isDeepEqual(candidate, value)))
        return `${path}: the value ${show(value)} is missing`;
    }
    return keysDifference(actual, expected, path, seen);
  }
  if (Array.isArray(actual) && actual.length !== (expected as unknown[]).length) {
    return `${path}: expected an array of ${(expected as unknown[]).length}, got ${actual.length} (${show(actual)})`;
  }
  return keysDifference(actual, expected, path, seen);
}

function isDeepEqual(actual: unknown, expected: unknown): boolean {
  return firstDifference(actual, expected, '$', new Map()) === undefined;
}

/** Compares own enumerable keys (strings and symbols), then the value of each. */
function keysDifference(actual: object, expected: object, path: string, seen: Map<object, object>): string | undefined {
  const actualKeys = ownKeys(actual);
  const expectedKeys = ownKeys(expected);
  const missing = expectedKeys.find((key) => !actualKeys.includes(key));
  if (missing !== undefined)
    return `${pathTo(path, missing)}: expected ${show(at(expected, missing))}, but it is missing`;
  const extra = actualKeys.find((key) => !expectedKeys.includes(key));
  if (extra !== undefined) return `${pathTo(path, extra)}: not expected, got ${show(at(actual, extra))}`;
  for (const key of expectedKeys) {
    const difference = firstDifference(at(actual, key), at(expected, key), pathTo(path, key), seen);
    if (difference !== undefined) return difference;
  }
  return undefined;
}

function ownKeys(value: object): (string | symbol)[] {
  return Reflect.ownKeys(value).filter((key) => Object.prototype.propertyIsEnumerable.call(value, key));
}

function at(value: object, key: string | symbol): unknown {
  return (value as Record<string | symbol, unknown>)[key];
}

function pathTo(path: string, key: string | symbol): string {
  if (typeof key === 'symbol') return `${path}[${key.toString()}]`;
  if (/^(0|[1-9][0-9]*)$/.test(key)) return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function kindOf(value: object): string {
  const prototype = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null;
  if (prototype === null) return 'an object with a null prototype';
  return `an instance of ${prototype.constructor?.name || 'an anonymous class'} (${show(value)})`;
}

/** A short rendering of a value for a message (at most ~100 characters). */
function show(value: unknown): string {
  if (typeof value === 'string') return truncate(JSON.stringify(value));
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (typeof value === 'function') return `[Function ${value.name || 'anonymous'}]`;
  if (typeof value !== 'object' || value === null) return String(value);
  if (value instanceof Error) return `${value.name}: ${truncate(value.message)}`;
  if (value instanceof Date) return `Date(${Number.isNaN(value.getTime()) ? 'invalid' : value.toISOString()})`;
  if (value instanceof Map) return `Map(${value.size})`;
  if (value instanceof Set) return `Set(${value.size})`;
  try {
    const parents: unknown[] = [];
    const json = JSON.stringify(value, function (this: unknown, _key, inner: unknown) {
      // `this` is the object holding `inner`: drop what the path above already holds (a cycle).
      while (parents.length > 0 && parents.at(-1) !== this) parents.pop();
      if (typeof inner === 'object' && inner !== null) {
        if (parents.includes(inner)) return '[Circular]';
        parents.push(inner);
      }
      if (inner === undefined) return '[undefined]';
      if (typeof inner === 'bigint') return `${inner}n`;
      return inner;
    });
    // An object whose toJSON gives nothing: its tag.
    return truncate(json ?? Object.prototype.toString.call(value));
  } catch {
    return Object.prototype.toString.call(value);
  }
}

function truncate(text: string): string {
  return text.length <= 100 ? text : `${text.slice(0, 97)}...`;
}
