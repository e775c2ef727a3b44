/**
 * `cubepi/studio`: a local web app to see and steer runs — threads, a run's timeline, tokens and cost, live runs,
 * fork/retry/edit and compare, the middleware chain — over a thread store, a trace file and an agent server. Node.js
 * only (it reads the trace file with `node:fs`). See docs/studio.md.
 * @module
 */
export { createStudio, type Studio, type StudioOptions } from './create-studio.js';
export { studioNodeListener } from './node-listener.js';
export { createTraceReader, type TraceReader } from './traces.js';
export type * from './api.js';
