// The limits' fixed windows are minutes on the database's clock: a test whose counts must fall in one window starts
// away from a minute's edge, waiting on that clock (the one the windows use), polled until the condition holds.
import type pg from 'pg';

/** Polls `check` until it holds; fails with `what` after `ms`. */
export async function waitUntil(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Resolves once the database's clock is at least `marginSeconds` (default 8) before the next minute, so the counts a
 * test makes next fall in one minute window of the limit store (at most one minute's edge is waited out).
 */
export async function awayFromMinuteEdge(db: pg.Pool, marginSeconds = 8): Promise<void> {
  await waitUntil(
    `the database clock is ${marginSeconds} s or more before a minute's edge`,
    async () => {
      const { rows } = await db.query<{ s: number }>(
        `SELECT extract(second FROM clock_timestamp())::double precision AS s`,
      );
      return rows[0]!.s < 60 - marginSeconds;
    },
    70_000,
  );
}
