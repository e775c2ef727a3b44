import { randomBytes } from 'node:crypto';

/** A new thread id: `t-` and 8 hex digits (short enough to type after `--thread`). */
export function newThreadId(): string {
  return `t-${randomBytes(4).toString('hex')}`;
}
