/**
 * A process that holds journal sessions for spec/support/journalProcesses.ts: it builds the store
 * its first argument describes (JSON: `{ kind: 'file', dir }`, `{ kind: 'redis', url }`,
 * `{ kind: 'postgres', connectionString }`) and runs one JSON command per stdin line, answering
 * each on stdout with its `id`: `claim` (at an instant `at`, in `Date.now()` ms, when given — so
 * that several processes claim at once), `append`, `renew`, `release`, `read`, and `appendLoop`
 * (appends records of `size` bytes until the process is killed, printing each seq).
 */
import { createInterface } from 'node:readline';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import type { JournalSession } from '../../src/core/journal/journal.js';
import { storeOf, type StoreAt } from './storeAt.js';

export type { StoreAt } from './storeAt.js';

/** A command (`id` to match its answer). */
export interface Command {
  readonly id?: number;
  readonly op: 'claim' | 'append' | 'renew' | 'release' | 'read' | 'appendLoop';
  readonly runId: string;
  readonly holder?: string;
  readonly leaseMs?: number;
  readonly at?: number;
  readonly data?: Record<string, unknown>;
  readonly size?: number;
}

/** An answer: `value`, or the error's name, reason and message. */
export interface Answer {
  readonly id?: number;
  readonly ok: boolean;
  readonly value?: unknown;
  readonly name?: string;
  readonly reason?: string;
  readonly message?: string;
}

async function main(): Promise<void> {
  const { store } = await storeOf(JSON.parse(process.argv[2]!) as StoreAt);
  const sessions = new Map<string, JournalSession>();
  const say = (answer: Answer): void => void process.stdout.write(`${JSON.stringify(answer)}\n`);
  const run = async (c: Command): Promise<unknown> => {
    const session = (): JournalSession => {
      const s = sessions.get(c.runId);
      if (s === undefined) throw new Error(`no session of ${c.runId}`);
      return s;
    };
    switch (c.op) {
      case 'claim': {
        if (c.at !== undefined) {
          const wait = c.at - Date.now() - 5;
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          while (Date.now() < c.at) {
            // the last few ms spun, so that every process claims within about a millisecond
          }
        }
        const s = await firstValueFrom(store.claim({ runId: c.runId, holder: c.holder!, leaseMs: c.leaseMs! }));
        sessions.set(c.runId, s);
        return s.entries;
      }
      case 'append':
        return firstValueFrom(session().append(c.data!));
      case 'renew':
        return lastValueFrom(session().renew(), { defaultValue: undefined });
      case 'release':
        return lastValueFrom(session().release(), { defaultValue: undefined });
      case 'read':
        return firstValueFrom(store.read(c.runId));
      case 'appendLoop': {
        const s = session();
        say({ id: c.id, ok: true, value: 'looping' });
        for (let i = 0; ; i++) say({ ok: true, value: await firstValueFrom(s.append({ i, pad: String(i % 10).repeat(c.size ?? 0) })) });
      }
    }
  };
  for await (const line of createInterface({ input: process.stdin })) {
    const c = JSON.parse(line) as Command;
    run(c).then(
      (value) => say({ id: c.id, ok: true, value }),
      (e: unknown) => {
        const error = e as { name?: string; reason?: string; message?: string };
        say({ id: c.id, ok: false, name: error.name, reason: error.reason, message: error.message });
      },
    );
  }
}

await main();
