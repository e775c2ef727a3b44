/**
 * One-at-a-time sections in a process: the checkpointers' writes and deletions of blobs in a store of the caller's,
 * which cannot share a transaction with the rows.
 * @module
 */

/** Runs the sections given to `run` one after another, in call order; a failing section does not stop the next. */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `section` after every section given before it has settled; resolves or rejects as `section` does. */
  run<T>(section: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(section, section);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
