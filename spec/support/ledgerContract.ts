/**
 * The effect ledger's contract on a journal store: every store's spec runs it beside the journal
 * contract, in real time, through two views of one store (two instances, two clients: as two
 * processes have) — one key called by both at once runs once (the other waits and gets the
 * result), a done key answers the other view without running, a key left started is reconciled
 * by `verify` or reported unknown, re-planned arguments are refused.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { lastValueFrom, NEVER, type Observable, timer, map } from 'rxjs';
import { ToolError } from '../../src/core/errors/errors.js';
import { HealHub } from '../../src/core/hub/hub.js';
import type { HealEvent } from '../../src/core/events/events.js';
import { effectLedger, type EffectLedger, type GuardedCall } from '../../src/sources/effectLedger.js';
import { defineTool } from '../../src/sources/tool.js';
import { freshRun, type JournalViews } from './journalContract.js';

const settle = (o: Observable<unknown>): Promise<unknown> => lastValueFrom(o).catch((e: unknown) => e);

/** Registers the ledger's cases for the views `make` builds (the store's own spec starts and stops its server). */
export function ledgerContract(kind: string, make: () => Promise<JournalViews>): void {
  describe(`${kind}: the effect ledger's contract`, function () {
    this.timeout(20_000);
    let a: EffectLedger;
    let b: EffectLedger;
    before(async () => {
      const views = await make();
      a = effectLedger(views.a, { pollMs: 10, leaseMs: 5_000 });
      b = effectLedger(views.b, { pollMs: 10, leaseMs: 5_000 });
    });

    let runs = 0;
    const charge = (verify?: boolean) =>
      defineTool({
        name: 'charge',
        description: 'charges',
        args: t.type({ amount: t.number }),
        execute: () => timer(60).pipe(map(() => `ch_${++runs}`)),
        ...(verify === undefined ? {} : { verify: () => [verify ? { applied: true as const, result: 'ch_verified' } : { applied: false as const }] }),
      });
    const call = (key: string, hub?: HealHub, tool = charge(), amount = 5): GuardedCall => ({
      key,
      runId: 'r',
      tool,
      call: { id: 'c1', name: 'charge', args: { amount } },
      hub,
      onUnknownOutcome: 'tell-model',
    });
    const execute$ = () => timer(60).pipe(map(() => `ch_${++runs}`));

    it('one key called by two processes at once: it runs once, the other waits and gets its result (tool-deduplicated)', async () => {
      const key = `${freshRun()}/1/0/charge`;
      const before = runs;
      const hub = new HealHub();
      const seen: HealEvent[] = [];
      hub.events$.subscribe((e) => seen.push(e));
      const [x, y] = await Promise.all([settle(a.guard(call(key, hub), execute$())), settle(b.guard(call(key, hub), execute$()))]);
      expect(runs - before).to.equal(1);
      expect(x).to.equal(y);
      expect(seen.filter((e) => e.type === 'tool-deduplicated')).to.deep.equal([{ type: 'tool-deduplicated', callId: 'c1', tool: 'charge', key }]);
      expect(await lastValueFrom(b.state(key))).to.deep.include({ state: 'done', attempts: 1, result: x });
    });

    it('a key left started (its execution cut off) is reconciled by verify on the other process, or reported unknown', async () => {
      const key = `${freshRun()}/1/0/charge`;
      // an execution that never ends by itself: the cut is the unsubscription (a slow store read cannot let it finish first)
      const cut = a.guard(call(key), NEVER).subscribe();
      for (let i = 0; i < 200 && (await lastValueFrom(a.state(key))).state === 'none'; i++) await lastValueFrom(timer(5));
      cut.unsubscribe();
      expect((await lastValueFrom(b.state(key))).state).to.equal('started');
      const unknown = await settle(b.guard(call(key), execute$()));
      expect(unknown).to.be.instanceOf(ToolError);
      expect((unknown as ToolError).message).to.match(/outcome of charge is unknown/);
      expect(await settle(b.guard(call(key, undefined, charge(true)), execute$()))).to.equal('ch_verified');
      expect(await lastValueFrom(a.state(key))).to.deep.include({ state: 'done', result: 'ch_verified' });
    });

    it('arguments that differ under one key are refused, naming both hashes', async () => {
      const key = `${freshRun()}/1/0/charge`;
      await settle(a.guard(call(key), execute$()));
      const refused = await settle(b.guard(call(key, undefined, charge(), 6), execute$()));
      expect(refused).to.be.instanceOf(ToolError);
      expect((refused as ToolError).message).to.match(/recorded: [0-9a-f]{16}, this call: [0-9a-f]{16}/);
    });
  });
}
