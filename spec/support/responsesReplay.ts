/**
 * OpenAI's Responses API on loopback, for the adapter specs: recorded streaming events (the
 * `*.jsonl` fixtures of spec/fixtures, one event per line, as vercel/ai records them) replayed as
 * Server-Sent Events to `POST /v1/responses`, one recorded response per request, in order. The
 * real `@langchain/openai` (and the `openai` SDK under it) talks to it as to api.openai.com.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixture } from './providerFakes.js';

/** One recorded response: its streaming events, each a parsed JSON object with its `type`. */
export type ResponseEvents = Record<string, unknown>[];

/** The recorded responses of a `.jsonl` fixture: its events split at each `response.created`. */
export function recordedResponses(name: string): ResponseEvents[] {
  const responses: ResponseEvents[] = [];
  for (const line of fixture(name).split('\n')) {
    if (line.trim() === '') continue;
    const event = JSON.parse(line) as Record<string, unknown>;
    if (event['type'] === 'response.created' || responses.length === 0) responses.push([]);
    responses[responses.length - 1]!.push(event);
  }
  return responses;
}

/** What a replay server saw and serves. */
export interface ResponsesReplay {
  /** `<url>/v1`: the `baseURL` of an OpenAI client. */
  readonly baseURL: string;
  /** Each request's path and parsed body, in order. */
  readonly requests: { path: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

/**
 * Serves `responses[i]` to the i-th `POST /v1/responses` (`event: <type>` and `data: <json>` per
 * event, then the body ends), on 127.0.0.1. A request past the last one gets a 500.
 */
export async function replayResponses(responses: readonly ResponseEvents[]): Promise<ResponsesReplay> {
  const requests: ResponsesReplay['requests'] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      requests.push({ path: req.url ?? '', body });
      const events = req.method === 'POST' && req.url === '/v1/responses' ? responses[requests.length - 1] : undefined;
      if (events === undefined) {
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: `no recorded response for request ${requests.length}`, type: 'server_error' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const event of events) res.write(`event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
