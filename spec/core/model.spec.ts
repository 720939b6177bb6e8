import { expect } from 'chai';
import { from, map, NEVER, of } from 'rxjs';
import { classifyError } from '../../src/core/classify.js';
import { IncompleteStreamError } from '../../src/core/errors.js';
import type { TurnEvent } from '../../src/core/events.js';
import type { AbortContext } from '../../src/core/abortable.js';
import { eachValueFrom, fromAsyncIterable, streamModel, type Model, type ModelRequest } from '../../src/core/model.js';
import * as root from '../../src/index.js';
import { testScheduler } from '../support/marbles.js';

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
      stream: (req) => (seen.push(req), [{ type: 'text-delta', text: 'hi' }, { type: 'finish', reason: 'stop' }]),
    };
    const turn$ = streamModel(model, request);
    expect(seen).to.deep.equal([]);
    const events: TurnEvent[] = [];
    turn$.subscribe((e) => events.push(e));
    expect(seen).to.deep.equal([request]);
    expect(events).to.deep.equal([{ type: 'text-delta', text: 'hi' }, { type: 'finish', reason: 'stop' }]);
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
      const values: Record<string, TurnEvent> = { a: { type: 'text-delta', text: 'Hel' }, b: { type: 'text-delta', text: 'lo' }, f: { type: 'finish', reason: 'stop' } };
      const model: Model = { id: 'timed', stream: () => cold('-a-b-(f|)', values) };
      expectObservable(streamModel(model, request)).toBe('-a-b-(f|)', values);
    });
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
  it('is exported (from the package root too) and iterates an observable with for await', async () => {
    expect(root.eachValueFrom).to.equal(eachValueFrom);
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
