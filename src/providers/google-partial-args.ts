/**
 * Vertex AI's streamed function-call arguments (`partialArgs`), put back together into the arguments object.
 * @module
 */

/** One entry of a streamed `functionCall.partialArgs`: a value at a JSON path, a string possibly in pieces. */
export interface GeminiPartialArg {
  readonly jsonPath?: string | undefined;
  readonly stringValue?: string | undefined;
  readonly numberValue?: number | undefined;
  readonly boolValue?: boolean | undefined;
  readonly nullValue?: unknown;
  readonly willContinue?: boolean | undefined;
}

/**
 * Collects the `partialArgs` of one streamed call. Vertex sends each value at its JSON path (`$.recipe.steps[1]`,
 * `$.operations[0].price`); a string may come in several pieces for the same path (each but the last with `willContinue`), which are
 * concatenated. The
 * object is the truth: what the call is finally given is `JSON.stringify(value)` of it, never a guess from pieces.
 *
 * Throws an `Error` naming the path for a path it cannot read, so the stream ends with an `unknown` error event
 * rather than a call with silently wrong arguments.
 */
export class PartialArgs {
  /** The arguments so far. */
  readonly value: Record<string, unknown> = {};
  /** The path whose string the last entry said would continue (`willContinue`). */
  private continuing: string | undefined;

  /** Applies one entry. */
  apply(arg: GeminiPartialArg): void {
    const jsonPath = arg.jsonPath ?? '';
    const path = parseJsonPath(jsonPath);
    const continued = this.continuing === jsonPath;
    this.continuing = arg.willContinue === true ? jsonPath : undefined;
    let value: unknown;
    if (typeof arg.stringValue === 'string') {
      const previous = continued ? read(this.value, path) : undefined;
      value = (typeof previous === 'string' ? previous : '') + arg.stringValue;
    } else if (typeof arg.numberValue === 'number') value = arg.numberValue;
    else if (typeof arg.boolValue === 'boolean') value = arg.boolValue;
    else if ('nullValue' in arg) value = null;
    else return; // nothing to set (a bare willContinue)
    write(this.value, path, value);
  }
}

type Step = string | number;

/** `$.a.b[0]['c d']` → `['a', 'b', 0, 'c d']`. */
function parseJsonPath(path: string): Step[] {
  if (!path.startsWith('$')) throw new Error(`Gemini partialArgs: unreadable jsonPath ${JSON.stringify(path)}`);
  const steps: Step[] = [];
  const pattern = /\.([^.[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]/y;
  pattern.lastIndex = 1;
  while (pattern.lastIndex < path.length) {
    const match = pattern.exec(path);
    if (match === null) throw new Error(`Gemini partialArgs: unreadable jsonPath ${JSON.stringify(path)}`);
    if (match[1] !== undefined) steps.push(match[1]);
    else if (match[2] !== undefined) steps.push(Number(match[2]));
    else steps.push((match[3] ?? match[4])!.replace(/\\(.)/g, '$1'));
  }
  if (steps.length === 0) throw new Error(`Gemini partialArgs: jsonPath ${JSON.stringify(path)} names no field`);
  // Arguments are plain data: a path through an object's prototype would write outside it.
  if (steps.some((step) => step === '__proto__' || step === 'constructor' || step === 'prototype')) {
    throw new Error(`Gemini partialArgs: jsonPath ${JSON.stringify(path)} is not a plain data path`);
  }
  return steps;
}

function read(root: Record<string, unknown>, path: readonly Step[]): unknown {
  let node: unknown = root;
  for (const step of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string | number, unknown>)[step];
  }
  return node;
}

function write(root: Record<string, unknown>, path: readonly Step[], value: unknown): void {
  let node: Record<string | number, unknown> = root;
  for (let i = 0; i < path.length - 1; i++) {
    const step = path[i]!;
    let next = node[step];
    if (next === null || typeof next !== 'object') {
      next = typeof path[i + 1] === 'number' ? [] : {};
      node[step] = next;
    }
    node = next as Record<string | number, unknown>;
  }
  node[path[path.length - 1]!] = value;
}
