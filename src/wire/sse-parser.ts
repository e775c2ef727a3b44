/**
 * An incremental Server-Sent Events parser (the WHATWG "interpreting an event stream" rules, for what cubepi's server
 * sends and what proxies may add: comments, CRLF or CR line ends, multi-line data, records split across chunks).
 * @module
 */

/** One dispatched SSE record. */
export interface SseRecord {
  readonly event: string;
  readonly data: string;
  readonly id: string | undefined;
}

/**
 * Feed text chunks in order with {@link push}; each completed record is returned. Keeps at most one partial line and
 * one partial record between calls.
 * @internal
 */
export class SseParser {
  /** Pieces of the line not ended yet (kept as pieces: a long line arriving in many chunks is joined once). */
  private pending: string[] = [];
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  private pendingCr = false;

  /** Parses `chunk` and returns the records it completed, in order. Scans each character once. */
  push(chunk: string): SseRecord[] {
    const records: SseRecord[] = [];
    let start = 0;
    // A CR that ended the previous chunk may be the first half of a CRLF.
    if (this.pendingCr && chunk.charCodeAt(0) === 10) start = 1;
    this.pendingCr = false;
    for (let i = start; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const piece = chunk.slice(start, i);
      const pending = this.pending;
      this.line(pending.length === 0 ? piece : pending.join('') + piece, records);
      if (pending.length > 0) this.pending = [];
      if (c === 13) {
        if (i + 1 === chunk.length) this.pendingCr = true;
        else if (chunk.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    if (start < chunk.length) this.pending.push(chunk.slice(start));
    return records;
  }

  private line(line: string, records: SseRecord[]): void {
    if (line === '') {
      if (this.data.length > 0)
        records.push({ event: this.event || 'message', data: this.data.join('\n'), id: this.id });
      this.data = [];
      this.event = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}
