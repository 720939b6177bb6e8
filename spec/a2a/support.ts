/**
 * What the rxheal/a2a specs share: a real A2A server (`toA2A`: the SDK's request handler over
 * HTTP on 127.0.0.1) whose model the spec paces, the SDK's client on a `fetch` that counts the
 * JSON-RPC methods sent and can cut a stream after its first events (a proxy dropping the
 * connection), and the server's task count.
 */
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { InMemoryTaskStore, ServerCallContext } from '@a2a-js/sdk/server';
import { Observable, Subject } from 'rxjs';
import type { TurnEvent } from '../../src/index.js';
import { scriptedModel, textDeltas, finish } from '../../src/testing/index.js';
import { toA2A, type A2AServer } from '../../src/a2a/toA2A.js';

/** A model turn the spec paces: its text in pieces, each sent when the spec calls `next()`. */
export class PacedTurn {
  private readonly gate = new Subject<void>();
  /** Turns started (the model was called). */
  started = 0;
  /** Turns unsubscribed before their end (a cancelled run). */
  aborted = 0;

  constructor(private readonly pieces: readonly string[]) {}

  /** Lets the next piece out (after the last: the finish). */
  next(): void {
    this.gate.next();
  }

  turn = (): Observable<TurnEvent> =>
    new Observable<TurnEvent>((subscriber) => {
      this.started++;
      let i = 0;
      let ended = false;
      const emit = (): void => {
        if (i < this.pieces.length) for (const event of textDeltas(this.pieces[i++]!)) subscriber.next(event);
        else {
          ended = true;
          subscriber.next(finish());
          subscriber.complete();
        }
      };
      emit();
      const gate = this.gate.subscribe(emit);
      return () => {
        gate.unsubscribe();
        if (!ended) this.aborted++;
      };
    });
}

/** A served agent, its store and a model each message runs (`turn`, or the whole text at once). */
export async function serve(
  turn?: PacedTurn,
  options: { port?: number; store?: InMemoryTaskStore } = {},
): Promise<{ server: A2AServer; store: InMemoryTaskStore }> {
  const store = options.store ?? new InMemoryTaskStore();
  const server = await toA2A({
    card: { name: 'echo agent', description: 'Echoes what it is told', skills: [{ id: 'echo', name: 'Echo', description: 'says it back' }] },
    agent: ({ text }) => ({
      model: scriptedModel('echo', [turn ? turn.turn : [...textDeltas(`echo: ${text}`), finish()]]),
      messages: [{ role: 'user', content: text }],
    }),
    taskStore: store,
    ...(options.port === undefined ? {} : { port: options.port }),
  });
  return { server, store };
}

/** The tasks a store holds (the server's task count). */
export async function taskCount(store: InMemoryTaskStore): Promise<number> {
  return (await store.list({ tenant: '', contextId: '', status: 0, pageToken: '', statusTimestampAfter: undefined }, new ServerCallContext())).tasks.length;
}

/** A `fetch` that counts the JSON-RPC methods it sends and cuts the next `cut` streaming answers after `after` events. */
export class SpyFetch {
  readonly methods: string[] = [];
  /** Streams to cut still: each is the `SendStreamingMessage` or `SubscribeToTask` answer. */
  cuts: { after: number; then?: () => Promise<void> }[] = [];

  count(method: string): number {
    return this.methods.filter((m) => m === method).length;
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : {};
    if (body.method !== undefined) this.methods.push(body.method);
    const response = await fetch(input, init);
    const cut = body.method === 'SendStreamingMessage' || body.method === 'SubscribeToTask' ? this.cuts.shift() : undefined;
    if (cut === undefined || response.body === null) return response;
    return new Response(truncated(response.body, cut.after, cut.then), { status: response.status, headers: response.headers });
  };
}

/** An SSE body passed through for `after` events, then broken as a dropped connection breaks it (after `then`). */
function truncated(body: ReadableStream<Uint8Array>, after: number, then?: () => Promise<void>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let seen = 0;
  let text = '';
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const step = await reader.read();
      if (step.done) return controller.close();
      text += decoder.decode(step.value, { stream: true });
      const events = text.split('\n\n');
      text = events.pop()!;
      for (const event of events) {
        controller.enqueue(new TextEncoder().encode(`${event}\n\n`));
        if (++seen === after) {
          await reader.cancel();
          await then?.();
          controller.error(new TypeError('terminated'));
          return;
        }
      }
    },
    cancel: () => reader.cancel(),
  });
}

/** The SDK's client of a served agent, on `spy`'s fetch. */
export function clientOf(server: A2AServer, spy: SpyFetch): Promise<Client> {
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: spy.fetch })] }).createFromUrl(server.url);
}

/** Resolves when `condition` holds (checked every 10 ms), or rejects after `ms`. */
export async function until(condition: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const start = performance.now();
  while (!(await condition())) {
    if (performance.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
