// Run ids: `run_` and 128 random bits in hex, unguessable from one another, taken from a pool of random bytes refilled
// 64 ids at a time (src/loop/run-agent-loop.ts).
import { describe, expect, it, vi } from 'vitest';
import { randomRunId } from '../src/loop/run-agent-loop.js';

describe('randomRunId', () => {
  it('gives ids of 128 random bits in hex, all different, across refills of its pool', () => {
    const ids = Array.from({ length: 1000 }, () => randomRunId());
    for (const id of ids) expect(id).toMatch(/^run_[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws its bytes from crypto.getRandomValues, once per 64 ids', () => {
    // drain whatever the pool holds, so the next id refills it
    const spy = vi.spyOn(globalThis.crypto, 'getRandomValues');
    try {
      for (let i = 0; i < 64 && spy.mock.calls.length === 0; i++) randomRunId();
      expect(spy).toHaveBeenCalledTimes(1);
      for (let i = 0; i < 63; i++) randomRunId();
      expect(spy).toHaveBeenCalledTimes(1);
      randomRunId();
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});
