import { CheckpointCorruptionError } from '../types/errors.js';

/**
 * Checks that a thread's rows, read in `seq` order (the seq first in each row), are exactly 0, 1, …, count - 1:
 * a missing or extra row is a `CheckpointCorruptionError` naming the thread and the first seq that is wrong, so a
 * damaged thread fails to load instead of loading with a hole.
 */
export function checkStoredRows(
  threadId: string,
  count: number,
  rows: readonly (readonly [number, ...unknown[]])[],
): void {
  if (!Number.isSafeInteger(count) || count < 0) {
    throw new CheckpointCorruptionError(threadId, undefined, `its message count is ${String(count)}`);
  }
  const n = Math.min(rows.length, count);
  for (let i = 0; i < n; i++) {
    if (rows[i]![0] !== i) throw new CheckpointCorruptionError(threadId, i, 'the row is missing');
  }
  if (rows.length < count) throw new CheckpointCorruptionError(threadId, rows.length, 'the row is missing');
  if (rows.length > count) {
    throw new CheckpointCorruptionError(threadId, count, `a row beyond the thread's message count (${count})`);
  }
}
