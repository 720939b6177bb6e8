import { expect } from 'chai';
import { asyncScheduler, catchError, concat, config, filter, from, map, NEVER, Observable, of, Subscriber, throwError } from 'rxjs';
import { classifyError } from '../../../src/core/errors/classify.js';
import { BudgetExceededError, IncompleteStreamError } from '../../../src/core/errors/errors.js';
import { HealHub } from '../../../src/core/hub/hub.js';
import type { TurnEvent } from '../../../src/core/events/events.js';
import type { AbortContext } from '../../../src/core/model/abortable.js';
import {
  eachValueFrom,
  fromAsyncIterable,
  streamModel,
  type BudgetMeter,
  type Model,
  type ModelContext,
  type ModelRequest,
} from '../../../src/core/model/model.js';
import * as root from '../../../src/index.js';
import * as providers from '../../../src/providers/index.js';
import { testScheduler } from '../../support/marbles.js';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [] };

/**
 * A hand-written async iterator: the first next() resolves with `first`, every later next()
 * never resolves. Records return() calls.
 */
function stallingIterable<T>(first: T) {
  const log = { nexts: 0, returns: 0, iterators: 0 };
  const iterable: AsyncIterable<T> = {
    [Symbol.asyncIterator]: () => {
      log.iterators++;
      let n = 0;
      return {
        next: () => {
          log.nexts++;
          return n++ === 0 ? Promise.resolve({ value: first, done: false }) : new Promise<IteratorResult<T>>(() => undefined);
        },
        return: () => {
          log.returns++;
          return Promise.resolve({ value: undefined, done: true });
        },
      };
    },
  };
  return { iterable, log };
}

async function* generate<T>(...items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

describe('streamModel', () => {
  it('calls model.stream with the request on subscribe, once per subscription', () => {
    const seen: ModelRequest[] = [];
    const model: Model = {
      id: 'echo',
      stream: (req) => (
        seen.push(req),
        [
          { type: 'text-delta', text: 'hi' },
          { type: 'finish', reason: 'stop' },
        ]
      ),
    };
    const turn$ = streamModel(model, request);
    expect(seen).to.deep.equal([]);
    const events: TurnEvent[] = [];
    turn$.subscribe((e) => events.push(e));
    expect(seen).to.deep.equal([request]);
    expect(events).to.deep.equal([
      { type: 'text-delta', text: 'hi' },
      { type: 'finish', reason: 'stop' },
    ]);
    turn$.subscribe();
    expect(seen.length).to.equal(2);
  });

  it('aborts the signal when the consumer unsubscribes mid-stream', () => {
    let signal: AbortSignal | undefined;
    const model: Model = { id: 'slow', stream: (_req, { signal: s }) => ((signal = s), NEVER) };
    const subscription = streamModel(model, request).subscribe();
    expect(signal?.aborted).to.equal(false);
    subscription.unsubscribe();
    expect(signal?.aborted).to.equal(true);
    expect((signal?.reason as DOMException).name).to.equal('AbortError');
  });

  it('subscribed by a subscriber already closed: the model is never called (no request for a consumer already gone)', () => {
    let signal: AbortSignal | undefined;
    let released = 0;
    const model: Model = {
      id: 'late',
      stream: (_req, context) =>
        new Observable<TurnEvent>(() => {
          signal = context.signal;
          return () => released++;
        }),
    };
    const closed = new Subscriber<TurnEvent>();
    closed.unsubscribe();
    streamModel(model, request).subscribe(closed);
    expect(signal).to.equal(undefined);
    expect(released).to.equal(0);
  });

  it('does not abort a finished stream', () => {
    let signal: AbortSignal | undefined;
    const model: Model = { id: 'quick', stream: (_req, { signal: s }) => ((signal = s), of<TurnEvent>({ type: 'finish', reason: 'stop' })) };
    streamModel(model, request).subscribe().unsubscribe();
    expect(signal?.aborted).to.equal(false);
  });

  it('a stream that completes without finish errors with IncompleteStreamError (classified connection: retryable, fallback-able)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const values: Record<string, TurnEvent> = { a: { type: 'text-delta', text: 'Hel' }, b: { type: 'text-delta', text: 'lo' } };
      const model: Model = { id: 'cut', stream: () => cold('-a-b|', values) };
      const error = new IncompleteStreamError('cut', 'no finish event', 2);
      expectObservable(streamModel(model, request)).toBe('-a-b#', values, error);
      expect(error.message).to.equal("Connection closed before the stream of 'cut' finished (no finish event) after 2 events");
      expect(classifyError(error)).to.include({ category: 'connection', retryable: true, fallback: true });
    });
  });

  it('an empty stream is cut short too; a finish before a reset does not count for the answer after it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const empty: Model = { id: 'empty', stream: () => cold('--|') };
      expectObservable(streamModel(empty, request)).toBe('--#', undefined, new IncompleteStreamError('empty', 'no finish event', 0));
      const values: Record<string, TurnEvent> = {
        f: { type: 'finish', reason: 'stop' },
        r: { type: 'reset', reason: 'fallback', target: 'model:b' },
        x: { type: 'text-delta', text: 'x' },
      };
      const wrapped: Model = { id: 'wrapped', stream: () => cold('-f-r-x|', values) };
      expectObservable(streamModel(wrapped, request)).toBe('-f-r-x#', values, new IncompleteStreamError('wrapped', 'no finish event', 3));
      const whole: Model = { id: 'whole', stream: () => cold('-r-x-(f|)', values) };
      expectObservable(streamModel(whole, request)).toBe('-r-x-(f|)', values);
    });
  });

  it('keeps the model’s timing in virtual time', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const values: Record<string, TurnEvent> = {
        a: { type: 'text-delta', text: 'Hel' },
        b: { type: 'text-delta', text: 'lo' },
        f: { type: 'finish', reason: 'stop' },
      };
      const model: Model = { id: 'timed', stream: () => cold('-a-b-(f|)', values) };
      expectObservable(streamModel(model, request)).toBe('-a-b-(f|)', values);
    });
  });
});

describe('streamModel with a run context (the model contract)', () => {
  const ok = (text = 'ok', usage?: { inputTokens: number; outputTokens: number }): TurnEvent[] => [
    { type: 'text-delta', text },
    usage ? { type: 'finish', reason: 'stop', usage } : { type: 'finish', reason: 'stop' },
  ];
  /** A meter that records what it was told, and throws past `maxCalls`. */
  function meter(maxCalls = Infinity) {
    const log: string[] = [];
    let calls = 0;
    const budget: BudgetMeter = {
      modelCall: () => {
        log.push('call');
        if (++calls > maxCalls) throw new BudgetExceededError('modelCalls', maxCalls, calls);
      },
      usage: (u) => void log.push(`usage ${u.inputTokens}+${u.outputTokens}`),
    };
    return { budget, log };
  }
  /** Every hub event as `type:name:id(parent)`. */
  function heard(hub: HealHub): string[] {
    const log: string[] = [];
    hub.events$.subscribe((e) => {
      if (e.type === 'call-start' || e.type === 'call-end') log.push(`${e.type}:${e.name}:${e.id}${e.parentId ? `(${e.parentId})` : ''}`);
    });
    return log;
  }

  it('without a context, the model is handed the abort signal alone', () => {
    let context: ModelContext | undefined;
    streamModel({ id: 'm', stream: (_r, c) => ((context = c), ok()) }, request).subscribe();
    expect(Object.keys(context!)).to.deep.equal(['signal']);
  });

  it("hands the model the run's hub, budget, scheduler, step and its own call id; the signal aborts on unsubscribe", () => {
    const hub = new HealHub();
    const { budget } = meter();
    let context: ModelContext | undefined;
    const sub = streamModel({ id: 'm', stream: (_r, c) => ((context = c), NEVER) }, request, {
      hub,
      budget,
      scheduler: asyncScheduler,
      callId: 'run-1',
      step: 3,
    }).subscribe();
    expect([context!.hub, context!.budget, context!.scheduler, context!.callId, context!.step]).to.deep.equal([hub, budget, asyncScheduler, 'run-1', 3]);
    const signal = context!.signal;
    sub.unsubscribe();
    expect(signal.aborted).to.equal(true);
  });

  it('counts each subscription as one call, before the model is called; past the limit the model is not called', () => {
    const { budget, log } = meter(1);
    let streams = 0;
    const turn$ = streamModel({ id: 'm', stream: () => (streams++, ok()) }, request, { budget });
    turn$.subscribe();
    let error: unknown;
    turn$.subscribe({ error: (e: unknown) => (error = e) });
    expect(log).to.deep.equal(['call', 'call']);
    expect(streams).to.equal(1);
    expect((error as BudgetExceededError).resource).to.equal('modelCalls');
  });

  it("counts a finish's usage after passing the finish on; past the limit the turn errors right after it", () => {
    const usageLimit: BudgetMeter = {
      modelCall: () => undefined,
      usage: (u) => {
        throw new BudgetExceededError('tokens', 10, u.inputTokens + u.outputTokens);
      },
    };
    const events: string[] = [];
    streamModel({ id: 'm', stream: () => ok('hi', { inputTokens: 9, outputTokens: 3 }) }, request, { budget: usageLimit }).subscribe({
      next: (e) => events.push(e.type),
      error: (e: unknown) => events.push((e as BudgetExceededError).resource),
    });
    expect(events).to.deep.equal(['text-delta', 'finish', 'tokens']);
  });

  it('a model wrapping others: its first inner attempt is the call already counted; each further one counts; usage once, where it was produced', () => {
    const { budget, log } = meter();
    const inner: Model = { id: 'inner', stream: () => ok('x', { inputTokens: 2, outputTokens: 1 }) };
    const failing: Model = { id: 'failing', stream: () => throwError(() => new Error('down')) };
    const wrapper: Model = {
      id: 'wrapper',
      stream: (req, context) => streamModel(failing, req, context).pipe(catchError(() => streamModel(inner, req, context))),
    };
    streamModel(wrapper, request, { budget }).subscribe();
    expect(log).to.deep.equal(['call', 'call', 'usage 2+1']);
  });

  it('traces with a hub and a call id: the call, and each call made inside it as <id>/<k> with parentId — also through a spread context', () => {
    const hub = new HealHub();
    const log = heard(hub);
    const a: Model = { id: 'a', stream: () => ok() };
    const b: Model = { id: 'b', stream: () => ok() };
    const wrapper: Model = {
      id: 'w',
      stream: (req, context) => concat(streamModel(a, req, context).pipe(filter((e) => e.type !== 'finish')), streamModel(b, req, { ...context, step: 9 })),
    };
    streamModel(wrapper, request, { hub, callId: 'step-1.1', step: 1 }).subscribe();
    expect(log).to.deep.equal([
      'call-start:w:step-1.1',
      'call-start:a:step-1.1/1(step-1.1)',
      'call-end:a:step-1.1/1(step-1.1)',
      'call-start:b:step-1.1/2(step-1.1)',
      'call-end:b:step-1.1/2(step-1.1)',
      'call-end:w:step-1.1',
    ]);
  });

  it('without a call id nothing is traced (a hub alone still reaches the model)', () => {
    const hub = new HealHub();
    const log = heard(hub);
    let given: HealHub | undefined;
    streamModel({ id: 'm', stream: (_r, c) => ((given = c.hub), ok()) }, request, { hub }).subscribe();
    expect(log).to.deep.equal([]);
    expect(given).to.equal(hub);
  });

  it('is exported with its types from the package root', () => {
    const context: root.ModelCallContext = { step: 1 };
    const full: root.ModelContext = { signal: new AbortController().signal, ...context };
    expect(root.streamModel).to.equal(streamModel);
    expect(full.step).to.equal(1);
  });
});

describe('streamModel for a consumer already gone', () => {
  it('subscribed by a closed subscriber (with or without a traced context): the model is never called, nothing is traced, nothing throws', () => {
    const hub = new HealHub();
    const heard: unknown[] = [];
    hub.events$.subscribe((e) => heard.push(e));
    let calls = 0;
    const model: Model = { id: 'm', stream: () => (calls++, NEVER) };
    const request: ModelRequest = { messages: [{ role: 'user', content: 'x' }], tools: [] };
    const unhandled: unknown[] = [];
    const previous = config.onUnhandledError;
    config.onUnhandledError = (e) => unhandled.push(e);
    try {
      for (const context of [undefined, { hub, callId: 'step-1.1', step: 1 }]) {
        const gone = new Subscriber<TurnEvent>();
        gone.unsubscribe();
        streamModel(model, request, context).subscribe(gone);
      }
    } finally {
      config.onUnhandledError = previous;
    }
    expect({ calls, heard, unhandled }).to.deep.equal({ calls: 0, heard: [], unhandled: [] });
  });
});

describe('fromAsyncIterable', () => {
  it('emits every item, then completes', async () => {
    const seen: number[] = [];
    let completed = false;
    fromAsyncIterable(generate(1, 2, 3)).subscribe({ next: (v) => seen.push(v), complete: () => (completed = true) });
    await settle();
    expect(seen).to.deep.equal([1, 2, 3]);
    expect(completed).to.equal(true);
  });

  it('errors with what the iterator rejects with', async () => {
    const boom = new Error('stream broke');
    async function* failing(): AsyncGenerator<number> {
      yield 1;
      throw boom;
    }
    const seen: number[] = [];
    let caught: unknown;
    fromAsyncIterable(failing()).subscribe({ next: (v) => seen.push(v), error: (e: unknown) => (caught = e) });
    await settle();
    expect(seen).to.deep.equal([1]);
    expect(caught).to.equal(boom);
  });

  it('calls the iterator’s return() synchronously on unsubscribe, while next() is still pending', async () => {
    const { iterable, log } = stallingIterable('first');
    const seen: string[] = [];
    const subscription = fromAsyncIterable(iterable).subscribe((v) => seen.push(v));
    await settle();
    expect(seen).to.deep.equal(['first']);
    expect(log.nexts).to.equal(2);
    expect(log.returns).to.equal(0);
    subscription.unsubscribe();
    // no await: return() must already have been called
    expect(log.returns).to.equal(1);
    subscription.unsubscribe();
    expect(log.returns).to.equal(1);
  });

  it('does not call return() after the iterator finished', async () => {
    let returns = 0;
    const gen = generate('a');
    const original = gen.return.bind(gen);
    gen.return = (value) => (returns++, original(value));
    const subscription = fromAsyncIterable(gen).subscribe();
    await settle();
    subscription.unsubscribe();
    expect(returns).to.equal(0);
  });

  it('tolerates a return() that rejects', async () => {
    const iterable: AsyncIterable<number> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<number>>(() => undefined),
        return: () => Promise.reject(new Error('already running')),
      }),
    };
    const subscription = fromAsyncIterable(iterable).subscribe();
    subscription.unsubscribe();
    await settle(); // an unhandled rejection would fail the run
  });

  it('a factory gets a fresh iterator per subscription, and the signal, which unsubscribe aborts', async () => {
    const { iterable, log } = stallingIterable(7);
    const signals: AbortSignal[] = [];
    const source$ = fromAsyncIterable(({ signal }: AbortContext) => (signals.push(signal), iterable));
    expect(log.iterators).to.equal(0);
    const seen: number[] = [];
    const first = source$.subscribe((v) => seen.push(v));
    const second = source$.subscribe((v) => seen.push(v));
    await settle();
    expect(log.iterators).to.equal(2);
    expect(seen).to.deep.equal([7, 7]);
    first.unsubscribe();
    expect(log.returns).to.equal(1);
    expect(signals[0]?.aborted).to.equal(true);
    expect((signals[0]?.reason as DOMException).name).to.equal('AbortError');
    expect(signals[1]?.aborted).to.equal(false);
    second.unsubscribe();
    expect(log.returns).to.equal(2);
    expect(signals[1]?.aborted).to.equal(true);
  });

  it('works as a model stream', async () => {
    const model: Model = {
      id: 'sdk',
      stream: () =>
        fromAsyncIterable(() => generate('Hel', 'lo', '')).pipe(
          map((text): TurnEvent => (text === '' ? { type: 'finish', reason: 'stop' } : { type: 'text-delta', text })),
        ),
    };
    const events: TurnEvent[] = [];
    let completed = false;
    streamModel(model, request).subscribe({ next: (e) => events.push(e), complete: () => (completed = true) });
    await settle();
    expect(events).to.deep.equal([
      { type: 'text-delta', text: 'Hel' },
      { type: 'text-delta', text: 'lo' },
      { type: 'finish', reason: 'stop' },
    ]);
    expect(completed).to.equal(true);
  });
});

describe('eachValueFrom', () => {
  it('is exported (from rxheal/providers too) and iterates an observable with for await', async () => {
    expect(providers.eachValueFrom).to.equal(eachValueFrom);
    const seen: number[] = [];
    for await (const value of eachValueFrom(from([1, 2, 3]))) seen.push(value);
    expect(seen).to.deep.equal([1, 2, 3]);
  });

  it('rethrows the observable’s error from the loop', async () => {
    const boom = new Error('boom');
    const seen: number[] = [];
    let caught: unknown;
    try {
      for await (const value of eachValueFrom(fromAsyncIterable(generateThenThrow(boom)))) seen.push(value);
    } catch (e) {
      caught = e;
    }
    expect(seen).to.deep.equal([1]);
    expect(caught).to.equal(boom);
  });
});

async function* generateThenThrow(error: Error): AsyncGenerator<number> {
  yield 1;
  throw error;
}

describe('streamModel: a signal read late (after an await in stream)', () => {
  it('an async-generator model that reads signal after its first await is aborted on unsubscribe', async () => {
    const seen: boolean[] = [];
    const model: Model = {
      id: 'gen',
      async *stream(_request, context) {
        await settle();
        seen.push(context.signal.aborted);
        yield { type: 'finish', reason: 'stop' } satisfies TurnEvent;
      },
    };
    streamModel(model, { messages: [], tools: [] }).subscribe().unsubscribe();
    await settle();
    await settle();
    expect(seen).to.deep.equal([true]);
  });

  it('fromAsyncIterable hands the same late-aborted signal to its factory', async () => {
    let ctx: AbortContext | undefined;
    const sub = fromAsyncIterable((c) => {
      ctx = c;
      return (async function* () {
        await settle();
        yield 1;
      })();
    }).subscribe();
    sub.unsubscribe();
    expect(ctx!.signal.aborted).to.equal(true);
  });
});
