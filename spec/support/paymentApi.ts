/**
 * A fake payment API on the scheduler, for the effect ledger's specs: it applies a charge, then
 * fails its response in every way that matters — a timeout after the commit, a connection reset
 * after the commit, a 500 after the commit, a 503 before any commit (that the tool cannot tell from
 * a 500), a 503 that says nothing was charged (`busy`), a decline — with or without
 * support for idempotency keys on its side (with it, a key already charged answers the first
 * receipt and charges nothing). What it applied is the truth the specs check the agent against.
 */
import * as t from 'io-ts';
import { Observable, timer } from 'rxjs';
import { HttpError } from '../../src/core/errors/errors.js';
import { NotAppliedError } from '../../src/core/errors/notApplied.js';
import { defineTool, type Tool, type ToolContext } from '../../src/sources/tool.js';

/** Every way a request to the API ends, for generators. */
export const PAYMENT_FAULTS = ['ok', 'timeout-after-commit', 'reset-after-commit', '500-after-commit', '503-before-commit', 'busy', 'decline'] as const;

/** How one request to the API ends. */
export type PaymentFault = (typeof PAYMENT_FAULTS)[number];

/** One applied charge. */
export interface Charge {
  readonly id: string;
  readonly key: string | undefined;
  readonly to: string;
  readonly amount: number;
}

/** The API's answer to a charge that went through. */
export interface Receipt {
  readonly charge: string;
  readonly amount: number;
}

/** A connection reset, as Node reports it. */
function reset(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

/**
 * The API: `faults[n]` decides how its n-th request ends (past the list: `'ok'`); a request
 * takes `latencyMs`, the commit happening at its end, before the answer.
 */
export class PaymentApi {
  readonly charges: Charge[] = [];
  requests = 0;
  verifies = 0;

  constructor(
    private readonly faults: readonly PaymentFault[],
    readonly keys: boolean,
    private readonly latencyMs = 2,
  ) {}

  /** Charges once per key (with key support), or once per request; then answers as its fault says. */
  charge(to: string, amount: number, key: string | undefined): Observable<Receipt> {
    const fault = this.faults[this.requests++] ?? 'ok';
    return new Observable<Receipt>((subscriber) =>
      timer(this.latencyMs).subscribe(() => {
        // a key it has charged already is answered from its record first (as Stripe does), whatever else is wrong
        const known = this.keys && key !== undefined ? this.charges.find((c) => c.key === key) : undefined;
        if (known === undefined) {
          if (fault === 'decline') return subscriber.error(new NotAppliedError('card declined: nothing was charged', { cause: new HttpError(402) }));
          if (fault === '503-before-commit') return subscriber.error(new HttpError(503));
          if (fault === 'busy') return subscriber.error(new NotAppliedError('overloaded: nothing was charged', { cause: new HttpError(503) }));
        }
        const charge = known ?? { id: `ch_${this.charges.length + 1}`, key, to, amount };
        if (known === undefined) this.charges.push(charge);
        // the charge is committed: what follows is only the answer failing
        if (fault === 'ok' || fault === 'decline' || fault === 'busy' || fault === '503-before-commit') {
          subscriber.next({ charge: charge.id, amount });
          return subscriber.complete();
        }
        if (fault !== 'timeout-after-commit') subscriber.error(fault === 'reset-after-commit' ? reset() : new HttpError(500));
      }),
    );
  }

  /** What the API applied under `key` (the verify of a tool whose API keeps keys). */
  find(key: string | undefined): Charge | undefined {
    this.verifies++;
    return key === undefined ? undefined : this.charges.find((c) => c.key === key);
  }

  /** Charges applied per key. */
  perKey(): Map<string | undefined, number> {
    const counts = new Map<string | undefined, number>();
    for (const c of this.charges) counts.set(c.key, (counts.get(c.key) ?? 0) + 1);
    return counts;
  }
}

/** How the `charge` tool is declared. */
export interface ChargeToolOptions {
  /** `'by-key'`: the tool says its API deduplicates by key (a planted defect when the API does not). */
  readonly idempotent?: false | 'by-key';
  /** With a `verify` that asks the API what it applied under the key. */
  readonly verify?: boolean;
  /** The tool's own deadline for an answer, in ms. Defaults to 20. */
  readonly timeoutMs?: number;
}

/**
 * The `charge` tool over the API: sends `ctx.idempotencyKey`, gives up on an answer after
 * `timeoutMs`, and (with `verify`) asks the API what it applied under the key.
 */
export function chargeTool(api: PaymentApi, o: ChargeToolOptions = {}): Tool<{ to: string; amount: number }, Receipt> {
  const timeoutMs = o.timeoutMs ?? 20;
  const args = t.type({ to: t.string, amount: t.number });
  return defineTool<{ to: string; amount: number }, Receipt>({
    name: 'charge',
    description: 'Charges a card',
    args,
    idempotent: o.idempotent ?? false,
    execute: ({ to, amount }, ctx: ToolContext) =>
      new Observable<Receipt>((subscriber) => {
        const answer = api.charge(to, amount, ctx.idempotencyKey).subscribe(subscriber);
        const deadline = timer(timeoutMs).subscribe(() => subscriber.error(Object.assign(new Error('request timed out'), { code: 'ETIMEDOUT' })));
        return () => {
          answer.unsubscribe();
          deadline.unsubscribe();
        };
      }),
    ...(o.verify
      ? {
          verify: (_args: { to: string; amount: number }, ctx: ToolContext) => {
            const found = api.find(ctx.idempotencyKey);
            return [found === undefined ? { applied: false as const } : { applied: true as const, result: { charge: found.id, amount: found.amount } }];
          },
        }
      : {}),
  });
}
