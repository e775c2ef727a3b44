/**
 * The weather example `cubepi mcp` serves: a tool with a real schema, validation and cancellation, and a scripted
 * offline model that calls it for Paris and Oslo.
 * @module
 */
import { z } from 'zod';
import { defineTool, type Message } from '../index.js';
import { FauxProvider, fauxMessage, fauxToolCall } from '../testing/index.js';

const CITIES: Record<string, { temperature: number; sky: string }> = {
  paris: { temperature: 18, sky: 'light rain' },
  oslo: { temperature: 7, sky: 'clear' },
};

/** Waits `ms`, or rejects when `signal` aborts; its abort listener is removed either way (no leak per call). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A tool answering from a small table of cities, after a short (cancellable) wait. */
export const weather = defineTool({
  name: 'weather',
  description: 'Current weather for a city',
  parameters: z.object({ city: z.string().describe('City name, e.g. "Paris"') }),
  execute: async (_id, { city }, { signal }) => {
    await sleep(150, signal);
    const known = CITIES[city.toLowerCase()];
    if (known === undefined) return { content: [{ type: 'text', text: `No weather data for ${city}` }], isError: true };
    return {
      content: [{ type: 'text', text: `${city}: ${known.temperature} °C, ${known.sky}` }],
      details: { city, ...known },
    };
  },
});

/** The offline model: asks for the weather of both cities at once, then answers from the results. */
export function weatherDemoProvider(delayMs: number): FauxProvider {
  return new FauxProvider({
    delayMs,
    responses: [
      fauxMessage([fauxToolCall('weather', { city: 'Paris' }), fauxToolCall('weather', { city: 'Oslo' })]),
      (messages: readonly Message[]) => {
        const results = messages
          .filter((m) => m.role === 'toolResult')
          .map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''));
        return fauxMessage(
          `Here is the weather you asked for:\n- ${results.join('\n- ')}\nPack an umbrella for Paris.`,
        );
      },
    ],
  });
}
