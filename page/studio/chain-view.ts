/**
 * The agent's middleware chain, as the runtime reports it (`agent_start.middleware`, or read back from the run span's
 * `cubepi.middleware.chain`). Styles `chain-` in timeline.css.
 * @module
 */
import type { MiddlewareChain } from '../../src/types/middleware-chain.js';
import { escapeHtml } from './timeline.js';

const WRAPPERS = new Set(['wrapModelCall', 'wrapToolCall']);

/**
 * Draws `chain` into `container` (replacing what it held): one table, a header row per hook or wrapper in firing
 * order (the chain's own order: hooks, then wrappers), under it the middlewares in the order they run (wrappers
 * outermost first) with their phase, order and version (`—` when not known: a chain read back from a trace has names
 * and versions only). `null` → "middleware chain: not recorded"; a chain with no hook → "no middleware".
 *
 * @example
 * renderChain(document.querySelector('#chain')!, trace.chain);
 */
export function renderChain(container: HTMLElement, chain: MiddlewareChain | null): void {
  if (chain === null) {
    container.innerHTML = '<div class="chain"><p class="chain-none">middleware chain: not recorded</p></div>';
    return;
  }
  const hooks = Object.entries(chain).filter(
    (entry): entry is [string, NonNullable<(typeof entry)[1]>] => entry[1] !== undefined && entry[1].length > 0,
  );
  if (hooks.length === 0) {
    container.innerHTML = '<div class="chain"><p class="chain-none">no middleware</p></div>';
    return;
  }
  let html =
    '<div class="chain"><table class="chain-table"><thead><tr><th class="chain-seq">#</th><th>middleware</th>' +
    '<th>phase</th><th>order</th><th>version</th></tr></thead><tbody>';
  for (const [hook, links] of hooks) {
    const kind = WRAPPERS.has(hook) ? 'wrapper' : 'hook';
    html +=
      `<tr class="chain-hook" data-hook="${escapeHtml(hook)}"><th colspan="5">${escapeHtml(hook)}` +
      `<span class="chain-kind">${kind} · ${links.length}</span></th></tr>`;
    links.forEach((link, i) => {
      html +=
        `<tr class="chain-link" data-hook="${escapeHtml(hook)}"><td class="chain-seq">${i + 1}</td>` +
        `<td class="chain-name">${escapeHtml(link.name)}</td>` +
        `<td class="chain-phase">${link.phase === '' ? '—' : escapeHtml(link.phase)}</td>` +
        `<td class="chain-order">${link.phase === '' ? '—' : link.order}</td>` +
        `<td class="chain-version">${link.version === undefined ? '—' : escapeHtml(link.version)}</td></tr>`;
    });
  }
  container.innerHTML = `${html}</tbody></table></div>`;
}
