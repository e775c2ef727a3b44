// An eval module as `cubepi eval run` imports it: its default export is the options of evaluate(). A two-tool agent
// replayed from test/evals/weather.recordings.jsonl.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { Agent, defineTool } from 'cubepi';
import { exact, latency, parseRecordings, tokens, trajectory, turns, type EvaluateOptions } from 'cubepi/evals';

const weather = defineTool({
  name: 'weather',
  description: 'Current temperature of a city, in °C',
  parameters: z.object({ city: z.string() }),
  execute: (_id, { city }) => ({ content: [{ type: 'text', text: city === 'Paris' ? '20' : '5' }] }),
});
const convert = defineTool({
  name: 'convert',
  description: 'Celsius to Fahrenheit',
  parameters: z.object({ celsius: z.number() }),
  execute: (_id, { celsius }) => ({ content: [{ type: 'text', text: String((celsius * 9) / 5 + 32) }] }),
});

const options: EvaluateOptions = {
  mode: 'replay',
  recordings: parseRecordings(readFileSync(new URL('./weather.recordings.jsonl', import.meta.url), 'utf8')),
  dataset: [
    {
      id: 'paris-f',
      input: 'How warm is Paris, in °F?',
      expected: {
        output: 'It is 68°F in Paris.',
        toolCalls: [
          { name: 'weather', arguments: { city: 'Paris' } },
          { name: 'convert', arguments: { celsius: 20 } },
        ],
      },
    },
    {
      id: 'oslo-c',
      input: 'How warm is Oslo?',
      expected: { output: 'It is 5°C in Oslo.', toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }] },
    },
  ],
  scorers: [exact(), trajectory(), turns({ max: 3 }), tokens(), latency()],
  createAgent: ({ provider, middleware }) =>
    new Agent({ provider: provider!, model: 'faux', tools: [weather, convert], middleware: [...middleware] }),
};
export default options;
