/**
 * rxheal/mcp's timing in virtual time (TestScheduler.run): a call's deadline lives on the scheduler,
 * each progress notification pushes it back, `maxTotalTimeoutMs` bounds it whatever the progress,
 * the request is cancelled when the deadline passes, and no timer is left once the call ends. The
 * client is a stand-in recording what fromMcp asks of it (the real servers are in the other specs).
 */
import { expect } from 'chai';
import { TestScheduler } from 'rxjs/testing';
import { from, Observable } from 'rxjs';
import { pendingActions } from '../../src/testing/index.js';
import { fromMcp, McpTimeoutError, type McpClient, type McpRequestOptions } from '../../src/mcp/index.js';

interface Pending {
  readonly options: McpRequestOptions;
  resolve(result: { readonly [key: string]: unknown }): void;
}

function standIn(): { client: McpClient; calls: Pending[] } {
  const calls: Pending[] = [];
  const client: McpClient = {
    listTools: () => Promise.resolve({ tools: [{ name: 'long', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] }),
    callTool: (_params, _schema, options) => new Promise((resolve) => calls.push({ options: options ?? {}, resolve })),
    ping: () => Promise.resolve({}),
    connect: () => Promise.resolve(),
    close: () => Promise.resolve(),
    getServerVersion: () => ({ name: 'stand-in', version: '1' }),
  };
  return { client, calls };
}

describe('rxheal/mcp timeouts in virtual time', () => {
  it('the deadline is timeoutMs after the last progress notification; past it the call errors and is cancelled, leaving no timer', async () => {
    const { client, calls } = standIn();
    const scheduler = new TestScheduler((a, b) => {
      expect(a).to.deep.equal(b);
    });
    const [tool] = await fromMcp(client, { timeoutMs: 400, scheduler });
    scheduler.run(({ flush }) => {
      let failedAt = -1;
      let failure: unknown;
      from(tool!.execute({}, { signal: new AbortController().signal }) as Observable<unknown>).subscribe({
        error: (e: unknown) => ((failedAt = scheduler.now()), (failure = e)),
      });
      const { options } = calls[0]!;
      expect(options.onprogress, 'onprogress is wired (so the SDK sends a progress token)').to.be.a('function');
      expect(options.resetTimeoutOnProgress).to.equal(true);
      expect(options.timeout, "the SDK's own timer never cuts first").to.equal(2 ** 31 - 1);
      for (const at of [300, 600, 900]) scheduler.schedule(() => options.onprogress!({ progress: at }), at);
      flush();
      expect(failedAt).to.equal(1300);
      expect(failure).to.be.instanceOf(McpTimeoutError).and.include({ kind: 'idle', timeoutMs: 400 });
      expect(options.signal!.aborted, 'cancelled: the SDK sends notifications/cancelled').to.equal(true);
      expect(pendingActions(scheduler)).to.equal(0);
    });
  });

  it('maxTotalTimeoutMs ends a call that keeps progressing', async () => {
    const { client, calls } = standIn();
    const scheduler = new TestScheduler((a, b) => {
      expect(a).to.deep.equal(b);
    });
    const [tool] = await fromMcp(client, { timeoutMs: 400, maxTotalTimeoutMs: 1000, scheduler });
    scheduler.run(({ flush }) => {
      let failedAt = -1;
      let failure: unknown;
      from(tool!.execute({}, { signal: new AbortController().signal }) as Observable<unknown>).subscribe({
        error: (e: unknown) => ((failedAt = scheduler.now()), (failure = e)),
      });
      for (let at = 100; at < 3000; at += 100) scheduler.schedule(() => calls[0]!.options.onprogress!({ progress: at }), at);
      flush();
      expect(failedAt).to.equal(1000);
      expect(failure).to.include({ kind: 'total', timeoutMs: 1000 });
    });
  });

  it('an answer in time clears both deadlines; unsubscribing before it aborts the request', async () => {
    const { client, calls } = standIn();
    const scheduler = new TestScheduler((a, b) => {
      expect(a).to.deep.equal(b);
    });
    const [tool] = await fromMcp(client, { timeoutMs: 400, maxTotalTimeoutMs: 10_000, scheduler });
    let answered: unknown;
    // no run(): the virtual clock stands still while the answer comes (a promise: after the microtasks)
    from(tool!.execute({}, { signal: new AbortController().signal }) as Observable<unknown>).subscribe((v) => (answered = v));
    expect(pendingActions(scheduler), 'the idle and the total deadline').to.equal(2);
    calls[0]!.resolve({ content: [{ type: 'text', text: 'done' }] });
    await new Promise((r) => setImmediate(r));
    expect(answered).to.equal('done');
    expect(pendingActions(scheduler)).to.equal(0);
    expect(calls[0]!.options.signal!.aborted, 'an answered call is not cancelled').to.equal(false);
    const subscription = from(tool!.execute({}, { signal: new AbortController().signal }) as Observable<unknown>).subscribe();
    subscription.unsubscribe();
    expect(calls[1]!.options.signal!.aborted).to.equal(true);
    expect(pendingActions(scheduler)).to.equal(0);
  });

  it('a client whose callTool throws synchronously: the call errors with what it threw, and no deadline is left scheduled', async () => {
    const { client } = standIn();
    const scheduler = new TestScheduler((a, b) => {
      expect(a).to.deep.equal(b);
    });
    const broken: McpClient = {
      ...client,
      callTool: () => {
        throw new RangeError('broken client');
      },
    };
    const [tool] = await fromMcp(broken, { timeoutMs: 400, scheduler });
    let failure: unknown;
    from(tool!.execute({}, { signal: new AbortController().signal }) as Observable<unknown>).subscribe({ error: (e: unknown) => (failure = e) });
    expect(failure).to.be.instanceOf(RangeError);
    expect(pendingActions(scheduler)).to.equal(0);
  });
});
