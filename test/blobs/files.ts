// Test files: fake PDFs of a given size (a real header, deterministic bytes), and the file blocks of messages.
import { createHash } from 'node:crypto';
import type { BlobRef, FileContent, Message } from 'cubepi';

export interface FakePdf {
  readonly bytes: Uint8Array;
  readonly base64: string;
  readonly ref: BlobRef;
}

/** `size` bytes starting with a PDF header, the rest from `seed` (different seeds, different files). */
export function fakePdf(size: number, seed: number): FakePdf {
  const bytes = new Uint8Array(size);
  bytes.set(new TextEncoder().encode('%PDF-1.7\n'));
  let x = seed >>> 0 || 1;
  for (let i = 9; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return {
    bytes,
    base64: Buffer.from(bytes).toString('base64'),
    ref: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
  };
}

/** A user message asking about `pdf`: a text block, then the file. */
export function pdfMessage(pdf: FakePdf, text: string): Message {
  return {
    role: 'user',
    content: [
      { type: 'text', text },
      { type: 'file', mimeType: 'application/pdf', name: 'report.pdf', data: pdf.base64 },
    ],
    timestamp: 1,
  };
}

/** Every file block of `messages`, in order. */
export function fileBlocks(messages: readonly Message[]): FileContent[] {
  return messages.flatMap((message) =>
    message.role === 'assistant' || typeof message.content === 'string'
      ? []
      : message.content.filter((block): block is FileContent => block.type === 'file'),
  );
}
