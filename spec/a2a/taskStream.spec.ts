/**
 * The rule of one call to a remote A2A agent (taskStream.ts) in virtual time: a cut stream and a
 * stall resubscribed after the backoff (the message never sent again), a task over read with
 * tasks/get, the first-event deadline, the task's failed end, resubscriptions spent, and
 * tasks/cancel when the consumer leaves or the call gives up.
 */
import { expect } from 'chai';
import { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { RetriesExhaustedError, type ResumeEvent } from '../../src/index.js';
import { A2AProtocolError, A2ATaskError, A2ATimeoutError } from '../../src/a2a/errors.js';
import { taskStream, type TaskRules } from '../../src/a2a/taskStream.js';
import type { A2AStreamResponse } from '../../src/a2a/wire.js';
import { a2aEvents, a2aResult } from '../../scripts/marbleRun.js';

const events = a2aEvents();
const out = {
  T: a2aResult('submitted', ''),
  w: a2aResult('working', ''),
  a: a2aResult('working', 'a'),
  S: a2aResult('working', 'ab'),
  c: a2aResult('working', 'abc'),
  F: a2aResult('completed', 'abc'),
};
const rules = (overrides: Partial<TaskRules> = {}): TaskRules => ({
  firstEventMs: Infinity,
  idleMs: Infinity,
  maxResubscribes: 5,
  backoff: { initialMs: 2, maxMs: 2 },
  ...overrides,
});
const cut = new TypeError('terminated');

function scheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => {
    expect(actual).to.deep.equal(expected);
  });
}

/** The seams over scripted streams: the sends and resubscriptions made, the tasks cancelled (with when). */
function seams(
  t: TestScheduler,
  send: Observable<A2AStreamResponse>,
  resubscriptions: Observable<A2AStreamResponse>[] = [],
  get?: Observable<never>,
): { seams: Parameters<typeof taskStream>[1]; sent: () => number; cancelled: [string, number][] } {
  let sends = 0;
  const cancelled: [string, number][] = [];
  return {
    seams: {
      send: () => (sends++, send),
      resubscribe: () => resubscriptions.shift()!,
      get: () => get!,
      cancel: (id) => cancelled.push([id, t.now()]),
    },
    sent: () => sends,
    cancelled,
  };
}

describe('taskStream (the rule of a fromA2A call, in virtual time)', () => {
  it('a stream cut after `a` is resubscribed after the backoff: the snapshot replaces the view (nothing doubled), one send, a resume event', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable, expectSubscriptions }) => {
      const send = cold('Twa#', events, cut);
      const again = cold('-ScF', events);
      const s = seams(t, send, [again]);
      const resumes: ResumeEvent[] = [];
      expectObservable(taskStream('docs', s.seams, rules(), t, (e) => resumes.push(e))).toBe('Twa---Sc(F|)', out);
      expectSubscriptions(send.subscriptions).toBe('^--!');
      expectSubscriptions(again.subscriptions).toBe('-----^--!');
      t.flush();
      expect(s.sent()).to.equal(1);
      expect(s.cancelled).to.deep.equal([]);
      expect(resumes).to.deep.equal([
        { type: 'resume', target: 'a2a:docs', responseId: 't1', startingAfter: 3, attempt: 1, max: 5, reason: 'dropped', error: 'terminated' },
      ]);
    });
  });

  it('a stall past idleMs (3 ms) drops the request and resubscribes, reason stalled', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable, expectSubscriptions }) => {
      const send = cold('Twa-------', events);
      const again = cold('-SF', events);
      const s = seams(t, send, [again]);
      const resumes: ResumeEvent[] = [];
      expectObservable(taskStream('docs', s.seams, rules({ idleMs: 3 }), t, (e) => resumes.push(e))).toBe('Twa-----S(F|)', {
        ...out,
        F: a2aResult('completed', 'ab'),
      });
      expectSubscriptions(send.subscriptions).toBe('^----!');
      expectSubscriptions(again.subscriptions).toBe('-------^-!');
      t.flush();
      expect(resumes.map((e) => e.reason)).to.deep.equal(['stalled']);
    });
  });

  it('a resubscription refused because the task is over reads it with tasks/get', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable }) => {
      const over = new A2AProtocolError('docs', 'UnsupportedOperationError', 'UNSUPPORTED_OPERATION', 'terminal');
      const done = {
        id: 't1',
        contextId: 'c1',
        status: { state: 3 },
        artifacts: [{ artifactId: 'out', name: 'out', parts: [{ content: { $case: 'text' as const, value: 'abc' } }] }],
      };
      const s = seams(t, cold('Tw#', events, cut), [cold('#', {}, over)], cold('-(G|)', { G: done }) as unknown as Observable<never>);
      expectObservable(taskStream('docs', s.seams, rules(), t)).toBe('Tw---(F|)', { ...out, F: a2aResult('completed', 'abc') });
    });
  });

  it('no first event within firstEventMs (3 ms), the task unknown: A2ATimeoutError, nothing resubscribed nor cancelled', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable, expectSubscriptions }) => {
      const send = cold('-----T', events);
      const s = seams(t, send);
      expectObservable(taskStream('docs', s.seams, rules({ firstEventMs: 3 }), t)).toBe('---#', undefined, new A2ATimeoutError('docs', 'first', 3));
      expectSubscriptions(send.subscriptions).toBe('^--!');
      t.flush();
      expect(s.cancelled).to.deep.equal([]);
    });
  });

  it('input-required ends the call with its question as the result (the model answers with the taskId); auth-required is an A2ATaskError (401)', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable }) => {
      const ask = {
        payload: {
          $case: 'statusUpdate' as const,
          value: {
            taskId: 't1',
            contextId: 'c1',
            status: { state: 6, message: { messageId: 'q', role: 2, parts: [{ content: { $case: 'text' as const, value: 'Which date?' } }] } },
          },
        },
      };
      const auth = { payload: { $case: 'statusUpdate' as const, value: { taskId: 't1', contextId: 'c1', status: { state: 8 } } } };
      const s = seams(t, cold('TwQ', { ...events, Q: ask }));
      expectObservable(taskStream('docs', s.seams, rules(), t)).toBe('Tw(Q|)', { ...out, Q: { ...a2aResult('input-required', ''), question: 'Which date?' } });
      const locked = seams(t, cold('TA', { ...events, A: auth }));
      expectObservable(taskStream('docs', locked.seams, rules(), t)).toBe('T#', out, new A2ATaskError('docs', 't1', 'auth-required', ''));
      t.flush();
      expect(s.cancelled).to.deep.equal([]);
      expect(new A2ATaskError('docs', 't1', 'auth-required', '').status).to.equal(401);
    });
  });

  it('a failed task ends the call with A2ATaskError (502) and is not cancelled', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable }) => {
      const s = seams(t, cold('TwX', events));
      expectObservable(taskStream('docs', s.seams, rules(), t)).toBe('Tw#', out, new A2ATaskError('docs', 't1', 'failed', 'no'));
      t.flush();
      expect(s.cancelled).to.deep.equal([]);
    });
  });

  it('resubscriptions spent (maxResubscribes 1): RetriesExhaustedError (its cause the last cut), and the task is cancelled', () => {
    const t = scheduler();
    t.run(({ cold }) => {
      const s = seams(t, cold('Tw#', events, cut), [cold('-S#', events, cut)]);
      const seen: [number, unknown][] = [];
      taskStream('docs', s.seams, rules({ maxResubscribes: 1 }), t).subscribe({
        next: (r) => seen.push([t.now(), r]),
        error: (e: unknown) => seen.push([t.now(), e]),
      });
      t.flush();
      expect(seen.slice(0, 3)).to.deep.equal([
        [0, out.T],
        [1, out.w],
        [5, out.S],
      ]);
      const [at, error] = seen[3]!;
      expect(at).to.equal(6);
      expect(error).to.be.instanceOf(RetriesExhaustedError);
      expect((error as RetriesExhaustedError).cause).to.equal(cut);
      expect(s.cancelled).to.deep.equal([['t1', 6]]);
    });
  });

  it('the consumer leaving mid-task sends tasks/cancel at once', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable }) => {
      const s = seams(t, cold('Twa---', events));
      expectObservable(taskStream('docs', s.seams, rules(), t), '^--!').toBe('Twa', out);
      t.flush();
      expect(s.cancelled).to.deep.equal([['t1', 3]]);
    });
  });

  it('a task completed is not cancelled', () => {
    const t = scheduler();
    t.run(({ cold, expectObservable }) => {
      const s = seams(t, cold('TwF', events));
      expectObservable(taskStream('docs', s.seams, rules(), t)).toBe('Tw(F|)', { ...out, F: a2aResult('completed', '') });
      t.flush();
      expect(s.cancelled).to.deep.equal([]);
    });
  });
});
