/**
 * `npm run example` (first part): a runnable pipeline that shows rxheal healing two flaky
 * tools, in real time (about three seconds), printing what happens. The chat demo is `npm start`
 * (examples/demo/).
 *
 * - get_weather fails twice with 503 and a 429 asking for 600 ms, then answers:
 *   retryWithBackoff waits out each failure and the call succeeds.
 * - broken_api is down: its breaker opens after 3 failures, later calls fail fast without
 *   touching it; once it recovers, one probe after the reset timeout closes the breaker again.
 *
 * It imports rxheal by name, as your code would: copy it (and agent.ts) into a project with
 * rxheal, rxjs and io-ts. Here the name resolves to the built package (dist/, which the script
 * builds first).
 */
import { asyncScheduler, catchError, defer, firstValueFrom, lastValueFrom, map, of, timer } from 'rxjs';
import { CircuitBreakerRegistry, HttpError, circuitBreak, classifyError, retryWithBackoff } from 'rxheal';

const start = asyncScheduler.now();
const log = (what: string): void => console.log(`${String(asyncScheduler.now() - start).padStart(5)} ms  ${what}`);

// --- a flaky tool: two 503s, one 429 asking for 600 ms, then success --------------------------
let weatherCalls = 0;
const getWeather = (city: string) =>
  defer(async () => {
    weatherCalls++;
    log(`get_weather(${city}) call #${weatherCalls}`);
    if (weatherCalls <= 2) throw new HttpError(503, {}, 'upstream overloaded');
    if (weatherCalls === 3) throw new HttpError(429, { 'retry-after-ms': '600' }, 'slow down');
    return { city, temperature: 22, condition: 'sunny' };
  });

// --- a dead tool that comes back after ~1.5 s ----------------------------------------------------
let apiUp = false;
const brokenApi = () =>
  defer(async () => {
    log(`  broken_api reached (${apiUp ? 'up' : 'down'})`);
    if (!apiUp) throw new HttpError(502, {}, 'bad gateway');
    return 'ok';
  });

const RESET_TIMEOUT_MS = 1000;
const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: RESET_TIMEOUT_MS });
breakers.events$.subscribe((e) => log(`circuit ${e.breaker}: ${e.from} → ${e.to} (${e.reason}${e.failures ? `, ${e.failures} failures` : ''})`));

async function main(): Promise<void> {
  log('— retryWithBackoff: get_weather until it answers');
  const weather = await firstValueFrom(
    getWeather('Paris').pipe(
      retryWithBackoff({
        initialBackoffMs: 100,
        jitter: 'none',
        onRetry: (i) => log(`  retry ${i.attempt}/${i.maxRetries} in ${i.delayMs} ms after ${i.classification.category}`),
      }),
    ),
  );
  log(`  answer: ${JSON.stringify(weather)}`);

  log('— circuitBreak: broken_api, 6 calls 50 ms apart');
  const guarded = () =>
    brokenApi().pipe(
      circuitBreak(breakers.get('tool:broken_api')),
      map((v) => `ok: ${v}`),
      catchError((e: unknown) => of(`failed: ${(e as Error).name} (${classifyError(e).category})`)),
    );
  for (let i = 0; i < 6; i++) {
    log(`  call ${i + 1} → ${await lastValueFrom(guarded())}`);
    await lastValueFrom(timer(50));
  }
  apiUp = true;
  const breaker = breakers.get('tool:broken_api');
  log(`  (broken_api recovers; the breaker stays ${breaker.state} until its reset timeout)`);
  // the breaker announces half-open on its own (the registry's events$ above prints it), but that
  // notice never keeps a process alive: wait out the reset timeout with a timer of our own
  await lastValueFrom(timer(RESET_TIMEOUT_MS));
  log(`  probe → ${await lastValueFrom(guarded())}`);
  log(`  breaker state now: ${breaker.state}`);
}

main()
  .then(async () => {
    console.log('\n— runAgent: a whole agent run healing itself (reflection, degradation, mid-stream fallback)');
    const { runAgentExample } = await import('./agent.js');
    await runAgentExample();
  })
  .catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
