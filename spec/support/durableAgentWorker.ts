/**
 * One process of a durable run for spec/support/killResume.ts: it builds the same agent every
 * time (two local providers behind fallbackModel, three tools whose side effects are lines in
 * files), starts the run when its journal is empty and resumes it otherwise, and prints one JSON
 * line per event (`{ event, replayed, at }`, `at` in epoch ms). When its argument names a kill
 * point, the process SIGKILLs itself there — before or during or after its nth journal append,
 * before or after a tool's side effect, at its nth live text delta — printing `{ kill }` first, so
 * that the parent knows the point was reached. A lease still held by a killed process is waited
 * out (the claim is tried again until it lapses).
 */
import { Observable } from 'rxjs';
import type { JournalSession, JournalStore } from '../../src/core/journal/journal.js';
import { resumeAgent, runAgent, RunLockedError } from '../../src/index.js';
import { eventLine, seatModel, seatTools } from './seatTools.js';
import { storeOf, type StoreAt } from './storeAt.js';

/** Where the process kills itself. `n` counts from 1, in this process only. */
export type KillPoint =
  | { readonly at: 'append'; readonly n: number; readonly phase: 'before' | 'during' | 'after' }
  | { readonly at: 'effect'; readonly tool: string; readonly phase: 'before' | 'after' }
  | { readonly at: 'delta'; readonly n: number };

/** The worker's one argument (JSON). */
export interface WorkerArgs {
  readonly store: StoreAt;
  readonly runId: string;
  readonly primary: string;
  readonly secondary: string;
  /** The folder of the effect files (`<tool>.log`: a line `<callId> <epoch ms>` per side effect). */
  readonly effects: string;
  readonly leaseMs: number;
  readonly kill?: KillPoint;
}

/** A line the worker prints. */
export type WorkerLine =
  | { readonly event: string; readonly replayed: boolean; readonly at: number; readonly role?: string; readonly id?: string; readonly name?: string }
  | { readonly kill: KillPoint; readonly at: number }
  | { readonly append: number; readonly type: string; readonly at: number }
  | { readonly done: 'answer'; readonly text: string; readonly at: number }
  | { readonly done: 'error'; readonly name: string; readonly message: string; readonly at: number };

const args = JSON.parse(process.argv[2]!) as WorkerArgs;
const say = (line: WorkerLine): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const die = (): never => {
  say({ kill: args.kill!, at: Date.now() });
  // stdout to a pipe is asynchronous: the line is written synchronously first
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
};

/** The store, its appends counted (and killed at) in this process. */
function killing(store: JournalStore): JournalStore {
  let appends = 0;
  const point = args.kill?.at === 'append' ? args.kill : undefined;
  const session = (s: JournalSession): JournalSession => ({
    runId: s.runId,
    entries: s.entries,
    renew: () => s.renew(),
    release: () => s.release(),
    append: (data) => {
      const n = ++appends;
      say({ append: n, type: String(data['type']), at: Date.now() });
      if (point?.n !== n) return s.append(data);
      if (point.phase === 'before') die();
      return new Observable<number>((subscriber) => {
        const inner = s.append(data).subscribe({
          next: (seq) => {
            if (point.phase === 'after') die();
            subscriber.next(seq);
          },
          error: (e: unknown) => subscriber.error(e),
          complete: () => subscriber.complete(),
        });
        // the write has been handed to the store: the kill lands while it is in flight
        if (point.phase === 'during') setImmediate(die);
        return inner;
      });
    },
  });
  return {
    read: (runId) => store.read(runId),
    // (a Subscriber's error and complete are its prototype's: each forwarded by name, or a refused claim would go unhandled)
    claim: (claim) =>
      new Observable<JournalSession>((o) =>
        store.claim(claim).subscribe({ next: (s) => o.next(session(s)), error: (e: unknown) => o.error(e), complete: () => o.complete() }),
      ),
  };
}

const tools = seatTools(args.effects, args.kill, die);

async function main(): Promise<void> {
  const { store, close } = await storeOf(args.store);
  const journal = killing(store);
  const entries = await new Promise<number>((resolve, reject) => store.read(args.runId).subscribe({ next: (e) => resolve(e.length), error: reject }));
  const model = seatModel(args.primary, args.secondary);
  const config = {
    model,
    tools,
    instruction: 'You book seats.',
    messages: [{ role: 'user' as const, content: 'Book seat 1A and text me.' }],
    runId: args.runId,
    journal,
    leaseMs: args.leaseMs,
  };
  let deltas = 0;
  for (;;) {
    const outcome = await new Promise<'done' | 'locked'>((resolve) => {
      let answer = '';
      (entries === 0 ? runAgent(config) : resumeAgent(config)).subscribe({
        next: (e) => {
          const replayed = (e as { replayed?: boolean }).replayed === true;
          if (e.type === 'message' && e.message.role === 'assistant') answer = e.message.content;
          say(eventLine(e));
          if (e.type === 'text-delta' && !replayed && args.kill?.at === 'delta' && ++deltas === args.kill.n) die();
        },
        error: (e: unknown) => {
          if (e instanceof RunLockedError && e.reason === 'held') return resolve('locked');
          const error = e as Error;
          say({ done: 'error', name: error.name, message: error.message, at: Date.now() });
          resolve('done');
        },
        complete: () => {
          say({ done: 'answer', text: answer, at: Date.now() });
          resolve('done');
        },
      });
    });
    if (outcome === 'done') break;
    // the killed process's lease has not lapsed yet
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await close();
}

await main();
