/**
 * Property: whatever the attempts' timelines (items at any times, then completion, an error or
 * nothing), `after` and `maxHedges`, a hedged call's output is one attempt's items, in order,
 * never two attempts' mixed; and every other attempt was unsubscribed by the frame the call's
 * first item (or its end) arrived.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { defer, type Observable } from 'rxjs';
import type { ColdObservable } from 'rxjs/internal/testing/ColdObservable';
import { hedge } from '../../src/operators/hedge.js';
import { HedgeBudget } from '../../src/operators/hedgeBudget.js';
import { testScheduler } from '../support/marbles.js';

/** One attempt: gaps before each item (frames), then how it ends, and after how many frames. */
const attemptArb = fc.record({
  gaps: fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 5 }),
  end: fc.constantFrom('|', '#', ''),
  tail: fc.integer({ min: 1, max: 6 }),
});

const LETTERS = 'abcdefghij';

describe('property: hedge never mixes two attempts’ output', () => {
  it('the output is one attempt’s items in order, and every loser was cancelled by the first item', () => {
    // one timeline per attempt (maxHedges + 1 of them): each is subscribed at most once
    const arb = fc
      .integer({ min: 1, max: 4 })
      .chain((maxHedges) =>
        fc.tuple(fc.array(attemptArb, { minLength: maxHedges + 1, maxLength: maxHedges + 1 }), fc.integer({ min: 0, max: 8 }), fc.constant(maxHedges)),
      );
    fc.assert(
      fc.property(arb, ([list, after, maxHedges]) => {
        const ts = testScheduler();
        const out: { at: number; value: string }[] = [];
        let endedAt = -1;
        const colds: ColdObservable<string>[] = [];
        ts.run(({ cold }) => {
          for (const [k, a] of list.entries()) {
            const marble = a.gaps.map((g, i) => `${'-'.repeat(g)}${LETTERS[i]}`).join('') + '-'.repeat(a.tail) + a.end;
            const values = Object.fromEntries(a.gaps.map((_, i) => [LETTERS[i], `${k}:${i}`]));
            colds.push(cold(marble, values));
          }
          let n = 0;
          const source: Observable<string> = defer(() => colds[n++]!);
          source.pipe(hedge({ after, maxHedges, budget: new HedgeBudget({ ratio: 1 }) })).subscribe({
            next: (value) => out.push({ at: ts.now(), value }),
            error: () => (endedAt = ts.now()),
            complete: () => (endedAt = ts.now()),
          });
          // a run whose attempts never end is cut here
          ts.schedule(() => undefined, 200);
        });
        const owners = new Set(out.map((o) => o.value.split(':')[0]));
        expect(owners.size, JSON.stringify(out)).to.be.at.most(1);
        if (out.length > 0) {
          const w = Number([...owners][0]);
          const items = out.map((o) => Number(o.value.split(':')[1]));
          expect(items).to.deep.equal(items.map((_, i) => i)); // in order, from its first, none skipped
          const decided = out[0]!.at;
          colds.forEach((c, k) => {
            expect(c.subscriptions.length).to.be.at.most(1);
            if (k !== w) for (const s of c.subscriptions) expect(s.unsubscribedFrame, `attempt ${k}`).to.be.at.most(decided);
          });
        } else if (endedAt >= 0) {
          for (const c of colds) for (const s of c.subscriptions) expect(s.unsubscribedFrame).to.be.at.most(endedAt);
        }
      }),
      { numRuns: 400 },
    );
  });
});
