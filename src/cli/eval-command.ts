/**
 * `cubepi eval run <module> | compare <a.jsonl> <b.jsonl>`: runs an eval a module describes and prints its table
 * (writing its JSONL), or compares two results files.
 * @module
 */
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  compare,
  evaluate,
  formatComparison,
  formatReport,
  loadRecordings,
  parseReport,
  reportToJSONL,
  type EvaluateOptions,
} from '../evals/index.js';
import type { Command } from './command.js';

export const EVAL_HELP = `Usage: cubepi eval run <module> [--mode replay|live] [--recordings <path>] [--out <path>] [--threshold <0..1>]
       cubepi eval compare <before.jsonl> <after.jsonl> [--all]

run imports <module> (JavaScript, or TypeScript under a loader), whose default export is the options of evaluate()
from cubepi/evals (or a function returning them), runs the eval and prints a table: a row per case, a column per
scorer. compare prints the case x scorer pairs whose score changed between two results files.

Options:
  --mode <m>          replay or live (default: the module's)
  --recordings <path> recorded calls (JSONL) to replay (default: the module's)
  --out <path>        write the results as JSONL
  --threshold <n>     exit 1 when the pass rate is below n (default: never)
  --all               compare: every pair, not only the changed ones
  -h, --help          show this help`;

/** Output streams and the working directory, injected so the command is a plain function. */
interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly cwd: string;
}

/** Runs `cubepi eval …` (`args` after `eval`); resolves with the exit code (2 for bad usage, 1 for a failure). */
export async function evalCommand(args: readonly string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        mode: { type: 'string' },
        recordings: { type: 'string' },
        out: { type: 'string' },
        threshold: { type: 'string' },
        all: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    io.err(`cubepi eval: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(`${EVAL_HELP}\n`);
    return 0;
  }
  const [action, ...files] = positionals;
  const threshold = values.threshold === undefined ? undefined : Number(values.threshold);
  const badMode = values.mode !== undefined && values.mode !== 'replay' && values.mode !== 'live';
  const usable =
    (action === 'run' && files.length === 1) ||
    (action === 'compare' && files.length === 2 && values.out === undefined);
  if (!usable || badMode || (threshold !== undefined && !(threshold >= 0 && threshold <= 1))) {
    io.err(`${EVAL_HELP}\n`);
    return 2;
  }
  const at = (path: string) => resolve(io.cwd, path);
  try {
    if (action === 'compare') {
      const [a, b] = await Promise.all(files.map(async (f) => parseReport(await readFile(at(f), 'utf8'))));
      io.out(formatComparison(compare(a!, b!), { all: values.all }));
      return 0;
    }
    const loaded = (await import(pathToFileURL(at(files[0]!)).href)) as { default?: unknown };
    const exported = loaded.default;
    const base = (typeof exported === 'function' ? await (exported as () => unknown)() : exported) as
      EvaluateOptions | undefined;
    if (typeof base !== 'object' || base === null || typeof base.createAgent !== 'function') {
      io.err(`cubepi eval: ${files[0]}: the default export is not the options of evaluate()\n`);
      return 1;
    }
    const options: EvaluateOptions = {
      ...base,
      ...(values.mode === undefined ? {} : { mode: values.mode as 'replay' | 'live' }),
      ...(values.recordings === undefined ? {} : { recordings: await loadRecordings(at(values.recordings)) }),
    };
    const report = await evaluate(options);
    if (values.out !== undefined) await writeFile(at(values.out), reportToJSONL(report));
    io.out(formatReport(report));
    return threshold !== undefined && report.summary.passRate < threshold ? 1 : 0;
  } catch (error) {
    io.err(`cubepi eval: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

export const evalCli: Command = (args, context) =>
  evalCommand(args, {
    out: (text) => void context.stdout.write(text),
    err: (text) => void context.stderr.write(text),
    cwd: context.cwd,
  });
