/**
 * Bounding how many tool calls a run makes.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { BeforeToolCallContext, BeforeToolCallResult, Middleware } from './types.js';

/** Options of {@link ToolCallLimit}: at least one bound. */
export interface ToolCallLimitOptions {
  /** The most tool calls a run may execute. */
  readonly perRun?: number | undefined;
  /** The most calls of each tool a run may execute: one number for every tool, or per tool name. */
  readonly perTool?: number | Readonly<Record<string, number>> | undefined;
  readonly name?: string | undefined;
}

interface Counts {
  total: number;
  readonly byTool: Map<string, number>;
}

/**
 * `beforeToolCall`: blocks a call once the run has used its allowance, with a reason the model can read
 * (`Tool call limit reached: …`). Counts are per run and count the calls this middleware let through.
 *
 * @example
 * new Agent({ provider, model, tools, middleware: [new ToolCallLimit({ perRun: 20, perTool: { search: 5 } })] });
 */
export class ToolCallLimit implements Middleware {
  readonly name: string;
  readonly perRun: number | undefined;
  readonly perTool: number | Readonly<Record<string, number>> | undefined;
  // Keyed by the run's signal (one per run), so counts vanish with the run and one instance can serve many agents.
  private readonly counts = new WeakMap<AbortSignal, Counts>();

  constructor(options: ToolCallLimitOptions) {
    if (options?.perRun === undefined && options?.perTool === undefined) {
      throw new ConfigurationError('ToolCallLimit: give perRun, perTool, or both');
    }
    const bounds = [
      options.perRun,
      ...(typeof options.perTool === 'object' ? Object.values(options.perTool) : [options.perTool]),
    ];
    for (const bound of bounds) {
      if (bound !== undefined && !(Number.isInteger(bound) && bound >= 0)) {
        throw new ConfigurationError('ToolCallLimit: limits must be non-negative integers');
      }
    }
    this.perRun = options.perRun;
    this.perTool = options.perTool;
    this.name = options.name ?? 'ToolCallLimit';
  }

  beforeToolCall(ctx: BeforeToolCallContext): BeforeToolCallResult | undefined {
    let counts = this.counts.get(ctx.signal);
    if (counts === undefined) {
      counts = { total: 0, byTool: new Map() };
      this.counts.set(ctx.signal, counts);
    }
    const tool = ctx.toolCall.name;
    if (this.perRun !== undefined && counts.total >= this.perRun) {
      return { block: true, reason: `Tool call limit reached: at most ${this.perRun} tool calls per run` };
    }
    const toolLimit = typeof this.perTool === 'number' ? this.perTool : this.perTool?.[tool];
    const used = counts.byTool.get(tool) ?? 0;
    if (toolLimit !== undefined && used >= toolLimit) {
      return { block: true, reason: `Tool call limit reached: at most ${toolLimit} calls of ${tool} per run` };
    }
    counts.total++;
    counts.byTool.set(tool, used + 1);
    return undefined;
  }
}
