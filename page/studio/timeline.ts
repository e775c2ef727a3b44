/**
 * The run timeline: a waterfall of a run's spans (run > turns > model attempts > tool calls > approvals, hooks and
 * guardrails as they ran), bars on a time axis, coloured by kind. Vanilla DOM; styles in timeline.css (`tl-`).
 * @module
 */
import type { StudioSpan } from '../../src/studio/api.js';

/** A mounted timeline. */
export interface TimelineView {
  /** Shows these spans (replacing what was shown); open spans (`durationMs: null`) grow with the clock. */
  show(spans: readonly StudioSpan[]): void;
  /** Removes the view and everything it holds (timers, listeners). */
  destroy(): void;
}

/** One row: its element, the parts updated in place, and the span it shows now. */
interface Row {
  readonly element: HTMLElement;
  readonly name: HTMLElement;
  readonly duration: HTMLElement;
  span: StudioSpan;
  depth: number;
  /** Its place in the tree order (its row's `top` is `index × ROW_PX`). */
  index: number;
}

/** A row's height in px (timeline.css: `.tl-row`). Rows are windowed: only those in view (and a margin) are built. */
const ROW_PX = 20;
const OVERSCAN = 20;
/** How often open spans grow on screen (ms). */
const GROW_MS = 100;

/**
 * A timeline in `container`. `show(spans)` draws rows in tree order (children under their parent, siblings by start;
 * a span whose parent is not among them is a root), each bar placed by its start and duration on a shared time axis
 * with ticks, its duration written after it, coloured by kind (`tl-k-<kind>`), errors marked (`tl-error`), retries and
 * fallbacks badged. Hovering a row shows its span's attributes below the rows; clicking pins it (click again to
 * unpin). Spans with `durationMs: null` grow with the clock (10 times a second): one `requestAnimationFrame` loop runs while
 * any is open. Rows are windowed: only those in view (and 20 either side) are in the DOM, each at its place in a
 * scrolling box as tall as all rows (`--tl-height`, default 70vh).
 *
 * Cheap to call at 60 Hz: rows are kept by `spanId`; a span given as the same object as before is not touched, a
 * changed one is updated in place, and rows are only re-ordered when the tree changed. Bars are positioned by CSS
 * custom properties (`--s`, `--d` per row, `--tl-k` on the view: 1 / the axis's extent), so a longer axis moves every
 * bar without touching them. All rows are built in one pass from one HTML string; one listener per event type on
 * the view (delegation), none per row.
 *
 * @example
 * const timeline = mountTimeline(document.querySelector('#timeline')!);
 * timeline.show((await (await fetch('studio-api/runs/' + runId)).json()).spans);
 */
export function mountTimeline(container: HTMLElement): TimelineView {
  const root = document.createElement('div');
  root.className = 'tl';
  root.innerHTML =
    '<div class="tl-head"><div class="tl-head-label">span</div><div class="tl-axis"></div></div>' +
    '<div class="tl-scroll"><div class="tl-rows" role="tree"></div></div><div class="tl-detail" hidden></div>';
  const axis = root.querySelector<HTMLElement>('.tl-axis')!;
  const body = root.querySelector<HTMLElement>('.tl-rows')!;
  const detail = root.querySelector<HTMLElement>('.tl-detail')!;
  const scroller = root.querySelector<HTMLElement>('.tl-scroll')!;
  container.replaceChildren(root);

  /** The rows built: those in the window. */
  const rows = new Map<string, Row>();
  /** Every span shown, by id, in tree order, with its depth. */
  let byId = new Map<string, StudioSpan>();
  let ids: string[] = [];
  let depths = new Map<string, number>();
  let windowOrder: string[] = [];
  let anyOpen = false;
  let moved = false;
  let scrollFrame: number | undefined;
  let grewAt = 0;
  let shown: readonly StudioSpan[] = [];
  let origin = 0;
  /** The latest end of a closed span, from the origin. */
  let closedEnd = 0;
  let extent = 1;
  const openRows = new Set<Row>();
  let frame: number | undefined;
  let pinned: string | undefined;
  let hovered: string | undefined;
  let destroyed = false;

  const setExtent = (next: number): void => {
    const value = Math.max(next, 1);
    if (value === extent) return;
    extent = value;
    root.style.setProperty('--tl-k', String(1 / extent));
    axis.innerHTML = ticksHtml(extent);
  };
  root.style.setProperty('--tl-k', '1');
  axis.innerHTML = ticksHtml(1);

  const tickOpen = (): void => {
    frame = undefined;
    if (destroyed || !anyOpen) return;
    const now = Date.now();
    // Every frame is smooth but costs a restyle and repaint of every bar (the axis moves): 10 Hz reads the same and
    // leaves the main thread to a streaming answer.
    if (now - grewAt < GROW_MS) {
      frame = requestAnimationFrame(tickOpen);
      return;
    }
    grewAt = now;
    setExtent(Math.max(closedEnd, now - origin));
    for (const row of openRows) {
      const d = Math.max(0, now - row.span.startMs);
      row.element.style.setProperty('--d', String(d));
      row.duration.textContent = `${formatMs(d)}…`;
    }
    frame = requestAnimationFrame(tickOpen);
  };

  const place = (row: Row): void => {
    const { span } = row;
    const style = row.element.style;
    style.setProperty('--s', String(span.startMs - origin));
    style.setProperty('--d', String(span.durationMs ?? Math.max(0, Date.now() - span.startMs)));
    style.setProperty('--depth', String(row.depth));
    style.top = `${row.index * ROW_PX}px`;
  };

  const refresh = (row: Row, span: StudioSpan): void => {
    const before = row.span;
    row.span = span;
    row.element.className = rowClass(span);
    if (pinned === span.spanId) row.element.classList.add('tl-pinned');
    if (before.label !== span.label) row.name.parentElement!.title = span.label;
    if (before.label !== span.label || before.status !== span.status || before.attributes !== span.attributes)
      row.name.innerHTML = nameHtml(span);
    row.duration.textContent = span.durationMs === null ? '…' : formatMs(span.durationMs);
    if (span.durationMs === null) openRows.add(row);
    else openRows.delete(row);
  };

  const show = (spans: readonly StudioSpan[]): void => {
    if (destroyed || spans === shown) return;
    shown = spans;
    const tree = treeOrder(spans);
    byId = new Map();
    let first = Infinity;
    let end = 0;
    anyOpen = false;
    for (const span of spans) {
      byId.set(span.spanId, span);
      if (span.startMs < first) first = span.startMs;
      if (span.durationMs === null) anyOpen = true;
      else end = Math.max(end, span.startMs + span.durationMs);
    }
    if (first === Infinity) first = 0;
    moved = first !== origin;
    origin = first;
    closedEnd = Math.max(0, end - origin);
    if (!sameOrder(tree.ids, ids)) body.style.height = `${tree.ids.length * ROW_PX}px`;
    ids = tree.ids;
    depths = tree.depths;
    render();
    setExtent(anyOpen ? Math.max(closedEnd, Date.now() - origin) : closedEnd);
    const focused = pinned ?? hovered;
    if (focused !== undefined) showDetail(focused);
    if (anyOpen && frame === undefined) frame = requestAnimationFrame(tickOpen);
  };

  /** Builds, updates and places the rows in view; drops the others. */
  const render = (): void => {
    const height = scroller.clientHeight > 0 ? scroller.clientHeight : 60 * ROW_PX;
    const from = Math.max(0, Math.floor(scroller.scrollTop / ROW_PX) - OVERSCAN);
    const to = Math.min(ids.length, Math.ceil((scroller.scrollTop + height) / ROW_PX) + OVERSCAN);
    const visible = ids.slice(from, to);
    const inView = new Set(visible);
    for (const [id, row] of rows) {
      if (inView.has(id)) continue;
      row.element.remove();
      openRows.delete(row);
      rows.delete(id);
    }
    // The rows not built yet, in one pass from one string.
    const fresh = visible.filter((id) => !rows.has(id));
    if (fresh.length > 0) {
      const template = document.createElement('template');
      template.innerHTML = fresh.map((id) => rowHtml(byId.get(id)!)).join('');
      const elements = template.content.children;
      for (let i = 0; i < fresh.length; i++) {
        const element = elements[i] as HTMLElement;
        const span = byId.get(fresh[i]!)!;
        const row: Row = {
          element,
          name: element.querySelector<HTMLElement>('.tl-name')!,
          duration: element.querySelector<HTMLElement>('.tl-dur')!,
          span,
          depth: -1,
          index: -1,
        };
        if (span.spanId === pinned) element.classList.add('tl-pinned');
        rows.set(span.spanId, row);
        if (span.durationMs === null) openRows.add(row);
      }
    }
    // Rows whose span, depth or place changed (or all, when the origin moved): updated in place.
    for (let i = 0; i < visible.length; i++) {
      const id = visible[i]!;
      const row = rows.get(id)!;
      const span = byId.get(id)!;
      const depth = depths.get(id)!;
      const index = from + i;
      const changed = span !== row.span;
      if (changed) refresh(row, span);
      if (changed || depth !== row.depth || index !== row.index || moved) {
        row.depth = depth;
        row.index = index;
        place(row);
      }
    }
    moved = false;
    if (!sameOrder(visible, windowOrder)) {
      const fragment = document.createDocumentFragment();
      for (const id of visible) fragment.append(rows.get(id)!.element);
      body.replaceChildren(fragment);
      windowOrder = visible;
    }
  };
  const onScroll = (): void => {
    scrollFrame ??= requestAnimationFrame(() => {
      scrollFrame = undefined;
      if (!destroyed) render();
    });
  };
  scroller.addEventListener('scroll', onScroll, { passive: true });

  const showDetail = (id: string | undefined): void => {
    const span = id === undefined ? undefined : byId.get(id);
    if (span === undefined) {
      detail.hidden = true;
      detail.replaceChildren();
      return;
    }
    detail.hidden = false;
    detail.innerHTML = detailHtml(span, origin, pinned === id);
  };

  const rowOf = (event: Event): string | undefined =>
    (event.target as Element | null)?.closest<HTMLElement>('.tl-row')?.dataset.id;
  const onOver = (event: Event): void => {
    const id = rowOf(event);
    if (id === undefined || id === hovered) return;
    hovered = id;
    if (pinned === undefined) showDetail(id);
  };
  const onLeave = (): void => {
    hovered = undefined;
    if (pinned === undefined) showDetail(undefined);
  };
  const onClick = (event: Event): void => {
    const id = rowOf(event);
    if (id === undefined) return;
    rows.get(pinned ?? '')?.element.classList.remove('tl-pinned');
    pinned = pinned === id ? undefined : id;
    if (pinned !== undefined) rows.get(pinned)?.element.classList.add('tl-pinned');
    showDetail(pinned ?? id);
  };
  body.addEventListener('mouseover', onOver);
  body.addEventListener('mouseleave', onLeave);
  body.addEventListener('click', onClick);

  return {
    show,
    destroy() {
      destroyed = true;
      if (frame !== undefined) cancelAnimationFrame(frame);
      if (scrollFrame !== undefined) cancelAnimationFrame(scrollFrame);
      frame = undefined;
      scroller.removeEventListener('scroll', onScroll);
      body.removeEventListener('mouseover', onOver);
      body.removeEventListener('mouseleave', onLeave);
      body.removeEventListener('click', onClick);
      rows.clear();
      openRows.clear();
      root.remove();
    },
  };
}

/** The spans' ids in tree order (parents first, siblings by start, then as given), and each one's depth. */
function treeOrder(spans: readonly StudioSpan[]): { ids: string[]; depths: Map<string, number> } {
  const known = new Set<string>();
  for (const span of spans) known.add(span.spanId);
  const children = new Map<string | null, StudioSpan[]>();
  for (const span of spans) {
    const parent = span.parentSpanId !== null && known.has(span.parentSpanId) ? span.parentSpanId : null;
    let siblings = children.get(parent);
    if (siblings === undefined) children.set(parent, (siblings = []));
    siblings.push(span);
  }
  for (const siblings of children.values()) if (siblings.length > 1) siblings.sort((a, b) => a.startMs - b.startMs);
  const ids: string[] = [];
  const depths = new Map<string, number>();
  const stack: [StudioSpan, number][] = (children.get(null) ?? []).map((span) => [span, 0]).reverse() as [
    StudioSpan,
    number,
  ][];
  while (stack.length > 0) {
    const [span, depth] = stack.pop()!;
    if (depths.has(span.spanId)) continue; // a cycle of parents (a malformed trace): shown once
    ids.push(span.spanId);
    depths.set(span.spanId, depth);
    const below = children.get(span.spanId);
    if (below !== undefined) for (let i = below.length - 1; i >= 0; i--) stack.push([below[i]!, depth + 1]);
  }
  return { ids, depths };
}

function sameOrder(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function rowClass(span: StudioSpan): string {
  let name = `tl-row tl-k-${span.kind}`;
  if (span.status === 'error') name += ' tl-error';
  if (span.durationMs === null) name += ' tl-open';
  else if (span.durationMs === 0) name += ' tl-instant';
  return name;
}

function nameHtml(span: StudioSpan): string {
  const a = span.attributes;
  let badges = '';
  if (typeof a['cubepi.fallback_from'] === 'string') badges += '<b class="tl-badge tl-badge-fallback">fallback</b>';
  else if (typeof a['cubepi.attempt'] === 'number' && a['cubepi.attempt'] > 1)
    badges += '<b class="tl-badge tl-badge-retry">retry</b>';
  if (span.status === 'error') {
    const type = a['error.type'];
    badges += `<b class="tl-badge tl-badge-error">${escapeHtml(typeof type === 'string' ? type : 'error')}</b>`;
  }
  return `${escapeHtml(span.label)}${badges}`;
}

function rowHtml(span: StudioSpan): string {
  return (
    `<div class="${rowClass(span)}" data-id="${escapeHtml(span.spanId)}" role="treeitem">` +
    `<div class="tl-label" title="${escapeHtml(span.label)}"><span class="tl-name">${nameHtml(span)}</span></div>` +
    `<div class="tl-track"><div class="tl-bar"></div><span class="tl-dur">` +
    `${span.durationMs === null ? '…' : formatMs(span.durationMs)}</span></div></div>`
  );
}

/** Tick marks for an axis of `extent` ms: a round step (1, 2 or 5 × 10ⁿ) giving 4 to 10 ticks. */
export function ticksHtml(extent: number): string {
  const raw = extent / 6;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => extent / s <= 10) ?? 10 * power;
  let html = '';
  for (let t = 0; t <= extent + 1e-9; t += step) {
    html += `<span class="tl-tick" style="left:${(t / extent) * 100}%">${formatMs(t)}</span>`;
  }
  return html;
}

/** `0.4 ms`, `12 ms`, `1.25 s`, `2m 05s`. */
export function formatMs(ms: number): string {
  if (ms < 10) return `${Math.round(ms * 10) / 10} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Math.round(ms / 10) / 100} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}

function detailHtml(span: StudioSpan, origin: number, pinned: boolean): string {
  const rows = Object.entries(span.attributes)
    .map(([key, value]) => `<tr><th>${escapeHtml(key)}</th><td>${escapeHtml(valueText(value))}</td></tr>`)
    .join('');
  const duration = span.durationMs === null ? 'running' : formatMs(span.durationMs);
  return (
    `<div class="tl-detail-head"><b>${escapeHtml(span.label)}</b> <span class="tl-detail-kind">${span.kind}</span>` +
    ` <span>+${formatMs(span.startMs - origin)} · ${duration} · ${span.status}</span>` +
    `${pinned ? ' <span class="tl-detail-pin">pinned</span>' : ''}</div>` +
    `<table class="tl-attrs"><tbody>${rows}</tbody></table>`
  );
}

function valueText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Text made safe for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
