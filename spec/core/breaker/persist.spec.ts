/**
 * Persisting breakers (src/core/breaker/persist.ts): snapshotBreaker / restoreBreaker through
 * JSON, the window's width and buckets, version-1 snapshots, every field that cannot be restored
 * named; snapshotRegistry / restoreRegistry by name; and the reason they are functions of their
 * own — a plain circuitBreak bundles none of the snapshot's code.
 */
import { expect } from 'chai';
import type { TestScheduler } from 'rxjs/testing';
import { CircuitBreaker, type CircuitSnapshot } from '../../../src/core/breaker/CircuitBreaker.js';
import { CircuitBreakerRegistry } from '../../../src/core/breaker/registry.js';
import { restoreBreaker, restoreRegistry, snapshotBreaker, snapshotRegistry } from '../../../src/core/breaker/persist.js';
import { InvalidOptionError } from '../../../src/core/errors/errors.js';
import { bundleSize, RXJS } from '../../../bench/figures/bundle.js';
import { admit, catchError, fail, recordEvents, reject, succeed, virtual } from './breakerHelpers.js';

describe('snapshotBreaker and restoreBreaker', () => {
  it('an open breaker, JSON round-tripped into a new breaker, stays open until the same openUntil', () => {
    virtual(({ ts, at }) => {
      const original = new CircuitBreaker({ name: 'svc', resetTimeoutMs: 1_000, scheduler: ts });
      let restored: CircuitBreaker | undefined;
      let events: (string | number)[][] = [];
      at(10, () => fail(original, 5));
      at(400, () => {
        const snapshot = JSON.parse(JSON.stringify(snapshotBreaker(original))) as CircuitSnapshot;
        expect(snapshot).to.deep.equal({
          version: 2,
          name: 'svc',
          state: 'open',
          isolated: false,
          openUntil: 1_010,
          consecutiveFailures: 0,
          halfOpenSuccesses: 0,
          window: null,
        });
        restored = new CircuitBreaker({ name: 'svc', resetTimeoutMs: 1_000, scheduler: ts });
        events = recordEvents(restored);
        restoreBreaker(restored, snapshot);
        expect(restored.state).to.equal('open');
        expect(reject(restored).retryAfterMs).to.equal(610);
      });
      at(1_009, () => expect(restored?.state).to.equal('open'));
      at(1_010, () => expect(restored?.state).to.equal('half-open'));
      at(1_011, () =>
        expect(events).to.deep.equal([
          [400, 'closed', 'open', 'restored', 0],
          [1_010, 'open', 'half-open', 'reset_timeout', 0],
        ]),
      );
    });
  });

  it('announces half-open on state$ of the restored breaker when openUntil passes', () => {
    virtual(({ ts, at, expectObservable }) => {
      const restored = new CircuitBreaker({ scheduler: ts });
      at(5, () =>
        restoreBreaker(restored, {
          version: 1,
          name: 'svc',
          state: 'open',
          isolated: false,
          openUntil: 50,
          consecutiveFailures: 0,
          window: null,
        }),
      );
      expectObservable(restored.state$).toBe('c----o 44ms h', { c: 'closed', o: 'open', h: 'half-open' });
    });
  });

  it('an open snapshot whose openUntil has already passed restores as half-open at once', () => {
    virtual(({ ts, at }) => {
      const breaker = new CircuitBreaker({ scheduler: ts });
      const events = recordEvents(breaker);
      at(5_000, () => {
        restoreBreaker(breaker, {
          version: 1,
          name: 'svc',
          state: 'open',
          isolated: false,
          openUntil: 1_000,
          consecutiveFailures: 0,
          window: null,
        });
        expect(breaker.state).to.equal('half-open');
        admit(breaker).success();
        expect(breaker.state).to.equal('closed');
        expect(events.map((e) => e[3])).to.deep.equal(['restored', 'reset_timeout', 'probe_success']);
      });
    });
  });

  it('keeps the consecutive count of a closed breaker', () => {
    virtual(({ ts }) => {
      const a = new CircuitBreaker({ failureThreshold: 5, scheduler: ts });
      fail(a, 3);
      const snapshot = JSON.parse(JSON.stringify(snapshotBreaker(a))) as CircuitSnapshot;
      expect(snapshot.state).to.equal('closed');
      expect(snapshot.consecutiveFailures).to.equal(3);
      const b = new CircuitBreaker({ failureThreshold: 5, scheduler: ts });
      restoreBreaker(b, snapshot);
      fail(b, 1);
      expect(b.state).to.equal('closed');
      fail(b, 1);
      expect(b.state).to.equal('open');
    });
  });

  it('keeps the failure-rate window', () => {
    virtual(({ ts, at }) => {
      const window = { failureRateThreshold: 0.5, minimumCalls: 4, windowMs: 10_000 } as const;
      const a = new CircuitBreaker({ window, scheduler: ts });
      const b = new CircuitBreaker({ window, scheduler: ts });
      at(1_000, () => {
        fail(a, 1);
        succeed(a, 2);
      });
      at(2_000, () => {
        restoreBreaker(b, JSON.parse(JSON.stringify(snapshotBreaker(a))) as CircuitSnapshot);
        expect(b.state).to.equal('closed');
        fail(b, 1); // 2 of 4
        expect(b.state).to.equal('open');
      });
    });
  });

  it('an isolated breaker round-trips isolated: rejects with Infinity, never half-open', () => {
    virtual(({ ts, at }) => {
      const a = new CircuitBreaker({ resetTimeoutMs: 100, scheduler: ts });
      const b = new CircuitBreaker({ resetTimeoutMs: 100, scheduler: ts });
      at(0, () => {
        a.isolate();
        const snapshot = JSON.parse(JSON.stringify(snapshotBreaker(a))) as CircuitSnapshot;
        expect(snapshot.isolated).to.equal(true);
        expect(snapshot.openUntil).to.equal(null);
        restoreBreaker(b, snapshot);
      });
      at(10_000, () => {
        expect(b.isolated).to.equal(true);
        expect(b.state).to.equal('open');
        expect(reject(b).retryAfterMs).to.equal(Infinity);
      });
    });
  });

  it('restoring a closed snapshot closes an open breaker', () => {
    virtual(({ ts }) => {
      const a = new CircuitBreaker({ scheduler: ts });
      const b = new CircuitBreaker({ scheduler: ts });
      fail(b, 5);
      expect(b.state).to.equal('open');
      restoreBreaker(b, JSON.parse(JSON.stringify(snapshotBreaker(a))) as CircuitSnapshot);
      expect(b.state).to.equal('closed');
      succeed(b);
    });
  });

  const valid = {
    version: 1,
    name: 'svc',
    state: 'open',
    isolated: false,
    openUntil: 10,
    consecutiveFailures: 0,
    window: null,
  };
  const garbage: readonly [string, unknown][] = [
    ['null', null],
    ['a string', 'open'],
    ['an empty object', {}],
    ['version 3', { ...valid, version: 3 }],
    ["state 'ajar'", { ...valid, state: 'ajar' }],
    ['consecutiveFailures -1', { ...valid, consecutiveFailures: -1 }],
    ['isolated "no"', { ...valid, isolated: 'no' }],
  ];
  for (const [title, input] of garbage) {
    it(`restore(${title}) throws InvalidOptionError and leaves the breaker as it was`, () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ scheduler: ts });
        fail(breaker, 4);
        const error = catchError(() => restoreBreaker(breaker, input as CircuitSnapshot));
        expect(error).to.be.instanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option).to.match(/^snapshot\b/);
        expect(breaker.state).to.equal('closed');
        fail(breaker, 1);
        expect(breaker.state).to.equal('open');
      });
    });
  }
});

describe('snapshotRegistry and restoreRegistry', () => {
  it('snapshotRegistry and restoreRegistry work by name, through JSON', () => {
    virtual(({ ts, at }) => {
      const first = new CircuitBreakerRegistry({ failureThreshold: 2, resetTimeoutMs: 1_000, scheduler: ts });
      const second = new CircuitBreakerRegistry({ failureThreshold: 2, resetTimeoutMs: 1_000, scheduler: ts });
      at(0, () => {
        fail(first.get('a'), 2);
        fail(first.get('b'), 1);
      });
      at(100, () => {
        const json = JSON.parse(JSON.stringify(snapshotRegistry(first))) as Record<string, CircuitSnapshot>;
        expect(Object.keys(json)).to.deep.equal(['a', 'b']);
        expect(json['a']?.state).to.equal('open');
        expect(json['a']?.openUntil).to.equal(1_000);
        expect(json['b']?.consecutiveFailures).to.equal(1);
        restoreRegistry(second, json);
        expect(second.names()).to.deep.equal(['a', 'b']);
        expect(second.get('a').state).to.equal('open');
        expect(second.get('b').state).to.equal('closed');
        fail(second.get('b'), 1);
        expect(second.get('b').state).to.equal('open');
      });
      at(999, () => expect(second.get('a').state).to.equal('open'));
      at(1_000, () => expect(second.get('a').state).to.equal('half-open'));
    });
  });
});

describe('restoreBreaker: window width and bucket data', () => {
  const rate = { failureRateThreshold: 0.5, minimumCalls: 4, windowMs: 1_000 } as const;

  /** A failure-rate breaker on `ts` with `calls` calls at `at`, the first `failures` of them failed. */
  function withCalls(
    ts: TestScheduler,
    window: typeof rate | { failureRateThreshold: number; minimumCalls: number; windowMs: number },
    failures: number,
    successes: number,
  ): CircuitBreaker {
    const breaker = new CircuitBreaker({ window, scheduler: ts });
    fail(breaker, failures);
    succeed(breaker, successes);
    return breaker;
  }

  it('keeps the successes of a half-open period: one more probe closes the restored breaker, as it would the original', () => {
    virtual(({ ts }) => {
      const options = { failureThreshold: 1, resetTimeoutMs: 0, halfOpenMaxCalls: 2, scheduler: ts };
      const original = new CircuitBreaker(options);
      fail(original, 1);
      expect(original.state).to.equal('half-open');
      succeed(original, 1);
      const snapshot = JSON.parse(JSON.stringify(snapshotBreaker(original))) as CircuitSnapshot;
      expect(snapshot.halfOpenSuccesses).to.equal(1);
      const restored = new CircuitBreaker(options);
      restoreBreaker(restored, snapshot);
      succeed(restored, 1);
      succeed(original, 1);
      expect([restored.state, original.state]).to.deep.equal(['closed', 'closed']);
    });
  });

  it('records the bucket width (windowMs / 10) and is version 2', () => {
    virtual(({ ts, at }) => {
      at(5_050, () => {
        const snapshot = snapshotBreaker(withCalls(ts, rate, 1, 2));
        expect(snapshot.version).to.equal(2);
        expect(snapshot.window).to.deep.equal({ bucketMs: 100, latest: 50, calls: [3, 0, 0, 0, 0, 0, 0, 0, 0, 0], failures: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
      });
    });
  });

  it('refuses a window of another width, naming snapshot.window.bucketMs, and leaves the breaker as it was', () => {
    virtual(({ ts, at }) => {
      at(5_000, () => {
        // 10 ms buckets: latest = 500; in a 10 s window (1 s buckets) that bucket is 8 minutes ahead,
        // so the window would never slide again
        const narrow = snapshotBreaker(withCalls(ts, { ...rate, windowMs: 100 }, 1, 2));
        const wide = new CircuitBreaker({ window: { ...rate, windowMs: 10_000 }, scheduler: ts });
        fail(wide, 1);
        const error = catchError(() => restoreBreaker(wide, narrow));
        expect(error).to.be.instanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option).to.equal('snapshot.window.bucketMs');
        expect((error as InvalidOptionError).message).to.contain('1000');
        succeed(wide, 1);
        fail(wide, 2); // 3 of 4 failed, in its own window: opens as before
        expect(wide.state).to.equal('open');
      });
    });
  });

  it('a restored window keeps sliding: old failures leave it and the breaker opens again on new ones', () => {
    virtual(({ ts, at }) => {
      const restored = new CircuitBreaker({ window: rate, scheduler: ts });
      at(2_000, () => restoreBreaker(restored, JSON.parse(JSON.stringify(snapshotBreaker(withCalls(ts, rate, 3, 0)))) as CircuitSnapshot));
      at(2_050, () => {
        succeed(restored, 1); // 3 of 4 failed (restored + this one): opens
        expect(restored.state).to.equal('open');
      });
    });
    virtual(({ ts, at }) => {
      const restored = new CircuitBreaker({ window: rate, scheduler: ts });
      at(2_000, () => restoreBreaker(restored, snapshotBreaker(withCalls(ts, rate, 3, 0))));
      at(3_500, () => {
        succeed(restored, 1); // the restored failures slid out
        expect(restored.state).to.equal('closed');
        fail(restored, 3); // 3 of 4 in the new window
        expect(restored.state).to.equal('open');
      });
    });
  });

  const buckets = (n: number): number[] => Array<number>(10).fill(n);
  const odd: [string, (w: Record<string, unknown>) => Record<string, unknown>, string][] = [
    ['a negative count', (w) => ({ ...w, calls: [3, -1, 0, 0, 0, 0, 0, 0, 0, 0] }), 'snapshot.window.calls[1]'],
    ['a fractional count', (w) => ({ ...w, calls: [3, 0.5, 0, 0, 0, 0, 0, 0, 0, 0] }), 'snapshot.window.calls[1]'],
    ['a NaN count', (w) => ({ ...w, failures: [NaN, 0, 0, 0, 0, 0, 0, 0, 0, 0] }), 'snapshot.window.failures[0]'],
    ['an Infinity count', (w) => ({ ...w, calls: [Infinity, 0, 0, 0, 0, 0, 0, 0, 0, 0] }), 'snapshot.window.calls[0]'],
    ['more failures than calls', (w) => ({ ...w, failures: [4, 0, 0, 0, 0, 0, 0, 0, 0, 0] }), 'snapshot.window.failures[0]'],
    ['9 buckets', (w) => ({ ...w, calls: buckets(0).slice(1) }), 'snapshot.window.calls'],
    ['no failures array', (w) => ({ ...w, failures: undefined }), 'snapshot.window.failures'],
    ['a fractional latest bucket', (w) => ({ ...w, latest: 20.5 }), 'snapshot.window.latest'],
    ['a NaN latest bucket', (w) => ({ ...w, latest: NaN }), 'snapshot.window.latest'],
    ['a latest bucket after now', (w) => ({ ...w, latest: 10_000 }), 'snapshot.window.latest'],
    ['no bucketMs', (w) => ({ ...w, bucketMs: undefined }), 'snapshot.window.bucketMs'],
    ['a window that is not an object', () => 'full' as never, 'snapshot.window'],
  ];
  for (const [title, mutate, field] of odd) {
    it(`refuses ${title}, naming ${field}, and leaves the breaker as it was`, () => {
      virtual(({ ts, at }) => {
        at(2_000, () => {
          const snapshot = snapshotBreaker(withCalls(ts, rate, 1, 2));
          const bad = { ...snapshot, window: mutate(snapshot.window as unknown as Record<string, unknown>) };
          const breaker = new CircuitBreaker({ window: rate, scheduler: ts });
          fail(breaker, 3);
          const error = catchError(() => restoreBreaker(breaker, bad as unknown as CircuitSnapshot));
          expect(error).to.be.instanceOf(InvalidOptionError);
          expect((error as InvalidOptionError).option).to.equal(field);
          expect((error as InvalidOptionError).target).to.equal('restoreBreaker');
          fail(breaker, 1); // its own 4 failures: opens
          expect(breaker.state).to.equal('open');
        });
      });
    });
  }

  const fields: [string, Record<string, unknown>, string][] = [
    ['a fractional consecutiveFailures', { consecutiveFailures: 1.5 }, 'snapshot.consecutiveFailures'],
    ['an Infinity consecutiveFailures', { consecutiveFailures: Infinity }, 'snapshot.consecutiveFailures'],
    ['a NaN openUntil', { state: 'open', openUntil: NaN }, 'snapshot.openUntil'],
    ['an Infinity openUntil (not isolated)', { state: 'open', openUntil: Infinity }, 'snapshot.openUntil'],
    ['a missing name', { name: undefined }, 'snapshot.name'],
  ];
  for (const [title, patch, field] of fields) {
    it(`refuses ${title}, naming ${field}`, () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ scheduler: ts });
        const error = catchError(() => restoreBreaker(breaker, { ...snapshotBreaker(breaker), ...patch } as unknown as CircuitSnapshot));
        expect((error as InvalidOptionError).option).to.equal(field);
      });
    });
  }

  describe('version 1 (no bucket width): taken where unambiguous, else refused clearly', () => {
    const v1 = { version: 1, name: 'svc', state: 'closed', isolated: false, openUntil: null, consecutiveFailures: 2, window: null } as const;

    it('without a window', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 3, scheduler: ts });
        restoreBreaker(breaker, v1);
        fail(breaker, 1);
        expect(breaker.state).to.equal('open');
      });
    });

    it('with an empty window, into a failure-rate breaker', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ window: rate, scheduler: ts });
        restoreBreaker(breaker, { ...v1, window: { latest: null, calls: buckets(0), failures: buckets(0) } });
        fail(breaker, 4);
        expect(breaker.state).to.equal('open');
      });
    });

    it('with a window, into a consecutive breaker (which keeps no window)', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ failureThreshold: 3, scheduler: ts });
        restoreBreaker(breaker, { ...v1, window: { latest: 3, calls: buckets(1), failures: buckets(1) } });
        fail(breaker, 1);
        expect(breaker.state).to.equal('open');
      });
    });

    it('refuses counts into a failure-rate breaker, naming snapshot.window (their width is unknown)', () => {
      virtual(({ ts }) => {
        const breaker = new CircuitBreaker({ window: rate, scheduler: ts });
        const error = catchError(() => restoreBreaker(breaker, { ...v1, window: { latest: 3, calls: buckets(1), failures: buckets(0) } }));
        expect((error as InvalidOptionError).option).to.equal('snapshot.window');
        expect((error as InvalidOptionError).message).to.contain('bucketMs: 100');
      });
    });
  });
});

describe('persisting is a choice: snapshot code only in the bundles of those who persist breakers', () => {
  const bytesOf = async (names: string, persisting = ''): Promise<Map<string, number>> => {
    const fleet = persisting === '' ? '' : `export { ${persisting} } from './src/fleet/index.ts';`;
    const size = await bundleSize(`export { ${names} } from './src/index.ts';${fleet}`, RXJS);
    return new Map(size.top.map(([file, bytes]) => [file.replace(/^.*?src\//, 'src/'), bytes]));
  };

  it('retryWithBackoff + circuitBreak, and a CircuitBreakerRegistry, bundle no snapshot reading and no persist.ts', async () => {
    for (const names of ['retryWithBackoff, circuitBreak', 'circuitBreak, CircuitBreakerRegistry']) {
      const bytes = await bytesOf(names);
      expect(bytes.get('src/core/breaker/CircuitBreaker.ts'), names).to.be.greaterThan(0);
      expect(bytes.has('src/core/breaker/persist.ts'), `${names}: persist.ts`).to.equal(false);
      expect(bytes.has('src/core/breaker/snapshot.ts'), `${names}: snapshot.ts`).to.equal(false);
    }
  });

  it('snapshotBreaker and restoreBreaker bring it', async () => {
    const bytes = await bytesOf('circuitBreak', 'snapshotBreaker, restoreBreaker');
    expect(bytes.get('src/core/breaker/persist.ts')).to.be.greaterThan(0);
    expect(bytes.get('src/core/breaker/snapshot.ts')).to.be.greaterThan(1_000);
  });
});
