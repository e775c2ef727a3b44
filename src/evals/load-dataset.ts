/**
 * Reading eval files from disk (Node.js): datasets and recordings as JSONL.
 * @module
 */
import { readFile } from 'node:fs/promises';
import { parseDataset, type EvalDataset } from './dataset.js';
import { parseRecordings, type RecordedCall } from './recording.js';

/**
 * Reads a JSONL dataset (one case a line) from `path`. Bad lines are reported in `problems` (each an
 * `EvalDatasetError` naming `path:line`), the good ones loaded. Rejects only when the file cannot be read.
 */
export async function loadDataset(path: string): Promise<EvalDataset> {
  return parseDataset(await readFile(path, 'utf8'), path);
}

/** Reads a recordings JSONL file written from `ProviderRecorder.toJSONL()`; a bad line is a `RecordingFormatError`. */
export async function loadRecordings(path: string): Promise<RecordedCall[]> {
  return parseRecordings(await readFile(path, 'utf8'));
}
