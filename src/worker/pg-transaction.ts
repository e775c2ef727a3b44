/**
 * One transaction on a client checked out of a pool, safe against a connection that dies while the client is out.
 * @module
 */
import type pg from 'pg';

/**
 * Runs `work` between BEGIN and COMMIT on a client of `pool`. pg-pool takes its own 'error' listener off a client it
 * hands out, and pg emits 'error' on a client whose connection dies (a terminated backend) — while it waits between
 * two statements, and again when the socket closes after the statement in flight was rejected — so a listener is on
 * it for as long as it is out, attached in pg-pool's callback (no I/O can come between the checkout and it): unheard,
 * that event would end the process. The statement in flight, or the next one, rejects with the failure, and this
 * rejects with it (after a ROLLBACK when the connection still works). A client whose connection failed goes back
 * with the error, so the pool destroys it instead of handing it out again. @internal
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let broken: Error | undefined;
  const onError = (error: Error): void => {
    broken ??= error;
  };
  const client = await new Promise<pg.PoolClient>((resolve, reject) => {
    pool.connect((error, connected) => {
      if (connected === undefined) return reject(error ?? new Error('pg-pool gave neither a client nor an error'));
      connected.on('error', onError);
      resolve(connected);
    });
  });
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    if (broken === undefined) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken ??= rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
    }
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
