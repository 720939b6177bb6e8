/**
 * fromA2A against a real A2A server (toA2A: the SDK's request handler over HTTP on loopback) and
 * the SDK's client: a call as one task, a stream cut mid-task resumed without a second task,
 * cancellation sending tasks/cancel, a server killed and restarted, and bad input at construction.
 */
import { expect } from 'chai';
import { lastValueFrom, toArray } from 'rxjs';
import { callTool, CircuitBreakerRegistry, HealHub, InvalidOptionError, ToolError, type HealEvent } from '../../src/index.js';
import { fromA2A, type A2AResult } from '../../src/a2a/index.js';
import { clientOf, PacedTurn, serve, SpyFetch, taskCount, until } from './support.js';

const call = (message: string, taskId?: string) => ({ id: `c-${message}`, name: 'echo_agent', args: taskId === undefined ? { message } : { message, taskId } });

describe('fromA2A (a real A2A server and the SDK client over HTTP on loopback)', () => {
  it('a remote agent is one tool: named after its card, its answer streamed as whole results, one task on the server', async () => {
    const { server, store } = await serve();
    try {
      const spy = new SpyFetch();
      const tool = await fromA2A(await clientOf(server, spy));
      expect(tool.name).to.equal('echo_agent');
      expect(tool.description).to.contain('Echoes what it is told').and.contain('Echo: says it back');
      expect(tool.idempotent).to.equal(false);
      const results = (await lastValueFrom(callTool(tool, call('hello')).pipe(toArray()))) as A2AResult[];
      const last = results.at(-1)!;
      expect(last.state).to.equal('completed');
      expect(last.text).to.equal('echo: hello');
      expect(results.map((r) => r.state)).to.include('working');
      expect(spy.methods).to.deep.equal(['SendStreamingMessage']);
      expect(await taskCount(store)).to.equal(1);
    } finally {
      await server.close();
    }
  });

  it('a stream cut mid-task is resubscribed: the whole answer, nothing doubled, one message sent and one task on the server', async () => {
    const turn = new PacedTurn(['one ', 'two ', 'three']);
    const { server, store } = await serve(turn);
    try {
      const spy = new SpyFetch();
      spy.cuts.push({ after: 3 });
      const hub = new HealHub();
      const heal: HealEvent[] = [];
      hub.events$.subscribe((e) => heal.push(e));
      const tool = await fromA2A(await clientOf(server, spy), { hub, resubscribeBackoff: { initialMs: 10 } });
      const done = lastValueFrom(callTool(tool, call('count')));
      await until(() => spy.count('SubscribeToTask') === 1);
      turn.next();
      turn.next();
      turn.next();
      const result = (await done) as A2AResult;
      expect(result.state).to.equal('completed');
      expect(result.text).to.equal('one two three');
      expect(spy.count('SendStreamingMessage')).to.equal(1);
      expect(spy.count('SubscribeToTask')).to.equal(1);
      expect(await taskCount(store)).to.equal(1);
      expect(turn.started).to.equal(1);
      expect(heal.filter((e) => e.type === 'resume')).to.have.length(1);
      expect(heal.find((e) => e.type === 'resume')).to.include({ target: 'a2a:echo agent', reason: 'dropped', attempt: 1, max: 5 });
    } finally {
      await server.close();
    }
  });

  it('unsubscribing mid-task sends tasks/cancel: the run is stopped and the task canceled on the server', async () => {
    const turn = new PacedTurn(['one ', 'two ']);
    const { server, store } = await serve(turn);
    try {
      const spy = new SpyFetch();
      const tool = await fromA2A(await clientOf(server, spy));
      const seen: A2AResult[] = [];
      const subscription = callTool(tool, call('stop')).subscribe((r) => seen.push(r as A2AResult));
      await until(() => seen.some((r) => r.text === 'one '));
      subscription.unsubscribe();
      await until(() => spy.count('CancelTask') === 1);
      await until(() => turn.aborted === 1);
      const task = (
        await store.list(
          { tenant: '', contextId: '', status: 0, pageToken: '', statusTimestampAfter: undefined },
          new (await import('@a2a-js/sdk/server')).ServerCallContext(),
        )
      ).tasks[0]!;
      await until(async () => (await store.load(task.id, new (await import('@a2a-js/sdk/server')).ServerCallContext()))?.status?.state === 5);
    } finally {
      await server.close();
    }
  });

  it('a server killed and restarted: calls fail while it is down (its breaker opens), the first call after the restart goes through', async () => {
    const first = await serve();
    const port = first.server.port;
    const spy = new SpyFetch();
    const breakers = new CircuitBreakerRegistry({ failureThreshold: 2, resetTimeoutMs: 50 });
    const tool = await fromA2A(await clientOf(first.server, spy), { breakers });
    expect(((await lastValueFrom(callTool(tool, call('before')))) as A2AResult).text).to.equal('echo: before');
    await first.server.close();
    for (let i = 0; i < 2; i++) {
      const error = await lastValueFrom(callTool(tool, call('down'))).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ToolError);
      expect((error as ToolError).cause).to.be.instanceOf(TypeError);
    }
    expect(breakers.get('a2a:echo agent').state).to.equal('open');
    const second = await serve(undefined, { port, store: first.store });
    try {
      await until(() => breakers.get('a2a:echo agent').state === 'half-open');
      expect(((await lastValueFrom(callTool(tool, call('after')))) as A2AResult).text).to.equal('echo: after');
      expect(breakers.get('a2a:echo agent').state).to.equal('closed');
      expect(await taskCount(first.store)).to.equal(2);
    } finally {
      await second.server.close();
    }
  });

  it('a stream cut while the server is killed: resubscribed after its restart, the task over meanwhile read with tasks/get (no second task)', async () => {
    const first = await serve();
    const port = first.server.port;
    const spy = new SpyFetch();
    // the answer is whole on the server (completed) when the proxy drops the stream and the server dies
    spy.cuts.push({
      after: 1,
      then: async () => {
        await until(
          async () =>
            (
              await first.store.list(
                { tenant: '', contextId: '', status: 0, pageToken: '', statusTimestampAfter: undefined },
                new (await import('@a2a-js/sdk/server')).ServerCallContext(),
              )
            ).tasks[0]?.status?.state === 3,
        );
        await first.server.close();
      },
    });
    const tool = await fromA2A(await clientOf(first.server, spy), { resubscribeBackoff: { initialMs: 20 } });
    const done = lastValueFrom(callTool(tool, call('late')));
    // the first resubscription finds nobody listening; the server comes back before the second
    await until(() => spy.count('SubscribeToTask') === 1);
    const second = await serve(undefined, { port, store: first.store });
    try {
      const result = (await done) as A2AResult;
      expect(result).to.include({ state: 'completed', text: 'echo: late' });
      expect(spy.count('SendStreamingMessage')).to.equal(1);
      expect(spy.count('GetTask')).to.equal(1);
      expect(await taskCount(first.store)).to.equal(1);
    } finally {
      await second.server.close();
    }
  });

  it('bad input at construction: a client that is not an A2A client, an invalid option — InvalidOptionError at once, naming it', () => {
    expect(() => fromA2A({} as never)).to.throw(InvalidOptionError, /client.*no sendMessageStream/);
    const client = { sendMessageStream() {}, resubscribeTask() {}, getTask() {}, cancelTask() {}, getAgentCard() {} } as never;
    expect(() => fromA2A(client, { firstEventMs: 0 })).to.throw(InvalidOptionError, /firstEventMs/);
    expect(() => fromA2A(client, { maxResubscribes: -1 })).to.throw(InvalidOptionError, /maxResubscribes/);
    expect(() => fromA2A(client, { name: 'has space' })).to.throw(InvalidOptionError, /name/);
    expect(() => fromA2A(client, { resubscribeBackoff: { initialMs: -1 } })).to.throw(InvalidOptionError, /resubscribeBackoff/);
  });
});
