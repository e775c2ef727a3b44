import { TestScheduler } from 'rxjs/testing';
import { expect } from 'vitest';

/** A fresh TestScheduler that compares with vitest's deep equality. */
export function testScheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
}
