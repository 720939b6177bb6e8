/**
 * A process that runs guarded calls for spec/support/ledgerProcesses.ts: it builds the store its
 * first argument describes ({@link StoreAt}, JSON) and an effect ledger over it, and the `charge`
 * tool over the payment API its second argument names (an HTTP URL: one API shared by every
 * process, spec/support/paymentApi.ts behind it). Each stdin line `{ id, key, at }` runs one
 * guarded call of `charge` under `key`, started at the instant `at` (`Date.now()` ms, so that the
 * processes race), and is answered on stdout with its `id`: the result (or the error's name and
 * message), and whether this process's ledger answered it without running (`tool-deduplicated`).
 * Its first line, `"ready"`, says its store is up.
 */
import { createInterface } from 'node:readline';
import { lastValueFrom } from 'rxjs';
import type { HealEvent } from '../../src/core/events/events.js';
import { HealHub } from '../../src/core/hub/hub.js';
import { idempotencyHeaders } from '../../src/core/journal/idempotency.js';
import { effectLedger } from '../../src/sources/effectLedger.js';
import { callTool, defineTool } from '../../src/sources/tool.js';
import * as t from 'io-ts';
import { storeOf, type StoreAt } from './storeAt.js';

/** A command: run `charge` under `key` at the instant `at`. */
export interface LedgerCommand {
  readonly id: number;
  readonly key: string;
  readonly at: number;
}

/** Its answer. */
export interface LedgerAnswer {
  readonly id: number;
  readonly ok: boolean;
  readonly value?: unknown;
  readonly name?: string;
  readonly message?: string;
  readonly deduplicated: boolean;
  readonly pid: number;
}

async function main(): Promise<void> {
  const { store } = await storeOf(JSON.parse(process.argv[2]!) as StoreAt);
  const api = process.argv[3]!;
  const ledger = effectLedger(store, { pollMs: 20, leaseMs: 10_000, holder: `worker-${process.pid}` });
  const charge = defineTool({
    name: 'charge',
    description: 'Charges a card',
    args: t.type({ to: t.string, amount: t.number }),
    execute: async (args, ctx) => {
      // the API keeps no keys: only the ledger stands between two processes and two charges
      const res = await fetch(api, { method: 'POST', body: JSON.stringify(args), headers: { ...idempotencyHeaders(ctx) }, signal: ctx.signal });
      return (await res.json()) as unknown;
    },
  });
  const say = (answer: LedgerAnswer): void => void process.stdout.write(`${JSON.stringify(answer)}\n`);
  // its store is up (a Redis client connected, a Postgres pool made): the parent may set the instant
  process.stdout.write('"ready"\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const c = JSON.parse(line) as LedgerCommand;
    const hub = new HealHub();
    const seen: HealEvent[] = [];
    hub.events$.subscribe((e) => seen.push(e));
    const wait = c.at - Date.now() - 5;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    while (Date.now() < c.at) {
      // the last few ms spun, so that the processes start their calls within about a millisecond
    }
    const call = { id: `call-${process.pid}`, name: 'charge', args: { to: 'acct_1', amount: 5 } };
    const execute$ = callTool(charge, call, { idempotencyKey: c.key });
    const deduplicated = (): boolean => seen.some((e) => e.type === 'tool-deduplicated' && e.key === c.key);
    lastValueFrom(ledger.guard({ key: c.key, runId: 'race', tool: charge, call, hub, onUnknownOutcome: 'tell-model' }, execute$)).then(
      (value) => say({ id: c.id, ok: true, value, deduplicated: deduplicated(), pid: process.pid }),
      (e: unknown) => {
        const error = e as { name?: string; message?: string };
        say({ id: c.id, ok: false, name: error.name, message: error.message, deduplicated: deduplicated(), pid: process.pid });
      },
    );
  }
}

await main();
