// `cubepi serve` and its token (issue 37): a random token made at start and printed in the page's URL (as Jupyter
// does), required by every API request; `--no-auth` serves without one on loopback only and says what that gives up.
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, ensureBuilt, runCli, startCli, workdir, type RunningCli } from './cli-harness.js';

beforeAll(ensureBuilt, 180_000);

/** Starts `cubepi serve --port 0 --db memory …args` and resolves with its banner line once it is listening. */
async function started(args: readonly string[]): Promise<{ cli: RunningCli; origin: string; banner: string }> {
  const cli = startCli(['serve', '--port', '0', '--db', 'memory', ...args], { cwd: workdir(), env: cleanEnv() });
  await cli.waitFor(/cubepi serve: http:\/\/127\.0\.0\.1:\d+\/\S* \(/);
  const banner = /cubepi serve: .*\n/.exec(cli.output.stdout)![0];
  return { cli, origin: /http:\/\/127\.0\.0\.1:\d+/.exec(banner)![0], banner };
}

async function stop(cli: RunningCli): Promise<void> {
  cli.child.kill('SIGTERM');
  await cli.done;
}

describe('cubepi serve', () => {
  it(
    'makes a random token at start, prints the page URL with it, and the API requires it',
    { timeout: 60_000 },
    async () => {
      const first = await started([]);
      const second = await started([]);
      try {
        const token = /#token=([\w-]+) /.exec(first.banner)![1]!;
        expect(token).toMatch(/^[\w-]{32}$/);
        expect(/#token=([\w-]+) /.exec(second.banner)![1]).not.toBe(token);
        expect((await fetch(`${first.origin}/`)).status).toBe(200); // the page itself is public
        expect((await fetch(`${first.origin}/api/threads`)).status).toBe(401);
        const ok = await fetch(`${first.origin}/api/threads`, { headers: { authorization: `Bearer ${token}` } });
        expect(ok.status).toBe(200);
        expect(first.cli.output.stderr).not.toContain('--no-auth');
      } finally {
        await Promise.all([stop(first.cli), stop(second.cli)]);
      }
    },
  );

  it('--no-auth serves without a token and says what that gives up', { timeout: 60_000 }, async () => {
    const { cli, origin, banner } = await started(['--no-auth']);
    try {
      expect(banner).not.toContain('token');
      expect(cli.output.stderr).toContain('--no-auth: any program or user on this machine can run the agent');
      expect((await fetch(`${origin}/api/threads`)).status).toBe(200);
      // Still no way in for a web page: a text/plain POST (what a page can send without asking) is refused.
      const post = await fetch(`${origin}/api/threads/t1/runs`, { method: 'POST', body: '{"input":"Hi"}' });
      expect(post.status).toBe(415);
    } finally {
      await stop(cli);
    }
  });

  it('--no-auth off loopback, or with --auth-token, is a usage error', { timeout: 60_000 }, async () => {
    const offLoopback = await runCli(['serve', '--no-auth', '--host', '0.0.0.0', '--db', 'memory'], {
      cwd: workdir(),
      env: cleanEnv(),
    });
    expect(offLoopback.code).toBe(2);
    expect(offLoopback.stderr).toContain('--no-auth is for loopback only');
    const both = await runCli(['serve', '--no-auth', '--auth-token', 'x'.repeat(20), '--db', 'memory'], {
      cwd: workdir(),
      env: cleanEnv(),
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--no-auth and --auth-token contradict');
  });
});
