/**
 * The journal store contract: every rule of src/core/journal/journal.ts as one set of cases that
 * every store runs — the reference model (memoryJournal), the file journal, Redis on each client
 * and topology, Postgres — in real time, through two views of one store (`a` and `b`: two
 * instances, two clients, as two processes have).
 */
import { expect } from 'chai';
import { firstValueFrom, lastValueFrom, type Observable } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import { JournalCorruptError, RunLockedError } from '../../src/core/journal/errors.js';
import type { JournalData, JournalSession, JournalStore } from '../../src/core/journal/journal.js';

/** Two views of one store. */
export interface JournalViews {
  readonly a: JournalStore;
  readonly b: JournalStore;
}

let unique = 0;
/** A run id no other case (or run of the suite) uses. */
export const freshRun = (): string => `run-${process.pid}-${Date.now().toString(36)}-${++unique}`;
const get = <T>(o: Observable<T>): Promise<T> => firstValueFrom(o);
const done = (o: Observable<unknown>): Promise<unknown> => lastValueFrom(o, { defaultValue: undefined });

/** What `o` errors with (a failure if it succeeds). */
export async function failure(o: Observable<unknown>): Promise<unknown> {
  try {
    await lastValueFrom(o, { defaultValue: undefined });
  } catch (e) {
    return e;
  }
  expect.fail('succeeded');
}

/** The RunLockedError `o` errors with. */
export async function locked(o: Observable<unknown>, reason: RunLockedError['reason']): Promise<RunLockedError> {
  const e = await failure(o);
  expect(e, String(e)).to.be.instanceOf(RunLockedError);
  expect((e as RunLockedError).reason, (e as Error).message).to.equal(reason);
  return e as RunLockedError;
}

/** A record of every kind of JSON data, key order included. */
export const RICH: JournalData = {
  v: 1,
  z: 'first key',
  a: ['nested', { deep: [1, -2.5, 1e21, 0, null, true, false] }],
  text: 'line one\nline two\t"quoted" \\ ünïcødé 🚀 \u2028',
  empty: {},
  none: [],
  big: 'x'.repeat(20_000),
};

/** Registers the contract's cases for the views `make` builds, `after` called once at the end. */
export function journalContract(kind: string, make: () => Promise<JournalViews>, after_: () => Promise<void> = async () => undefined): void {
  describe(`${kind}: the journal store contract`, function () {
    this.timeout(20_000);
    let s: JournalViews;
    const claim = (store: JournalStore, runId: string, holder: string, leaseMs = 60_000): Promise<JournalSession> =>
      get(store.claim({ runId, holder, leaseMs }));
    before(async () => {
      s = await make();
    });
    after(after_);

    it('a run never written: claimed empty, read empty', async () => {
      const runId = freshRun();
      expect(await get(s.b.read(runId))).to.deep.equal([]);
      const session = await claim(s.a, runId, 'p1');
      expect(session.runId).to.equal(runId);
      expect(session.entries).to.deep.equal([]);
      expect(await get(s.b.read(runId))).to.deep.equal([]);
      await done(session.release());
    });

    it('appends are numbered from 0 in order, read back equal (key order too) by the other view, and claimed back after a release', async () => {
      const runId = freshRun();
      const session = await claim(s.a, runId, 'p1');
      expect(await get(session.append({ v: 1, type: 'start' }))).to.equal(0);
      expect(await get(session.append(RICH))).to.equal(1);
      expect(await get(session.append({ v: 1, type: 'end' }))).to.equal(2);
      const read = await get(s.b.read(runId));
      expect(read).to.deep.equal([
        { seq: 0, data: { v: 1, type: 'start' } },
        { seq: 1, data: RICH },
        { seq: 2, data: { v: 1, type: 'end' } },
      ]);
      expect(Object.keys(read[1]!.data)).to.deep.equal(Object.keys(RICH));
      await done(session.release());
      const again = await claim(s.b, runId, 'p2');
      expect(again.entries).to.deep.equal(read);
      expect(await get(again.append({ v: 1, type: 'more' })), 'the next seq').to.equal(3);
      await done(again.release());
    });

    it('appends subscribed together are written one at a time, in the order subscribed', async () => {
      const runId = freshRun();
      const session = await claim(s.a, runId, 'p1');
      const seqs = await Promise.all(Array.from({ length: 8 }, (_, i) => get(session.append({ i }))));
      expect(seqs).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
      expect((await get(s.b.read(runId))).map((e) => e.data['i'])).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
      await done(session.release());
    });

    it("a live lease refuses another holder ('held': who and for how long), while read never waits for it", async () => {
      const runId = freshRun();
      const session = await claim(s.a, runId, 'p1', 5_000);
      await get(session.append({ n: 1 }));
      const e = await locked(s.b.claim({ runId, holder: 'p2', leaseMs: 5_000 }), 'held');
      expect(e.runId).to.equal(runId);
      expect(e.holder).to.equal('p1');
      expect(e.retryAfterMs).to.be.within(1, 5_000);
      expect(e.until).to.be.a('number');
      expect(e.message).to.include('"p1"');
      expect(await get(s.b.read(runId))).to.deep.equal([{ seq: 0, data: { n: 1 } }]);
      expect(await get(session.append({ n: 2 })), 'the holder goes on').to.equal(1);
      await done(session.release());
    });

    it("the same holder claims its own live lease again: a new session, and the old one can no longer write ('taken')", async () => {
      const runId = freshRun();
      const first = await claim(s.a, runId, 'p1');
      await get(first.append({ n: 0 }));
      const second = await claim(s.b, runId, 'p1');
      expect(second.entries).to.deep.equal([{ seq: 0, data: { n: 0 } }]);
      await locked(first.append({ n: 'stale' }), 'taken');
      await locked(first.renew(), 'taken');
      expect(await get(second.append({ n: 1 }))).to.equal(1);
      expect(await get(s.a.read(runId))).to.deep.equal([
        { seq: 0, data: { n: 0 } },
        { seq: 1, data: { n: 1 } },
      ]);
      await done(first.release());
      await locked(s.a.claim({ runId, holder: 'p3', leaseMs: 1000 }), 'held');
      await done(second.release());
    });

    it('a lapsed lease admits the next holder; the lapsed session is refused from then on — no fork', async () => {
      const runId = freshRun();
      const first = await claim(s.a, runId, 'p1', 150);
      await get(first.append({ by: 'p1', n: 0 }));
      await sleep(250);
      const second = await claim(s.b, runId, 'p2', 60_000);
      expect(second.entries).to.deep.equal([{ seq: 0, data: { by: 'p1', n: 0 } }]);
      await locked(first.append({ by: 'p1', n: 1 }), 'taken');
      expect(await get(second.append({ by: 'p2', n: 1 }))).to.equal(1);
      await locked(first.append({ by: 'p1', n: 2 }), 'taken');
      expect(await get(s.a.read(runId))).to.deep.equal([
        { seq: 0, data: { by: 'p1', n: 0 } },
        { seq: 1, data: { by: 'p2', n: 1 } },
      ]);
      await done(second.release());
    });

    it('a lapsed lease that nobody claimed since: its session still writes (no one else did)', async () => {
      const runId = freshRun();
      // a lease of 400 ms, lapsed by 400 ms: renewed, it holds 400 ms again — margins a loaded machine's delays do not eat
      const session = await claim(s.a, runId, 'p1', 400);
      await sleep(800);
      expect(await get(session.append({ late: true }))).to.equal(0);
      await get(session.renew());
      await locked(s.b.claim({ runId, holder: 'p2', leaseMs: 1000 }), 'held');
      await done(session.release());
    });

    it('renew extends the lease by leaseMs from now', async () => {
      // margins of 600 ms either way: a loaded machine's delays do not decide the case
      const runId = freshRun();
      const session = await claim(s.a, runId, 'p1', 1500);
      await sleep(900);
      await done(session.renew());
      await sleep(900); // 1.8 s after the claim, 0.9 s after the renewal
      const e = await locked(s.b.claim({ runId, holder: 'p2', leaseMs: 1000 }), 'held');
      expect(e.retryAfterMs).to.be.within(1, 1500);
      await sleep(1500);
      const next = await claim(s.b, runId, 'p2');
      await locked(session.renew(), 'taken');
      await done(next.release());
    });

    it("release frees the run at once; the released session can no longer write ('released'); a second release is nothing", async () => {
      const runId = freshRun();
      const session = await claim(s.a, runId, 'p1', 60_000);
      await get(session.append({ n: 0 }));
      await done(session.release());
      await locked(session.append({ n: 1 }), 'released');
      await locked(session.renew(), 'released');
      await done(session.release());
      const next = await claim(s.b, runId, 'p2', 60_000);
      expect(next.entries).to.have.length(1);
      await done(next.release());
    });

    it("a session another claim took releases nothing: the new holder's lease stays live", async () => {
      const runId = freshRun();
      const first = await claim(s.a, runId, 'p1', 100);
      await sleep(200);
      const second = await claim(s.b, runId, 'p2', 60_000);
      await done(first.release());
      const e = await locked(s.a.claim({ runId, holder: 'p3', leaseMs: 1000 }), 'held');
      expect(e.holder).to.equal('p2');
      await done(second.release());
    });

    it('claims of a free run at once, by many holders through both views: exactly one wins', async () => {
      for (let round = 0; round < 5; round++) {
        const runId = freshRun();
        const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => claim(i % 2 ? s.a : s.b, runId, `h${i}`, 60_000)));
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        expect(won, `round ${round}`).to.have.length(1);
        for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(RunLockedError);
        await done((won[0] as PromiseFulfilledResult<JournalSession>).value.release());
      }
    });

    it('runs are independent: one held, another claimed, their entries apart', async () => {
      const [r1, r2] = [freshRun(), freshRun()];
      const one = await claim(s.a, r1, 'p1');
      const two = await claim(s.b, r2, 'p2');
      await get(one.append({ run: 1 }));
      await get(two.append({ run: 2 }));
      expect(await get(s.a.read(r2))).to.deep.equal([{ seq: 0, data: { run: 2 } }]);
      expect(await get(s.b.read(r1))).to.deep.equal([{ seq: 0, data: { run: 1 } }]);
      await done(one.release());
      await done(two.release());
    });

    it('cold: a claim or an append never subscribed does nothing', async () => {
      const runId = freshRun();
      s.a.claim({ runId, holder: 'ghost', leaseMs: 60_000 });
      const session = await claim(s.b, runId, 'p1');
      session.append({ never: true });
      expect(await get(session.append({ n: 0 }))).to.equal(0);
      expect(await get(s.a.read(runId))).to.deep.equal([{ seq: 0, data: { n: 0 } }]);
      await done(session.release());
    });

    it('a claim unsubscribed before it answers releases the lease it took', async () => {
      const runId = freshRun();
      s.a.claim({ runId, holder: 'gone', leaseMs: 60_000 }).subscribe().unsubscribe();
      let session: JournalSession | undefined;
      for (let i = 0; i < 250 && session === undefined; i++) {
        session = await claim(s.b, runId, 'p1').catch(async (e: unknown) => {
          expect(e).to.be.instanceOf(RunLockedError);
          await sleep(20);
          return undefined;
        });
      }
      expect(session, 'claimed within 5 s, not after the 60 s lease').to.not.equal(undefined);
      await done(session!.release());
    });

    it('an append unsubscribed in flight still counts: the next append takes the next seq', async () => {
      const runId = freshRun();
      const session = await claim(s.a, runId, 'p1');
      session.append({ n: 0 }).subscribe().unsubscribe();
      expect(await get(session.append({ n: 1 }))).to.equal(1);
      expect((await get(s.b.read(runId))).map((e) => e.data)).to.deep.equal([{ n: 0 }, { n: 1 }]);
      await done(session.release());
    });

    describe('one write before, one after (claimWith and finish)', () => {
      const claimWith = (store: JournalStore, runId: string, holder: string, first: JournalData, leaseMs = 60_000): Promise<JournalSession> =>
        get(store.claimWith!({ runId, holder, leaseMs }, first));

      it('claimWith on a run never written: the first record is entry 0, read back by the other view; the next append is seq 1', async () => {
        expect(s.a.claimWith, 'every rxheal store has claimWith').to.be.a('function');
        const runId = freshRun();
        const session = await claimWith(s.a, runId, 'p1', RICH);
        expect(session.firstWritten).to.equal(true);
        expect(session.entries).to.deep.equal([{ seq: 0, data: RICH }]);
        expect(await get(s.b.read(runId))).to.deep.equal([{ seq: 0, data: RICH }]);
        expect(await get(session.append({ n: 1 }))).to.equal(1);
        await done(session.release());
      });

      it('claimWith on a run that has records: claimed as it is, nothing appended', async () => {
        const runId = freshRun();
        const one = await claim(s.a, runId, 'p1');
        await get(one.append({ n: 0 }));
        await done(one.release());
        const two = await claimWith(s.b, runId, 'p2', { first: true });
        expect(two.firstWritten).to.equal(false);
        expect(two.entries).to.deep.equal([{ seq: 0, data: { n: 0 } }]);
        expect(await get(s.a.read(runId))).to.deep.equal([{ seq: 0, data: { n: 0 } }]);
        await done(two.release());
      });

      it("claimWith refused by a live lease ('held') writes nothing", async () => {
        const runId = freshRun();
        const holder = await claim(s.a, runId, 'p1');
        await locked(s.b.claimWith!({ runId, holder: 'p2', leaseMs: 60_000 }, { first: true }), 'held');
        expect(await get(s.a.read(runId))).to.deep.equal([]);
        await done(holder.release());
      });

      it('claimWith of a fresh run by many holders through both views at once: one wins, and the run holds its record alone', async () => {
        for (let round = 0; round < 3; round++) {
          const runId = freshRun();
          const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => claimWith(i % 2 ? s.a : s.b, runId, `h${i}`, { by: i })));
          const won = outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<JournalSession>).value);
          expect(won, `round ${round}`).to.have.length(1);
          for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(RunLockedError);
          expect(won[0]!.firstWritten).to.equal(true);
          expect(await get(s.a.read(runId))).to.deep.equal(won[0]!.entries);
          expect(won[0]!.entries).to.have.length(1);
          await done(won[0]!.release());
        }
      });

      it("finish appends the last record and releases: the next holder claims it (the release may follow the record) and reads it; the session then writes nothing ('released')", async () => {
        const runId = freshRun();
        const session = await claimWith(s.a, runId, 'p1', { type: 'started' });
        expect(await get(session.finish!({ type: 'done', result: RICH }))).to.equal(1);
        await locked(session.append({ n: 2 }), 'released');
        await done(session.release());
        let next: JournalSession | undefined;
        for (let i = 0; i < 100 && next === undefined; i++)
          next = await claim(s.b, runId, 'p2').catch(async (e: unknown) => {
            expect(e).to.be.instanceOf(RunLockedError);
            await sleep(20);
            return undefined;
          });
        expect(next, 'claimed within 2 s, not after the 60 s lease').to.not.equal(undefined);
        if (next === undefined) return;
        expect(next.entries.map((e) => e.data)).to.deep.equal([{ type: 'started' }, { type: 'done', result: RICH }]);
        await done(next.release());
      });

      it("finish by a session another claim took: 'taken', nothing written, the new holder's lease stays", async () => {
        const runId = freshRun();
        const first = await claimWith(s.a, runId, 'p1', { type: 'started' }, 100);
        await sleep(200);
        const second = await claim(s.b, runId, 'p2');
        await locked(first.finish!({ type: 'done' }), 'taken');
        expect(await get(s.a.read(runId))).to.deep.equal([{ seq: 0, data: { type: 'started' } }]);
        await locked(s.a.claim({ runId, holder: 'p3', leaseMs: 1000 }), 'held');
        await done(second.release());
      });

      it('claimWith and finish with data that is not JSON data: InvalidOptionError at the call, nothing written', async () => {
        const runId = freshRun();
        expect(() => s.a.claimWith!({ runId, holder: 'p1', leaseMs: 1000 }, { at: new Date(0) } as unknown as JournalData)).to.throw(
          InvalidOptionError,
          /data\.at/,
        );
        const session = await claimWith(s.a, runId, 'p1', { ok: true });
        expect(() => session.finish!({ n: NaN })).to.throw(InvalidOptionError, /data\.n/);
        expect(await get(s.b.read(runId))).to.deep.equal([{ seq: 0, data: { ok: true } }]);
        await done(session.release());
      });
    });

    it('bad input is refused at the call, naming the option and the rule; nothing is written', async () => {
      const runId = freshRun();
      const refused = (f: () => unknown): InvalidOptionError => {
        try {
          f();
        } catch (e) {
          expect(e).to.be.instanceOf(InvalidOptionError);
          return e as InvalidOptionError;
        }
        return expect.fail('accepted');
      };
      for (const bad of ['', 'a/b', '../x', '.hidden', 'a b', 'a:b', '{x}', 'é', 'x'.repeat(101), 7, undefined])
        expect(refused(() => s.a.claim({ runId: bad as string, holder: 'p', leaseMs: 1000 })).option, String(bad)).to.equal('runId');
      expect(refused(() => s.a.read('a/b')).message).to.include("'_', '-' or '.'");
      expect(refused(() => s.a.claim({ runId, holder: '', leaseMs: 1000 })).option).to.equal('holder');
      for (const leaseMs of [0, -1, NaN, Infinity, '1000', 2 ** 31])
        expect(refused(() => s.a.claim({ runId, holder: 'p', leaseMs: leaseMs as number })).option, String(leaseMs)).to.equal('leaseMs');
      const session = await claim(s.a, runId, 'p');
      const cyclic: Record<string, unknown> = {};
      cyclic['self'] = cyclic;
      const bads: [unknown, string][] = [
        [{ a: undefined }, 'data.a'],
        [{ n: NaN }, 'data.n'],
        [{ n: [1, Infinity] }, 'data.n.1'],
        [{ f: () => 1 }, 'data.f'],
        [{ at: new Date(0) }, 'data.at'],
        [{ m: new Map() }, 'data.m'],
        [{ b: 1n }, 'data.b'],
        [cyclic, 'data.self'],
        [[1, 2], 'data'],
        ['text', 'data'],
        [null, 'data'],
      ];
      for (const [data, option] of bads) expect(refused(() => session.append(data as JournalData)).option, option).to.equal(option);
      expect(refused(() => session.append({ n: NaN })).message).to.include('JSON data');
      expect(await get(s.b.read(runId)), 'nothing written').to.deep.equal([]);
      await done(session.release());
    });
  });
}

/** Whether `e` is a JournalCorruptError naming `location` (a file, a key, a table). */
export function corrupt(e: unknown, location: string): JournalCorruptError {
  expect(e, String(e)).to.be.instanceOf(JournalCorruptError);
  expect((e as JournalCorruptError).location).to.include(location);
  return e as JournalCorruptError;
}
