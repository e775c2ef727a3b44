// The Debian Chromium the browser tests drive with playwright-core (browser downloads are not reachable here): where it
// is, whether it is, and how to launch it. Without it, CI fails (a test says why); elsewhere the browser tests do not
// run and a warning says so.
import { existsSync } from 'node:fs';
import { chromium, type BrowserContext } from 'playwright-core';
import { requireTool } from './required-tool.js';

export const CHROMIUM = '/usr/bin/chromium';

/** Whether Chromium is installed. */
export const haveChromium = existsSync(CHROMIUM);

/** Call at the top of a browser test file: without Chromium, a failing test in CI, a warning elsewhere. */
export function requireChromium(what: string): void {
  requireTool(what, CHROMIUM, 'chromium');
}

/** A headless Chromium with its profile in `userDataDir`, quiet (no network of its own, no sandbox: we run as root). */
export function launchChromium(userDataDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
