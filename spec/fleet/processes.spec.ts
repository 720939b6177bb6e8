/**
 * A real fleet: 4 node processes (child_process.fork of examples/demo/fleetNode.ts) running
 * agent traffic against a local provider (rxheal/server) with breakers and a tokens/min limit
 * shared through one redis-server — started here on a free port and killed, paused and restarted
 * by pid. Everything is counted at the provider (its request log) and from what the nodes report.
 *
 * The phases run in order and build on each other (one fleet, ~30 s of wall time in all). The
 * first two — the dead primary under concurrent callers, and its recovery — run again on a local
 * 3-master Redis Cluster, the nodes connecting with node-redis `createCluster` (~10 s).
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalProvider, type LocalProvider } from '../../src/server/index.js';
import type { FleetNodeConfig } from '../../examples/demo/fleetNode.js';
import { Fleet, type CallReport, type TransitionReport } from '../../examples/demo/fleetHarness.js';
import { requireProgram } from '../support/systemPackage.js';
import { freePort, startRedis, type RedisServer } from '../support/redisServer.js';
import { startRedisCluster, type RedisClusterServers } from '../support/redisCluster.js';

const N = 4;
const THRESHOLD = 3;
const QUORUM = 2;
const RESET_MS = 1000;
const TOKENS_PER_MINUTE = 3000;
const COST = 30;
/** Concurrent callers per process while the primary is dead (phase 1). */
const CALLERS = 3;
/** halfOpenMaxCalls: probes a half-open node lets through (the default). */
const PROBES = 1;
/**
 * README's bound, "Requests reaching a dead provider": a node lets at most t + c − 1 requests
 * through before it opens (its t failures, and the c − 1 calls already in flight then); from the
 * quorum's verdict to the first probe's result only the calls in flight on the q open nodes and
 * the N − q nodes not yet open get through, then the probe; each later window, the probe alone.
 */
const PER_NODE = THRESHOLD + CALLERS - 1;
const FIRST_WINDOW_FROM_QUORUM = (N - QUORUM) * PER_NODE + QUORUM * (CALLERS - 1) + PROBES;
const FIRST_WINDOW_FROM_DEATH = N * PER_NODE + PROBES;
/** Errors a caller may see; a store error (offline client, timeout, expired command…) is never one. */
const CALLER_ERRORS = new Set(['HttpError', 'CircuitOpenError']);

/** Where the nodes' Redis is: one server's URL, or a cluster's nodes. */
type RedisAt = Pick<FleetNodeConfig, 'redisUrl' | 'redisCluster'>;

async function configsFor(nodes: readonly string[], redis: RedisAt, primary: LocalProvider): Promise<FleetNodeConfig[]> {
  const badPort = await freePort();
  return nodes.map((node) => ({
    node,
    ...redis,
    baseURL: primary.openAIBaseURL,
    badURL: `http://127.0.0.1:${badPort}/v1`,
    failureThreshold: THRESHOLD,
    resetTimeoutMs: RESET_MS,
    probeLeaseMs: 600,
    pollMs: 250,
    thinkMs: 20,
    tokensPerMinute: TOKENS_PER_MINUTE,
    cost: COST,
    maxWaitMs: 1500,
  }));
}

/** What the phases read of a running fleet: the provider's request log and the nodes' reports. */
function views(fleet: () => Fleet, primary: () => LocalProvider, nodes: readonly string[]) {
  const requestsIn = (from: number, to: number): number => primary().requests.filter((r) => r.startedAt >= from && r.startedAt < to).length;
  const transitionsIn = (from: number, to = Infinity): TransitionReport[] => fleet().transitions.filter((t) => t.at >= from && t.at < to);
  const callsIn = (from: number, to = Infinity): CallReport[] => fleet().calls.filter((c) => c.start >= from && c.start < to);
  const dead = (): void => void primary().faults.set([{ kind: 'status', status: 503 }]);
  const allClosedAfter = (t: number, ms: number): Promise<unknown> =>
    Promise.all(
      nodes.map((node) => fleet().waitFor((r) => r.type === 'transition' && r.node === node && r.to === 'closed' && r.at >= t, ms, `${node} closed`)),
    );

  /** No call hangs (none lasts `boundMs`) and no store error reaches a caller. */
  function callersUnharmed(from: number, to = Infinity, boundMs = 2_000, allowed = CALLER_ERRORS): void {
    const calls = callsIn(from, to);
    expect(calls.length, 'calls were made').to.be.greaterThan(10);
    const slowest = Math.max(...calls.map((c) => c.end - c.start));
    expect(slowest, 'the slowest call (ms): none hangs').to.be.below(boundMs);
    const seen = new Set(calls.filter((c) => !c.ok).map((c) => c.error!));
    expect(
      [...seen].filter((name) => !allowed.has(name)),
      'errors callers saw',
    ).to.deep.equal([]);
  }

  return { requestsIn, transitionsIn, callsIn, dead, allClosedAfter, callersUnharmed };
}
type Views = ReturnType<typeof views>;

const DEAD_PRIMARY = `a dead primary, ${CALLERS} concurrent callers per process: the first window within (N − q)(t + c − 1) + q(c − 1) + 1 requests from the quorum on (N(t + c − 1) + 1 from the death), then exactly one probe per window, fleet-wide`;

/** Phase 1: the primary dies under CALLERS concurrent callers per process; the windows' counts within the bounds. */
async function deadPrimary(fleet: Fleet, v: Views): Promise<void> {
  const { requestsIn, transitionsIn, callsIn, dead, callersUnharmed } = v;
  dead();
  const t0 = Date.now();
  fleet.tell({ cmd: 'traffic', mode: 'breaker', callers: CALLERS });
  await sleep(4_500);
  const t1 = Date.now();
  // the later phases run one caller per process (their counts assume it)
  fleet.tell({ cmd: 'traffic', mode: 'breaker', callers: 1 });
  const phase = transitionsIn(t0, t1);
  // the fleet opens when a quorum of nodes has opened (each on its own evidence, or held by the verdict)
  const opened = new Set<string>();
  const firstOpen = phase.find((t) => t.to === 'open' && opened.add(t.node).size === QUORUM);
  expect(firstOpen, 'a quorum of nodes opened').to.not.equal(undefined);
  expect(new Set(phase.filter((t) => t.to === 'open').map((t) => t.node)).size, 'every node is open (on its own or held)').to.equal(N);
  // each later window starts when the one prober's probe fails
  const reopens = phase.filter((t) => t.reason === 'probe_failure' && t.from === 'half-open').map((t) => t.at);
  const bounds = [firstOpen!.at, ...reopens];
  expect(bounds.length, 'open windows').to.be.at.least(3);
  const perWindow = bounds.map((start, i) => requestsIn(start, bounds[i + 1] ?? t1));
  const fromDeath = requestsIn(t0, bounds[1]!);
  expect(perWindow[0], `the first window, from the quorum (bound ${FIRST_WINDOW_FROM_QUORUM})`).to.be.at.most(FIRST_WINDOW_FROM_QUORUM);
  expect(fromDeath, `the first window, from the death (bound ${FIRST_WINDOW_FROM_DEATH})`).to.be.at.most(FIRST_WINDOW_FROM_DEATH);
  // callers really ran at once: some process had several calls in flight together
  const breakerCalls = callsIn(t0, t1).filter((c) => c.mode === 'breaker');
  const overlapping = breakerCalls.some((a) => breakerCalls.some((b) => b !== a && b.node === a.node && b.start < a.end && a.start < b.end));
  expect(overlapping, 'calls of one process overlapped').to.equal(true);
  // every complete window after the first: the probe and nothing else — unless a node's store
  // calls failed (a loaded machine: replies past the 100 ms bound) and it decided alone, probing
  // on its own (open → half-open by its own timer, reason reset_timeout): one more probe each
  const alone = bounds.map(
    (start, i) => phase.filter((t) => t.to === 'half-open' && t.reason === 'reset_timeout' && t.at >= start && t.at < (bounds[i + 1] ?? t1)).length,
  );
  perWindow.slice(1).forEach((count, i) => expect(count, `window ${i + 2} (${alone[i + 1]} nodes probing alone)`).to.be.at.most(PROBES * (1 + alone[i + 1]!)));
  const shared = perWindow.slice(1, -1).filter((_, i) => alone[i + 1] === 0);
  expect(shared, 'complete windows with no node alone: one probe each').to.deep.equal(shared.map(() => PROBES));
  expect(shared.length, 'complete windows with no node alone').to.be.at.least(1);
  // one prober per window, fleet-wide (the others stay open until its result)
  const probers = bounds.map((start, i) => phase.filter((t) => t.reason === 'probe_lease' && t.at >= start && t.at < (bounds[i + 1] ?? t1)).length);
  for (const count of probers) expect(count, 'nodes probing in one window').to.be.at.most(1);
  // without a fleet, every node would learn alone: N × threshold before the first open, then N probes per window
  const before = requestsIn(t0, firstOpen!.at);
  console.log(
    `      dead primary, ${CALLERS} callers per process: ${before} requests before the quorum, ${fromDeath} from the death to the first probe's result (bound ${FIRST_WINDOW_FROM_DEATH}), then per window ${perWindow.join(', ')}${alone.some((n) => n > 0) ? ` (nodes probing alone, store unanswered: ${alone.join(', ')})` : ''} (first-window bound ${FIRST_WINDOW_FROM_QUORUM}, then ${PROBES}; ${N} independent breakers: ${N} per window)`,
  );
  callersUnharmed(t0, t1);
}

const RECOVERY = 'the primary back: recovery within one probe, and every node closes';

/** Phase 2: the primary back; resolves with when it came back. */
async function recovery(fleet: Fleet, primary: LocalProvider, v: Views): Promise<number> {
  const { requestsIn, transitionsIn, allClosedAfter } = v;
  const revived = Date.now();
  primary.faults.clear();
  await fleet.waitFor((r) => r.type === 'transition' && r.to === 'closed' && r.at >= revived, 3_000, 'the fleet closing');
  await allClosedAfter(revived, 3_000);
  // the prober's own close, whichever process's report reached us first
  const closings = transitionsIn(revived).filter((t) => t.to === 'closed');
  const probes = closings.filter((t) => t.reason === 'probe_success');
  expect(probes, 'nodes closing on their own probe').to.have.length(1);
  const first = probes[0]!;
  expect(requestsIn(revived, first.at + 1), 'requests from revival to the fleet closing').to.equal(1);
  const others = closings.filter((t) => t.node !== first.node);
  expect(new Set(others.map((t) => t.reason))).to.deep.equal(new Set(['fleet_probe_success']));
  return revived;
}

describe('a real fleet: 4 processes, one redis-server, a dead primary (rxheal/server)', function () {
  this.timeout(120_000);
  let redis: RedisServer | undefined;
  let primary: LocalProvider | undefined;
  let fleet: Fleet | undefined;
  const nodes = Array.from({ length: N }, (_, i) => `n${i + 1}`);

  before(async function () {
    const program = requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    redis = await startRedis(program);
    primary = await startLocalProvider({ name: 'primary', tokenDelayMs: 0 });
    fleet = await Fleet.start(await configsFor(nodes, { redisUrl: redis.url }, primary));
  });

  after(async () => {
    await fleet?.stop();
    await redis?.stop();
    await primary?.close();
  });

  const v = views(
    () => fleet!,
    () => primary!,
    nodes,
  );
  const { transitionsIn, callsIn, dead, allClosedAfter, callersUnharmed } = v;

  let phaseEnd = 0;
  /** When the primary came back (phase 2): a later phase's failure shows every move since. */
  let revivedAt = 0;
  const movesSince = (t: number): string =>
    transitionsIn(t)
      .map((m) => `${m.at - t} ms ${m.node} ${m.from}→${m.to} ${m.reason}`)
      .join('; ');

  it(DEAD_PRIMARY, async () => {
    await deadPrimary(fleet!, v);
    phaseEnd = Date.now();
  });

  it(RECOVERY, async () => {
    revivedAt = await recovery(fleet!, primary!, v);
    phaseEnd = Date.now();
  });

  it('a bad node (its own requests fail, the provider is fine) never trips the others', async () => {
    const t0 = Date.now();
    // the phase's moves are those reported after it began: a node's close that ended the previous
    // phase can carry the same millisecond as t0 (stamps are ms), so `at >= t0` alone would count
    // it here; and a move stamped before t0 but still on its way counts (stricter, not looser)
    const before = fleet!.transitions.length;
    fleet!.tell({ cmd: 'bad', on: true }, ['n4']);
    await sleep(2_500);
    const t1 = Date.now();
    fleet!.tell({ cmd: 'bad', on: false }, ['n4']);
    expect(transitionsIn(t0, t1).filter((t) => t.node === 'n4' && t.to === 'open').length, 'n4 opened on its own').to.be.at.least(1);
    const others = fleet!.transitions.slice(before).filter((t) => t.node !== 'n4' && t.at < t1);
    expect(others, `the others never moved (moves since the primary came back: ${movesSince(revivedAt)})`).to.deep.equal([]);
    const good = callsIn(t0, t1).filter((c) => c.node !== 'n4');
    expect(good.length).to.be.greaterThan(20);
    expect(
      good.every((c) => c.ok),
      'the others kept answering',
    ).to.equal(true);
    await fleet!.waitFor((r) => r.type === 'transition' && r.node === 'n4' && r.to === 'closed' && r.at >= t1, 3_000, 'n4 closed again');
    phaseEnd = Date.now();
  });

  it('Redis killed mid-run: no call hangs, no store error reaches a caller, local breakers protect; restarted: the fleet re-syncs', async () => {
    dead();
    await sleep(200);
    const killed = Date.now();
    await redis!.kill();
    await sleep(2_500);
    // meanwhile each node protects itself: open on its own evidence
    const alone = transitionsIn(killed).filter((t) => t.to === 'open');
    expect(new Set(alone.map((t) => t.node)).size, 'nodes that opened on their own').to.be.at.least(QUORUM);
    await redis!.restart();
    const restarted = Date.now();
    // the restarted Redis is empty: the nodes re-send their verdicts (votes) and the fleet verdict forms again
    await fleet!.waitFor(
      (r) => r.type === 'transition' && r.at >= restarted && (r.reason === 'fleet_open' || r.reason === 'probe_lease'),
      6_000,
      'a fleet-driven move after the restart',
    );
    callersUnharmed(killed);
    phaseEnd = Date.now();
  });

  it('Redis paused (CLIENT PAUSE 2500 ALL): no call waits for it, no store error reaches a caller; afterwards the fleet resumes', async () => {
    const paused = Date.now();
    expect(await redis!.command('CLIENT PAUSE 2500 ALL')).to.equal('+OK');
    await sleep(2_500);
    const resumed = Date.now();
    await fleet!.waitFor(
      (r) => r.type === 'transition' && r.at >= resumed && (r.reason === 'probe_lease' || r.reason.startsWith('fleet_')),
      6_000,
      'a fleet-driven move after the pause',
    );
    // a call that waited on Redis would have lasted the pause
    callersUnharmed(paused, Infinity, 2_500);
    const revived = Date.now();
    primary!.faults.clear();
    await allClosedAfter(revived, 5_000);
    phaseEnd = Date.now();
  });

  it("a shared tokens/min limit holds across the 4 processes (within one reservation's estimate error per process), Redis paused in the middle included", async () => {
    const t0 = Date.now();
    fleet!.tell({ cmd: 'traffic', mode: 'limit' });
    await sleep(2_000);
    // Redis stalls for a second: each process falls back to its share (3 000 ÷ 4 per minute, no burst)
    expect(await redis!.command('CLIENT PAUSE 1000 ALL')).to.equal('+OK');
    await sleep(2_000);
    fleet!.tell({ cmd: 'traffic', mode: 'idle' });
    await sleep(300);
    const calls = callsIn(t0).filter((c) => c.mode === 'limit');
    const served = calls.filter((c) => c.ok);
    const tokens = served.reduce((n, c) => n + (c.tokens ?? 0), 0);
    // when the last served call reached the provider (a call's report starts before its wait)
    const last = Math.max(...primary!.requests.filter((r) => r.startedAt >= t0).map((r) => r.startedAt));
    const allowance = TOKENS_PER_MINUTE + (TOKENS_PER_MINUTE * (last - t0)) / 60_000;
    const overshoot = Math.max(0, ...served.map((c) => (c.tokens ?? 0) - COST));
    console.log(
      `      tokens/min ${TOKENS_PER_MINUTE}: ${tokens} tokens served by ${served.length} calls reaching the provider within ${last - t0} ms (allowance ${allowance.toFixed(0)}, + ${N} × ${overshoot} estimate error); ${calls.length - served.length} calls refused past maxWaitMs`,
    );
    expect(
      served.every((c) => c.tokens !== undefined),
      'every served call reported its usage',
    ).to.equal(true);
    expect(tokens).to.be.at.most(allowance + N * overshoot);
    // four independent limiters would have served about four times the allowance
    expect(tokens).to.be.above(allowance / 2);
    // refusals are RateLimitExceededError; no call outlasts its longest wait (1 500 ms) by much
    callersUnharmed(t0, Infinity, 2_500, new Set(['RateLimitExceededError']));
    expect(phaseEnd).to.be.greaterThan(0);
  });
});

describe('a real fleet on a 3-master Redis Cluster: 4 processes, a dead primary (rxheal/server)', function () {
  this.timeout(120_000);
  let servers: RedisClusterServers | undefined;
  let primary: LocalProvider | undefined;
  let fleet: Fleet | undefined;
  const nodes = Array.from({ length: N }, (_, i) => `c${i + 1}`);

  before(async function () {
    const server = requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    const cli = requireProgram(this, { name: 'redis-cli', command: 'redis-cli', install: 'apt-get install redis-server (.ci/run does; it ships redis-cli)' });
    servers = await startRedisCluster(server, cli, 3);
    primary = await startLocalProvider({ name: 'primary', tokenDelayMs: 0 });
    fleet = await Fleet.start(await configsFor(nodes, { redisUrl: servers.nodes[0]!.url, redisCluster: servers.nodes.map((n) => n.url) }, primary));
  });

  after(async () => {
    await fleet?.stop();
    await servers?.stop();
    await primary?.close();
  });

  const v = views(
    () => fleet!,
    () => primary!,
    nodes,
  );
  it(DEAD_PRIMARY, () => deadPrimary(fleet!, v));
  it(RECOVERY, () => recovery(fleet!, primary!, v).then(() => undefined));
});
