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
  private buffer = '';
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  private pendingCr = false;

  /** Parses `chunk` and returns the records it completed, in order. */
  push(chunk: string): SseRecord[] {
    const records: SseRecord[] = [];
    let text = chunk;
    // A CR that ended the previous chunk may be the first half of a CRLF.
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    let start = 0;
    const all = this.buffer + text;
    for (let i = this.buffer.length; i < all.length; i++) {
      const c = all.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(all.slice(start, i), records);
      if (c === 13) {
        if (i + 1 === all.length) this.pendingCr = true;
        else if (all.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.buffer = all.slice(start);
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
