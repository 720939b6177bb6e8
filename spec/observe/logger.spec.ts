import { expect } from 'chai';
import { of, Subject, toArray } from 'rxjs';
import { InvalidOptionError } from '../../src/core/errors/errors.js';
import type { AgentEvent, HealEvent } from '../../src/core/events/events.js';
import { formatLogLine, logEvents, logRecord, tapLogs, type LoggerLike, type LogLevel } from '../../src/observe/logger.js';
import { runHealingRun } from './healingRun.js';

/** A logger that keeps `[level, ...arguments]` of every call. */
function memoryLogger(levels: readonly LogLevel[] = ['debug', 'info', 'warn', 'error']) {
  const calls: [LogLevel, ...unknown[]][] = [];
  const logger: Partial<Record<LogLevel, (...args: unknown[]) => void>> = {};
  for (const level of levels) logger[level] = (...args: unknown[]) => calls.push([level, ...args]);
  return { logger: logger as unknown as LoggerLike, calls };
}

/** Replaces console's methods while `body` runs; returns what they were called with. */
function withConsole(body: () => void): [string, ...unknown[]][] {
  const calls: [string, ...unknown[]][] = [];
  const methods = ['debug', 'info', 'warn', 'error', 'log'] as const;
  const saved = methods.map((m) => console[m]);
  methods.forEach((m) => (console[m] = (...args: unknown[]) => calls.push([m, ...args])));
  try {
    body();
  } finally {
    methods.forEach((m, i) => (console[m] = saved[i]!));
  }
  return calls;
}

const retry: HealEvent = { type: 'retry', target: 'tool:get_weather', attempt: 1, max: 3, delayMs: 500, category: 'validation_error', error: 'Invalid units' };

describe('logEvents / tapLogs (structured logs)', () => {
  describe('the scripted healing run (retry, breaker, fallback, reflection, degradation)', () => {
    it('logs one line per healing action, in order, in the reference shape', () => {
      const { logger, calls } = memoryLogger();
      const log = runHealingRun((events$) => {
        logEvents(events$, { logger, format: 'text' });
      });
      expect(log.completed()).to.equal(true);
      const retrying = (tool: string, attempt: number, max: number, backoff: number) =>
        `WARN rxheal: tool call failed, retrying tool_name=${tool} attempt=${attempt} max=${max} backoff_ms=${backoff} error="HTTP 503: Service Unavailable" category=service_unavailable`;
      expect(calls).to.deep.equal([
        ['warn', 'WARN rxheal: fallback activated from=model:primary to=model:secondary reason=service_unavailable mid_stream=false'],
        ['info', 'INFO rxheal: reflection injected tool_name=get_weather call_id=c1 attempt=1 max=3'],
        ['warn', retrying('broken_api', 1, 5, 100)],
        ['warn', retrying('broken_api', 2, 5, 100)],
        ['warn', retrying('broken_api', 3, 5, 100)],
        ['warn', retrying('broken_api', 4, 5, 100)],
        ['warn', 'WARN rxheal: circuit breaker opened tool_name=broken_api failures=5 reset_ms=60000 reason=failure_threshold'],
        ['warn', retrying('broken_api', 5, 5, 100)],
        ['warn', 'WARN rxheal: call rejected by open circuit tool_name=broken_api retry_after_ms=59900'],
        ['warn', 'WARN rxheal: capability degraded capability=knowledge-search reason="no result within 3000 ms"'],
        ['warn', retrying('get_weather', 1, 3, 500)],
        ['info', 'INFO rxheal: capability restored capability=knowledge-search'],
        ['info', 'INFO rxheal: retry succeeded tool_name=get_weather attempt=2'],
      ]);
    });

    it("to a pino-compatible logger: logger.warn(fields, 'rxheal: message'), numbers as numbers", () => {
      const { logger, calls } = memoryLogger();
      runHealingRun((events$) => logEvents(events$, { logger }));
      expect(calls).to.have.length(13);
      expect(calls[0]).to.deep.equal([
        'warn',
        { from: 'model:primary', to: 'model:secondary', reason: 'service_unavailable', mid_stream: false },
        'rxheal: fallback activated',
      ]);
      expect(calls[6]).to.deep.include.members(['warn', 'rxheal: circuit breaker opened']);
      expect(calls[6]![1]).to.deep.include({ tool_name: 'broken_api', failures: 5, reason: 'failure_threshold' });
      expect(calls[10]).to.deep.equal([
        'warn',
        { tool_name: 'get_weather', attempt: 1, max: 3, backoff_ms: 500, error: 'HTTP 503: Service Unavailable', category: 'service_unavailable' },
        'rxheal: tool call failed, retrying',
      ]);
      expect(calls[12]).to.deep.equal(['info', { tool_name: 'get_weather', attempt: 2 }, 'rxheal: retry succeeded']);
    });

    it("level 'debug' adds each model call and tool execution (call-start / call-end)", () => {
      const { logger, calls } = memoryLogger();
      runHealingRun((events$) => logEvents(events$, { logger, format: 'text', level: 'debug' }));
      const debug = calls.filter(([level]) => level === 'debug').map(([, line]) => line);
      expect(debug).to.have.length(34); // 17 calls: 3 model calls of the run, 4 provider attempts inside them, 10 tool executions
      expect(debug.slice(0, 6)).to.deep.equal([
        'DEBUG rxheal: model call started model="fallback(primary, secondary)" call_id=step-1.1 step=1',
        'DEBUG rxheal: model call started model=primary call_id=step-1.1/1 parent_id=step-1.1 step=1',
        'DEBUG rxheal: model call failed model=primary call_id=step-1.1/1 parent_id=step-1.1 step=1 duration_ms=10 error="HTTP 503: Service Unavailable" category=service_unavailable status=503',
        'DEBUG rxheal: model call started model=secondary call_id=step-1.1/2 parent_id=step-1.1 step=1',
        'DEBUG rxheal: model call finished model=secondary call_id=step-1.1/2 parent_id=step-1.1 step=1 duration_ms=20 input_tokens=120 output_tokens=30',
        'DEBUG rxheal: model call finished model="fallback(primary, secondary)" call_id=step-1.1 step=1 duration_ms=30 input_tokens=120 output_tokens=30',
      ]);
      expect(debug).to.include(
        'DEBUG rxheal: tool call failed tool_name=get_weather call_id=c1 step=1 duration_ms=0 error="units: expected \\"celsius\\" | \\"fahrenheit\\", got \\"kelvin\\"" category=validation_error',
      );
      expect(debug).to.include('DEBUG rxheal: tool call cancelled tool_name=knowledge_search call_id=c3 step=1 duration_ms=3000');
    });

    it("level 'warn' leaves out the info lines", () => {
      const { logger, calls } = memoryLogger();
      runHealingRun((events$) => logEvents(events$, { logger, format: 'text', level: 'warn' }));
      expect(calls.map(([level]) => level)).to.deep.equal(Array(10).fill('warn'));
    });

    it('is off by default: the run logs nothing to the console unless logEvents is called', () => {
      expect(withConsole(() => runHealingRun())).to.deep.equal([]);
    });
  });

  describe('the reference lines', () => {
    it('console by default, one text line per record, at the record level', () => {
      const calls = withConsole(() =>
        logEvents(
          of<HealEvent[]>(
            retry,
            { type: 'retry-succeeded', target: 'tool:get_weather', attempt: 2 },
            { type: 'circuit', breaker: 'tool:broken_api', kind: 'transition', from: 'closed', to: 'open', reason: 'failure_threshold', failures: 5 },
          ),
        ),
      );
      expect(calls).to.deep.equal([
        [
          'warn',
          'WARN rxheal: tool call failed, retrying tool_name=get_weather attempt=1 max=3 backoff_ms=500 error="Invalid units" category=validation_error',
        ],
        ['info', 'INFO rxheal: retry succeeded tool_name=get_weather attempt=2'],
        ['warn', 'WARN rxheal: circuit breaker opened tool_name=broken_api failures=5 reason=failure_threshold'],
      ]);
      // the reference's lines, with the error category (and the transition's reason) appended
      expect(calls[0]![1]).to.match(/^WARN rxheal: tool call failed, retrying tool_name=get_weather attempt=1 max=3 backoff_ms=500 error="Invalid units"/);
    });

    it('a withheld retry is a warning naming the tool, the reason and the error', () => {
      const withheld: HealEvent = {
        type: 'retry-withheld',
        target: 'tool:send_email',
        reason: 'not_idempotent',
        category: 'service_unavailable',
        error: 'HTTP 503',
      };
      expect(formatLogLine(logRecord(withheld)!)).to.equal(
        'WARN rxheal: retry withheld: tool not idempotent tool_name=send_email reason=not_idempotent category=service_unavailable error="HTTP 503"',
      );
    });

    it('reset_ms comes from the transition event, when it carries the reset timeout (retryAfterMs)', () => {
      const opened = {
        type: 'circuit',
        breaker: 'tool:broken_api',
        kind: 'transition',
        from: 'closed',
        to: 'open',
        reason: 'failure_threshold',
        failures: 5,
        retryAfterMs: 60_000,
      } as HealEvent;
      expect(formatLogLine(logRecord(opened)!)).to.equal(
        'WARN rxheal: circuit breaker opened tool_name=broken_api failures=5 reset_ms=60000 reason=failure_threshold',
      );
    });
  });

  describe('logRecord: every resilience event has a level and a message', () => {
    const cases: [HealEvent, LogLevel, string][] = [
      [retry, 'warn', 'tool call failed, retrying tool_name=get_weather attempt=1 max=3 backoff_ms=500 error="Invalid units" category=validation_error'],
      [
        { type: 'retry', target: 'model:gpt-4o', attempt: 2, max: 3, delayMs: 1000, category: 'rate_limit' },
        'warn',
        'model call failed, retrying model=gpt-4o attempt=2 max=3 backoff_ms=1000 category=rate_limit',
      ],
      [
        { type: 'retry', target: 'source', attempt: 1, max: 3, delayMs: 500, category: 'timeout', error: 'late' },
        'warn',
        'call failed, retrying target=source attempt=1 max=3 backoff_ms=500 error="late" category=timeout',
      ],
      [{ type: 'retry-succeeded', target: 'model:gpt-4o', attempt: 3 }, 'info', 'retry succeeded model=gpt-4o attempt=3'],
      [
        { type: 'circuit', breaker: 'weather-api', kind: 'transition', from: 'open', to: 'half-open', reason: 'reset_timeout', failures: 0 },
        'info',
        'circuit breaker half-open breaker=weather-api reason=reset_timeout',
      ],
      [
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'half-open', to: 'closed', reason: 'probe_success', failures: 0 },
        'info',
        'circuit breaker closed model=primary reason=probe_success',
      ],
      [
        { type: 'circuit', breaker: 'model:primary', kind: 'transition', from: 'half-open', to: 'open', reason: 'probe_failure', failures: 0 },
        'warn',
        'circuit breaker opened model=primary failures=0 from=half-open reason=probe_failure',
      ],
      [
        { type: 'circuit', breaker: 'model:primary', kind: 'rejected', retryAfterMs: 12_000 },
        'warn',
        'call rejected by open circuit model=primary retry_after_ms=12000',
      ],
      [
        { type: 'fallback', from: 'model:primary', to: 'model:secondary', reason: 'connection', midStream: true },
        'warn',
        'fallback activated from=model:primary to=model:secondary reason=connection mid_stream=true',
      ],
      [
        { type: 'reflection', tool: 'get_weather', callId: 'c1', attempt: 4, max: 3, exhausted: true, prompt: '…' },
        'warn',
        'reflections exhausted, tool abandoned tool_name=get_weather call_id=c1 attempt=4 max=3',
      ],
      [
        { type: 'degraded', capability: 'knowledge_search', reason: 'failed (timeout)' },
        'warn',
        'capability degraded capability=knowledge_search reason="failed (timeout)"',
      ],
      [{ type: 'budget-exceeded', resource: 'tokens', limit: 10_000, used: 10_412 }, 'error', 'budget exceeded resource=tokens limit=10000 used=10412'],
      [
        { type: 'budget-exceeded', resource: 'usd', limit: 0.5, used: 0.5012, cut: true, model: 'gpt-5' },
        'error',
        'budget exceeded, call cut resource=usd limit=0.5 used=0.5012 model=gpt-5',
      ],
      [{ type: 'spend', model: 'gpt-5', usd: 0.0125, totalUsd: 0.25, estimated: false }, 'info', 'spend charged model=gpt-5 usd=0.0125 total_usd=0.25'],
      [
        { type: 'spend', model: 'gpt-5', usd: 0.0125, totalUsd: 0.25, estimated: true },
        'info',
        'spend charged model=gpt-5 usd=0.0125 total_usd=0.25 estimated=true',
      ],
      [{ type: 'reset', reason: 'fallback', target: 'model:secondary' }, 'debug', 'partial output discarded reason=fallback model=secondary'],
      [
        { type: 'bulkhead', bulkhead: 'model:gpt', kind: 'queued', active: 8, queued: 3 },
        'info',
        'call queued by bulkhead bulkhead=model:gpt active=8 queued=3',
      ],
      [
        { type: 'bulkhead', bulkhead: 'model:gpt', kind: 'admitted', active: 8, queued: 2, waitMs: 40 },
        'info',
        'call admitted by bulkhead bulkhead=model:gpt active=8 queued=2 wait_ms=40',
      ],
      [
        { type: 'bulkhead', bulkhead: 'tool:search', kind: 'rejected', active: 8, queued: 16, reason: 'full' },
        'warn',
        'call refused by bulkhead bulkhead=tool:search active=8 queued=16 reason=full',
      ],
      [{ type: 'hedge', target: 'model:gpt', kind: 'started', attempt: 1, at: 950, afterMs: 950 }, 'info', 'hedge started model=gpt attempt=1 after_ms=950'],
      [{ type: 'hedge', target: 'model:gpt', kind: 'won', attempt: 1, at: 1200 }, 'info', 'hedge won model=gpt attempt=1'],
      [{ type: 'hedge', target: 'model:gpt', kind: 'cancelled', attempt: 0, at: 1200 }, 'debug', 'hedge cancelled model=gpt attempt=0'],
      [
        { type: 'hedge', target: 'model:claude', kind: 'failed', attempt: 1, at: 1300, category: 'server_error' },
        'warn',
        'hedge failed model=claude attempt=1 category=server_error',
      ],
      [{ type: 'hedge', target: 'model:claude', kind: 'skipped', attempt: 1, at: 950 }, 'info', 'hedge skipped: circuit open model=claude attempt=1'],
      [{ type: 'hedge', target: 'tool:search', kind: 'denied', attempt: 1, at: 950 }, 'info', 'hedge denied: budget spent tool_name=search attempt=1'],
      [
        { type: 'latency', target: 'model:gpt', kind: 'first', count: 100, p50: 410, p95: 950, p99: 1800 },
        'debug',
        'latency observed model=gpt kind=first count=100 p50_ms=410 p95_ms=950 p99_ms=1800',
      ],
      [
        { type: 'resume', target: 'model:gpt', responseId: 'resp_1', startingAfter: 12, attempt: 1, max: 2, reason: 'dropped', error: 'reset' },
        'warn',
        'stream dropped, resuming model=gpt response_id=resp_1 starting_after=12 attempt=1 max=2 error="reset"',
      ],
      [
        { type: 'resume', target: 'model:gpt', responseId: 'resp_1', startingAfter: 30, attempt: 2, max: 2, reason: 'stalled' },
        'warn',
        'stream stalled, resuming model=gpt response_id=resp_1 starting_after=30 attempt=2 max=2',
      ],
      [
        {
          type: 'call-end',
          kind: 'model',
          name: 'gpt-4o',
          id: 'step-1.1',
          step: 1,
          at: 90,
          durationMs: 90,
          outcome: 'error',
          error: 'HTTP 503',
          category: 'service_unavailable',
        },
        'debug',
        'model call failed model=gpt-4o call_id=step-1.1 step=1 duration_ms=90 error="HTTP 503" category=service_unavailable',
      ],
    ];
    for (const [event, level, text] of cases) {
      it(`${event.type} → ${level.toUpperCase()} ${text.slice(0, text.indexOf('=') > 0 ? text.lastIndexOf(' ', text.indexOf('=')) : undefined)}`, () => {
        const record = logRecord(event)!;
        expect(record.level).to.equal(level);
        expect(formatLogLine(record, '')).to.equal(`${level.toUpperCase()} ${text}`);
      });
    }

    it('other events (text, messages, tool results) give no record', () => {
      const others: AgentEvent[] = [
        { type: 'text-delta', text: 'Hi' },
        { type: 'tool-result', id: 'c1', name: 'get_weather', result: {} },
        { type: 'validation', valid: false, attempt: 1, problems: ['x'] },
        { type: 'message', message: { role: 'user', content: 'q' } },
      ];
      expect(others.map(logRecord)).to.deep.equal([undefined, undefined, undefined, undefined]);
    });
  });

  describe('options', () => {
    it('prefix: another name, or none', () => {
      const a = memoryLogger();
      logEvents(of(retry), { logger: a.logger, format: 'text', prefix: 'agent' });
      const b = memoryLogger();
      logEvents(of(retry), { logger: b.logger, prefix: '' });
      expect(String(a.calls[0]![1])).to.match(/^WARN agent: tool call failed, retrying /);
      expect(b.calls[0]![2]).to.equal('tool call failed, retrying');
    });

    it('a logger without debug() drops debug records; without error() error records go to warn()', () => {
      const { logger, calls } = memoryLogger(['info', 'warn']);
      logEvents(of<HealEvent[]>({ type: 'reset', reason: 'retry', target: 'model:m' }, { type: 'budget-exceeded', resource: 'steps', limit: 10, used: 11 }), {
        logger,
        format: 'text',
        level: 'debug',
      });
      expect(calls).to.deep.equal([['warn', 'ERROR rxheal: budget exceeded resource=steps limit=10 used=11']]);
    });

    it('invalid options throw InvalidOptionError at once', () => {
      const bad: unknown[] = [{ logger: { info: () => undefined } }, { level: 'verbose' }, { format: 'json' }, { prefix: 1 }, { colour: true }, 'console'];
      for (const options of bad) {
        expect(() => logEvents(of(retry), options as never), JSON.stringify(options)).to.throw(InvalidOptionError);
        expect(() => tapLogs(options as never), JSON.stringify(options)).to.throw(InvalidOptionError);
      }
      expect(() => logEvents(of(retry), { level: 'verbose' as LogLevel })).to.throw(
        'logEvents: option "level" must be "debug" | "info" | "warn" | "error", got "verbose"',
      );
    });
  });

  it('unsubscribing stops logging', () => {
    const { logger, calls } = memoryLogger();
    const events = new Subject<HealEvent>();
    const subscription = logEvents(events, { logger });
    events.next(retry);
    subscription.unsubscribe();
    events.next(retry);
    expect(calls).to.have.length(1);
  });

  it('tapLogs logs as events pass and passes every event on unchanged', () => {
    const { logger, calls } = memoryLogger();
    const events: AgentEvent[] = [{ type: 'text-delta', text: 'Hi' }, retry, { type: 'finish', reason: 'stop' }];
    let out: AgentEvent[] = [];
    of(...events)
      .pipe(tapLogs({ logger, format: 'text' }), toArray())
      .subscribe((all) => (out = all));
    expect(out).to.deep.equal(events);
    expect(out[1]).to.equal(retry);
    expect(calls).to.have.length(1);
  });
});
