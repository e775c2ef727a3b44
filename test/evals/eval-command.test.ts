// `cubepi eval run | compare`: the command imports an eval module, prints its table and writes its JSONL; compare
// prints what changed between two results files. (The command's function, called in-process; `cubepi --help` listing
// it is checked by test/package.test.ts on the built command.)
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { evalCommand } from '../../src/cli/eval-command.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cubepi-eval-cli-'));

async function cli(...args: string[]) {
  let out = '';
  let err = '';
  const code = await evalCommand(args, { out: (t) => void (out += t), err: (t) => void (err += t), cwd: here });
  return { code, out, err };
}

describe('cubepi eval', () => {
  it('run prints a row per case and a column per scorer, and writes the same JSONL on every run', async () => {
    const first = await cli('run', 'weather.eval.ts', '--out', join(dir, 'a.jsonl'), '--threshold', '1');
    expect(first.err).toBe('');
    expect(first.code).toBe(0);
    const lines = first.out.split('\n');
    expect(lines[0]).toMatch(/^CASE\s+PASS\s+OUTCOME\s+EXACT\s+TRAJECTORY\s+TURNS\s+TOKENS\s+LATENCY\s+ERROR$/);
    expect(lines[1]).toMatch(/^paris-f\s+yes\s+completed\s+1\s+1\s+3\s+\d+\s+\d+$/);
    expect(lines[2]).toMatch(/^oslo-c\s+yes\s+completed\s+1\s+1\s+2\s+\d+\s+\d+$/);
    expect(first.out).toContain('pass rate 1 (replay)');
    const second = await cli('run', 'weather.eval.ts', '--out', join(dir, 'b.jsonl'));
    expect(second.out).toBe(first.out);
    expect(readFileSync(join(dir, 'b.jsonl'), 'utf8')).toBe(readFileSync(join(dir, 'a.jsonl'), 'utf8'));
  });

  it('compare prints the changed pairs; --threshold fails a run below it', async () => {
    // A worse recording: Oslo's answer changed.
    const recs = readFileSync(join(here, 'weather.recordings.jsonl'), 'utf8').replace('It is 5°C in Oslo.', 'Cold.');
    writeFileSync(join(dir, 'worse.jsonl'), recs);
    await cli('run', 'weather.eval.ts', '--out', join(dir, 'before.jsonl'));
    const worse = await cli(
      'run',
      'weather.eval.ts',
      '--recordings',
      join(dir, 'worse.jsonl'),
      '--out',
      join(dir, 'after.jsonl'),
      '--threshold',
      '0.9',
    );
    expect(worse.code).toBe(1);
    expect(worse.out).toMatch(/^oslo-c\s+NO\s+completed\s+0\s/m);
    const diff = await cli('compare', join(dir, 'before.jsonl'), join(dir, 'after.jsonl'));
    expect(diff.code).toBe(0);
    expect(diff.out).toMatch(/^CASE\s+SCORER\s+BEFORE\s+AFTER\s+DELTA\s+STATUS$/m);
    expect(diff.out).toMatch(/^oslo-c\s+exact\s+1\s+0\s+-1\s+regressed$/m);
    expect(diff.out).not.toContain('paris-f');
    expect(diff.out).toContain('pass rate 1 -> 0.500 (-0.500)');
  });

  it('bad usage exits 2 with the help; a file that is not results exits 1 naming it', async () => {
    expect((await cli('run')).code).toBe(2);
    expect((await cli('run', 'x', '--mode', 'later')).code).toBe(2);
    expect((await cli('compare', 'one.jsonl')).err).toContain('Usage: cubepi eval run');
    writeFileSync(join(dir, 'junk.jsonl'), 'not json\n');
    const junk = await cli('compare', join(dir, 'junk.jsonl'), join(dir, 'junk.jsonl'));
    expect(junk).toMatchObject({ code: 1, err: 'cubepi eval: eval results line 1: not valid JSON\n' });
    const missing = await cli('run', 'no-such.eval.ts');
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('cubepi eval:');
  });
});
