/**
 * The effect ledger in virtual time, against the fake payment API: a retry of a tool that
 * deduplicates by key, a failed answer reconciled by `verify` or reported, a kill after the
 * commit and the resume, a done key answered without running (`tool-deduplicated`), re-planned
 * arguments under one key, two executions of one key at once, idempotent tools untouched, the
 * options checked.
 */
import { expect } from 'chai';
import { lastValueFrom, map, of, Subscription, timer, type Observable } from 'rxjs';
import { InvalidOptionError, ToolError } from '../../src/core/errors/errors.js';
import type { AgentEvent } from '../../src/core/events/events.js';
import { ToolOutcomeUnknownError } from '../../src/core/journal/errors.js';
import { createHash } from 'node:crypto';
import { argsHash, canonicalJson, effectKey, idempotencyHeaders, textHash } from '../../src/core/journal/idempotency.js';
import type { JournalClaim, JournalData, JournalSession, JournalStore } from '../../src/core/journal/journal.js';
import { memoryJournal } from '../../src/durable/index.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { effectLedger, ledgerRunId, type EffectState } from '../../src/sources/effectLedger.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { defineTool } from '../../src/sources/tool.js';
import * as t from 'io-ts';
import { record } from '../../src/testing/index.js';
import { CHARGES, payingModel, ProcessView, processConfig, toolMessages } from '../support/effectRuns.js';
import { testScheduler, virtual } from '../support/marbles.js';
import { chargeTool, PaymentApi, type PaymentFault } from '../support/paymentApi.js';

const retry = {
  toolPipeline: (_c: unknown, call$: Observable<unknown>) => call$.pipe(retryWithBackoff({ maxRetries: 3, initialBackoffMs: 5, jitter: 'none' })),
};

/** One process's run to its end (or `until` ms), in virtual time: its events and how it ended. */
function runFor(config: Parameters<typeof runAgent>[0], flush?: () => void): { events: AgentEvent[]; error: unknown; done: boolean; sub: Subscription } {
  const out = { events: [] as AgentEvent[], error: undefined as unknown, done: false, sub: new Subscription() };
  out.sub = runAgent(config).subscribe({ next: (e) => out.events.push(e), error: (e: unknown) => (out.error = e), complete: () => (out.done = true) });
  flush?.();
  return out;
}

describe('effectLedger', () => {
  it('a tool that deduplicates by key is retried after a timeout that followed the commit: one charge, the same key twice', () => {
    testScheduler().run(({ flush }) => {
      const api = new PaymentApi(['timeout-after-commit', 'ok'], true);
      const run = runFor(
        processConfig(new ProcessView(memoryJournal()), { model: payingModel(), tools: [chargeTool(api, { idempotent: 'by-key' })], ...retry }),
        flush,
      );
      expect(run.error).to.equal(undefined);
      expect(api.requests).to.equal(2);
      expect(api.charges.map((c) => c.key)).to.deep.equal(['invoice-run/1/0/charge']);
      expect(toolMessages(run.events).get('call_1')?.content).to.equal('{"charge":"ch_1","amount":5}');
    });
  });

  it('a non-idempotent tool whose answer failed after the commit: verify finds the charge, the model gets the receipt, no retry', () => {
    for (const fault of ['500-after-commit', 'reset-after-commit', 'timeout-after-commit'] as PaymentFault[]) {
      testScheduler().run(({ flush }) => {
        const api = new PaymentApi([fault], true);
        const run = runFor(
          processConfig(new ProcessView(memoryJournal()), { model: payingModel(), tools: [chargeTool(api, { verify: true })], ...retry }),
          flush,
        );
        expect(api.requests, fault).to.equal(1);
        expect(api.charges, fault).to.have.length(1);
        expect(toolMessages(run.events).get('call_1')?.content, fault).to.equal('{"charge":"ch_1","amount":5}');
      });
    }
  });

  it('without verify, an unknown outcome is told to the model (never retried), or ends the run with onUnknownOutcome: error', () => {
    testScheduler().run(({ flush }) => {
      const api = new PaymentApi(['500-after-commit'], false);
      const run = runFor(processConfig(new ProcessView(memoryJournal()), { model: payingModel(), tools: [chargeTool(api)], ...retry }), flush);
      expect(api.requests).to.equal(1);
      const message = toolMessages(run.events).get('call_1');
      expect(message?.isError).to.equal(true);
      expect(message?.content).to.match(/The outcome of charge is unknown: it may or may not have happened \(HTTP 500/);
      expect(run.events.filter((e) => e.type === 'tool-outcome-unknown')).to.deep.equal([{ type: 'tool-outcome-unknown', callId: 'call_1', tool: 'charge' }]);
    });
    testScheduler().run(({ flush }) => {
      const api = new PaymentApi(['reset-after-commit'], false);
      const config = processConfig(new ProcessView(memoryJournal()), { model: payingModel(), tools: [chargeTool(api)], onUnknownOutcome: 'error' });
      const run = runFor(config, flush);
      expect(run.error).to.be.instanceOf(ToolOutcomeUnknownError);
      expect(api.charges).to.have.length(1);
      // the event first, then the run's end: the rule the durable run keeps for a resumed call
      expect(run.events.map((e) => e.type).slice(-1)).to.deep.equal(['tool-outcome-unknown']);
    });
  });

  it('a NotAppliedError (a 503 that says nothing was charged) is recorded failed: retried, charged once', () => {
    testScheduler().run(({ flush }) => {
      const api = new PaymentApi(['busy', 'ok'], false);
      const journal = memoryJournal();
      const view = new ProcessView(journal);
      const ledger = effectLedger(view.store, { pollMs: 5 });
      const run = runFor(processConfig(view, { model: payingModel(), tools: [chargeTool(api)], ...retry }, { ledger }), flush);
      expect(api.requests).to.equal(2);
      expect(api.charges).to.have.length(1);
      expect(toolMessages(run.events).get('call_1')?.isError).to.equal(undefined);
      let state: EffectState | undefined;
      ledger.state('invoice-run/1/0/charge').subscribe((s) => (state = s));
      flush();
      expect(state).to.deep.include({ state: 'done', attempts: 2, result: { charge: 'ch_1', amount: 5 } });
    });
  });

  it('a process killed after the commit: the resumed run asks verify (charged: the receipt), or tells the model it is unknown — never charges again', () => {
    for (const verify of [true, false]) {
      virtual(({ flush, ts }) => {
        const journal = memoryJournal();
        const api = new PaymentApi(['timeout-after-commit'], true, 2);
        const first = new ProcessView(journal);
        const tools = [chargeTool(api, { verify, timeoutMs: 50 })];
        const crashed = runFor(processConfig(first, { model: payingModel(), tools }));
        ts.schedule(() => first.kill(crashed.sub), 10);
        const second = new ProcessView(journal);
        let resumed: ReturnType<typeof runFor> | undefined;
        ts.schedule(() => (resumed = runFor(processConfig(second, { model: payingModel(), tools }))), 500);
        flush();
        expect(api.charges, `verify ${verify}`).to.have.length(1);
        expect(api.requests, `verify ${verify}`).to.equal(1);
        const message = toolMessages(resumed!.events).get('call_1');
        if (verify) expect(message?.content).to.equal('{"charge":"ch_1","amount":5}');
        else expect(message?.content).to.match(/^Error: The outcome of charge is unknown/);
        // started, never finished, no verify: the resumed run says so in its stream
        const unknown = resumed!.events.filter((e) => e.type === 'tool-outcome-unknown');
        expect(unknown, `verify ${verify}`).to.deep.equal(verify ? [] : [{ type: 'tool-outcome-unknown', callId: 'call_1', tool: 'charge' }]);
        expect(resumed!.done).to.equal(true);
      });
    }
  });

  it('a process killed after the ledger recorded done, before the journal did: the resume answers from the ledger (tool-deduplicated)', () => {
    virtual(({ flush, ts }) => {
      const journal = memoryJournal();
      const api = new PaymentApi(['ok'], false, 2);
      const tools = [chargeTool(api)];
      // dies as it would journal the tool's outcome: the ledger has it, the journal does not
      const first = new ProcessView(journal, (data) => data['callId'] === 'call_1' && data['type'] === 'message');
      const crashed = runFor(processConfig(first, { model: payingModel(), tools }));
      first.run = crashed.sub;
      let resumed: ReturnType<typeof runFor> | undefined;
      ts.schedule(() => (resumed = runFor(processConfig(new ProcessView(journal), { model: payingModel(), tools }))), 500);
      flush();
      expect(crashed.done).to.equal(false);
      expect(api.requests).to.equal(1);
      expect(api.charges).to.have.length(1);
      expect(resumed!.events.filter((e) => e.type === 'tool-deduplicated')).to.deep.equal([
        { type: 'tool-deduplicated', callId: 'call_1', tool: 'charge', key: 'invoice-run/1/0/charge' },
      ]);
      expect(toolMessages(resumed!.events).get('call_1')?.content).to.equal('{"charge":"ch_1","amount":5}');
      expect(resumed!.done).to.equal(true);
    });
  });

  it('arguments that differ under one key are a ToolError naming both hashes', async () => {
    const ledger = effectLedger(memoryJournal());
    const tool = defineTool({ name: 'charge', description: 'c', args: t.unknown, execute: () => of('ok') });
    const guarded = (args: unknown) =>
      ledger.guard(
        { key: 'k/1/0/charge', runId: 'k', tool, call: { id: 'c1', name: 'charge', args }, hub: undefined, onUnknownOutcome: 'tell-model' },
        of('ok'),
      );
    expect(await lastValueFrom(guarded({ amount: 5 }))).to.equal('ok');
    const error: unknown = await lastValueFrom(guarded({ amount: 6 })).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ToolError);
    expect((error as ToolError).message)
      .to.include(argsHash({ amount: 5 }))
      .and.include(argsHash({ amount: 6 }));
    expect((error as ToolError).phase).to.equal('validate');
  });

  it('two executions of one key at once: one runs, the other waits and gets its result (tool-deduplicated)', () => {
    testScheduler().run(({ flush }) => {
      const ledger = effectLedger(memoryJournal(), { pollMs: 3 });
      let runs = 0;
      const tool = defineTool({ name: 'charge', description: 'c', args: t.unknown, execute: () => timer(10).pipe(map(() => `ch_${++runs}`)) });
      const reports: string[] = [];
      const hub = { report: (e: { type: string }) => reports.push(e.type) } as never;
      const call = { id: 'c1', name: 'charge', args: { amount: 5 } };
      const execute$ = timer(10).pipe(map(() => `ch_${++runs}`));
      const a = record(ledger.guard({ key: 'k', runId: 'k', tool, call, hub, onUnknownOutcome: 'tell-model' }, execute$));
      const b = record(ledger.guard({ key: 'k', runId: 'k', tool, call, hub, onUnknownOutcome: 'tell-model' }, execute$));
      flush();
      expect(runs).to.equal(1);
      expect(a.events.map(([, v]) => v)).to.deep.equal(['ch_1']);
      expect(b.events.map(([, v]) => v)).to.deep.equal(['ch_1']);
      expect(reports).to.deep.equal(['tool-deduplicated']);
    });
  });

  it('idempotent tools never touch the ledger; the key reaches execute and the headers', () => {
    testScheduler().run(({ flush }) => {
      let claims = 0;
      const inner = memoryJournal();
      const counted: JournalStore = { claim: (c) => (claims++, inner.claim(c)), read: (r) => inner.read(r) };
      const keys: (string | undefined)[] = [];
      const read = defineTool({
        name: 'charge',
        description: 'a read',
        args: t.unknown,
        idempotent: true,
        execute: (_a, ctx) => (keys.push(idempotencyHeaders(ctx)['Idempotency-Key']), of('fine')),
      });
      runFor({ model: payingModel(), tools: [read], messages: [{ role: 'user', content: 'x' }], effects: effectLedger(counted) }, flush);
      expect(claims).to.equal(0);
      expect(keys).to.have.length(1);
      expect(keys[0]).to.match(/^run-.+\/1\/0\/charge$/);
    });
  });

  it('one write before and one after: claimWith (the claim and its started record) and finish (done and the release); a store without them: a claim, two appends, a release', () => {
    for (const writes of ['one', 'separate'] as const) {
      testScheduler().run(({ flush }) => {
        const inner = memoryJournal();
        const ops: string[] = [];
        const session = (x: JournalSession): JournalSession => ({
          runId: x.runId,
          entries: x.entries,
          firstWritten: x.firstWritten === true,
          append: (d) => (ops.push(`append ${String(d['type'])}`), x.append(d)),
          renew: () => (ops.push('renew'), x.renew()),
          release: () => (ops.push('release'), x.release()),
          ...(writes === 'one' ? { finish: (d: JournalData) => (ops.push(`finish ${String(d['type'])}`), x.finish!(d)) } : {}),
        });
        const counted: JournalStore = {
          claim: (c) => (ops.push('claim'), inner.claim(c).pipe(map(session))),
          read: (r) => inner.read(r),
          ...(writes === 'one'
            ? {
                claimWith: (c: JournalClaim, first: JournalData) => (
                  ops.push(`claimWith ${String(first['type'])}`),
                  inner.claimWith!(c, first).pipe(map(session))
                ),
              }
            : {}),
        };
        const api = new PaymentApi(['ok'], true);
        const ledger = effectLedger(counted, { leaseMs: 1_000 });
        const run = runFor(processConfig(new ProcessView(memoryJournal()), { model: payingModel(), tools: [chargeTool(api)] }, { ledger }), flush);
        expect(run.error).to.equal(undefined);
        expect(api.charges).to.have.length(1);
        expect(ops, writes).to.deep.equal(writes === 'one' ? ['claimWith started', 'finish done'] : ['claim', 'append started', 'append done', 'release']);
        let state: EffectState | undefined;
        ledger.state('invoice-run/1/0/charge').subscribe((x) => (state = x));
        flush();
        expect(state?.state).to.equal('done');
        // the key is free: a later execution claims it at once and answers from its record
        let again: unknown;
        ledger
          .guard(
            {
              key: 'invoice-run/1/0/charge',
              runId: 'invoice-run',
              tool: chargeTool(api),
              hub: undefined,
              call: { id: 'x', name: 'charge', args: CHARGES[0]!.args },
              onUnknownOutcome: 'tell-model',
            },
            of('never'),
          )
          .subscribe((v) => (again = v));
        flush();
        expect(again, writes).to.not.equal(undefined);
        expect(api.charges).to.have.length(1);
      });
    }
  });

  it('keys, hashes and options', () => {
    expect(effectKey('order-7421', 3, 0, 'charge')).to.equal('order-7421/3/0/charge');
    expect(idempotencyHeaders({ idempotencyKey: 'k' })).to.deep.equal({ 'Idempotency-Key': 'k' });
    expect(idempotencyHeaders({})).to.deep.equal({});
    expect(canonicalJson({ b: 1, a: [true, { d: 2, c: 3 }], u: undefined })).to.equal('{"a":[true,{"c":3,"d":2}],"b":1}');
    expect(argsHash({ a: 1, b: 2 }))
      .to.equal(argsHash({ b: 2, a: 1 }))
      .and.not.equal(argsHash({ a: 1, b: 3 }));
    expect(ledgerRunId('x')).to.match(/^fx2-[0-9a-f]{32}$/);
    // the hash is SHA-256: pinned values (a process, a runtime or a version that hashed otherwise would not find a key's record)
    expect(ledgerRunId('order-7421/3/0/charge')).to.equal('fx2-1df486d569297f2954dfe3638867c35e');
    expect(argsHash({ amount: 5 })).to.equal('7e84cbf0f7a7c92c');
    for (const text of ['order-7421/3/0/charge', 'ünïcödé/1/0/réserver', ''])
      expect(textHash(text)).to.equal(createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32));
    expect(() => effectLedger({} as JournalStore)).to.throw(InvalidOptionError, /"store"/);
    expect(() => effectLedger(memoryJournal(), { pollMs: 0 })).to.throw(InvalidOptionError, /"pollMs"/);
    expect(() => effectLedger(memoryJournal(), { leaseMs: -1 })).to.throw(InvalidOptionError, /"leaseMs"/);
    expect(() => runAgent({ model: payingModel(), messages: [], effects: {} as never })).to.throw(InvalidOptionError, /"effects"/);
    expect(() => defineTool({ name: 'x', description: '', args: t.unknown, execute: () => [1], idempotent: 'yes' as never })).to.throw(
      InvalidOptionError,
      /by-key/,
    );
  });
});
