/**
 * toA2A: an rxheal agent served as an A2A server (the SDK's request handler over HTTP on
 * 127.0.0.1), read by the SDK's own client — the run's healing in its task events, a restarted
 * answer replacing the artifact instead of being appended, the local servers' Host and Origin
 * guard, and bad input at construction.
 */
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { expect } from 'chai';
import { concat, from, lastValueFrom, throwError, type Observable } from 'rxjs';
import { callTool, HealHub, HttpError, InvalidOptionError, retryWithBackoff, ToolError, type TurnEvent } from '../../src/index.js';
import { finish, scriptedModel, textDeltas } from '../../src/testing/index.js';
import { A2ATaskError, fromA2A, toA2A, type A2AResult } from '../../src/a2a/index.js';

/** A model whose first answer breaks after "Hel" (a 503) and whose second is whole, retried by the run's pipeline. */
const healing = () => ({
  model: scriptedModel('echo', [
    () =>
      concat(
        from(textDeltas('Hel')),
        throwError((): unknown => new HttpError(503)),
      ),
    [...textDeltas('Hello'), finish()],
  ]),
  modelPipeline: (_request: unknown, turn$: Observable<TurnEvent>, { hub }: { hub: HealHub }) =>
    turn$.pipe(
      retryWithBackoff<TurnEvent>({
        hub,
        target: 'model:echo',
        initialBackoffMs: 1,
        jitter: 'none',
        afterEmit: 'restart',
        onRestart: () => ({ type: 'reset', reason: 'retry', target: 'model:echo' }),
      }),
    ),
});

describe('toA2A (an rxheal agent as an A2A server, read by the SDK client)', () => {
  it("the run's healing rides on its task events: retry and reset as working status updates (metadata.rxheal), the restarted answer replacing the artifact", async () => {
    const server = await toA2A({
      card: { name: 'healer', description: 'heals' },
      agent: ({ text }) => ({ ...healing(), messages: [{ role: 'user', content: text }] }),
    });
    try {
      const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(server.url);
      const healed: string[] = [];
      const chunks: { text: string; append: boolean }[] = [];
      let state = 0;
      for await (const event of client.sendMessageStream({
        message: { messageId: 'm1', role: 1, parts: [{ content: { $case: 'text', value: 'hi' } }] },
      } as never)) {
        const payload = event.payload;
        if (payload?.$case === 'statusUpdate') {
          state = payload.value.status?.state ?? state;
          const rxheal = (payload.value.metadata as { rxheal?: { type: string } } | undefined)?.rxheal;
          if (rxheal) healed.push(`${rxheal.type}: ${payload.value.status?.message?.parts[0]?.content?.value as string}`);
        }
        if (payload?.$case === 'artifactUpdate')
          chunks.push({ text: payload.value.artifact!.parts.map((p) => p.content?.value).join(''), append: payload.value.append });
      }
      expect(state).to.equal(3);
      expect(healed).to.deep.equal(['retry: retry: model:echo', 'reset: reset: model:echo', 'retry-succeeded: retry-succeeded: model:echo']);
      expect(chunks[0]).to.deep.equal({ text: 'Hel', append: false });
      // after the reset the first chunk starts the artifact again
      expect(chunks.filter((c) => !c.append).length).to.equal(2);
      const tool = await fromA2A(client);
      expect(((await lastValueFrom(callTool(tool, { id: 'c1', name: tool.name, args: { message: 'again' } }))) as A2AResult).text).to.equal('Hello');
    } finally {
      await server.close();
    }
  });

  it('a run that fails ends its task failed, its message the error (a JSON-RPC client reads it as A2ATaskError through fromA2A)', async () => {
    const server = await toA2A({
      card: { name: 'broken', description: 'fails' },
      agent: { model: scriptedModel('broken', [() => throwError(() => new HttpError(400))]), messages: [] },
    });
    try {
      const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(server.url);
      const tool = await fromA2A(client);
      const error = await lastValueFrom(callTool(tool, { id: 'c1', name: tool.name, args: { message: 'x' } })).catch((e: unknown) => e);
      const cause = (error as ToolError).cause;
      expect(cause).to.be.instanceOf(A2ATaskError);
      expect(cause).to.include({ state: 'failed', status: 502 });
      expect((cause as A2ATaskError).message).to.match(/HTTP 400|400/);
    } finally {
      await server.close();
    }
  });

  it('refuses a foreign Host (DNS rebinding) and a foreign browser Origin with 403, as every local server of rxheal does', async () => {
    const server = await toA2A({
      card: { name: 'guarded', description: 'g' },
      agent: { model: scriptedModel('g', []), messages: [] },
      allowedOrigins: ['http://127.0.0.1:5173'],
    });
    try {
      const card = `${server.url}/.well-known/agent-card.json`;
      expect((await fetch(card)).status).to.equal(200);
      expect((await fetch(card, { headers: { origin: 'http://127.0.0.1:5173' } })).status).to.equal(200);
      expect((await fetch(card, { headers: { origin: 'https://evil.example' } })).status).to.equal(403);
      const { request } = await import('node:http');
      const status = await new Promise<number>((resolve, reject) =>
        request(card, { headers: { host: 'evil.example' } }, (res) => resolve(res.statusCode ?? 0))
          .on('error', reject)
          .end(),
      );
      expect(status).to.equal(403);
    } finally {
      await server.close();
    }
  });

  it('bad input at construction: InvalidOptionError at once, naming the option', () => {
    const model = scriptedModel('m', []);
    expect(() => toA2A(undefined as never)).to.throw(InvalidOptionError, /config/);
    expect(() => toA2A({ card: { name: 'x', description: '' } } as never)).to.throw(InvalidOptionError, /agent/);
    expect(() => toA2A({ agent: { model, messages: [] }, card: { name: '', description: '' } })).to.throw(InvalidOptionError, /card/);
    expect(() => toA2A({ agent: { model, messages: [] }, card: { name: 'x', description: '' }, port: 70_000 })).to.throw(InvalidOptionError, /port/);
    expect(() => toA2A({ agent: { messages: [] } as never, card: { name: 'x', description: '' } })).to.throw(InvalidOptionError, /agent\.model/);
  });
});
