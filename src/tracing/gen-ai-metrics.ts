/**
 * The GenAI client metrics: histograms with the conventions' names, units and bucket boundaries.
 * @module
 */
import type { Histogram, Meter } from '@opentelemetry/api';

/** The instruments {@link traceAgent} and {@link traceEvents} record into. */
export interface GenAiInstruments {
  /** `gen_ai.client.operation.duration` (s): one value per model attempt. */
  readonly duration: Histogram;
  /** `gen_ai.client.token.usage` ({token}): input and output tokens of each response (`gen_ai.token.type`). */
  readonly tokens: Histogram;
  /** `gen_ai.client.operation.time_to_first_chunk` (s): from the request to the first chunk of its response. */
  readonly timeToFirstChunk: Histogram;
}

// The conventions' advice: powers of two from 10 ms to ~82 s for times, powers of four for token counts.
const SECONDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

/** Creates the three histograms on `meter`. */
export function createInstruments(meter: Meter): GenAiInstruments {
  return {
    duration: meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'GenAI operation duration.',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS },
    }),
    tokens: meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Number of input and output tokens used.',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKENS },
    }),
    timeToFirstChunk: meter.createHistogram('gen_ai.client.operation.time_to_first_chunk', {
      description: 'Time to receive the first chunk of a streamed response.',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS },
    }),
  };
}
