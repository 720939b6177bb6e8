/**
 * Fakes shared by the provider adapter specs: recorded SSE fixtures served by a fake `fetch` in
 * odd-sized chunks, and small collectors.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import type { Observable } from 'rxjs';
import type { TurnEvent } from '../../src/core/events/events.js';
import { streamModel, type Model, type ModelRequest } from '../../src/core/model/model.js';

export const fixture = (name: string): string => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');

/**
 * A fake `fetch` that answers with `text` as a stream of odd-sized byte chunks (sizes cycle
 * through `sizes`), one per pull. Records requests and whether the body was cancelled.
 */
export function fixtureFetch(text: string, options: { sizes?: readonly number[]; status?: number; headers?: Record<string, string>; hang?: boolean } = {}) {
  const bytes = new TextEncoder().encode(text);
  const sizes = options.sizes ?? [1, 3, 7, 13, 64];
  const calls: { url: string; init: RequestInit; body: unknown }[] = [];
  const state = { cancelled: false };
  const fetch = ((url: string, init: RequestInit) => {
    calls.push({ url, init, body: JSON.parse(String(init.body)) as unknown });
    let offset = 0;
    let n = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.length) {
          if (options.hang) return new Promise<void>(() => undefined);
          return controller.close();
        }
        const size = sizes[n++ % sizes.length] ?? 1;
        controller.enqueue(bytes.slice(offset, offset + size));
        offset += size;
      },
      cancel() {
        state.cancelled = true;
      },
    });
    return Promise.resolve(new Response(stream, { status: options.status ?? 200, headers: { 'content-type': 'text/event-stream', ...options.headers } }));
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls, state };
}

/** An SSE body of `data:` events: strings as they are (`'[DONE]'`), anything else as JSON. */
export const sseBody = (...data: unknown[]): string => data.map((d) => `data: ${typeof d === 'string' ? d : JSON.stringify(d)}\n\n`).join('');

/** One Chat Completions chunk of a one-choice stream, as OpenAI-compatible servers record it. */
export const chatChunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/**
 * OpenRouter's mid-stream error, as it records it: text, then a chunk with an `error` whose `code`
 * is a number and `finish_reason: "error"`, then `[DONE]` (the HTTP status was already 200).
 */
export const OPENROUTER_ERROR_502 = sseBody(
  chatChunk({ role: 'assistant', content: 'The answ' }),
  { ...chatChunk({ content: '' }, 'error'), provider: 'Together', error: { code: 502, message: 'Provider returned error' } },
  '[DONE]',
);

/** Every event, and the error if the stream failed. */
export async function collect(events$: Observable<TurnEvent>): Promise<{ events: TurnEvent[]; error: unknown }> {
  const events: TurnEvent[] = [];
  return new Promise((resolve) =>
    events$.subscribe({
      next: (e) => events.push(e),
      error: (error: unknown) => resolve({ events, error }),
      complete: () => resolve({ events, error: undefined }),
    }),
  );
}

export const text = (events: readonly TurnEvent[]): string => events.map((e) => (e.type === 'text-delta' ? e.text : '')).join('');
export const ask = (content: string, tools: ModelRequest['tools'] = []): ModelRequest => ({ messages: [{ role: 'user', content }], tools });
export const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, units: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'units'],
  },
};
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** How a decoder's state table cell ends: `'complete'`, or the error's class name. */
export type Ends = 'complete' | 'IncompleteStreamError' | 'MalformedStreamError' | 'HttpError';

/**
 * Declares a decoder's state × event table as specs: for each state (the events that reach it)
 * and each event, what the event emits and how the stream then ends (the body ends after it).
 * `model` builds the model answering with a body of those events.
 */
export function specStateTable<E>(
  states: Record<string, E[]>,
  events: Record<string, E>,
  table: Record<string, Record<string, [TurnEvent[], Ends]>>,
  model: (events: E[]) => Model,
): void {
  const outcome = async (list: E[]) => {
    const { events: seen, error } = await collect(streamModel(model(list), ask('x')));
    return { seen, ends: error === undefined ? 'complete' : (error as Error).name };
  };
  it('the table covers every state × event', () => {
    for (const state of Object.keys(states)) expect(Object.keys(table[state]!).sort(), state).to.deep.equal(Object.keys(events).sort());
  });
  for (const [state, prefix] of Object.entries(states)) {
    it(`in state "${state}"`, async () => {
      const before = (await outcome(prefix)).seen;
      for (const [name, event] of Object.entries(events)) {
        const [emits, ends] = table[state]![name]!;
        const after = await outcome([...prefix, event]);
        expect(after.seen.slice(0, before.length), `${state} × ${name}: the state's own events`).to.deep.equal(before);
        expect(after.seen.slice(before.length), `${state} × ${name}: emits`).to.deep.equal(emits);
        expect(after.ends, `${state} × ${name}: ends`).to.equal(ends);
      }
    });
  }
}
