/**
 * How a span becomes a timeline bar: its {@link StudioSpanKind}, its label, and the bars made of its span events
 * (approvals, hook errors, guardrail trips, handoffs, state patches). One definition for the trace reader (recorded
 * spans) and the page's `spansFromEvents` (a live run), so the two look alike. No Node.js imports: the page bundles it.
 * @module
 */
import type { MiddlewareChain, MiddlewareChainLink } from '../types/middleware-chain.js';
import type { StudioSpan, StudioSpanKind } from './api.js';

type Attributes = Readonly<Record<string, unknown>>;

/** A span's kind, from its name and its `gen_ai.operation.name`. */
export function spanKindOf(name: string, attributes: Attributes): StudioSpanKind {
  const operation = attributes['gen_ai.operation.name'];
  if (operation === 'invoke_agent' || name === 'invoke_agent' || name.startsWith('invoke_agent ')) return 'run';
  if (operation === 'chat') return 'model';
  if (operation === 'execute_tool') return 'tool';
  if (name === 'compaction') return 'compaction';
  if (/^turn \d+$/.test(name)) return 'turn';
  return 'other';
}

/**
 * What a bar says: the tool's name, `chat <model>` with `· attempt N` for a retry and `· fallback from p/m`, the turn,
 * the run (`invoke_agent <agent>`), the compaction's middleware; other spans their name.
 */
export function spanLabelOf(kind: StudioSpanKind, name: string, attributes: Attributes): string {
  switch (kind) {
    case 'model': {
      const model = attributes['gen_ai.request.model'];
      let label = typeof model === 'string' ? `chat ${model}` : name;
      const attempt = attributes['cubepi.attempt'];
      if (typeof attempt === 'number' && attempt > 1) label += ` · attempt ${attempt}`;
      const from = attributes['cubepi.fallback_from'];
      if (typeof from === 'string') label += ` · fallback from ${from}`;
      return label;
    }
    case 'tool': {
      const tool = attributes['gen_ai.tool.name'];
      return typeof tool === 'string' ? tool : name;
    }
    case 'compaction': {
      const middleware = attributes['cubepi.middleware'];
      return typeof middleware === 'string' ? `compaction · ${middleware}` : name;
    }
    default:
      return name;
  }
}

/** A span event as the recorder writes it. */
export interface SpanEventLike {
  readonly name: string;
  readonly timeMs: number;
  readonly attributes?: Attributes | undefined;
}

/**
 * The bars a span's events stand for, children of `parent` (ids `<parent id>/e<index>`): `approval_requested` is an
 * `approval` bar from the request to the end of the held call (the wait; `running` while the call is open),
 * `hook_error` a `hook` bar (error), `context_trimmed` a `hook` bar, `guardrail_tripped` a `guardrail` bar (error),
 * `handoff` a `handoff` bar, `state_patched` an `other` bar; the others (a compaction's attempts) none. Instants have
 * duration 0.
 */
export function eventSpans(parent: StudioSpan, events: readonly SpanEventLike[]): StudioSpan[] {
  const out: StudioSpan[] = [];
  const parentEnd = parent.durationMs === null ? null : parent.startMs + parent.durationMs;
  for (const [index, event] of events.entries()) {
    const attributes: Attributes = event.attributes ?? {};
    const shaped = eventShape(event.name, attributes, parent);
    if (shaped === undefined) continue;
    const lasting = shaped.kind === 'approval';
    const durationMs = !lasting ? 0 : parentEnd === null ? null : Math.max(0, parentEnd - event.timeMs);
    out.push({
      spanId: `${parent.spanId}/e${index}`,
      parentSpanId: parent.spanId,
      kind: shaped.kind,
      label: shaped.label,
      startMs: event.timeMs,
      durationMs,
      status: durationMs === null ? 'running' : shaped.error ? 'error' : 'ok',
      attributes: { event: event.name, ...attributes },
    });
  }
  return out;
}

function eventShape(
  name: string,
  a: Attributes,
  parent: StudioSpan,
): { kind: StudioSpanKind; label: string; error: boolean } | undefined {
  switch (name) {
    case 'approval_requested': {
      const tool = typeof a['gen_ai.tool.name'] === 'string' ? a['gen_ai.tool.name'] : parent.label;
      const waiting = parent.attributes['cubepi.tool.outcome'] === 'pending' ? ' (run suspended)' : '';
      return { kind: 'approval', label: `approval ${tool}${waiting}`, error: false };
    }
    case 'hook_error':
      return { kind: 'hook', label: `${str(a['cubepi.hook'])} · ${str(a['cubepi.middleware'])}`, error: true };
    case 'context_trimmed':
      return { kind: 'hook', label: `context trimmed · ${str(a['cubepi.middleware'])}`, error: false };
    case 'guardrail_tripped':
      return {
        kind: 'guardrail',
        label: `guardrail ${str(a['cubepi.guardrail.name'])} · ${str(a['cubepi.guardrail.action'])}`,
        error: true,
      };
    case 'handoff':
      return {
        kind: 'handoff',
        label: `handoff ${str(a['cubepi.handoff.from'])} → ${str(a['cubepi.handoff.to'])}`,
        error: false,
      };
    case 'state_patched':
      return {
        kind: 'other',
        label: `state · ${str(a['cubepi.state.producer'])} v${str(a['cubepi.state.version'])}`,
        error: false,
      };
    default:
      return undefined;
  }
}

function str(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '?';
}

/**
 * The middleware chain back from `cubepi.middleware.chain` (`hook=A@1.0.0,B;wrapToolCall=A`). The span records names
 * and versions only: a link read back has `phase: ''` and `order: 0` (the live run's `agent_start.middleware` has
 * them). `undefined` or an empty text → `null`.
 */
export function parseChainText(text: unknown): MiddlewareChain | null {
  if (typeof text !== 'string' || text === '') return null;
  const chain: Record<string, readonly MiddlewareChainLink[]> = {};
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const links = part
      .slice(eq + 1)
      .split(',')
      .filter((link) => link !== '')
      .map((link): MiddlewareChainLink => {
        // A scoped name (`@org/audit`) starts with `@`: the version's `@` is the last one after the first character.
        const at = link.lastIndexOf('@');
        return at > 0
          ? { name: link.slice(0, at), phase: '', order: 0, version: link.slice(at + 1) }
          : { name: link, phase: '', order: 0 };
      });
    chain[part.slice(0, eq)] = Object.freeze(links);
  }
  return Object.freeze(chain);
}
