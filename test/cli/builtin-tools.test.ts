// The command's built-in tools, called as the agent calls them: confined to the working directory (.., absolute paths,
// symlinks), cancellable, and leaving no abort listener behind however many calls share a run's signal.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { getEventListeners } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentToolResult, AnyAgentTool, ToolExecuteContext } from 'cubepi';
import { evaluate } from '../../src/cli/tools/calculator-tool.js';
import { builtinTools } from '../../src/cli/tools/builtin-tools.js';
import { sleep, weather } from '../../src/cli/example-weather.js';
import { workdir } from './cli-harness.js';

function tools(dir: string): Map<string, AnyAgentTool> {
  return new Map(builtinTools({ dir, allowWrite: true, allowShell: true }).map((tool) => [tool.name, tool]));
}

/** Calls a tool's execute as the loop does, with `signal`; resolves with its result or the error it threw. */
async function call(
  tool: AnyAgentTool,
  args: Record<string, unknown>,
  signal = new AbortController().signal,
  updates: AgentToolResult[] = [],
): Promise<AgentToolResult | Error> {
  const context = { signal, onUpdate: (u: AgentToolResult) => updates.push(u) } as unknown as ToolExecuteContext;
  try {
    return (await tool.execute('call-1', tool.parameters.parse(args), context)) as AgentToolResult;
  } catch (error) {
    return error as Error;
  }
}

const text = (result: AgentToolResult | Error) =>
  result instanceof Error
    ? `Error: ${result.message}`
    : result.content.map((b) => ('text' in b ? b.text : '')).join('');

describe('built-in tools', () => {
  it('refuse every way out of the working directory, with a message the model can act on', async () => {
    const dir = workdir();
    const outside = workdir();
    writeFileSync(join(outside, 'secret.txt'), 'TOP SECRET');
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'file-link'));
    symlinkSync(outside, join(dir, 'dir-link'));
    mkdirSync(join(dir, 'inside'));
    writeFileSync(join(dir, 'inside/a.txt'), 'A');
    symlinkSync(join(dir, 'inside/a.txt'), join(dir, 'inner-link'));
    const t = tools(dir);
    const refused = [
      await call(t.get('read_file')!, { path: '../secret.txt' }),
      await call(t.get('read_file')!, { path: join(outside, 'secret.txt') }),
      await call(t.get('read_file')!, { path: 'file-link' }),
      await call(t.get('read_file')!, { path: 'dir-link/secret.txt' }),
      await call(t.get('list_files')!, { path: 'dir-link' }),
      await call(t.get('search_files')!, { pattern: 'SECRET', path: 'dir-link' }),
      await call(t.get('write_file')!, { path: 'dir-link/new.txt', content: 'x' }),
      await call(t.get('write_file')!, { path: '../escape.txt', content: 'x' }),
    ];
    for (const result of refused) expect(text(result)).toMatch(/^Error: ".+" is outside the working directory /);
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    // A symlink that stays inside, and `..` that comes back in, are fine.
    expect(text(await call(t.get('read_file')!, { path: 'inner-link' }))).toBe('A');
    expect(text(await call(t.get('read_file')!, { path: 'inside/../inside/a.txt' }))).toBe('A');
    // search_files does not follow the directory symlink out either.
    expect(text(await call(t.get('search_files')!, { pattern: 'SECRET' }))).toBe('No match for /SECRET/');
  });

  it('read, list, search, write, calculate and tell the time', async () => {
    const dir = workdir();
    writeFileSync(join(dir, 'notes.txt'), 'one\ntwo TODO\nthree\n');
    mkdirSync(join(dir, 'src'));
    const t = tools(dir);
    expect(text(await call(t.get('read_file')!, { path: 'notes.txt', offset: 2, limit: 1 }))).toBe(
      'two TODO\n… (2 more lines: read with offset 3)',
    );
    expect(text(await call(t.get('list_files')!, {}))).toBe('notes.txt\nsrc/');
    expect(text(await call(t.get('search_files')!, { pattern: 'todo', ignoreCase: true }))).toBe(
      'notes.txt:2: two TODO',
    );
    expect(text(await call(t.get('write_file')!, { path: 'src/x.ts', content: 'é' }))).toBe(
      'Wrote 2 bytes to src/x.ts',
    );
    expect(readFileSync(join(dir, 'src/x.ts'), 'utf8')).toBe('é');
    expect(text(await call(t.get('calculator')!, { expression: '(2 + 3) * 4 ^ 2 - sqrt(16) / -2' }))).toBe('82');
    expect(text(await call(t.get('calculator')!, { expression: '2 +' }))).toMatch(/^Error: syntax error in "2 \+"/);
    expect(() => evaluate('process.exit()')).toThrow(/unknown name "process"/);
    expect(text(await call(t.get('current_time')!, { timeZone: 'Europe/Oslo' }))).toMatch(/^\d{4}-\d\d-\d\dT.+Z \(/);
    expect(text(await call(t.get('current_time')!, { timeZone: 'Mars/Base' }))).toMatch(
      /unknown time zone "Mars\/Base"/,
    );
  });

  it('run_command: exit code and output, progress as it comes, killed when the run is cancelled', async () => {
    const dir = workdir();
    const run = tools(dir).get('run_command')!;
    const updates: AgentToolResult[] = [];
    const ok = await call(run, { command: 'echo hi; echo err >&2; exit 3' }, undefined, updates);
    expect(ok).toMatchObject({ isError: true, details: { exitCode: 3 } });
    expect(text(ok)).toMatch(/^exit code 3\n(hi\nerr|err\nhi)\n$/);
    expect(updates.length).toBeGreaterThan(0);
    const controller = new AbortController();
    // A background child of the shell: killing sh alone would leave it to create the file.
    const line = '(sleep 0.3; touch finished) & echo started; wait';
    const pending = call(run, { command: line }, controller.signal, updates);
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (!updates.some((u) => text(u).includes('started'))) return;
        clearInterval(check);
        resolve();
      }, 10);
    });
    controller.abort(new Error('cancelled by the user'));
    expect(text(await pending)).toBe('Error: cancelled by the user');
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(existsSync(join(dir, 'finished'))).toBe(false); // the whole process group was killed
  });

  it('leave no abort listener on the run signal, however many calls share it', async () => {
    const dir = workdir();
    writeFileSync(join(dir, 'a.txt'), 'A');
    const t = tools(dir);
    const signal = new AbortController().signal;
    for (let i = 0; i < 20; i++) {
      await call(t.get('read_file')!, { path: 'a.txt' }, signal);
      await call(t.get('list_files')!, {}, signal);
      await call(t.get('search_files')!, { pattern: 'A' }, signal);
      await call(t.get('write_file')!, { path: 'b.txt', content: 'B' }, signal);
      await call(t.get('run_command')!, { command: 'true' }, signal);
      await call(t.get('calculator')!, { expression: '1+1' }, signal);
      await call(t.get('current_time')!, {}, signal);
      await sleep(1, signal); // the wait inside `cubepi mcp`'s weather tool (it leaked one listener per call)
    }
    await call(weather as AnyAgentTool, { city: 'Oslo' }, signal);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });
});
