// A middleware's own model call (a compaction's summary) over stored messages holding refs: the provider gets the
// bytes, never a ref; a missing blob errors the call before anything is sent.
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { BlobMissingError, EMPTY_USAGE, MemoryCheckpointer, type HookContext, type Message } from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { sideModelCall, type SideCallRun } from '../../src/loop/side-model-call.js';
import { BlobResolver } from '../../src/loop/resolve-blobs.js';
import { fakePdf, fileBlocks, pdfMessage } from './files.js';

async function storedThread() {
  const checkpointer = new MemoryCheckpointer();
  const pdf = fakePdf(30_000, 9);
  await checkpointer.append('t', [pdfMessage(pdf, 'the report')]);
  return { checkpointer, pdf, messages: (await checkpointer.load('t'))!.messages };
}

function runOn(faux: FauxProvider, blobs: BlobResolver): SideCallRun {
  return {
    runId: 'r',
    sideUsage: EMPTY_USAGE,
    spend: undefined,
    provider: faux,
    model: { id: 'faux', provider: 'faux' },
    signal: new AbortController().signal,
    wrapModelCall: undefined,
    emit: () => {},
    blobs,
  };
}

describe('sideModelCall over messages holding refs', () => {
  it('sends the file data, not the ref', async () => {
    const { checkpointer, pdf, messages } = await storedThread();
    expect(fileBlocks(messages)[0]!.ref).toBe(pdf.ref);
    const received: Message[][] = [];
    const faux = new FauxProvider({
      responses: [(sent: readonly Message[]) => (received.push([...sent]), fauxMessage('SUMMARY'))],
    });
    const call = sideModelCall(
      runOn(faux, new BlobResolver(checkpointer.blobs)),
      0,
      () => ({}) as HookContext,
      { messages, systemPrompt: 'Summarise' },
      'compaction',
      'r.0.c',
    );
    const events = await lastValueFrom(call.pipe(toArray()));
    expect(events.at(-1)?.type).toBe('done');
    const [file] = fileBlocks(received[0]!);
    expect(file).toEqual({
      type: 'file',
      mimeType: 'application/pdf',
      name: 'report.pdf',
      size: 30_000,
      data: pdf.base64,
    });
  });

  it('errors with BlobMissingError when the blob is gone, and the provider is never called', async () => {
    const { checkpointer, pdf, messages } = await storedThread();
    await checkpointer.blobs!.delete(pdf.ref);
    const faux = new FauxProvider({ responses: [fauxMessage('never')] });
    const call = sideModelCall(
      runOn(faux, new BlobResolver(checkpointer.blobs)),
      0,
      () => ({}) as HookContext,
      { messages, systemPrompt: 'Summarise' },
      'compaction',
      'r.0.c',
    );
    await expect(lastValueFrom(call.pipe(toArray()))).rejects.toBeInstanceOf(BlobMissingError);
    expect(faux.callCount).toBe(0);
  });
});
