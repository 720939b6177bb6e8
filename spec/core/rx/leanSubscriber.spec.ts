import { expect } from 'chai';
import fc from 'fast-check';
import { Subscriber, Subscription, UnsubscriptionError } from 'rxjs';
import { LeanSubscriber } from '../../../src/core/rx/leanSubscriber.js';

/** One step done to a subscriber under test: finalisers of every kind, added, removed, closed. */
type Step =
  | { op: 'fn' }
  | { op: 'throwing' }
  | { op: 'again' } // the last finaliser added, added once more
  | { op: 'child' } // a subscription with a finaliser of its own
  | { op: 'closedChild' }
  | { op: 'closeChild'; k: number } // a child closes on its own
  | { op: 'remove'; k: number }
  | { op: 'unsubscribe' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant({ op: 'fn' as const }),
  fc.constant({ op: 'throwing' as const }),
  fc.constant({ op: 'again' as const }),
  fc.constant({ op: 'child' as const }),
  fc.constant({ op: 'closedChild' as const }),
  fc.record({ op: fc.constant('closeChild' as const), k: fc.nat(5) }),
  fc.record({ op: fc.constant('remove' as const), k: fc.nat(5) }),
  fc.constant({ op: 'unsubscribe' as const }),
);

/** What running `steps` on `subscriber` logs: each finaliser run, and each error unsubscribing threw. */
function run(subscriber: Subscriber<unknown>, steps: readonly Step[]): string[] {
  const log: string[] = [];
  const added: (Subscription | (() => void))[] = [];
  const children: Subscription[] = [];
  let n = 0;
  // a finaliser added after the close runs at once, and may throw there
  const attempt = (name: string, fn: () => void): void => {
    try {
      fn();
    } catch (error) {
      log.push(`${name} threw ${error instanceof UnsubscriptionError ? `[${error.errors.map(String).join(', ')}]` : String(error)}`);
    }
  };
  const unsubscribe = (what: { unsubscribe(): void }, name: string): void => attempt(name, () => what.unsubscribe());
  const add = (what: Subscription | (() => void)): void => attempt('add', () => subscriber.add(what));
  for (const s of steps) {
    const i = n++;
    switch (s.op) {
      case 'fn': {
        const fn = (): void => void log.push(`fn ${i}`);
        added.push(fn);
        add(fn);
        break;
      }
      case 'throwing': {
        const fn = (): void => {
          log.push(`throwing ${i}`);
          throw new Error(`e${i}`);
        };
        added.push(fn);
        add(fn);
        break;
      }
      case 'again': {
        const last = added.at(-1);
        if (last) add(last);
        break;
      }
      case 'child':
      case 'closedChild': {
        const child = new Subscription(() => void log.push(`child ${i}`));
        if (s.op === 'closedChild') child.unsubscribe();
        added.push(child);
        children.push(child);
        add(child);
        break;
      }
      case 'closeChild': {
        const child = children[s.k];
        if (child) unsubscribe(child, `child ${s.k}`);
        break;
      }
      case 'remove': {
        const what = added[s.k];
        if (what) subscriber.remove(what);
        break;
      }
      case 'unsubscribe':
        unsubscribe(subscriber, 'subscriber');
        break;
    }
  }
  unsubscribe(subscriber, 'subscriber');
  // a finaliser runs once at most after the end
  for (const child of children) unsubscribe(child, 'child');
  return log;
}

describe('LeanSubscriber', () => {
  it('runs the same finalisers, in the same order, with the same errors, as an RxJS Subscriber', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps) => {
        expect(run(new LeanSubscriber(), steps)).to.deep.equal(run(new Subscriber(), steps));
      }),
      { numRuns: 2_000 },
    );
  });

  it('a lone finaliser that throws: unsubscribe throws an UnsubscriptionError with it, as RxJS does', () => {
    const lean = new LeanSubscriber();
    const error = new Error('boom');
    lean.add(() => {
      throw error;
    });
    expect(() => lean.unsubscribe())
      .to.throw(UnsubscriptionError)
      .with.property('errors')
      .that.deep.equals([error]);
    expect(lean.closed).to.equal(true);
  });

  it('an upstream subscriber linked to it is unsubscribed with it', () => {
    const lean = new LeanSubscriber();
    const upstream = new Subscriber(lean);
    lean.unsubscribe();
    expect(upstream.closed).to.equal(true);
  });
});
