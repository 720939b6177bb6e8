/**
 * Agents that pay, in virtual time: a model that asks for charges and answers with what the
 * tools said, the fake payment API, a journal and an effect ledger over one memory store, and
 * processes that can be killed (a killed process's view of the store goes silent: nothing it
 * had sent after the kill arrives, nothing is released, its leases lapse). For the ledger's
 * specs and its property.
 */
import { concatMap, from, map, NEVER, type Observable, timer } from 'rxjs';
import type { AgentEvent, Message, ModelEvent, ToolCall } from '../../src/core/events/events.js';
import type { JournalClaim, JournalData, JournalSession, JournalStore } from '../../src/core/journal/journal.js';
import type { Model, ModelRequest } from '../../src/core/model/model.js';
import type { AgentConfig } from '../../src/sources/agentConfig.js';
import { effectLedger, type EffectLedger } from '../../src/sources/effectLedger.js';
import { finish, toolCall } from '../../src/testing/index.js';

/** The calls the model makes in its first turn (each a logical charge). */
export const CHARGES: readonly Pick<ToolCall, 'name' | 'args'>[] = [
  { name: 'charge', args: { to: 'acct_1', amount: 5 } },
  { name: 'charge', args: { to: 'acct_2', amount: 7 } },
];

const paced = (events: readonly ModelEvent[]): Observable<ModelEvent> => from(events).pipe(concatMap((e) => timer(1).pipe(map(() => e))));

/**
 * A model that asks for `calls` charges, then answers with every tool message it was sent (any
 * process's copy answers alike). `callIds` names the calls: a model asked again may name them anew.
 */
export function payingModel(calls = 1, id = 'payer', callIds = (i: number) => `call_${i + 1}`): Model {
  return {
    id,
    stream: (request: ModelRequest) => {
      const last = request.messages[request.messages.length - 1]!;
      if (last.role !== 'tool')
        return paced([
          ...CHARGES.slice(0, calls).map((c, i) => toolCall(callIds(i), c.name, c.args)),
          finish('tool-calls', { inputTokens: 10, outputTokens: 5 }),
        ]);
      const tools = request.messages.filter((m) => m.role === 'tool').map((m) => m.content);
      return paced([{ type: 'text-delta', text: `Paid: ${tools.join(' / ')}` }, finish('stop', { inputTokens: 30, outputTokens: 8 })]);
    },
  };
}

/**
 * A process's view of a shared store: `kill()` silences it (as SIGKILL would); `killOn` kills it
 * just before it would append a record that matches (that record is never written).
 */
export class ProcessView {
  private dead = false;
  readonly store: JournalStore;
  /** What `killOn` stops with the view: the process's agent. */
  run: { unsubscribe(): void } | undefined;

  /**
   * `writes`: `'one'` passes the store's `claimWith` and sessions' `finish` through (the ledger's
   * one write before and one after), `'separate'` hides them (a store of your own without them: a
   * claim and two appends).
   */
  constructor(inner: JournalStore, killOn?: (data: JournalData) => boolean, writes: 'one' | 'separate' = 'one') {
    const alive = <T>(o: Observable<T>): Observable<T> => (this.dead ? NEVER : o.pipe(concatMap((v) => (this.dead ? NEVER : [v]))));
    /** A write of `data`: the process may die just before it (`killOn`), then it never happens. */
    const writing = <T>(data: JournalData, write: () => Observable<T>): Observable<T> => {
      if (!this.dead && killOn?.(data) === true) this.kill(this.run);
      return this.dead ? NEVER : alive(write());
    };
    const session = (s: JournalSession): JournalSession => ({
      runId: s.runId,
      entries: s.entries,
      ...(s.firstWritten === undefined ? {} : { firstWritten: s.firstWritten }),
      append: (data) => writing(data, () => s.append(data)),
      renew: () => (this.dead ? NEVER : alive(s.renew())),
      release: () => (this.dead ? NEVER : alive(s.release())),
      ...(writes === 'one' && s.finish !== undefined ? { finish: (data: JournalData) => writing(data, () => s.finish!(data)) } : {}),
    });
    const claimWith = inner.claimWith;
    this.store = {
      claim: (c) => (this.dead ? NEVER : alive(inner.claim(c)).pipe(map(session))),
      read: (runId) => (this.dead ? NEVER : alive(inner.read(runId))),
      ...(writes === 'one' && claimWith !== undefined
        ? { claimWith: (c: JournalClaim, first: JournalData) => writing(first, () => claimWith.call(inner, c, first)).pipe(map(session)) }
        : {}),
    };
  }

  /** The process dies: its view goes silent, and so do its timers (`run`: its agent's subscription). */
  kill(run?: { unsubscribe(): void }): void {
    this.dead = true;
    run?.unsubscribe();
  }
}

/** The messages a run's tool calls got, by call id. */
export function toolMessages(events: readonly AgentEvent[]): Map<string, Extract<Message, { role: 'tool' }>> {
  const out = new Map<string, Extract<Message, { role: 'tool' }>>();
  for (const e of events) if (e.type === 'message' && e.message.role === 'tool') out.set(e.message.toolCallId, e.message);
  return out;
}

/** A journaled, ledgered run's config for one process (its own views of the journal and the ledger's store). */
export function processConfig(
  view: ProcessView,
  base: Omit<AgentConfig, 'messages' | 'runId' | 'journal' | 'effects'>,
  options: { readonly leaseMs?: number; readonly ledger?: EffectLedger } = {},
): AgentConfig {
  const leaseMs = options.leaseMs ?? 100;
  return {
    ...base,
    messages: [{ role: 'user', content: 'Pay the invoices' }],
    runId: 'invoice-run',
    journal: view.store,
    leaseMs,
    effects: options.ledger ?? effectLedger(view.store, { leaseMs, pollMs: 5 }),
  };
}
