// What the terminal shows while a risky call waits for the user's answer, read off a real terminal (tmux): the
// question stays on screen, and no spinner claims the held call is running, in `cubepi run` and in `cubepi chat`.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ReplayServer, sse } from '../providers/replay-server.js';
import { requireTool } from '../required-tool.js';
import { cleanEnv, ensureBuilt, workdir } from './cli-harness.js';
import { startInTmux, TMUX, type TmuxPane } from './tmux.js';
import { openaiText, openaiToolCalls } from './wire.js';

const haveTmux = requireTool('the approval-on-screen test', TMUX, 'tmux');

const QUESTION = 'Allow run_command to run the shell command: echo hi? [y/N]';

describe.skipIf(!haveTmux)('an approval question on a terminal', () => {
  let server: ReplayServer;
  beforeAll(async () => {
    server = await ReplayServer.start();
    await ensureBuilt();
  }, 120_000);
  afterAll(() => server.close());
  beforeEach(() => server.reset());

  const env = () => cleanEnv({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${server.url}/v1` });

  /**
   * The screen, read back to back for a second and at least ten times (a spinner redraws every 100 ms, and once drawn
   * over the question it stays there, so any later read shows it): each read must still show the question and no
   * "running…". No pause between reads: each is a tmux round trip, and a loaded machine only makes more of the window.
   */
  async function expectQuestionHeld(pane: TmuxPane): Promise<void> {
    const until = Date.now() + 1_000;
    for (let reads = 0; reads < 10 || Date.now() < until; reads++) {
      const screen = await pane.screen();
      expect(screen).toContain(QUESTION);
      expect(screen).not.toContain('running…');
    }
  }

  it('cubepi run: the question stays on screen while it waits, then the call runs', { timeout: 60_000 }, async () => {
    server.reply(sse(openaiToolCalls(['run_command', { command: 'echo hi' }])), sse(openaiText('Ran it.')));
    const pane = await startInTmux(
      ['run', '--allow-shell', '--db', 'memory', '--model', 'gpt-test', 'call run_command echo hi'],
      { cwd: workdir(), env: env() },
    );
    try {
      await pane.waitForScreen(QUESTION);
      await expectQuestionHeld(pane);
      await pane.keys('y', 'Enter');
      const screen = await pane.waitForScreen(/\[exit \d+\]/);
      expect(screen).toContain(`${QUESTION} y`);
      expect(screen).toContain('✓ run_command → exit code 0 hi');
      expect(screen).toContain('Ran it.');
      expect(screen).toContain('[exit 0]');
    } finally {
      await pane.close();
    }
  });

  it('cubepi chat: the same, and the prompt comes back after the answer', { timeout: 60_000 }, async () => {
    server.reply(sse(openaiToolCalls(['run_command', { command: 'echo hi' }])), sse(openaiText('Ran it.')));
    const pane = await startInTmux(['chat', '--allow-shell', '--db', 'memory', '--model', 'gpt-test'], {
      cwd: workdir(),
      env: env(),
    });
    try {
      await pane.waitForScreen('›');
      await pane.keys('call run_command echo hi', 'Enter');
      await pane.waitForScreen(QUESTION);
      await expectQuestionHeld(pane);
      await pane.keys('y', 'Enter');
      const screen = await pane.waitForScreen(/Ran it\.[^]*\n›$/);
      expect(screen).toContain(`${QUESTION} y`);
      expect(screen).toContain('✓ run_command → exit code 0 hi');
      // The turn's usage: the thread's (the call before the question too), then the resumed run's own; no price for
      // gpt-test, a model the table does not know.
      expect(screen).toContain('[thread: 32 in · 12 out · 2 model calls; this run: 12 in · 7 out · 1 model call]');
      await pane.keys('/exit', 'Enter');
      expect(await pane.waitForScreen(/\[exit \d+\]/)).toContain('[exit 0]');
    } finally {
      await pane.close();
    }
  });
});
