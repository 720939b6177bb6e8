/**
 * A journal store a spec's child process builds for itself: a {@link StoreAt} is plain JSON (it
 * crosses a command line), {@link storeOf} turns it into the store and a way to close its client.
 */
import type { JournalStore } from '../../src/core/journal/journal.js';

/** Where a process's store is. */
export type StoreAt = { kind: 'file'; dir: string } | { kind: 'redis'; url: string } | { kind: 'postgres'; connectionString: string };

/** The store `at` describes, with its client connected (Redis, Postgres), and how to close that client. */
export async function storeOf(at: StoreAt): Promise<{ store: JournalStore; close(): Promise<void> }> {
  if (at.kind === 'file') {
    const { fileJournal } = await import('../../src/durable/index.js');
    return { store: fileJournal({ dir: at.dir }), close: async () => undefined };
  }
  if (at.kind === 'redis') {
    const { createClient } = await import('redis');
    const { redisJournal } = await import('../../src/redis/index.js');
    const client = await createClient({ url: at.url, disableOfflineQueue: true })
      .on('error', () => undefined)
      .connect();
    return { store: redisJournal(client, { timeoutMs: 5_000 }), close: () => client.quit().then(() => undefined) };
  }
  const { default: pg } = await import('pg');
  const { postgresJournal } = await import('../../src/postgres/index.js');
  const pool = new pg.Pool({ connectionString: at.connectionString, max: 2 });
  return { store: postgresJournal(pool), close: () => pool.end() };
}
