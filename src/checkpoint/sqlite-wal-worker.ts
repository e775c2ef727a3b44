/**
 * WAL checkpoints off the event loop: a worker thread with a connection of its own to the file, which runs
 * `PRAGMA wal_checkpoint(PASSIVE)` when asked, so the copy of the WAL into the database file and its fsyncs never
 * stop the process's other work.
 * @module
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// CommonJS, run by `new Worker(…, { eval: true })`. The driver is the one the main thread loaded (its resolved path):
// one copy of SQLite in the process, so its locks are seen by every connection.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true, timeout: 0 });
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Nothing lost: the WAL keeps what it holds, and the next request copies it.
  }
});`;

/** A worker thread that checkpoints the WAL of the SQLite file at `path` on {@link request}; started on first use. */
export class SQLiteWalWorker {
  readonly #path: string;
  #worker: Worker | undefined;
  #exited: Promise<void> | undefined;
  #failed = false;

  constructor(path: string) {
    this.#path = path;
  }

  /**
   * Asks for a PASSIVE checkpoint (it never waits for a lock: what a reader or another checkpoint keeps it from
   * copying, the next one copies). Returns `false` when the worker could not run (the caller may checkpoint itself).
   */
  request(): boolean {
    if (this.#failed) return false;
    if (this.#worker === undefined) {
      const driver = createRequire(import.meta.url).resolve('better-sqlite3');
      const worker = new Worker(WORKER, { eval: true, workerData: { driver, path: this.#path } });
      worker.unref(); // never keeps the process alive
      // A worker that fails (the file gone, no thread to be had) only stops checkpointing here.
      worker.on('error', () => (this.#failed = true));
      this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()));
      this.#worker = worker;
    }
    this.#worker.postMessage('checkpoint');
    return true;
  }

  /** Closes the worker's connection and waits for the thread to end. Idempotent. */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined) return;
    this.#worker = undefined;
    this.#failed = true;
    // Referenced again while it ends: an unref'd worker would let the process exit with close() still pending.
    worker.ref();
    worker.postMessage('close');
    await this.#exited;
  }
}
