/**
 * Helpers shared by the adapter specs (spec/adapters): collecting a model's turn, the tool and
 * answers of the local provider's scripted assistant, waiting for the server to see a request
 * end.
 */
import { lastValueFrom, Observable, toArray } from 'rxjs';
import type { TurnEvent, Usage } from '../../src/core/events/events.js';
import { streamModel, type Model, type ModelRequest, type ToolSpec } from '../../src/core/model/model.js';
import { startLocalProvider, type LocalProvider, type RecordedRequest } from '../../src/server/index.js';

/** The weather tool the scripted assistant calls. */
export const WEATHER_TOOL: ToolSpec = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' }, units: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] },
};

export const RIVERS = 'Tell me something nice about rivers';
/** The scripted assistant's whole answer to {@link RIVERS}. */
export const RIVERS_ANSWER = `I am the local rxheal assistant. You said: "${RIVERS}". Ask me about the weather in a city, or about the refund policy, and I will use a tool to answer.`;

export const ask = (content: string, tools: readonly ToolSpec[] = []): ModelRequest => ({ messages: [{ role: 'user', content }], tools });

/** The weather conversation after the tool answered: the assistant then says "It is 22 °C and sunny in Paris." */
export const afterWeather = (callId: string): ModelRequest => ({
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: "What's the weather in Paris?" },
    { role: 'assistant', content: '', toolCalls: [{ id: callId, name: 'get_weather', args: { city: 'Paris', units: 'celsius' } }] },
    { role: 'tool', toolCallId: callId, toolName: 'get_weather', content: '{"temperature":22,"condition":"sunny","city":"Paris"}' },
  ],
  tools: [WEATHER_TOOL],
});

/** Every event of one turn through `streamModel` (the finish contract applies). */
export const turn = (model: Model, request: ModelRequest): Promise<TurnEvent[]> => lastValueFrom(streamModel(model, request).pipe(toArray()));

/** What the turn errors with; fails when it completes. */
export function turnError(model: Model, request: ModelRequest): Promise<unknown> {
  return lastValueFrom(streamModel(model, request).pipe(toArray())).then(
    (events) => {
      throw new Error(`expected an error, got ${JSON.stringify(events)}`);
    },
    (error: unknown) => error,
  );
}

export const textOf = (events: readonly TurnEvent[]): string => events.map((e) => (e.type === 'text-delta' ? e.text : '')).join('');

/**
 * Subscribes, unsubscribes after the first text delta, and resolves with the server's record of
 * that request once it ended (`end: 'client-closed'` when the request was really aborted).
 */
export function cancelAfterFirstDelta(events$: Observable<TurnEvent>, server: LocalProvider): Promise<RecordedRequest> {
  const before = server.requests.length;
  return new Promise<void>((resolve, reject) => {
    const subscription = events$.subscribe({
      next: (event) => {
        if (event.type !== 'text-delta') return;
        // unsubscribe outside the next() call
        queueMicrotask(() => {
          subscription.unsubscribe();
          resolve();
        });
      },
      error: reject,
      complete: () => reject(new Error('completed before it could be cancelled')),
    });
  }).then(() => server.waitForRequest((r) => Number(r.id.slice(4)) > before));
}

let warmKeys = 0;

/**
 * Two turns of a model against `server`'s prompt cache, under a prompt-cache key of their own:
 * the question, then the question and a follow-up (its prefix cached by the first). Resolves with
 * each turn's usage and the server's record of each request (`cacheRead` / `cacheWrite`: what
 * the server's usage said), for a spec to check the adapter read the cached tokens.
 */
export async function warmCacheTurns(model: Model, server: LocalProvider): Promise<{ usages: (Usage | undefined)[]; records: RecordedRequest[] }> {
  const promptCacheKey = `warm-${++warmKeys}`;
  const before = server.requests.length;
  // a long system prompt first: the prefix both turns share (Anthropic's breakpoints mark it)
  const question: ModelRequest = { messages: [{ role: 'system', content: 'You answer briefly and kindly. '.repeat(20) }, ...ask(RIVERS).messages], tools: [] };
  const usages: (Usage | undefined)[] = [];
  for (const request of [question, { ...question, messages: [...question.messages, { role: 'user' as const, content: 'And lakes?' }] }]) {
    const finish = (await turn(model, { ...request, promptCacheKey })).at(-1);
    usages.push(finish?.type === 'finish' ? finish.usage : undefined);
  }
  return { usages, records: server.requests.slice(before) };
}

/** The three local providers an adapter spec uses: a primary and a backup (no token delay), and a slow one to cancel in. */
export interface Providers {
  readonly server: LocalProvider;
  readonly backup: LocalProvider;
  readonly slow: LocalProvider;
}

/**
 * Starts {@link Providers} before the suite's tests and closes them after; clears the primary's
 * and the backup's faults after each test. Read the fields inside tests (they are set in `before`).
 */
export function localProviders(): Providers {
  const providers = {} as { server: LocalProvider; backup: LocalProvider; slow: LocalProvider };
  before(async () => {
    [providers.server, providers.backup, providers.slow] = await Promise.all([
      startLocalProvider({ name: 'primary', tokenDelayMs: 0 }),
      startLocalProvider({ name: 'backup', tokenDelayMs: 0 }),
      startLocalProvider({ name: 'slow', tokenDelayMs: 30 }),
    ]);
  });
  after(() => Promise.all([providers.server.close(), providers.backup.close(), providers.slow.close()]));
  afterEach(() => {
    providers.server.faults.clear();
    providers.backup.faults.clear();
  });
  return providers;
}
