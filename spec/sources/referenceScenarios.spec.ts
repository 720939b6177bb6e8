/**
 * Agent-level scenarios written from the user's reference documents (the retry-and-reflect
 * plugin, the self-healing agents guide, the reliability module), through the public API only —
 * what `rxheal` and `rxheal/testing` export — in virtual time. One scenario per concrete
 * behaviour the references describe, with their numbers: 500 → 1 000 → 2 000 ms and at most 3
 * retries (capped at 30 s), a breaker opening after 5 failures for 60 s then probing, the
 * 3-success half-open variant, reflection on a tool's bad arguments, budgets, fallback chains,
 * degradation, total timeouts, and the log lines the references show.
 */
import { expect } from 'chai';
import * as t from 'io-ts';
import { asyncScheduler, defer, throwError, type Observable, share } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { instrument } from '../../src/otel/index.js';
import {
  AllFallbacksFailedError,
  BudgetExceededError,
  CapabilityRegistry,
  CircuitBreaker,
  CircuitBreakerRegistry,
  CircuitOpenError,
  HealHub,
  HttpError,
  RetriesExhaustedError,
  TotalTimeoutError,
  ToolError,
  circuitBreak,
  classifyError,
  defineTool,
  degradeAfter,
  fallbackModel,
  reflectOnError,
  retryWithBackoff,
  runAgent,
  streamModel,
  fallbackTo,
  validateOutput,
  type Model,
  type AgentEvent,
  type Message,
  type TurnEvent,
} from '../../src/index.js';
import { formatLogLine, logRecord, summarizeEvents } from '../../src/events/index.js';
import {
  describeEvent,
  finish,
  pendingActions,
  pendingAt,
  record,
  scriptedModel,
  scriptedTool,
  textDeltas,
  toolCall,
  type Recording,
} from '../../src/testing/index.js';

const ask = (content: string): Message[] => [{ role: 'user', content }];
const answer = (text: string): TurnEvent[] => [...textDeltas(text), finish()];
/** Whether `sub` appears in `list` in order (not necessarily adjacent). */
const inOrder = (list: readonly string[], sub: readonly string[]): boolean => {
  let i = 0;
  for (const item of list) if (item === sub[i]) i++;
  return i === sub.length;
};
const labels = (log: Recording<AgentEvent>): string[] => log.events.map(([, e]) => describeEvent(e)).filter((l) => !l.startsWith('call-'));
const ofType = <K extends AgentEvent['type']>(log: Recording<AgentEvent>, type: K): [number, Extract<AgentEvent, { type: K }>][] =>
  log.events.filter(([, e]) => e.type === type) as [number, Extract<AgentEvent, { type: K }>][];
/** What a chat UI shows: text deltas, a `reset` discarding what came before it in the turn. */
const shown = (log: Recording<AgentEvent>): string => {
  let text = '';
  for (const [, e] of log.events) {
    if (e.type === 'reset') text = '';
    else if (e.type === 'text-delta') text += e.text;
    else if (e.type === 'message') text = '';
    if (e.type === 'message' && e.message.role === 'assistant') text = e.message.content;
  }
  return text;
};
/** The reference's log lines for events, as `logEvents` prints them at its default level (info). */
const linesOf = (events: readonly AgentEvent[]): string[] =>
  events.flatMap((e) => {
    const r = logRecord(e);
    return r && r.level !== 'debug' ? [formatLogLine(r)] : [];
  });
const logLines = (log: Recording<AgentEvent>): string[] => linesOf(log.events.map(([, e]) => e));

function virtual<T>(body: (ts: TestScheduler) => T): T {
  const ts = new TestScheduler((actual, expected) => {
    expect(actual).to.deep.equal(expected);
  });
  let out!: T;
  ts.run(() => {
    out = body(ts);
  });
  return out;
}

/** Runs an agent in virtual time to its end; `pending` is what the scheduler still holds then. */
function runToEnd(config: Parameters<typeof runAgent>[0]): { log: Recording<AgentEvent>; pending: number } {
  return virtual((ts) => {
    const log = record(runAgent(config));
    ts.flush();
    return { log, pending: pendingActions(ts) };
  });
}

const weatherArgs = t.type({ city: t.string, units: t.keyof({ celsius: null, fahrenheit: null }) });

describe('reference scenarios (agent level, public API, virtual time)', () => {
  describe('retry-and-reflect: the reference backoff (max_retries 3, 500 ms, ×2, cap 30 000 ms)', () => {
    const plugin = { maxRetries: 3, initialBackoffMs: 500, backoffMultiplier: 2, maxBackoffMs: 30_000, jitter: 'none' } as const;

    it('a flaky tool: retried after 500, 1 000 and 2 000 ms, the 4th attempt succeeds; the run goes on with its result', () => {
      const api = scriptedTool(
        'flaky_api',
        [{ error: new HttpError(503) }, { error: new HttpError(503) }, { error: new HttpError(503) }, { result: { ok: true } }],
        {
          idempotent: true,
        },
      );
      const model = scriptedModel('m', [[toolCall('c1', 'flaky_api', {}), finish('tool-calls')], answer('Done.')]);
      const { log, pending } = runToEnd({
        model,
        tools: [api],
        messages: ask('call it'),
        toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ ...plugin, hub, target: `tool:${call.name}` })),
      });
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 3500 });
      expect(api.executions).to.have.length(4);
      expect(ofType(log, 'retry').map(([at, e]) => [at, e.attempt, e.max, e.delayMs])).to.deep.equal([
        [0, 1, 3, 500],
        [500, 2, 3, 1000],
        [1500, 3, 3, 2000],
      ]);
      expect(labels(log)).to.include.members(['retry-succeeded:tool:flaky_api#4', 'tool-result:flaky_api']);
      expect(model.requests[1]!.messages.at(-1)).to.deep.include({ role: 'tool', content: '{"ok":true}' });
      expect(pending).to.equal(0);
    });

    it('defaults are the reference defaults: 3 retries, 500 ms doubling (jitter only ever shortens a wait, to at least half)', () => {
      const api = scriptedTool('flaky_api', [{ error: new HttpError(503) }], { idempotent: true });
      const model = scriptedModel('m', [[toolCall('c1', 'flaky_api', {}), finish('tool-calls')], answer('Sorry.')]);
      const { log } = runToEnd({
        model,
        tools: [api],
        messages: ask('call it'),
        toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, random: () => 0.999999 })),
      });
      expect(api.executions).to.have.length(4);
      expect(ofType(log, 'retry').map(([, e]) => e.delayMs)).to.deep.equal([500, 1000, 2000]);
      const [, toolError] = ofType(log, 'tool-error')[0]!;
      expect(toolError.category).to.equal('service_unavailable');
      expect(toolError.error).to.match(/RetriesExhaustedError|4 attempts|HTTP 503/);
    });

    it('the cap: delays double up to 30 000 ms and stay there', () => {
      const delays = virtual((ts) => {
        const seen: number[] = [];
        const log = record(throwError(() => new HttpError(503)).pipe(retryWithBackoff({ ...plugin, maxRetries: 9, onRetry: (i) => seen.push(i.delayMs) })));
        ts.flush();
        expect(log.error()).to.be.instanceOf(RetriesExhaustedError);
        expect((log.error() as RetriesExhaustedError).attempts).to.equal(10);
        expect(log.end()?.at).to.equal(500 + 1000 + 2000 + 4000 + 8000 + 16_000 + 30_000 * 3);
        return seen;
      });
      expect(delays).to.deep.equal([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    });

    it("four failures: RetriesExhaustedError at 3 500 ms, every attempt's error kept", () => {
      virtual((ts) => {
        let n = 0;
        const log = record(defer(() => throwError(() => new HttpError(503, undefined, `attempt ${++n}`))).pipe(retryWithBackoff(plugin)));
        ts.flush();
        const error = log.error() as RetriesExhaustedError;
        expect(log.end()).to.deep.include({ kind: 'error', at: 3500 });
        expect(error).to.be.instanceOf(RetriesExhaustedError);
        expect(error.attempts).to.equal(4);
        expect(error.errors).to.have.length(4);
      });
    });

    it('the reference log lines: "tool call failed, retrying … attempt=1 max=3 backoff_ms=500 error=…", then "retry succeeded … attempt=2"', () => {
      const weather = scriptedTool('get_weather', [{ error: new HttpError(503, undefined, 'Service Unavailable') }, { result: { temperature: 22 } }], {
        idempotent: true,
      });
      const model = scriptedModel('m', [[toolCall('c1', 'get_weather', { city: 'NYC' }), finish('tool-calls')], answer('22 °C.')]);
      const { log } = runToEnd({
        model,
        tools: [weather],
        messages: ask('weather?'),
        toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ ...plugin, hub, target: `tool:${call.name}` })),
      });
      const lines = logLines(log);
      expect(lines[0]).to.match(/^WARN rxheal: tool call failed, retrying tool_name=get_weather attempt=1 max=3 backoff_ms=500 error="[^"]*503[^"]*"/);
      expect(lines[1]).to.equal('INFO rxheal: retry succeeded tool_name=get_weather attempt=2');
    });

    it('a tool not marked idempotent is not re-run, and the run says so (retry-withheld) instead of retrying silently', () => {
      const send = scriptedTool('send_email', [{ error: new HttpError(503) }]);
      const model = scriptedModel('m', [[toolCall('c1', 'send_email', {}), finish('tool-calls')], answer('Could not send.')]);
      const { log } = runToEnd({
        model,
        tools: [send],
        messages: ask('send it'),
        toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ ...plugin, hub, target: `tool:${call.name}` })),
      });
      expect(send.executions).to.have.length(1);
      expect(labels(log)).to.include('retry-withheld:tool:send_email:not_idempotent');
      expect(logLines(log)[0]).to.match(/^WARN rxheal: retry withheld: tool not idempotent tool_name=send_email reason=not_idempotent/);
      expect(log.completed()).to.equal(true);
    });

    it('scope: include_tools / exclude_tools — an excluded tool (exit_loop) is neither retried nor reflected on', () => {
      const exit = scriptedTool('exit_loop', [{ error: new Error('loop ended badly') }], { idempotent: true });
      const model = scriptedModel('m', [[toolCall('c1', 'exit_loop', {}), finish('tool-calls')], answer('ok')]);
      const { log } = runToEnd({
        model,
        tools: [exit],
        messages: ask('stop'),
        toolPipeline: (call, call$, { hub }) =>
          call$.pipe(retryWithBackoff({ ...plugin, retryOn: 'all', hub, target: `tool:${call.name}` }), reflectOnError({ excludeTools: ['exit_loop'] })),
      });
      // retryOn 'all' retries it (the user's choice), but reflection is excluded: a plain tool error
      expect(labels(log).filter((l) => l.startsWith('reflection'))).to.deep.equal([]);
      expect(labels(log)).to.include('tool-error:exit_loop');
    });
  });

  describe('retry-and-reflect: reflection on a tool failure (the get_weather dialogue)', () => {
    it('the tool rejects "kelvin"; the model gets the reference prompt, corrects its arguments, and the tool succeeds', () => {
      const weather = defineTool({
        name: 'get_weather',
        description: 'Current weather',
        args: t.type({ city: t.string, units: t.string }),
        execute: ({ units }) => {
          if (units !== 'celsius' && units !== 'fahrenheit') throw new Error('Invalid units. Supported: celsius, fahrenheit');
          return [{ temperature: 22, condition: 'sunny' }];
        },
      });
      const model = scriptedModel('m', [
        [toolCall('c1', 'get_weather', { city: 'nyc', units: 'kelvin' }), finish('tool-calls')],
        [toolCall('c2', 'get_weather', { city: 'NYC', units: 'celsius' }), finish('tool-calls')],
        answer('It is 22 °C and sunny in NYC.'),
      ]);
      const { log } = runToEnd({
        model,
        tools: [weather],
        messages: ask("What's the weather in NYC?"),
        toolPipeline: (_call, call$) => call$.pipe(reflectOnError()),
      });
      expect(log.completed()).to.equal(true);
      const reflected = model.requests[1]!.messages.at(-1)!;
      expect(reflected).to.deep.include({
        role: 'tool',
        toolCallId: 'c1',
        content:
          'The tool \'get_weather\' failed with: "Invalid units. Supported: celsius, fahrenheit". Analyze what went wrong and provide corrected arguments.',
      });
      expect(model.requests[2]!.messages.at(-1)).to.deep.include({ role: 'tool', toolCallId: 'c2', content: '{"temperature":22,"condition":"sunny"}' });
      expect(
        inOrder(labels(log), ['tool-call:get_weather', 'finish:tool-calls', 'message:assistant', 'tool-error:get_weather', 'reflection:get_weather#1/3']),
        JSON.stringify(labels(log)),
      ).to.equal(true);
      expect(logLines(log)).to.include('INFO rxheal: reflection injected tool_name=get_weather call_id=c1 attempt=1 max=3');
      expect(summarizeEvents(log.events).reflections).to.deep.include({ total: 1, corrected: 1, successRate: 1 });
    });

    it("bad arguments caught by the tool's codec are reflected on too (the tool never runs)", () => {
      let ran = 0;
      const weather = defineTool({ name: 'get_weather', description: 'w', args: weatherArgs, execute: () => (ran++, [{ temperature: 22 }]) });
      const model = scriptedModel('m', [
        [toolCall('c1', 'get_weather', { city: 'nyc', units: 'kelvin' }), finish('tool-calls')],
        [toolCall('c2', 'get_weather', { city: 'NYC', units: 'celsius' }), finish('tool-calls')],
        answer('22.'),
      ]);
      const { log } = runToEnd({ model, tools: [weather], messages: ask('w?'), toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) });
      expect(ran).to.equal(1);
      const prompt = String(model.requests[1]!.messages.at(-1)!.content);
      expect(prompt).to.match(/^The tool 'get_weather' failed with: ".*kelvin.*"\. Analyze what went wrong and provide corrected arguments\.$/);
      expect(log.completed()).to.equal(true);
    });

    it('a tool failing every time: reflections 1/3, 2/3, 3/3, then the give-up instruction; the run still answers', () => {
      const broken = scriptedTool('get_weather', [{ error: new Error('Invalid units') }]);
      const call = (i: number): TurnEvent[] => [toolCall(`c${i}`, 'get_weather', { i }), finish('tool-calls')];
      const model = scriptedModel('m', [call(1), call(2), call(3), call(4), answer('The weather service is unavailable.')]);
      const { log } = runToEnd({ model, tools: [broken], messages: ask('w?'), toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) });
      expect(labels(log).filter((l) => l.startsWith('reflection'))).to.deep.equal([
        'reflection:get_weather#1/3',
        'reflection:get_weather#2/3',
        'reflection:get_weather#3/3',
        'reflection:get_weather#exhausted',
      ]);
      expect(String(model.requests[4]!.messages.at(-1)!.content)).to.equal(
        'The tool \'get_weather\' has failed 4 times in a row (last error: "Invalid units"). Do not call it again. Tell the user it is unavailable right now and continue without it.',
      );
      expect(logLines(log)).to.include('WARN rxheal: reflections exhausted, tool abandoned tool_name=get_weather call_id=c4 attempt=4 max=3');
      expect(log.completed()).to.equal(true);
    });

    it("onExhausted 'error': past the limit the run ends with the tool's error", () => {
      const broken = scriptedTool('get_weather', [{ error: new Error('Invalid units') }]);
      const call = (i: number): TurnEvent[] => [toolCall(`c${i}`, 'get_weather', { i }), finish('tool-calls')];
      const model = scriptedModel('m', [call(1), call(2), answer('never')]);
      const { log } = runToEnd({
        model,
        tools: [broken],
        messages: ask('w?'),
        toolPipeline: (_c, call$) => call$.pipe(reflectOnError({ maxReflections: 1, onExhausted: 'error' })),
      });
      expect(log.error()).to.be.instanceOf(ToolError);
      expect((log.error() as ToolError).message).to.contain('Invalid units');
      expect(model.calls).to.equal(2);
    });

    it('transient failures are retried (with backoff) rather than reflected on; once retries are exhausted the model hears an error, not a reflection', () => {
      const api = scriptedTool('get_weather', [{ error: new HttpError(503) }], { idempotent: true });
      const model = scriptedModel('m', [[toolCall('c1', 'get_weather', {}), finish('tool-calls')], answer('Sorry.')]);
      const { log } = runToEnd({
        model,
        tools: [api],
        messages: ask('w?'),
        toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ jitter: 'none', hub, target: `tool:${call.name}` }), reflectOnError()),
      });
      expect(api.executions).to.have.length(4);
      expect(labels(log).filter((l) => l.startsWith('reflection'))).to.deep.equal([]);
      expect(String(model.requests[1]!.messages.at(-1)!.content)).to.match(/^Error: /);
    });

    it('a success of the tool resets its count (consecutive failures), per run', () => {
      const flaky = scriptedTool('get_weather', [{ error: new Error('bad') }, { result: 1 }, { error: new Error('bad') }, { result: 2 }]);
      const call = (i: number): TurnEvent[] => [toolCall(`c${i}`, 'get_weather', { i }), finish('tool-calls')];
      const model = scriptedModel('m', [call(1), call(2), call(3), call(4), answer('ok')]);
      const { log } = runToEnd({ model, tools: [flaky], messages: ask('w?'), toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) });
      expect(labels(log).filter((l) => l.startsWith('reflection'))).to.deep.equal(['reflection:get_weather#1/3', 'reflection:get_weather#1/3']);
    });
  });

  describe('circuit breaker: 5 failures open it for 60 s, then one probe (the reference plugin)', () => {
    it('five failing calls open it; the sixth fails fast without reaching the tool; after 60 s a probe passes and closes it', () => {
      virtual((ts) => {
        const hub = new HealHub();
        const events: AgentEvent[] = [];
        hub.events$.subscribe((e) => events.push(e));
        const breakers = new CircuitBreakerRegistry({ failureThreshold: 5, resetTimeoutMs: 60_000 });
        let calls = 0;
        let healthy = false;
        const call$ = defer(() => (calls++, healthy ? ['ok'] : throwError(() => new HttpError(503))));
        const guarded = call$.pipe(circuitBreak(breakers.get('tool:broken_api'), { hub }));
        const outcomes: string[] = [];
        const attempt = (): void => {
          guarded.subscribe({ next: (v) => outcomes.push(v), error: (e: unknown) => outcomes.push(e instanceof CircuitOpenError ? 'open' : 'failed') });
        };
        for (let i = 0; i < 6; i++) asyncScheduler.schedule(attempt, i * 1000);
        asyncScheduler.schedule(() => attempt(), 4000 + 59_999); // 1 ms before the reset timeout: still open
        asyncScheduler.schedule(() => {
          healthy = true;
          attempt();
        }, 4000 + 60_000);
        ts.flush();
        expect(outcomes).to.deep.equal(['failed', 'failed', 'failed', 'failed', 'failed', 'open', 'open', 'ok']);
        expect(calls).to.equal(6);
        expect(breakers.get('tool:broken_api').state).to.equal('closed');
        expect(linesOf(events)[0]).to.equal('WARN rxheal: circuit breaker opened tool_name=broken_api failures=5 reset_ms=60000 reason=failure_threshold');
        expect(events.filter((e) => e.type === 'circuit').map((e) => describeEvent(e))).to.deep.equal([
          'circuit:tool:broken_api:closed>open',
          'circuit:tool:broken_api:rejected',
          'circuit:tool:broken_api:rejected',
          'circuit:tool:broken_api:open>half-open',
          'circuit:tool:broken_api:half-open>closed',
        ]);
        const rejected = events.find((e) => e.type === 'circuit' && e.kind === 'rejected') as Extract<AgentEvent, { type: 'circuit'; kind: 'rejected' }>;
        expect(rejected.retryAfterMs).to.equal(59_000);
      });
    });

    it('the probe fails: the breaker stays open another 60 s', () => {
      virtual((ts) => {
        const breaker = new CircuitBreaker({ name: 'tool:broken_api', failureThreshold: 5, resetTimeoutMs: 60_000 });
        const guarded = throwError(() => new HttpError(503)).pipe(circuitBreak(breaker));
        const outcomes: [number, string][] = [];
        const attempt = (): void => {
          guarded.subscribe({ error: (e: unknown) => outcomes.push([asyncScheduler.now(), e instanceof CircuitOpenError ? 'open' : 'failed']) });
        };
        for (const at of [0, 1, 2, 3, 4, 60_004, 60_005, 120_003, 120_004]) asyncScheduler.schedule(attempt, at);
        ts.flush();
        expect(outcomes).to.deep.equal([
          [0, 'failed'],
          [1, 'failed'],
          [2, 'failed'],
          [3, 'failed'],
          [4, 'failed'],
          [60_004, 'failed'], // the probe
          [60_005, 'open'],
          [120_003, 'open'],
          [120_004, 'failed'], // the next probe, 60 s after the failed one
        ]);
      });
    });

    it("the article's variant: half_open_max_calls = 3 — three probe successes close it, a failure among them re-opens it", () => {
      virtual((ts) => {
        const breaker = new CircuitBreaker({ name: 'openai', failureThreshold: 5, resetTimeoutMs: 30_000, halfOpenMaxCalls: 3 });
        const states: string[] = [];
        breaker.events$.subscribe((e) => states.push(`${e.from}>${e.to}:${e.reason}`));
        const fail$ = throwError(() => new HttpError(500)).pipe(circuitBreak(breaker));
        const ok$ = defer(() => ['ok']).pipe(circuitBreak(breaker));
        for (let i = 0; i < 5; i++) fail$.subscribe({ error: () => undefined });
        expect(breaker.state).to.equal('open');
        asyncScheduler.schedule(() => {
          ok$.subscribe();
          ok$.subscribe();
          expect(breaker.state).to.equal('half-open');
          ok$.subscribe();
          expect(breaker.state).to.equal('closed');
        }, 30_000);
        ts.flush();
        expect(states).to.deep.equal(['closed>open:failure_threshold', 'open>half-open:reset_timeout', 'half-open>closed:probe_success']);
        // and a failure among the probes re-opens it
        for (let i = 0; i < 5; i++) fail$.subscribe({ error: () => undefined });
        asyncScheduler.schedule(() => {
          ok$.subscribe();
          fail$.subscribe({ error: () => undefined });
          expect(breaker.state).to.equal('open');
        }, 60_000);
        ts.flush();
      });
    });

    it('a success while closed resets the failure count (the article: record_success sets failure_count = 0)', () => {
      virtual(() => {
        const breaker = new CircuitBreaker({ failureThreshold: 5 });
        const fail$ = throwError(() => new HttpError(503)).pipe(circuitBreak(breaker));
        const ok$ = defer(() => ['ok']).pipe(circuitBreak(breaker));
        for (let i = 0; i < 4; i++) fail$.subscribe({ error: () => undefined });
        ok$.subscribe();
        for (let i = 0; i < 4; i++) fail$.subscribe({ error: () => undefined });
        expect(breaker.state).to.equal('closed');
        fail$.subscribe({ error: () => undefined });
        expect(breaker.state).to.equal('open');
      });
    });

    it('bad requests (4xx) are not the service failing: they never open the breaker', () => {
      virtual(() => {
        const breaker = new CircuitBreaker({ failureThreshold: 5 });
        const bad$ = throwError(() => new HttpError(400)).pipe(circuitBreak(breaker));
        for (let i = 0; i < 10; i++) bad$.subscribe({ error: () => undefined });
        expect(breaker.state).to.equal('closed');
      });
    });

    it('per-model breakers: GPT-4o failing does not affect Claude', () => {
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 2, resetTimeoutMs: 60_000 });
      const gpt = scriptedModel('gpt-4o', Array(5).fill({ marbles: '-#', error: new HttpError(503) }));
      const claude = scriptedModel(
        'claude',
        Array.from({ length: 5 }, (_, i) => answer(`answer ${i}`)),
      );
      const model = fallbackModel([gpt, claude], { breakers });
      const logs: Recording<AgentEvent>[] = [];
      virtual((ts) => {
        // a request every 10 ms (not a flush between them: that would run the 60 s reset timer too)
        for (let i = 0; i < 4; i++) asyncScheduler.schedule(() => logs.push(record(runAgent({ model, messages: ask(`q${i}`) }))), i * 10);
        asyncScheduler.schedule(() => {
          expect(breakers.get('model:gpt-4o').state).to.equal('open');
          expect(breakers.get('model:claude').state).to.equal('closed');
        }, 100);
        ts.flush();
      });
      expect(logs.map((l) => l.completed())).to.deep.equal([true, true, true, true]);
      expect(gpt.calls).to.equal(2);
      expect(claude.calls).to.equal(4);
    });

    it('retry, then breaker: each retried call is one outcome for the breaker; five exhausted calls open it', () => {
      virtual((ts) => {
        const breaker = new CircuitBreaker({ name: 'tool:broken_api', failureThreshold: 5, resetTimeoutMs: 60_000 });
        let calls = 0;
        const call$ = defer(() => (calls++, throwError(() => new HttpError(503)))).pipe(
          retryWithBackoff({ maxRetries: 3, jitter: 'none' }),
          circuitBreak(breaker),
        );
        const errors: unknown[] = [];
        for (let i = 0; i < 6; i++) asyncScheduler.schedule(() => call$.subscribe({ error: (e: unknown) => errors.push(e) }), i * 10_000);
        ts.flush();
        expect(calls).to.equal(5 * 4);
        expect(errors.slice(0, 5).every((e) => e instanceof RetriesExhaustedError)).to.equal(true);
        expect(errors[5]).to.be.instanceOf(CircuitOpenError);
      });
    });
  });

  describe('budgets: model calls (fallbacks and retries included), tokens, tool calls, steps', () => {
    it('maxModelCalls counts every provider attempt: a failing primary and its fallback are two calls', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('Hi.')]);
      const { log, pending } = runToEnd({ model: fallbackModel([gpt, claude]), messages: ask('hi'), budget: { maxModelCalls: 1 } });
      const error = log.error() as BudgetExceededError;
      expect(error).to.be.instanceOf(BudgetExceededError);
      expect([error.resource, error.limit, error.used]).to.deep.equal(['modelCalls', 1, 2]);
      expect(claude.calls).to.equal(0);
      expect(labels(log).at(-1)).to.equal('budget-exceeded:modelCalls');
      expect(logLines(log).at(-1)).to.equal('ERROR rxheal: budget exceeded resource=modelCalls limit=1 used=2');
      expect(pending).to.equal(0);
    });

    it('retries inside perModel count too: maxModelCalls 3 stops the 4th attempt before it is made', () => {
      const gpt = scriptedModel('gpt', Array(5).fill({ marbles: '-#', error: new HttpError(503) }));
      const claude = scriptedModel('claude', [answer('Hi.')]);
      const model = fallbackModel([gpt, claude], { perModel: (_id, stream$) => stream$.pipe(retryWithBackoff({ maxRetries: 5, jitter: 'none' })) });
      const { log } = runToEnd({ model, messages: ask('hi'), budget: { maxModelCalls: 3 } });
      expect((log.error() as BudgetExceededError).resource).to.equal('modelCalls');
      expect(gpt.calls).to.equal(3);
      expect(claude.calls).to.equal(0);
      expect(labels(log).filter((l) => l.startsWith('retry:'))).to.deep.equal(['retry:model:gpt#1', 'retry:model:gpt#2', 'retry:model:gpt#3']);
    });

    it('retries in the model pipeline count: each resubscription is a model call', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }, { marbles: '-#', error: new HttpError(503) }, answer('Hi.')]);
      const ok = runToEnd({
        model: gpt,
        messages: ask('hi'),
        budget: { maxModelCalls: 3 },
        modelPipeline: (_r, turn$, { hub }) => turn$.pipe(retryWithBackoff({ hub, target: 'model:gpt', jitter: 'none' })),
      });
      expect(ok.log.completed()).to.equal(true);
      const gpt2 = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }, { marbles: '-#', error: new HttpError(503) }, answer('Hi.')]);
      const short = runToEnd({
        model: gpt2,
        messages: ask('hi'),
        budget: { maxModelCalls: 2 },
        modelPipeline: (_r, turn$, { hub }) => turn$.pipe(retryWithBackoff({ hub, target: 'model:gpt', jitter: 'none' })),
      });
      expect((short.log.error() as BudgetExceededError).resource).to.equal('modelCalls');
      expect(gpt2.calls).to.equal(2);
    });

    it('maxTokens: input + output of every attempt; the run errors right after the finish that crosses it', () => {
      const usage = { inputTokens: 600, outputTokens: 500 };
      const model = scriptedModel('m', [
        [toolCall('c1', 'lookup', {}), finish('tool-calls', usage)],
        [...textDeltas('Long answer.'), finish('stop', usage)],
      ]);
      const lookup = scriptedTool('lookup', [{ result: 'found' }]);
      const { log } = runToEnd({ model, tools: [lookup], messages: ask('q'), budget: { maxTokens: 2000 } });
      const error = log.error() as BudgetExceededError;
      expect([error.resource, error.limit, error.used]).to.deep.equal(['tokens', 2000, 2200]);
      expect(labels(log).slice(-2)).to.deep.equal(['finish:stop', 'budget-exceeded:tokens']);
      expect(log.events.filter(([, e]) => e.type === 'message' && e.message.role === 'assistant')).to.have.length(1);
    });

    it('tokens of a failed fallback attempt that reported usage count once, not twice', () => {
      const gpt = scriptedModel('gpt', [[...textDeltas('partial'), finish('stop', { inputTokens: 100, outputTokens: 100 })]]);
      const model = fallbackModel([gpt]);
      const { log } = runToEnd({ model, messages: ask('q'), budget: { maxTokens: 200 } });
      expect(log.completed()).to.equal(true); // 200 used, limit 200: not crossed (counted once)
    });

    it('maxToolCalls counts every execution, retries included', () => {
      const api = scriptedTool('api', [{ error: new HttpError(503) }, { error: new HttpError(503) }, { result: 'ok' }], { idempotent: true });
      const model = scriptedModel('m', [[toolCall('c1', 'api', {}), finish('tool-calls')], answer('done')]);
      const { log } = runToEnd({
        model,
        tools: [api],
        messages: ask('q'),
        budget: { maxToolCalls: 2 },
        toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ hub, target: `tool:${call.name}`, jitter: 'none' })),
      });
      const error = log.error() as BudgetExceededError;
      expect([error.resource, error.limit, error.used]).to.deep.equal(['toolCalls', 2, 3]);
      expect(api.executions).to.have.length(2);
    });

    it('maxSteps: a model that keeps calling tools ends with BudgetExceededError (steps)', () => {
      const loop = Array.from({ length: 5 }, (_, i) => [toolCall(`c${i}`, 'lookup', {}), finish('tool-calls')]);
      const model = scriptedModel('m', loop);
      const { log } = runToEnd({ model, tools: [scriptedTool('lookup', [{ result: 1 }])], messages: ask('q'), maxSteps: 3 });
      const error = log.error() as BudgetExceededError;
      expect([error.resource, error.limit, error.used]).to.deep.equal(['steps', 3, 4]);
      expect(model.calls).to.equal(3);
      expect(labels(log).at(-1)).to.equal('budget-exceeded:steps');
    });

    it('a BudgetExceededError is never retried, not even with retryOn: all, nor fallen back on', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }, answer('x')]);
      const claude = scriptedModel('claude', [answer('y')]);
      const { log } = runToEnd({
        model: fallbackModel([gpt, claude], { perModel: (_id, s$) => s$.pipe(retryWithBackoff({ retryOn: 'all', jitter: 'none' })) }),
        messages: ask('q'),
        budget: { maxModelCalls: 1 },
        modelPipeline: (_r, turn$) => turn$.pipe(retryWithBackoff({ retryOn: 'all', jitter: 'none' })),
      });
      expect(log.error()).to.be.instanceOf(BudgetExceededError);
      expect(gpt.calls + claude.calls).to.equal(1);
      expect(labels(log).filter((l) => l.startsWith('budget-exceeded'))).to.deep.equal(['budget-exceeded:modelCalls']);
    });
  });

  describe('fallback routing: primary → secondary → tertiary, a breaker each', () => {
    it("all providers failing: AllFallbacksFailedError with each provider's error, in order", () => {
      const errors = [new HttpError(503), new HttpError(429), new HttpError(500)];
      const models = ['openai', 'anthropic', 'google'].map((id, i) => scriptedModel(id, [{ marbles: '-#', error: errors[i] }]));
      const { log } = runToEnd({ model: fallbackModel(models, { breakers: new CircuitBreakerRegistry() }), messages: ask('q') });
      const error = log.error() as AllFallbacksFailedError;
      expect(error).to.be.instanceOf(AllFallbacksFailedError);
      expect(error.errors).to.deep.equal(errors);
      expect(labels(log).filter((l) => l.startsWith('fallback'))).to.deep.equal([
        'fallback:model:openai>model:anthropic',
        'fallback:model:anthropic>model:google',
      ]);
      expect(error.message).to.contain('3 alternatives failed');
    });

    it("a programming error (TypeError, …: the Ruby module's non-fallback errors) passes through at once: no other model would fix it", () => {
      for (const bug of [new TypeError('undefined is not a function'), new RangeError('bad length'), new SyntaxError('bad JSON in our code')]) {
        const gpt = scriptedModel('gpt', [{ marbles: '-#', error: bug }]);
        const claude = scriptedModel('claude', [answer('y')]);
        const { log } = runToEnd({ model: fallbackModel([gpt, claude]), messages: ask('q') });
        expect(log.error()).to.equal(bug);
        expect(claude.calls).to.equal(0);
      }
    });

    it('a 401 at one provider (its key) is not retried, but the next provider is tried: its key may work', () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(401) }, answer('never')]);
      const claude = scriptedModel('claude', [answer('y')]);
      const { log } = runToEnd({
        model: fallbackModel([gpt, claude], { perModel: (_id, s$) => s$.pipe(retryWithBackoff({ jitter: 'none' })) }),
        messages: ask('q'),
      });
      expect(log.completed()).to.equal(true);
      expect(gpt.calls).to.equal(1);
      expect(ofType(log, 'fallback')[0]![1]).to.deep.include({ reason: 'unauthorized' });
    });

    it("mid-stream 'restart': a reset, then the secondary's whole answer; nothing lost, nothing doubled, in the UI and in history", () => {
      const gpt = scriptedModel('gpt', [
        { marbles: '-a-b-#', values: { a: { type: 'text-delta', text: 'Rivers' }, b: { type: 'text-delta', text: ' run' } }, error: new HttpError(502) },
      ]);
      const claude = scriptedModel('claude', [answer('Rivers run to the sea.')]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
      const { log } = runToEnd({ model: fallbackModel([gpt, claude], { breakers, midStream: 'restart' }), messages: ask('story') });
      expect(labels(log).slice(0, 5)).to.deep.equal([
        'text:Rivers',
        'text: run',
        'circuit:model:gpt:closed>open',
        'fallback:model:gpt>model:claude',
        'reset:fallback',
      ]);
      expect(shown(log)).to.equal('Rivers run to the sea.');
      const streamed = log.events.map(([, e]) => e).filter((e) => e.type === 'text-delta' || e.type === 'reset');
      const afterReset = streamed
        .slice(streamed.findIndex((e) => e.type === 'reset') + 1)
        .map((e) => (e as { text: string }).text)
        .join('');
      expect(afterReset).to.equal('Rivers run to the sea.');
      const [, fallback] = ofType(log, 'fallback')[0]!;
      expect(fallback).to.deep.include({ reason: 'bad_gateway', midStream: true });
      expect(claude.requests[0]!.messages).to.deep.equal([{ role: 'user', content: 'story' }]);
    });

    it("mid-stream 'continue': the secondary continues the partial text; a repeated tail is trimmed; every word once", () => {
      const gpt = scriptedModel('gpt', [
        { marbles: '-a-b-#', values: { a: { type: 'text-delta', text: 'Rivers run' }, b: { type: 'text-delta', text: ' to the' } }, error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [[...textDeltas(' to the sea, always.'), finish()]]);
      const { log } = runToEnd({ model: fallbackModel([gpt, claude], { midStream: 'continue' }), messages: ask('story') });
      expect(labels(log)).not.to.include('reset:fallback');
      const text = log.events
        .map(([, e]) => e)
        .filter((e) => e.type === 'text-delta')
        .map((e) => (e as { text: string }).text)
        .join('');
      expect(text).to.equal('Rivers run to the sea, always.');
      expect(shown(log)).to.equal('Rivers run to the sea, always.');
      expect(claude.requests[0]!.messages.slice(-2)[0]).to.deep.equal({ role: 'assistant', content: 'Rivers run to the' });
    });

    it('continue across two failures: primary, then secondary die mid-answer; the tertiary finishes it, nothing lost or doubled', () => {
      const d = (text: string): TurnEvent => ({ type: 'text-delta', text });
      const a = scriptedModel('a', [{ marbles: '-x-#', values: { x: d('One two') }, error: new HttpError(503) }]);
      const b = scriptedModel('b', [{ marbles: '-x-#', values: { x: d(' three four') }, error: new HttpError(503) }]);
      const c = scriptedModel('c', [[d(' five.'), finish()]]);
      const { log } = runToEnd({ model: fallbackModel([a, b, c], { midStream: 'continue' }), messages: ask('count') });
      expect(shown(log)).to.equal('One two three four five.');
      expect(c.requests[0]!.messages.slice(-2)[0]).to.deep.equal({ role: 'assistant', content: 'One two three four' });
    });

    it('an open breaker skips its provider without a call; the run says so (rejected), then falls back', () => {
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('one'), answer('two')]);
      const logs: Recording<AgentEvent>[] = [];
      virtual((ts) => {
        const model = fallbackModel([gpt, claude], { breakers });
        logs.push(record(runAgent({ model, messages: ask('1') })));
        asyncScheduler.schedule(() => logs.push(record(runAgent({ model, messages: ask('2') }))), 1000);
        ts.flush();
      });
      expect(gpt.calls).to.equal(1);
      expect(labels(logs[1]!).slice(0, 2)).to.deep.equal(['circuit:model:gpt:rejected', 'fallback:model:gpt>model:claude']);
      expect(logLines(logs[1]!)[0]).to.equal('WARN rxheal: call rejected by open circuit model=gpt retry_after_ms=59001'); // opened at 1 ms
      expect(logLines(logs[1]!)[1]).to.equal('WARN rxheal: fallback activated from=model:gpt to=model:claude reason=circuit_open mid_stream=false');
    });

    it("perModel: each model retried (500, 1 000 ms) before the chain falls back; every event in the run's stream", () => {
      const gpt = scriptedModel('gpt', Array(3).fill({ marbles: '-#', error: new HttpError(503) }));
      const claude = scriptedModel('claude', [answer('Fine.')]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
      const model = fallbackModel([gpt, claude], {
        breakers,
        perModel: (id, stream$) => stream$.pipe(retryWithBackoff({ maxRetries: 2, jitter: 'none' }), circuitBreak(breakers.get(`model:${id}`))),
      });
      const { log } = runToEnd({ model, messages: ask('q') });
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 1 + 500 + 1 + 1000 + 1 });
      expect(ofType(log, 'retry').map(([at, e]) => [at, e.target, e.delayMs])).to.deep.equal([
        [1, 'model:gpt', 500],
        [502, 'model:gpt', 1000],
      ]);
      expect(
        inOrder(labels(log), ['retry:model:gpt#1', 'retry:model:gpt#2', 'circuit:model:gpt:closed>open', 'fallback:model:gpt>model:claude']),
        JSON.stringify(labels(log)),
      ).to.equal(true);
    });
  });

  describe('graceful degradation: a capability marked unavailable, the model told, then restored', () => {
    const suffixOf = (messages: readonly Message[]): string => String(messages.find((m) => m.role === 'system')?.content ?? '');

    it('the knowledge search takes 6 s: degraded at 3 s, the run goes on, the next prompt says it is unavailable; a later fast search restores it', () => {
      const capabilities = new CapabilityRegistry();
      const search = scriptedTool(
        'knowledge_search',
        [
          { marbles: '6000ms (r|)', values: { r: ['doc'] } },
          { marbles: '10ms (r|)', values: { r: ['refund: 30 days'] } },
        ],
        { idempotent: true },
      );
      const model = scriptedModel('m', [
        [toolCall('c1', 'knowledge_search', { query: 'refund' }), finish('tool-calls')],
        answer('Knowledge base search is temporarily unavailable; usually refunds take 30 days.'),
        [toolCall('c2', 'knowledge_search', { query: 'refund' }), finish('tool-calls')],
        answer('Refunds: 30 days.'),
      ]);
      const config = {
        model,
        tools: [search],
        capabilities,
        instruction: 'You are a helpful assistant.',
        toolPipeline: (call: { name: string }, call$: Observable<unknown>) =>
          call$.pipe(degradeAfter(3000, 'unavailable', { capability: call.name, capabilities })),
      };
      const first = runToEnd({ ...config, messages: ask('refund policy?') });
      expect(first.log.end()).to.deep.equal({ kind: 'complete', at: 3000 });
      expect(labels(first.log)).to.include('degraded:knowledge_search');
      expect(logLines(first.log)).to.include('WARN rxheal: capability degraded capability=knowledge_search reason="no result within 3000 ms"');
      expect(suffixOf(model.requests[0]!.messages)).to.equal('You are a helpful assistant.');
      const told = suffixOf(model.requests[1]!.messages);
      expect(told).to.contain('knowledge_search');
      expect(told).to.contain('unavailable');
      expect(capabilities.isAvailable('knowledge_search')).to.equal(false);
      expect(first.pending).to.equal(0);

      const second = runToEnd({ ...config, messages: ask('refund policy, again?') });
      expect(second.log.completed()).to.equal(true);
      expect(labels(second.log)).to.include('restored:knowledge_search');
      expect(logLines(second.log)).to.include('INFO rxheal: capability restored capability=knowledge_search');
      expect(suffixOf(model.requests[2]!.messages)).to.contain('knowledge_search'); // still degraded when this turn was asked
      expect(suffixOf(model.requests[3]!.messages)).to.equal('You are a helpful assistant.');
      expect(capabilities.isAvailable('knowledge_search')).to.equal(true);
      const summary = summarizeEvents([...first.log.events]);
      expect(summary.capabilities['knowledge_search']).to.deep.include({ degraded: 1 });
    });

    it("timeout-based degradation (the article's get_enriched_context): no RAG result within 3 s → proceed with null, never block", () => {
      virtual((ts) => {
        const slow = scriptedTool('rag', [{ marbles: '5000ms (r|)', values: { r: 'docs' } }]);
        const log = record(defer(() => slow.execute(undefined, { signal: new AbortController().signal }) as Observable<string>).pipe(degradeAfter(3000, null)));
        ts.flush();
        expect(log.events).to.deep.equal([[3000, null]]);
        expect(log.end()).to.deep.equal({ kind: 'complete', at: 3000 });
        expect(pendingActions(ts)).to.equal(0);
      });
    });

    it('a model stream that stalls after its first tokens: the idle deadline ends it, and the fallback answers', () => {
      const d = (text: string): TurnEvent => ({ type: 'text-delta', text });
      const gpt = scriptedModel('gpt', [{ marbles: '-a-b', values: { a: d('The'), b: d(' answer') } }]); // never ends
      const claude = scriptedModel('claude', [answer('The answer is 42.')]);
      const stalled = new Error('stalled');
      const { log, pending } = runToEnd({
        model: fallbackModel([gpt, claude], {
          perModel: (_id, s$) =>
            s$.pipe(degradeAfter({ firstMs: 8000, idleMs: 4000 }, () => throwError(() => Object.assign(stalled, { name: 'TimeoutError' })))),
        }),
        messages: ask('q'),
      });
      expect(log.completed()).to.equal(true);
      expect(ofType(log, 'fallback')[0]).to.deep.equal([4003, { type: 'fallback', from: 'model:gpt', to: 'model:claude', reason: 'timeout', midStream: true }]);
      expect(shown(log)).to.equal('The answer is 42.');
      expect(gpt.cancelled).to.equal(1);
      expect(pending).to.equal(0);
    });
  });

  describe('total timeouts', () => {
    it('an attempt in flight at the budget is cancelled exactly then: TotalTimeoutError, elapsed = budget', () => {
      virtual((ts) => {
        const gpt = scriptedModel('gpt', [
          { marbles: '100ms #', error: new HttpError(503) },
          { marbles: '20000ms (f|)', values: { f: finish() } },
        ]);
        const log = record(
          runAgent({
            model: gpt,
            messages: ask('q'),
            modelPipeline: (_r, turn$) => turn$.pipe(retryWithBackoff({ totalTimeoutMs: 10_000, jitter: 'none' })),
          }),
        );
        ts.flush();
        const error = log.error() as TotalTimeoutError;
        expect(error).to.be.instanceOf(TotalTimeoutError);
        expect([error.timeoutMs, error.elapsedMs]).to.deep.equal([10_000, 10_000]);
        expect(log.end()?.at).to.equal(10_000);
        expect(gpt.cancelled).to.equal(1);
        expect((error.cause as HttpError).status).to.equal(503);
        expect(pendingActions(ts)).to.equal(0);
      });
    });

    it('a wait that would overrun the budget gives up at once (early), so the fallback starts sooner', () => {
      const gpt = scriptedModel('gpt', Array(4).fill({ marbles: '1000ms #', error: new HttpError(503) }));
      const claude = scriptedModel('claude', [answer('ok')]);
      const { log } = runToEnd({
        model: fallbackModel([gpt, claude], { perModel: (_id, s$) => s$.pipe(retryWithBackoff({ totalTimeoutMs: 3000, jitter: 'none' })) }),
        messages: ask('q'),
      });
      // attempt 1 fails at 1000, waits 500; attempt 2 fails at 2500: a 1000 ms wait would end at 3500 ≥ 3000 → give up at 2500
      // (the reason is the classification of the TotalTimeoutError, which names its cause: the 503)
      expect(ofType(log, 'fallback')[0]).to.deep.equal([
        2500,
        { type: 'fallback', from: 'model:gpt', to: 'model:claude', reason: 'service_unavailable', midStream: false },
      ]);
      expect(gpt.calls).to.equal(2);
      expect(log.completed()).to.equal(true);
    });
  });

  describe('self-correction loops (output validators), bounded', () => {
    const approved = ['docs.example.com', 'api.example.com', 'example.com'];
    const noUnapprovedUrls = (answer: string): string | undefined => {
      const bad = (answer.match(/https?:\/\/[\w.-]+/g) ?? []).filter((u) => !approved.some((d) => u.endsWith(`//${d}`)));
      return bad.length ? `Response contains unapproved URLs: ${bad.join(', ')}` : undefined;
    };

    it('an answer with an unapproved URL is sent back with the problem; the corrected answer ends the run', () => {
      const model = scriptedModel('m', [answer('See https://evil.test for details.'), answer('See https://docs.example.com for details.')]);
      const { log } = runToEnd({ model, messages: ask('where?'), output: validateOutput([noUnapprovedUrls]) });
      expect(inOrder(labels(log), ['validation:invalid', 'reset:correction', 'validation:valid']), JSON.stringify(labels(log))).to.equal(true);
      expect(String(model.requests[1]!.messages.at(-1)!.content)).to.contain('Response contains unapproved URLs: https://evil.test');
      expect(shown(log)).to.equal('See https://docs.example.com for details.');
      expect(summarizeEvents(log.events).validations).to.deep.include({ checks: 2, invalid: 1, corrected: 1, successRate: 1 });
    });

    it('max_corrections = 3: after three re-asks the last answer is returned even if not perfect (marked unvalidated)', () => {
      const bad = answer('DROP TABLE users;');
      const model = scriptedModel('m', [bad, bad, bad, bad, answer('never asked')]);
      const noDangerousSql = (a: string): string | undefined => (/DROP|DELETE|TRUNCATE/.test(a.toUpperCase()) ? 'Response contains dangerous SQL' : undefined);
      const { log } = runToEnd({ model, messages: ask('sql?'), output: validateOutput([noDangerousSql], { maxCorrections: 3 }) });
      expect(model.calls).to.equal(4);
      expect(log.completed()).to.equal(true);
      const last = log.events
        .map(([, e]) => e)
        .filter((e) => e.type === 'message')
        .at(-1);
      expect(last).to.deep.equal({ type: 'message', message: { role: 'assistant', content: 'DROP TABLE users;', validated: false } });
    });
  });

  describe("error classification: retryable vs fatal (the article's table, the Ruby module's defaults)", () => {
    it('429/500/502/503/504 retryable (exponential backoff); 400/401/403/404/422 fatal; timeouts and connection errors retryable; unknown fail fast', () => {
      const retryable = { 429: 'rate_limit', 500: 'server_error', 502: 'bad_gateway', 503: 'service_unavailable', 504: 'gateway_timeout' } as const;
      const fatal = { 400: 'bad_request', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 422: 'validation_error' } as const;
      for (const [status, category] of Object.entries(retryable)) {
        expect(classifyError(new HttpError(Number(status))), status).to.deep.include({ retryable: true, category, strategy: 'exponential_backoff' });
      }
      for (const [status, category] of Object.entries(fatal)) {
        expect(classifyError(new HttpError(Number(status))), status).to.deep.include({ retryable: false, category, strategy: 'fail_fast' });
      }
      const timeout = Object.assign(new Error('timed out'), { name: 'TimeoutError' });
      expect(classifyError(timeout)).to.deep.include({ retryable: true, category: 'timeout', strategy: 'retry_with_longer_timeout' });
      expect(classifyError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).to.deep.include({
        retryable: true,
        category: 'connection',
        strategy: 'exponential_backoff',
      });
      expect(classifyError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).to.deep.include({ retryable: true, category: 'connection' });
      expect(classifyError(new TypeError('x is not a function'))).to.deep.include({ retryable: false, fallback: false, category: 'programming' });
      expect(classifyError(new Error('something odd'))).to.deep.include({ retryable: false, category: 'unknown' });
    });

    it('retryable by message (the Ruby module\'s patterns): "rate limit", "timeout", "overloaded", "connection reset" in a plain Error', () => {
      for (const message of ['Rate limit reached for gpt-4o', 'Request timed out', 'Overloaded', 'socket hang up', 'connection reset by peer']) {
        expect(classifyError(new Error(message)).retryable, message).to.equal(true);
      }
    });
  });

  describe("monitoring self-healing (the article's metrics)", () => {
    it('breaker open time, retry rate per provider and error type, fallback frequency, self-correction rate, degraded time — from one run', () => {
      const gpt = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(429) },
        { marbles: '-#', error: new HttpError(503) },
      ]);
      const claude = scriptedModel('claude', [answer('ok')]);
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1, resetTimeoutMs: 60_000 });
      const model = fallbackModel([gpt, claude], { breakers, perModel: (_id, s$) => s$.pipe(retryWithBackoff({ maxRetries: 1, jitter: 'none' })) });
      const { log } = runToEnd({ model, messages: ask('q') });
      const s = summarizeEvents(log.events);
      expect(s.retries).to.deep.include({ total: 1 });
      expect(s.retries.byCategory).to.deep.equal({ rate_limit: 1 });
      expect(s.fallbacks).to.deep.include({ total: 1, perModelCall: 1 });
      expect(s.fallbacks.byReason).to.deep.equal({ service_unavailable: 1 });
      expect(s.circuits['model:gpt']).to.deep.include({ state: 'open', opened: 1 });
      expect(s.targets['model:gpt']).to.deep.include({ retries: 1 });
    });
  });

  describe("more of the plugin's rules, at agent level", () => {
    it('a tool returning its result as a plain string: the model gets the whole string, not its last character', () => {
      const weather = defineTool({
        name: 'get_weather',
        description: 'w',
        args: t.type({ city: t.string }),
        idempotent: true,
        execute: ({ city }) => `Sunny in ${city}`,
      });
      const model = scriptedModel('m', [[toolCall('c1', 'get_weather', { city: 'Paris' }), finish('tool-calls')], answer('Sunny.')]);
      const { log } = runToEnd({ model, tools: [weather], messages: ask('w?') });
      expect(ofType(log, 'tool-result')[0]![1].result).to.equal('Sunny in Paris');
      expect(model.requests[1]!.messages.at(-1)).to.deep.include({ role: 'tool', content: 'Sunny in Paris' });
    });

    it("a 429 with retry-after: 2 waits the server's 2 000 ms instead of 500", () => {
      const api = scriptedTool('api', [{ error: new HttpError(429, { 'retry-after': '2' }) }, { result: 'ok' }], { idempotent: true });
      const model = scriptedModel('m', [[toolCall('c1', 'api', {}), finish('tool-calls')], answer('done')]);
      const { log } = runToEnd({
        model,
        tools: [api],
        messages: ask('q'),
        toolPipeline: (call, call$, { hub }) => call$.pipe(retryWithBackoff({ jitter: 'none', hub, target: `tool:${call.name}` })),
      });
      expect(ofType(log, 'retry').map(([, e]) => [e.delayMs, e.category])).to.deep.equal([[2000, 'rate_limit']]);
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 2000 });
    });

    it('breaker inside the retry loop (each attempt counts): once it opens, no further retry is made', () => {
      virtual((ts) => {
        const breaker = new CircuitBreaker({ name: 'tool:broken_api', failureThreshold: 5, resetTimeoutMs: 60_000 });
        let calls = 0;
        const log = record(
          defer(() => (calls++, throwError(() => new HttpError(503)))).pipe(circuitBreak(breaker), retryWithBackoff({ maxRetries: 10, jitter: 'none' })),
        );
        ts.flush();
        expect(calls).to.equal(5);
        expect(log.error()).to.be.instanceOf(CircuitOpenError);
        expect(log.end()?.at).to.equal(500 + 1000 + 2000 + 4000 + 8000);
      });
    });

    it('the model calls a tool that does not exist: it is told which tools exist (a reflection), and corrects itself', () => {
      const weather = scriptedTool('get_weather', [{ result: { temperature: 22 } }]);
      const model = scriptedModel('m', [
        [toolCall('c1', 'weather_lookup', { city: 'NYC' }), finish('tool-calls')],
        [toolCall('c2', 'get_weather', { city: 'NYC' }), finish('tool-calls')],
        answer('22.'),
      ]);
      const { log } = runToEnd({ model, tools: [weather], messages: ask('w?'), toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) });
      expect(log.completed()).to.equal(true);
      expect(String(model.requests[1]!.messages.at(-1)!.content)).to.contain("'get_weather'");
      expect(labels(log)).to.include('reflection:weather_lookup#1/3');
    });

    it('parallel tool calls: one fails and is reflected on, the other succeeds; both messages, in call order', () => {
      const weather = scriptedTool('get_weather', [{ marbles: '30ms (r|)', values: { r: { temperature: 22 } } }]);
      const search = scriptedTool('search', [{ error: new Error('bad query') }]);
      const model = scriptedModel('m', [[toolCall('c1', 'get_weather', {}), toolCall('c2', 'search', {}), finish('tool-calls')], answer('ok')]);
      const { log } = runToEnd({ model, tools: [weather, search], messages: ask('q'), toolPipeline: (_c, call$) => call$.pipe(reflectOnError()) });
      const toolMessages = model.requests[1]!.messages.filter((m) => m.role === 'tool');
      expect(toolMessages.map((m) => [m.toolCallId, m.isError === true])).to.deep.equal([
        ['c1', false],
        ['c2', true],
      ]);
      expect(log.end()).to.deep.equal({ kind: 'complete', at: 30 });
    });

    it("'continue' when the fallback starts over from the beginning: the repeat is trimmed, every word once", () => {
      const d = (text: string): TurnEvent => ({ type: 'text-delta', text });
      const gpt = scriptedModel('gpt', [{ marbles: '-a-b-#', values: { a: d('Rivers run'), b: d(' to the') }, error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [[...textDeltas('Rivers run to the sea.'), finish()]]);
      const { log } = runToEnd({ model: fallbackModel([gpt, claude], { midStream: 'continue' }), messages: ask('story') });
      expect(shown(log)).to.equal('Rivers run to the sea.');
    });
  });

  describe('models in the model pipeline and models that wrap models count and report into the run', () => {
    it("fallbackTo(claude, { request, context }) in modelPipeline: the run counts claude's call, hears the fallback, restarts cleanly", () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-a-#', values: { a: { type: 'text-delta', text: 'Half' } }, error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('Whole answer.')]);
      const { log } = runToEnd({
        model: gpt,
        messages: ask('q'),
        budget: { maxModelCalls: 2 },
        modelPipeline: (request, turn$, context) =>
          turn$.pipe(
            fallbackTo<TurnEvent>(claude, {
              request,
              context,
              midStream: 'restart',
              onRestart: (): TurnEvent => ({ type: 'reset', reason: 'fallback', target: 'model:claude' }),
            }),
          ),
      });
      expect(log.completed()).to.equal(true);
      expect(shown(log)).to.equal('Whole answer.');
      expect(labels(log)).to.include('fallback:primary>model:claude');
      // both provider attempts are model calls of the run, each traced (a span each with rxheal/otel)
      expect(log.events.map(([, e]) => describeEvent(e)).filter((l) => l.startsWith('call-'))).to.deep.equal([
        'call-start:model:gpt',
        'call-end:model:gpt:error',
        'call-start:model:claude',
        'call-end:model:claude:success',
      ]);
      expect(ofType(log, 'call-start').map(([, e]) => e.id)).to.deep.equal(['step-1.1', 'step-1.2']);
      const over = runToEnd({
        model: scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]),
        messages: ask('q'),
        budget: { maxModelCalls: 1 },
        modelPipeline: (request, turn$, context) => turn$.pipe(fallbackTo<TurnEvent>(scriptedModel('claude', [answer('x')]), { request, context })),
      });
      expect((over.log.error() as BudgetExceededError).resource).to.equal('modelCalls');
    });

    it("a hand-written model wrapping another (the README's patientGpt): its inner retries count against the run's budget and report to its hub", () => {
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }, { marbles: '-#', error: new HttpError(503) }, answer('Hi.')]);
      const patientGpt: Model = {
        id: 'patient-gpt',
        stream: (request, context) =>
          streamModel(gpt, request, context).pipe(retryWithBackoff({ hub: context.hub, target: 'model:gpt', scheduler: context.scheduler, jitter: 'none' })),
      };
      const ok = runToEnd({ model: patientGpt, messages: ask('hi'), budget: { maxModelCalls: 3 } });
      expect(ok.log.completed()).to.equal(true);
      expect(labels(ok.log).filter((l) => l.startsWith('retry'))).to.deep.equal(['retry:model:gpt#1', 'retry:model:gpt#2', 'retry-succeeded:model:gpt#3']);
      const gpt2 = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }, { marbles: '-#', error: new HttpError(503) }, answer('Hi.')]);
      const patient2: Model = {
        id: 'p2',
        stream: (request, context) => streamModel(gpt2, request, context).pipe(retryWithBackoff({ scheduler: context.scheduler, jitter: 'none' })),
      };
      const over = runToEnd({ model: patient2, messages: ask('hi'), budget: { maxModelCalls: 2 } });
      expect((over.log.error() as BudgetExceededError).used).to.equal(3);
      expect(gpt2.calls).to.equal(2);
    });

    it('a model skipped because its breaker is open is not counted: maxModelCalls 1 suffices when only the secondary is called', () => {
      const breakers = new CircuitBreakerRegistry({ failureThreshold: 1 });
      const gpt = scriptedModel('gpt', [{ marbles: '-#', error: new HttpError(503) }]);
      const claude = scriptedModel('claude', [answer('one'), answer('two')]);
      const model = fallbackModel([gpt, claude], { breakers });
      const logs: Recording<AgentEvent>[] = [];
      virtual((ts) => {
        logs.push(record(runAgent({ model, messages: ask('1') })));
        asyncScheduler.schedule(() => logs.push(record(runAgent({ model, messages: ask('2'), budget: { maxModelCalls: 1 } }))), 100);
        ts.flush();
      });
      expect(logs[1]!.completed()).to.equal(true);
      expect(gpt.calls).to.equal(1);
    });
  });

  describe('what the README promises a new user (porting, testing helpers, tracing)', () => {
    it('coming from retry(3): retryOn all retries a plain Error with backoff; the exact port matches RxJS retry(3) marble for marble but for the give-up error', () => {
      const ts = new TestScheduler((actual, expected) => {
        expect(actual).to.deep.equal(expected);
      });
      ts.run(({ cold, expectObservable, expectSubscriptions }) => {
        const boom = new Error('plain');
        const source = cold('-a-#', { a: 1 }, boom);
        // the same values, times and subscriptions as retry(3); the give-up error is RetriesExhaustedError (cause: the last error)
        expectObservable(source.pipe(retryWithBackoff({ retryOn: 'all', maxRetries: 3, initialBackoffMs: 0, jitter: 'none', afterEmit: 'resubscribe' }))).toBe(
          '-a--a--a--a-#',
          { a: 1 },
          new RetriesExhaustedError(4, Array(4).fill(boom)),
        );
        expectSubscriptions(source.subscriptions).toBe(['^--!', '---^--!', '------^--!', '---------^--!']);
        const plain = cold('--#', undefined, boom);
        // retryOn all, defaults: 500 → 1 000 → 2 000 (jitter none), then RetriesExhaustedError
        expectObservable(plain.pipe(retryWithBackoff({ retryOn: 'all', jitter: 'none' }))).toBe(
          '3508ms #',
          undefined,
          new RetriesExhaustedError(4, Array(4).fill(boom)),
        );
        // without retryOn, a plain Error is not retried: it passes through at once
        expectObservable(plain.pipe(retryWithBackoff({ jitter: 'none' }))).toBe('--#', undefined, boom);
      });
    });

    it('record(): events with their virtual times, and how and when the run ended; pendingAt(): no timer left behind', () => {
      const ts = new TestScheduler((actual, expected) => {
        expect(actual).to.deep.equal(expected);
      });
      ts.run(({ expectObservable }) => {
        const gpt = scriptedModel('gpt', [
          { marbles: '-#', error: new HttpError(503) },
          { marbles: '-#', error: new HttpError(503) },
        ]);
        const log = record(
          runAgent({ model: gpt, messages: ask('q'), modelPipeline: (_r, turn$) => turn$.pipe(retryWithBackoff({ maxRetries: 1, jitter: 'none' })) }),
        );
        expectObservable(pendingAt(ts, 600)).toBe('600ms (n|)', { n: 0 });
        ts.flush();
        expect(log.end()).to.deep.include({ kind: 'error', at: 502 });
        expect(log.error()).to.be.instanceOf(RetriesExhaustedError);
        expect(log.completed()).to.equal(false);
      });
    });

    it("OpenTelemetry: one child span per provider attempt (retries and the fallback) under the run's model-call span", () => {
      const exporter = new InMemorySpanExporter();
      const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('scenario');
      const gpt = scriptedModel('gpt', [
        { marbles: '-#', error: new HttpError(503) },
        { marbles: '-a-#', values: { a: { type: 'text-delta', text: 'Hi' } }, error: new HttpError(502) },
      ]);
      const claude = scriptedModel('claude', [[...textDeltas('Hello there.'), finish('stop', { inputTokens: 10, outputTokens: 3 })]]);
      const model = fallbackModel([gpt, claude], { perModel: (_id, s$) => s$.pipe(retryWithBackoff({ maxRetries: 1, jitter: 'none' })) });
      virtual((ts) => {
        const run$ = runAgent({ model, messages: ask('hi') }).pipe(share());
        instrument(run$, { tracer });
        record(run$);
        ts.flush();
      });
      const spans = exporter.getFinishedSpans();
      const call = spans.find((sp) => sp.attributes['rxheal.call.id'] === 'step-1.1')!;
      expect(call.name).to.equal('chat fallback(gpt, claude)');
      const children = spans.filter((sp) => sp.parentSpanContext?.spanId === call.spanContext().spanId);
      expect(children.map((sp) => [sp.name, sp.attributes['rxheal.call.id'], sp.attributes['rxheal.call.outcome']])).to.deep.equal([
        ['chat gpt', 'step-1.1/1', 'error'],
        ['chat gpt', 'step-1.1/2', 'error'],
        ['chat claude', 'step-1.1/3', 'success'],
      ]);
      expect(children.every((sp) => sp.spanContext().traceId === call.spanContext().traceId)).to.equal(true);
      expect(spans).to.have.length(4);
    });
  });
});
