import { z } from 'zod';
import { defineTool } from '../../index.js';

/** `current_time`: the current date and time, in UTC and in a time zone (the machine's by default). */
export function currentTimeTool() {
  return defineTool({
    name: 'current_time',
    description: 'The current date and time (ISO 8601 UTC, and local time in a time zone).',
    parameters: z.object({ timeZone: z.string().optional().describe('IANA time zone, e.g. "Europe/Paris"') }),
    execute: (_id, { timeZone }) => {
      const now = new Date();
      let local: string;
      try {
        local = now.toLocaleString('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'long' });
      } catch {
        throw new Error(`unknown time zone "${timeZone}": use an IANA name such as "Europe/Paris"`);
      }
      return Promise.resolve({ content: [{ type: 'text', text: `${now.toISOString()} (${local})` }] });
    },
  });
}
