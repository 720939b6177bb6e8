/**
 * memoryJournal, the journal's reference model: the store contract (spec/support/journalContract.ts)
 * in real time, then its timing in virtual time — leases on the scheduler, the simulated latency,
 * appends one at a time, and what unsubscribing does.
 */
import { expect } from 'chai';
import { catchError, concatMap, defer, map, mergeMap, of, tap, type Observable } from 'rxjs';
import { RunLockedError } from '../../../src/core/journal/errors.js';
import type { JournalSession, JournalStore } from '../../../src/core/journal/journal.js';
import { memoryJournal } from '../../../src/core/journal/memoryJournal.js';
import { journalContract } from '../../support/journalContract.js';
import { ledgerContract } from '../../support/ledgerContract.js';
import { refusal } from '../../support/refusal.js';
import { virtual } from '../../support/marbles.js';

journalContract('memoryJournal', async () => {
  // a store's round trip of 1 ms, so that a claim can be left before it answers
  const store = memoryJournal({ latencyMs: 1 });
  return { a: store, b: store };
});
ledgerContract('memoryJournal', async () => {
  const store = memoryJournal({ latencyMs: 1 });
  return { a: store, b: store };
});

const lockLabel = (e: unknown): string => (e instanceof RunLockedError ? `${e.reason}:${e.holder ?? '?'}:${e.retryAfterMs ?? '?'}` : String(e));

/** What claiming `runId` as `holder` ends in: 'ok' or the refusal, as a value. */
const attempt = (store: JournalStore, runId: string, holder: string, leaseMs: number): Observable<string> =>
  defer(() => store.claim({ runId, holder, leaseMs })).pipe(
    map(() => 'ok'),
    catchError((e: unknown) => of(lockLabel(e))),
  );

describe('memoryJournal in virtual time', () => {
  it("leases lapse on the scheduler's clock: refused until leaseMs is over, admitted at that frame", () => {
    virtual(({ cold, expectObservable, ts }) => {
      const store = memoryJournal({ scheduler: ts });
      const claims = cold('a 98ms b c', { a: 'p1', b: 'p2', c: 'p2' });
      expectObservable(claims.pipe(concatMap((holder) => attempt(store, 'r', holder, 100)))).toBe('a 98ms b c', {
        a: 'ok',
        b: 'held:p1:1',
        c: 'ok',
      });
    });
  });

  it('latencyMs: each operation answers that much later; appends subscribed together run one after another', () => {
    virtual(({ expectObservable, ts }) => {
      const store = memoryJournal({ scheduler: ts, latencyMs: 2 });
      const run$ = store
        .claim({ runId: 'r', holder: 'p', leaseMs: 1000 })
        .pipe(mergeMap((s) => of(s.append({ n: 0 }), s.append({ n: 1 }), s.append({ n: 2 })).pipe(mergeMap((a) => a))));
      // claimed at 2; the three appends at 4, 6 and 8
      expectObservable(run$).toBe('---- a 1ms b 1ms (c|)', { a: 0, b: 1, c: 2 });
    });
  });

  it('an append unsubscribed before its turn is never written; one in flight is, and the next takes the seq after it', () => {
    const log: string[] = [];
    virtual(({ ts, at }) => {
      const store = memoryJournal({ scheduler: ts, latencyMs: 2 });
      let session: JournalSession | undefined;
      store.claim({ runId: 'r', holder: 'p', leaseMs: 1000 }).subscribe((s) => (session = s));
      at(2, () => {
        const first = session!.append({ n: 'in flight' }).subscribe();
        const queued = session!.append({ n: 'queued' }).subscribe();
        at(3, () => {
          first.unsubscribe();
          queued.unsubscribe();
        });
      });
      at(5, () => session!.append({ n: 'next' }).subscribe((seq) => log.push(`${ts.now()}: seq ${seq}`)));
      at(10, () => store.read('r').subscribe((es) => log.push(`${ts.now()}: ${es.map((e) => e.data['n']).join(',')}`)));
    });
    expect(log).to.deep.equal(['7: seq 1', '12: in flight,next']);
  });

  it('a claim unsubscribed in flight releases the lease it took, as soon as the store answers', () => {
    const log: string[] = [];
    virtual(({ ts, at }) => {
      const store = memoryJournal({ scheduler: ts, latencyMs: 5 });
      const left = store.claim({ runId: 'r', holder: 'gone', leaseMs: 60_000 }).subscribe();
      at(2, () => left.unsubscribe());
      // the lease is taken at 5 and its release sent then, arriving at 10 (a claim sent at t arrives at t + 5)
      for (const t of [1, 4, 5]) at(t, () => attempt(store, 'r', 'p', 1000).subscribe((v) => log.push(`${t}: ${v}`)));
    });
    expect(log).to.deep.equal(['1: held:gone:59999', '4: held:gone:59996', '5: ok']);
  });

  it('a record read back is a copy: changing what was appended, or what was read, changes nothing stored', () => {
    virtual(({ expectObservable, ts }) => {
      const store = memoryJournal({ scheduler: ts });
      const data = { list: [1] };
      const out$ = store.claim({ runId: 'r', holder: 'p', leaseMs: 1000 }).pipe(
        concatMap((s) => s.append(data)),
        tap(() => data.list.push(2)),
        concatMap(() => store.read('r')),
        tap((es) => (es[0]!.data['list'] as number[]).push(3)),
        concatMap(() => store.read('r')),
        map((es) => JSON.stringify(es)),
      );
      expectObservable(out$).toBe('(a|)', { a: '[{"seq":0,"data":{"list":[1]}}]' });
    });
  });

  it('options are checked when it is made', () => {
    expect(refusal(() => memoryJournal({ latencyMs: -1 })).option).to.equal('latencyMs');
    expect(refusal(() => memoryJournal({ scheduler: {} as never })).option).to.equal('scheduler');
    expect(refusal(() => memoryJournal({ latency: 1 } as never)).option).to.equal('latency');
  });
});
