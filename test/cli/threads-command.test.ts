// `cubepi threads`, the stores (`--db`, `CUBEPI_DB`: SQLite by default, PostgreSQL) and the configuration file, through
// the built command.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplayServer, sse } from '../providers/replay-server.js';
import {
  connectionString,
  dropSchema,
  pgAvailable,
  requirePostgres,
  testPool,
  uniqueSchema,
} from '../checkpoint/postgres-server.js';
import { cleanEnv, ensureBuilt, runCli, workdir } from './cli-harness.js';
import { openaiText } from './wire.js';

requirePostgres();
let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
  await ensureBuilt();
}, 120_000);
afterAll(() => server.close());

const demo = (cwd: string, thread: string, ...more: string[]) =>
  runCli(['run', `hello from ${thread}`, '--provider', 'faux', '--delay', '0', '--thread', thread, ...more], { cwd });

describe('cubepi threads', () => {
  it('list, show, rm, and clear errors for an unknown thread or action', async () => {
    const cwd = workdir();
    expect((await runCli(['threads', 'list'], { cwd })).stdout).toBe(
      'no threads in SQLite at .cubepi/threads.db (cubepi run "…" or cubepi chat starts one)\n',
    );
    await demo(cwd, 'alpha');
    await demo(cwd, 'beta');
    const list = await runCli(['threads', 'list'], { cwd });
    expect(list.code).toBe(0);
    const rows = list.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^THREAD\s+MSGS\s+UPDATED\s+FIRST PROMPT$/);
    expect(rows.slice(1).map((row) => row.split(/\s+/)[0])).toEqual(['beta', 'alpha']); // newest first
    expect(rows[1]).toMatch(/^beta\s+\d+\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+hello from beta$/);
    const json = (await runCli(['threads', 'list', '--json', '--limit', '1'], { cwd })).stdout.trimEnd().split('\n');
    expect(json.map((line) => JSON.parse(line) as { threadId: string })).toMatchObject([
      { threadId: 'beta', firstPrompt: 'hello from beta' },
    ]);
    const show = await runCli(['threads', 'show', 'alpha'], { cwd });
    expect(show.stdout).toMatch(
      /^thread alpha: \d+ messages \(SQLite at \.cubepi\/threads\.db\)\n> hello from alpha\n/,
    );
    expect(show.stdout).toContain('  ⚙ calculator({"expression":"6 * 7"})');
    expect(show.stdout).toContain('  ✓ calculator → 42');
    expect(await runCli(['threads', 'rm', 'alpha'], { cwd })).toMatchObject({
      code: 0,
      stdout: 'deleted thread alpha\n',
    });
    const gone = await runCli(['threads', 'show', 'alpha'], { cwd });
    expect(gone).toMatchObject({ code: 1, stdout: '' });
    expect(gone.stderr).toBe(
      'cubepi: no thread "alpha" in SQLite at .cubepi/threads.db: cubepi threads list shows the stored threads\n',
    );
    expect((await runCli(['threads', 'rm', 'alpha'], { cwd })).code).toBe(1);
    expect(await runCli(['threads', 'frob'], { cwd })).toMatchObject({ code: 2 });
    expect((await runCli(['threads', 'show'], { cwd })).stderr).toBe(
      'cubepi: threads show: which thread? (cubepi threads show <id>)\n',
    );
    expect((await runCli(['threads', 'list', '--limit', '0'], { cwd })).code).toBe(2);
  });

  it('fork: a new thread with the first messages of another, which stays as it was', async () => {
    const cwd = workdir();
    await demo(cwd, 'base');
    const listed = JSON.parse((await runCli(['threads', 'show', 'base', '--json'], { cwd })).stdout) as {
      messages: unknown[];
    };
    const whole = await runCli(['threads', 'fork', 'base', '--as', 'copy'], { cwd });
    expect(whole).toMatchObject({ code: 0, stdout: 'forked thread base into copy\n' });
    const cut = await runCli(['threads', 'fork', 'base', '--at', '1', '--as', 'first'], { cwd });
    expect(cut).toMatchObject({ code: 0, stdout: 'forked thread base at message 1 into first\n' });
    const count = async (id: string) =>
      (JSON.parse((await runCli(['threads', 'show', id, '--json'], { cwd })).stdout) as { messages: unknown[] })
        .messages.length;
    expect(await count('copy')).toBe(listed.messages.length);
    expect(await count('first')).toBe(1);
    expect(await count('base')).toBe(listed.messages.length);
    const past = await runCli(['threads', 'fork', 'base', '--at', '999', '--as', 'x'], { cwd });
    expect(past.code).toBe(2);
    expect(past.stderr).toMatch(/--at 999 is past the end of thread base/);
    expect((await runCli(['threads', 'fork', 'base', '--as', 'copy'], { cwd })).code).toBe(1); // taken
  });

  it('--db and CUBEPI_DB name another SQLite file; --db wins over CUBEPI_DB', async () => {
    const cwd = workdir();
    await demo(cwd, 'in-file', '--db', 'other.db');
    const viaEnv = await runCli(['threads', 'list', '--json'], { cwd, env: cleanEnv({ CUBEPI_DB: 'other.db' }) });
    expect(viaEnv.stdout).toContain('"threadId":"in-file"');
    const override = await runCli(['threads', 'list', '--db', '.cubepi/threads.db'], {
      cwd,
      env: cleanEnv({ CUBEPI_DB: 'other.db' }),
    });
    expect(override.stdout).toContain('no threads in SQLite at .cubepi/threads.db');
  });

  describe.skipIf(!pgAvailable)('on PostgreSQL', () => {
    const admin = testPool();
    const schema = uniqueSchema('cli');
    afterAll(async () => {
      await dropSchema(admin, schema);
      await admin.end();
    });

    it('--db postgres://… keeps threads across processes; threads list and show read them', async () => {
      const db = `${connectionString()}${connectionString().includes('?') ? '&' : '?'}schema=${schema}`;
      const cwd = workdir();
      await demo(cwd, 'pg-thread', '--db', db);
      const list = await runCli(['threads', 'list', '--db', db], { cwd });
      expect(list.stdout).toMatch(/^pg-thread\s+\d+\s/m);
      const show = await runCli(['threads', 'show', 'pg-thread'], { cwd, env: cleanEnv({ CUBEPI_DB: db }) });
      expect(show.stdout).toContain('> hello from pg-thread');
      expect(show.stdout).toContain(`(PostgreSQL at `);
      const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".cubepi_messages`);
      expect(Number(rows[0]!.n)).toBeGreaterThan(2);
    });
  });
});

describe('configuration', () => {
  it('cubepi.config.json sets the system prompt, the model and the tools; options win over it', async () => {
    const cwd = workdir();
    writeFileSync(
      join(cwd, 'cubepi.config.json'),
      JSON.stringify({ systemPrompt: 'Answer in French.', model: 'gpt-4.1-mini', tools: ['calculator'] }),
    );
    server.reset();
    server.reply(sse(openaiText('Bonjour.')), sse(openaiText('Hello.')));
    const env = cleanEnv({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: `${server.url}/v1` });
    expect((await runCli(['run', 'hi', '--db', 'memory'], { cwd, env })).stdout).toBe('Bonjour.\n');
    const body = server.requests[0]!.body as { model: string; messages: { content: string }[]; tools: unknown[] };
    expect(body.model).toBe('gpt-4.1-mini');
    expect(body.messages[0]!.content).toBe('Answer in French.');
    expect(body.tools).toHaveLength(1);
    await runCli(['run', 'hi', '--db', 'memory', '--model', 'gpt-4o', '--system', 'Be terse.'], { cwd, env });
    expect(server.requests[1]!.body).toMatchObject({
      model: 'gpt-4o',
      messages: [{ content: 'Be terse.' }, { content: 'hi' }],
    });
  });

  it('package.json#cubepi is read when there is no cubepi.config.json; a bad configuration exits 2, naming it', async () => {
    const cwd = workdir();
    writeFileSync(join(cwd, 'package.json'), JSON.stringify({ name: 'app', cubepi: { middleware: { maxTurns: 0 } } }));
    const bad = await runCli(['run', 'hi', '--provider', 'faux'], { cwd });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^cubepi: package\.json#cubepi at middleware\.maxTurns: .+ \(see docs\/cli\.md#configuration\)\n$/,
    );
    writeFileSync(join(cwd, 'cubepi.config.json'), '{ "modle": "gpt-4o" }');
    const typo = await runCli(['run', 'hi', '--provider', 'faux'], { cwd });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^cubepi: cubepi\.config\.json: .*modle/);
    writeFileSync(join(cwd, 'cubepi.config.json'), '{ "systemPrompt": "From the file." }');
    const good = await runCli(['run', 'hi', '--provider', 'faux', '--delay', '0', '--json', '--db', 'memory'], { cwd });
    expect(good.code).toBe(0);
  });
});
