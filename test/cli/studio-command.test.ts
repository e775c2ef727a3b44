// `cubepi studio` as a process: a random token printed in the studio's URL, required by the studio's API and the
// agent server's routes on /api; the page itself served; a run started on /api is traced into --trace's file and read
// back by the studio's runs route once it ended.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, ensureBuilt, startCli, workdir } from './cli-harness.js';

beforeAll(ensureBuilt, 180_000);

describe('cubepi studio', () => {
  it('prints its URL with a token the API requires, and traces the runs it serves', { timeout: 60_000 }, async () => {
    const cwd = workdir();
    const cli = startCli(['studio', '--port', '0', '--db', 'memory', '--trace', 'traces.jsonl', '--delay', '0'], {
      cwd,
      env: cleanEnv(),
    });
    try {
      await cli.waitFor(/cubepi studio: http:\/\/127\.0\.0\.1:\d+\/#token=[\w-]+ \(/);
      const banner = /cubepi studio: .*\n/.exec(cli.output.stdout)![0];
      const origin = /http:\/\/127\.0\.0\.1:\d+/.exec(banner)![0];
      const token = /#token=([\w-]+) /.exec(banner)![1]!;
      expect(banner).toContain(join(cwd, 'traces.jsonl'));
      const auth = { authorization: `Bearer ${token}` };
      expect((await fetch(`${origin}/`)).status).toBe(200);
      expect((await fetch(`${origin}/studio-api/config`)).status).toBe(401);
      expect((await fetch(`${origin}/api/threads`)).status).toBe(401);
      const config = await fetch(`${origin}/studio-api/config`, { headers: auth });
      expect(await config.json()).toEqual({ apiBase: '/api', traces: true, live: true });
      const started = await fetch(`${origin}/api/threads/t1/runs`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'hello' }),
      });
      expect(started.status).toBe(201);
      const { runId } = (await started.json()) as { runId: string };
      // The run's spans reach the file when it ends (the demo model calls a tool, then answers).
      await expect
        .poll(
          () =>
            existsSync(join(cwd, 'traces.jsonl')) && readFileSync(join(cwd, 'traces.jsonl'), 'utf8').includes(runId),
          { timeout: 30_000 },
        )
        .toBe(true);
      const threads = await fetch(`${origin}/studio-api/threads`, { headers: auth });
      expect(((await threads.json()) as { threads: { threadId: string }[] }).threads.map((t) => t.threadId)).toEqual([
        't1',
      ]);
    } finally {
      cli.child.kill('SIGTERM');
      await cli.done;
    }
  });
});
