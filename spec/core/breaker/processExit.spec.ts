/**
 * Real processes: an open breaker must not keep Node alive. Each case runs a short script in a
 * child process (`node --import tsx`) that opens breakers with `resetTimeoutMs: 60 000` — before,
 * the half-open notice kept the process alive for that minute — prints `ready`, and returns. The
 * spec measures from `ready` to the child's exit, and allows a generous 10 s of it (a loaded
 * machine), far below the minute an armed notice would hold the process.
 *
 * Also here, because they need a process of their own: a breaker reaches the fleet's code through
 * its store, so a store that carries none, in a process where no rxheal store was made, is
 * refused clearly.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

interface Outcome {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
  /** Ms from the child's `ready` line to its exit (undefined if it never printed it). */
  readonly afterReadyMs: number | undefined;
}

/** Runs `body` (an ES module body; `src` is the path of rxheal's sources) in a child process. */
function runChild(body: string, killAfterMs = 90_000): Promise<Outcome> {
  const script = `const src = ${JSON.stringify(SRC)};\n${body}`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let readyAt: number | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (readyAt === undefined && out.includes('ready')) readyAt = performance.now();
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, out, err, afterReadyMs: readyAt === undefined ? undefined : performance.now() - readyAt });
    });
  });
}

const PROMPTLY_MS = 10_000;

describe('an open breaker never keeps a process alive (real processes)', function () {
  this.timeout(120_000);

  it('breakers open for 60 s — alone, in a registry, behind circuitBreak with a hub nobody listens to, observed then let go — let the process exit at once', async () => {
    const outcome = await runChild(`
      const { CircuitBreaker, CircuitBreakerRegistry } = await import(src + 'index.ts');
      const { HttpError } = await import(src + 'index.ts');
      const { HealHub } = await import(src + 'index.ts');
      const { circuitBreak } = await import(src + 'index.ts');
      const { throwError, lastValueFrom } = await import('rxjs');
      const open = (b) => { const p = b.acquire(); p.failure(new HttpError(503)); };
      const alone = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      open(alone);
      const registry = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      open(registry.get('model:dead'));
      const hub = new HealHub();
      await lastValueFrom(throwError(() => new HttpError(503)).pipe(circuitBreak(registry.get('tool:dead'), { hub }))).catch(() => undefined);
      const watched = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const watching = watched.state$.subscribe();
      const viaRegistry = registry.events$.subscribe();
      open(watched);
      watching.unsubscribe();
      viaRegistry.unsubscribe();
      const states = [alone.state, registry.get('model:dead').state, registry.get('tool:dead').state, watched.state];
      console.log('ready', states.join(','));
    `);
    expect(outcome.err).to.equal('');
    expect(outcome.code).to.equal(0);
    expect(outcome.out).to.include('ready open,open,open,open');
    expect(outcome.afterReadyMs, 'ms from ready to exit').to.be.lessThan(PROMPTLY_MS);
  });

  it('a fleet link polls while breakers are attached; closing the store ends it and the process exits', async () => {
    const outcome = await runChild(`
      const { CircuitBreakerRegistry } = await import(src + 'index.ts');
      const { MemoryBreakerStore } = await import(src + 'fleet/index.ts');
      const { HttpError } = await import(src + 'index.ts');
      const store = new MemoryBreakerStore({ pollMs: 100 });
      const registry = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000, fleet: { store } });
      registry.get('model:dead').acquire().failure(new HttpError(503));
      // the poll runs while the store is open: the process stays; closing the store lets it go
      const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      setTimeout(() => {
        const polling = timers();
        store.close();
        console.log('ready', registry.get('model:dead').state, 'timers', polling, '->', timers());
      }, 300);
    `);
    expect(outcome.err).to.equal('');
    expect(outcome.code).to.equal(0);
    // (the running setTimeout callback counts itself)
    expect(outcome.out).to.include('ready open timers 2 -> 1');
    expect(outcome.afterReadyMs, 'ms from ready to exit').to.be.lessThan(PROMPTLY_MS);
  });

  it('a registry and a breaker touched after their store was closed (a process shutting down) start no poll: the process exits', async () => {
    const outcome = await runChild(
      `
      const { CircuitBreaker, CircuitBreakerRegistry } = await import(src + 'index.ts');
      const { MemoryBreakerStore } = await import(src + 'fleet/index.ts');
      const { RedisBreakerStore } = await import(src + 'redis/index.ts');
      const { HttpError } = await import(src + 'index.ts');
      const memory = new MemoryBreakerStore({ pollMs: 100 });
      memory.close();
      const redis = new RedisBreakerStore({ client: { sendCommand: () => new Promise(() => undefined) }, pollMs: 100 });
      await redis.close();
      const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const before = timers();
      const states = [];
      for (const store of [memory, redis]) {
        const registry = new CircuitBreakerRegistry({ failureThreshold: 1, fleet: { store } });
        registry.get('model:dead').acquire().failure(new HttpError(503));
        const alone = new CircuitBreaker({ name: 'tool:x', fleet: { store } });
        states.push(registry.get('model:dead').state, alone.state);
      }
      console.log('ready', states.join(','), 'timers', before, '->', timers());
    `,
      20_000,
    );
    expect(outcome.err).to.equal('');
    expect(outcome.out).to.include('ready open,closed,open,closed timers 0 -> 0');
    expect(outcome.afterReadyMs, 'ms from ready to exit (killed after 20 s)').to.be.lessThan(PROMPTLY_MS);
    expect(outcome.code).to.equal(0);
  });

  it('a BreakerStore of its own carrying nothing, in a process where no rxheal store was made, is refused naming fleet.store; with [FLEET_NODE] = fleetNode it joins', async () => {
    const outcome = await runChild(`
      const { CircuitBreaker } = await import(src + 'index.ts');
      const { EMPTY, of } = await import('rxjs');
      const verdict = (name) => ({ name, generation: 1, state: 'closed', reason: 'none', remainingMs: 0 });
      const store = {
        changes$: EMPTY,
        sync: (node, names) => of(names.map(verdict)),
        vote: (node, name) => of(verdict(name)),
        fact: (node, name) => of(verdict(name)),
        acquireProbe: (node, name) => of({ granted: false, verdict: verdict(name) }),
        probeResult: (node, name) => of(verdict(name)),
        isolate: (node, name) => of(verdict(name)),
        reset: (node, name) => of(verdict(name)),
      };
      try {
        new CircuitBreaker({ fleet: { store } });
        console.log('accepted');
      } catch (e) {
        console.log('refused', e.name, e.option);
      }
      const { FLEET_NODE } = await import(src + 'fleet/index.ts');
      const { fleetNode } = await import(src + 'fleet/index.ts');
      const mine = new CircuitBreaker({ fleet: { store: { ...store, [FLEET_NODE]: fleetNode } } });
      console.log('joined', mine.state);
    `);
    expect(outcome.err).to.equal('');
    expect(outcome.out).to.include('refused InvalidOptionError fleet.store');
    expect(outcome.out).to.include('joined closed');
  });
});
