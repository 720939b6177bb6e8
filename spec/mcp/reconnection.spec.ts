/**
 * The reconnection of one MCP server (src/mcp/reconnection.ts) in virtual time, with a stand-in
 * client whose every `connect` the spec settles by hand: one attempt at a time, the calls that ask
 * meanwhile waiting for it; after a failed one, calls refused at once until its backoff is over
 * (the server's `retry-after` honoured), then the next call's attempt; no cap on attempts. The
 * real transports are in reconnect.spec.ts.
 */
import { expect } from 'chai';
import { Reconnection } from '../../src/mcp/reconnection.js';
import { McpConnectionError } from '../../src/mcp/errors.js';
import { NodeTimerScheduler } from '../support/nodeTimers.js';

interface Attempt {
  resolve(): void;
  reject(error: unknown): void;
}

/** A reconnection on a stand-in client; `ask()` subscribes to `connected$` and records how it ends. */
function standIn(backoff: { initialMs: number; maxMs: number }): {
  scheduler: NodeTimerScheduler;
  attempts: Attempt[];
  connections: () => number;
  ask: () => { outcome: 'waiting' | 'connected' | McpConnectionError };
} {
  const scheduler = new NodeTimerScheduler();
  const attempts: Attempt[] = [];
  let connections = 0;
  const client = {
    connect: () => new Promise<void>((resolve, reject) => attempts.push({ resolve, reject })),
    close: () => Promise.resolve(),
  };
  const reconnection = new Reconnection({ id: 'fx', client, reconnect: () => ({}), ...backoff, scheduler }, () => connections++);
  const ask = (): { outcome: 'waiting' | 'connected' | McpConnectionError } => {
    const call: { outcome: 'waiting' | 'connected' | McpConnectionError } = { outcome: 'waiting' };
    reconnection.connected$.subscribe({ complete: () => (call.outcome = 'connected'), error: (e: McpConnectionError) => (call.outcome = e) });
    return call;
  };
  return { scheduler, attempts, connections: () => connections, ask };
}

/** Lets the stand-in's promises settle (the attempt is async: close, the factory, connect). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The wait a refusal names. */
const refusedFor = (outcome: unknown): number => {
  expect(outcome).to.be.instanceOf(McpConnectionError);
  const match = /next reconnection attempt in (\d+) ms/.exec((outcome as Error).message);
  expect(match, (outcome as Error).message).not.to.equal(null);
  return Number(match![1]);
};

describe('rxheal/mcp reconnection in virtual time (retryWithBackoff over the next asked-for attempt)', () => {
  it('one attempt at a time: the calls that ask during it wait for it, and all go on once it connected', async () => {
    const { attempts, connections, ask } = standIn({ initialMs: 100, maxMs: 100 });
    const first = ask();
    await settle();
    const second = ask();
    await settle();
    expect(attempts, 'the second call joined the attempt under way').to.have.length(1);
    attempts[0]!.resolve();
    await settle();
    expect([first.outcome, second.outcome]).to.deep.equal(['connected', 'connected']);
    expect(connections()).to.equal(1);
  });

  it('a failed attempt fails the calls waiting for it; until its backoff is over calls are refused at once; then the next call makes the next attempt, without a cap', async () => {
    const { scheduler, attempts, connections, ask } = standIn({ initialMs: 100, maxMs: 100 });
    for (let n = 1; n <= 5; n++) {
      const call = ask();
      await settle();
      expect(attempts, `attempt ${n}`).to.have.length(n);
      attempts[n - 1]!.reject(new Error('spawn ENOENT'));
      await settle();
      expect((call.outcome as Error).message).to.match(/reconnection failed: spawn ENOENT/);
      // "equal" jitter: between half the backoff and all of it
      const wait = refusedFor(ask().outcome);
      expect(wait).to.be.within(50, 100);
      scheduler.advanceTo(scheduler.now() + wait - 1);
      refusedFor(ask().outcome);
      expect(attempts, 'no attempt inside the backoff').to.have.length(n);
      scheduler.advanceTo(scheduler.now() + 1);
    }
    const last = ask();
    await settle();
    attempts[5]!.resolve();
    await settle();
    expect(last.outcome).to.equal('connected');
    expect(connections()).to.equal(1);
  });

  it('the backoff doubles after each failed attempt, without a cap when maxMs is Infinity', async () => {
    const { scheduler, attempts, ask } = standIn({ initialMs: 100, maxMs: Infinity });
    for (let n = 0; n < 4; n++) {
      ask();
      await settle();
      attempts[n]!.reject(new Error('spawn ENOENT'));
      await settle();
      const wait = refusedFor(ask().outcome);
      expect(wait).to.be.within(50 * 2 ** n, 100 * 2 ** n);
      scheduler.advanceTo(scheduler.now() + wait);
    }
  });

  it("a failure's retry-after is honoured: no attempt before the server said", async () => {
    const { scheduler, attempts, ask } = standIn({ initialMs: 100, maxMs: 100 });
    ask();
    await settle();
    attempts[0]!.reject(Object.assign(new Error('Service Unavailable'), { status: 503, headers: { 'retry-after': '5' } }));
    await settle();
    expect(refusedFor(ask().outcome)).to.equal(5000);
    scheduler.advanceTo(4999);
    refusedFor(ask().outcome);
    scheduler.advanceTo(5000);
    ask();
    await settle();
    expect(attempts).to.have.length(2);
  });

  it('maxMs 0: a call right after a failure is not refused; it waits for the 0 ms backoff and makes the next attempt', async () => {
    const { scheduler, attempts, ask } = standIn({ initialMs: 1000, maxMs: 0 });
    ask();
    await settle();
    attempts[0]!.reject(new Error('spawn ENOENT'));
    await settle();
    const next = ask();
    expect(next.outcome).to.equal('waiting');
    scheduler.advanceTo(scheduler.now());
    await settle();
    expect(attempts).to.have.length(2);
    attempts[1]!.resolve();
    await settle();
    expect(next.outcome).to.equal('connected');
    expect(scheduler.actions, 'no timer left').to.have.length(0);
  });
});
