/**
 * Fakes shared by the provider adapter specs: recorded SSE fixtures served by a fake `fetch` in
 * odd-sized chunks, and small collectors.
 */
import { readFileSync } from 'node:fs';
import type { Observable } from 'rxjs';
import type { TurnEvent } from '../../src/core/events.js';
import type { ModelRequest } from '../../src/core/model.js';

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

/** Every event, and the error if the stream failed. */
export async function collect(events$: Observable<TurnEvent>): Promise<{ events: TurnEvent[]; error: unknown }> {
  const events: TurnEvent[] = [];
  return new Promise((resolve) =>
    events$.subscribe({ next: (e) => events.push(e), error: (error: unknown) => resolve({ events, error }), complete: () => resolve({ events, error: undefined }) }),
  );
}

export const text = (events: readonly TurnEvent[]): string => events.map((e) => (e.type === 'text-delta' ? e.text : '')).join('');
export const ask = (content: string, tools: ModelRequest['tools'] = []): ModelRequest => ({ messages: [{ role: 'user', content }], tools });
export const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' }, units: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city', 'units'] },
};
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
