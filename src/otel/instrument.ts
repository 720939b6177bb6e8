/**
 * `instrument()`: the resilience events of a run or a hub as OpenTelemetry spans and metrics, in
 * the GenAI conventions chosen (see `options.ts`).
 *
 * @module
 */
import { context, metrics, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type HrTime, type Span } from '@opentelemetry/api';
import { asyncScheduler, type Observable, type Subscription } from 'rxjs';
import type { AgentEvent, CallEndEvent, CallStartEvent, HealEvent } from '../core/events/events.js';
import { after } from '../core/rx/wait.js';
import { validateOptions } from '../core/errors/options.js';
import { count, genAiInstrumentsOf, instrumentsOf, recordTokens, usageAttributes } from './metrics.js';
import { hrTime, props, semconvOf, type InstrumentOptions, type McpServerTelemetry } from './options.js';
import { spanEventOf } from './spanEvents.js';

/** One model call or tool execution in flight (or just ended). */
interface Call {
  /** Its span: always under `'legacy'`; under `'latest'` a tool's at once, a provider attempt's when it ends, none for a call made of attempts. */
  span: Span | undefined;
  readonly kind: 'model' | 'tool';
  readonly name: string;
  /** `tool:<name>` / `model:<name>`: what retries, breakers and fallbacks name. */
  readonly target: string;
  readonly id: string;
  readonly step: number;
  /** The run's model call a provider attempt was made under. */
  readonly parentId: string | undefined;
  readonly start: number;
  /** `'latest'`: the logical operation (a step's `chat`) a model call belongs to. */
  readonly op: Operation | undefined;
  /** `'latest'`: provider attempts made under this call (with any, it is not an attempt itself). */
  children: number;
  /** `'latest'`: what made this attempt (`retry`, `fallback`, `resume`), and its number in the operation. */
  reason: string | undefined;
  attempt: number;
  /** `'latest'`: where its current segment starts (a resume starts a new one). */
  segment: number;
}

/** `'latest'`: one logical `chat` operation — a step's model turn, retries and fallbacks included. */
interface Operation {
  readonly span: Span;
  readonly step: number;
  readonly name: string;
  readonly start: number;
  /** Provider attempts started in it. */
  attempts: number;
  /** What the next attempt is for, as the last retry, fallback or hedge said. */
  next: string | undefined;
  /** The run's model call ended: the operation ends at the end of the instant unless a retry or fallback follows. */
  closing: CallEndEvent | undefined;
  /** The last of its run's calls that answered (a hedge's winner ends before its losers are cancelled). */
  answer: CallEndEvent | undefined;
  /** The providers its attempts went to (`''`: one not named in `providers`). */
  readonly providers: Set<string>;
}

const MODEL_ATTEMPT = 'model:';

/**
 * Records the resilience events of a stream — a hub's `events$`, or a run's events (other
 * events are skipped) — as OpenTelemetry spans and metrics, until you unsubscribe or the stream
 * ends. Two sets of names (`semconv`): `'legacy'` (the default) and `'latest'` (opted in).
 *
 * **Spans (`'legacy'`)**, one per model call and per tool execution, from `call-start` / `call-end` (matched
 * by kind, id and start time; times are the events' scheduler times):
 * - `chat <model>` (kind CLIENT): `gen_ai.operation.name: 'chat'`, `gen_ai.request.model`,
 *   `gen_ai.system` (from `providers`), `gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens`.
 *   A provider attempt made inside a run's model call (each model a `fallbackModel` tries:
 *   `call-start` with `parentId`) is a child span of that call's span, with `rxheal.call.parent_id`;
 * - `execute_tool <tool>` (kind INTERNAL): `gen_ai.operation.name: 'execute_tool'`,
 *   `gen_ai.tool.name`, `gen_ai.tool.call.id`;
 * - both: `rxheal.call.id`, `rxheal.step`, `rxheal.call.outcome` (`success`, `error`,
 *   `cancelled`); on error `error.type` (the error category) and status ERROR with the error text.
 *
 * **Spans (`'latest'`)**: one `invoke_agent [agentName]` span (INTERNAL, `gen_ai.agent.name`) for the
 * stream — subscribe to one run's events — from subscription to its end (status ERROR, `error.type`
 * the error's name, if it errors); under it, one logical `chat <model>` span (CLIENT) per step's model turn, covering
 * its retries and fallbacks (`gen_ai.provider.name` from `providers`, else the one provider all its
 * attempts went to), and one child `chat <model>` span per provider attempt in it, with
 * `gen_ai.provider.name`, its usage (`gen_ai.usage.*`, cache and reasoning counts when reported),
 * `error.type`, `rxheal.attempt.number` and, past the first, `rxheal.attempt.reason`: `retry`,
 * `fallback`, `hedge` (a hedge's attempt: the call it makes when that is traced — a run's turn hedged —, else a
 * span made from its `hedge` events) or `resume` (a resumed stream:
 * the cut connection's span ends, `error.type` `dropped` / `stalled`, where the resumed one starts);
 * `execute_tool <tool>` spans under the run, `error.type: 'tool_error'` for an `isError` result,
 * and for an MCP server's tools (`mcp`) `mcp.method.name: 'tools/call'`, `mcp.protocol.version`,
 * `mcp.session.id`.
 *
 * **Span events** — `rxheal.retry`, `rxheal.retry.succeeded`, `rxheal.retry.withheld`, `rxheal.reflection`,
 * `rxheal.fallback`, `rxheal.circuit.transition`, `rxheal.circuit.rejected`, `rxheal.degraded`,
 * `rxheal.restored`, `rxheal.hedge`, `rxheal.bulkhead`, `rxheal.resume`, `rxheal.pool` — go on the span of the call they are about:
 * 1. the call named by the event — retries and breakers by target (`tool:<name>`,
 *    `model:<name>`), hedges and resumes by target, bulkheads by name, fallbacks by `from`, reflections by
 *    tool call id — open, or the one that just ended;
 * 2. otherwise, for model targets, the innermost open model call (the one open, or the provider
 *    attempt open under the run's call), or the model call that just ended;
 * 3. `degraded` / `restored`: the call that just ended (`degradeAfter` ends the call, then reports).
 *
 * (`'latest'`: a provider attempt still open has no span yet: its events go on its operation's.)
 * Otherwise the event is only counted. "Just ended": operators report right after the call they
 * heal ends, in the same instant; so a span is ended (at its `call-end` time) when the next call
 * starts or ends, at the end of the instant (a 0 ms action on `scheduler`), or when this
 * subscription ends. A retry is therefore recorded on the failed attempt it retries.
 *
 * **Metrics** (attributes in brackets): counters `rxheal.retries` [`rxheal.target`,
 * `error.type`], `rxheal.retries.withheld` [`rxheal.target`, `error.type`,
 * `rxheal.retry.withheld_reason`], `rxheal.circuit.transitions` [`rxheal.breaker`, `rxheal.circuit.from`,
 * `rxheal.circuit.to`], `rxheal.circuit.rejections` [`rxheal.breaker`], `rxheal.fallbacks`
 * [`rxheal.fallback.from`, `rxheal.fallback.to`, `rxheal.fallback.reason`],
 * `rxheal.reflections` [`gen_ai.tool.name`, `rxheal.reflection.exhausted`],
 * `rxheal.degradations` [`rxheal.capability`], `rxheal.budget.exceeded`
 * [`rxheal.budget.resource`], `rxheal.hedges` [`rxheal.target`, `rxheal.hedge.kind`],
 * `rxheal.bulkhead.calls` [`rxheal.bulkhead`, `rxheal.bulkhead.kind`, `rxheal.bulkhead.reason`],
 * `rxheal.resumes` [`rxheal.target`, `rxheal.resume.reason`];
 * histogram `rxheal.retry.backoff` (ms) [`rxheal.target`, `error.type`]. `'latest'` adds the
 * conventions' histograms `gen_ai.client.operation.duration` (s, per logical `chat`) and
 * `gen_ai.client.token.usage` (per provider attempt) [`gen_ai.operation.name`,
 * `gen_ai.request.model`, `gen_ai.provider.name`, `error.type` / `gen_ai.token.type`, and
 * `rxheal.token.cache` (`none`, `read`, `creation`) on input points when cache counts were
 * reported]. Observed latency's quantiles are gauges of their own: {@link instrumentLatency}.
 *
 * Pass a hot stream: a cold one (`runAgent(…)`) would be started by this subscription.
 *
 * @example
 * ```ts
 * import { instrument } from 'rxheal/otel';
 * const hub = new HealHub();
 * const telemetry = instrument(hub.events$); // global tracer and meter
 * runAgent({ model, tools, messages, hub, toolPipeline }).subscribe(render);
 * // at shutdown: telemetry.unsubscribe();
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function instrument(events$: Observable<AgentEvent>, options?: InstrumentOptions): Subscription {
  const o = validateOptions('instrument', props, options);
  const latest = semconvOf(o.semconv) === 'latest';
  const tracer = o.tracer ?? trace.getTracer('rxheal');
  const meter = o.meter ?? metrics.getMeter('rxheal');
  const scheduler = o.scheduler ?? asyncScheduler;
  const m = instrumentsOf(meter);
  const g = latest ? genAiInstrumentsOf(meter) : undefined;
  const providers = o.providers ?? {};
  const mcp = o.mcp ?? [];
  const nowHr = (): HrTime => hrTime(scheduler.now());

  /** `'latest'`: the run's span, parent of every other. */
  const run: Span | undefined = latest
    ? tracer.startSpan(
        o.agentName === undefined ? 'invoke_agent' : `invoke_agent ${o.agentName}`,
        {
          kind: SpanKind.INTERNAL,
          startTime: nowHr(),
          attributes: { 'gen_ai.operation.name': 'invoke_agent', ...(o.agentName === undefined ? {} : { 'gen_ai.agent.name': o.agentName }) },
        },
        context.active(),
      )
    : undefined;
  const under = (span: Span | undefined): Context | undefined => (span ? trace.setSpan(context.active(), span) : undefined);

  /** Calls in flight, oldest first. */
  const open: Call[] = [];
  /** The call that ended last, its span not yet ended; `end` is its call-end time. */
  let ended: { call: Call; end: number } | undefined;
  let endOfInstant: Subscription | undefined;
  /** `'latest'`: the logical operation of the step's model turn. */
  let op: Operation | undefined;
  /** The latest time an event carried (or the scheduler's at subscription): the run's span ends no earlier. */
  let latestAt = scheduler.now();
  /** `'latest'`: hedges' attempts in flight, by `<target> <attempt>`. */
  const hedges = new Map<string, Span>();
  /** `'latest'`: the hedge just started, until a traced call claims it or the instant ends. */
  let unclaimed: { key: string; name: string; at: number; op: Operation; timer: Subscription } | undefined;

  const providerOf = (model: string): string | undefined => (Object.prototype.hasOwnProperty.call(providers, model) ? providers[model] : undefined);
  const provider = (model: string): Attributes => {
    const name = providerOf(model);
    return name === undefined ? {} : { [latest ? 'gen_ai.provider.name' : 'gen_ai.system']: name };
  };
  const modelAttributes = (model: string): Attributes => ({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model, ...provider(model) });
  const mcpOf = (tool: string): McpServerTelemetry | undefined =>
    mcp.find((s) => (s.prefix !== undefined && tool.startsWith(s.prefix)) || (s.tools?.includes(tool) ?? false));

  const endOp = (): void => {
    const closing = op?.closing;
    if (!op || !closing) return;
    const span = op.span;
    const attributes = modelAttributes(op.name);
    // a chain not named in `providers` whose attempts all went to one provider: that provider
    const [only] = op.providers;
    if (attributes['gen_ai.provider.name'] === undefined && op.providers.size === 1 && only !== '') {
      attributes['gen_ai.provider.name'] = only;
      span.setAttribute('gen_ai.provider.name', only!);
    }
    span.setAttribute('rxheal.call.outcome', closing.outcome);
    if (closing.usage) span.setAttributes(usageAttributes(closing.usage));
    if (closing.outcome === 'error') {
      attributes['error.type'] = closing.category ?? '_OTHER';
      span.setAttribute('error.type', attributes['error.type']);
      span.setStatus({ code: SpanStatusCode.ERROR, ...(closing.error !== undefined ? { message: closing.error } : {}) });
    }
    g?.duration.record((closing.at - op.start) / 1000, attributes);
    span.end(hrTime(closing.at));
    op = undefined;
  };

  const endPending = (): void => {
    endOfInstant?.unsubscribe();
    endOfInstant = undefined;
    if (ended) ended.call.span?.end(hrTime(ended.end));
    ended = undefined;
    endOp();
  };

  const latestOpen = (match: (call: Call) => boolean): Call | undefined => {
    for (let i = open.length - 1; i >= 0; i--) if (match(open[i]!)) return open[i];
    return undefined;
  };

  /** `'latest'`: the span of one provider attempt (or of a segment of it), from `start`. */
  const attemptSpan = (call: Call, start: number): Span => {
    const attributes: Attributes = {
      ...modelAttributes(call.name),
      'rxheal.call.id': call.id,
      'rxheal.step': call.step,
      'rxheal.attempt.number': call.attempt,
    };
    if (call.parentId !== undefined) attributes['rxheal.call.parent_id'] = call.parentId;
    if (call.reason !== undefined) attributes['rxheal.attempt.reason'] = call.reason;
    return tracer.startSpan(`chat ${call.name}`, { kind: SpanKind.CLIENT, startTime: hrTime(start), attributes }, under(call.op?.span ?? run));
  };

  const startCall = (e: CallStartEvent | CallEndEvent, start: number): Call => {
    const call: Call = {
      span: undefined,
      kind: e.kind,
      name: e.name,
      target: `${e.kind}:${e.name}`,
      id: e.id,
      step: e.step,
      parentId: e.parentId,
      start,
      op: undefined,
      children: 0,
      reason: undefined,
      attempt: 0,
      segment: start,
    };
    // a provider attempt: a child of the run's model call it was made under
    const parent = e.parentId === undefined ? undefined : latestOpen((c) => c.kind === e.kind && c.id === e.parentId);
    if (!latest) {
      const attributes: Attributes =
        e.kind === 'model'
          ? { ...modelAttributes(e.name), 'rxheal.call.id': e.id, 'rxheal.step': e.step }
          : { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': e.name, 'gen_ai.tool.call.id': e.id, 'rxheal.call.id': e.id, 'rxheal.step': e.step };
      if (e.parentId !== undefined) attributes['rxheal.call.parent_id'] = e.parentId;
      call.span = tracer.startSpan(
        `${e.kind === 'model' ? 'chat' : 'execute_tool'} ${e.name}`,
        { kind: e.kind === 'model' ? SpanKind.CLIENT : SpanKind.INTERNAL, startTime: hrTime(start), attributes },
        under(parent?.span),
      );
      return call;
    }
    if (e.kind === 'tool') {
      const attributes: Attributes = {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': e.name,
        'gen_ai.tool.call.id': e.id,
        'rxheal.call.id': e.id,
        'rxheal.step': e.step,
      };
      const server = mcpOf(e.name);
      if (server) {
        attributes['mcp.method.name'] = 'tools/call';
        if (server.protocolVersion !== undefined) attributes['mcp.protocol.version'] = server.protocolVersion;
        if (server.sessionId !== undefined) attributes['mcp.session.id'] = server.sessionId;
      }
      call.span = tracer.startSpan(`execute_tool ${e.name}`, { kind: SpanKind.INTERNAL, startTime: hrTime(start), attributes }, under(run));
      return call;
    }
    let reason: string | undefined;
    if (parent?.op) {
      // the first attempt under a run's call stands for it: that call is made of attempts, not one
      if (parent.children++ === 0) {
        parent.op.attempts--;
        reason = parent.reason;
      }
    } else if (!op || op.step !== e.step) {
      endOp();
      op = {
        span: tracer.startSpan(
          `chat ${e.name}`,
          { kind: SpanKind.CLIENT, startTime: hrTime(start), attributes: { ...modelAttributes(e.name), 'rxheal.call.id': e.id, 'rxheal.step': e.step } },
          under(run),
        ),
        step: e.step,
        name: e.name,
        start,
        attempts: 0,
        next: undefined,
        closing: undefined,
        answer: undefined,
        providers: new Set(),
      };
    }
    const owner = parent?.op ?? op!;
    if (owner.next === 'hedge' && unclaimed?.op === owner) {
      unclaimed.timer.unsubscribe();
      unclaimed = undefined;
    }
    reason ??= owner.next ?? (owner.attempts > 0 ? 'retry' : undefined);
    owner.next = undefined;
    owner.closing = undefined;
    return Object.assign(call, { op: owner, reason, attempt: ++owner.attempts });
  };

  const onCallEnd = (e: CallEndEvent): void => {
    const start = e.at - e.durationMs;
    let i = open.findIndex((c) => c.kind === e.kind && c.id === e.id && c.start === start);
    if (i < 0) i = open.findIndex((c) => c.kind === e.kind && c.id === e.id);
    // a call that started before we subscribed gets its span now
    const call = i < 0 ? startCall(e, start) : open.splice(i, 1)[0]!;
    if (latest && call.kind === 'model' && call.children === 0) {
      call.span = attemptSpan(call, call.segment);
      call.op?.providers.add(providerOf(call.name) ?? '');
      if (e.usage && g) recordTokens(g.tokens, e.usage, modelAttributes(call.name));
    }
    // the run's call ended: the operation ends with it unless another of its calls is open (a hedge's), with the answer if one came
    if (latest && call.kind === 'model' && call.parentId === undefined && op && call.op === op) {
      if (e.outcome === 'success') op.answer = e;
      if (!open.some((c) => c.op === op && c.parentId === undefined)) op.closing = e.outcome !== 'success' && op.answer ? { ...op.answer, at: e.at } : e;
    }
    const span = call.span;
    if (span) {
      span.setAttribute('rxheal.call.outcome', e.outcome);
      if (e.usage)
        span.setAttributes(
          latest ? usageAttributes(e.usage) : { 'gen_ai.usage.input_tokens': e.usage.inputTokens, 'gen_ai.usage.output_tokens': e.usage.outputTokens },
        );
      if (e.outcome === 'error') {
        span.setAttribute('error.type', e.category ?? '_OTHER');
        span.setStatus({ code: SpanStatusCode.ERROR, ...(e.error !== undefined ? { message: e.error } : {}) });
      } else if (latest && e.isError === true) {
        span.setAttribute('error.type', 'tool_error');
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    ended = { call, end: e.at };
    endOfInstant = after(0, scheduler, endPending);
  };

  const spanOf = (call: Call | undefined): Span | undefined => (call ? (call.span ?? call.op?.span) : undefined);
  /** Rule 1: the call named `target` (the one just ended, or open, latest first). */
  const byTarget = (target: string): Span | undefined => (ended?.call.target === target ? spanOf(ended.call) : spanOf(latestOpen((c) => c.target === target)));
  /** Rules 1 and 2 for a target. */
  const spanFor = (target: string): Span | undefined => {
    const own = byTarget(target);
    if (own || !target.startsWith(MODEL_ATTEMPT)) return own;
    const models = open.filter((c) => c.kind === 'model');
    // one call, or one run's call with the provider attempt open under it: the innermost
    if (models.length > 0 && models.every((c, i) => i === 0 || c.parentId === models[i - 1]!.id)) return spanOf(models.at(-1));
    return models.length === 0 && ended?.call.kind === 'model' ? spanOf(ended.call) : undefined;
  };
  /** `'latest'`: a retry or fallback of a model: the next attempt's reason, and the operation goes on. */
  const continues = (target: string, reason: string): void => {
    if (!op || !target.startsWith(MODEL_ATTEMPT)) return;
    op.next = reason;
    op.closing = undefined;
  };

  /** A hedge's attempt no traced call has claimed by the end of its instant: a span of its own, from its `hedge` events. */
  const hedgeSpan = (): void => {
    const h = unclaimed;
    unclaimed = undefined;
    if (!h || h.op !== op) return;
    if (h.op.next === 'hedge') h.op.next = undefined;
    const attributes: Attributes = {
      ...modelAttributes(h.name),
      'rxheal.step': h.op.step,
      'rxheal.attempt.number': ++h.op.attempts,
      'rxheal.attempt.reason': 'hedge',
    };
    h.op.providers.add(providerOf(h.name) ?? '');
    hedges.set(h.key, tracer.startSpan(`chat ${h.name}`, { kind: SpanKind.CLIENT, startTime: hrTime(h.at), attributes }, under(h.op.span)));
  };

  const onHedge = (e: Extract<HealEvent, { type: 'hedge' }>): void => {
    const key = `${e.target} ${e.attempt}`;
    if (e.kind === 'started' && e.attempt > 0 && op && e.target.startsWith(MODEL_ATTEMPT)) {
      // the hedge subscribes its attempt right after: a traced one (a run's turn hedged) is the attempt, reason hedge
      op.next = 'hedge';
      unclaimed?.timer.unsubscribe();
      unclaimed = { key, name: e.target.slice(MODEL_ATTEMPT.length), at: e.at, op, timer: after(0, scheduler, hedgeSpan) };
      return;
    }
    const span = hedges.get(key);
    if (!span || e.kind === 'started') return;
    hedges.delete(key);
    span.setAttribute('rxheal.call.outcome', e.kind === 'won' ? 'success' : e.kind === 'failed' ? 'error' : 'cancelled');
    if (e.kind === 'failed') {
      span.setAttribute('error.type', e.category ?? '_OTHER');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end(hrTime(e.at));
  };

  /** `'latest'`: a resumed stream — the cut connection's span ends, the resumed one is the next attempt. */
  const onResume = (e: Extract<HealEvent, { type: 'resume' }>, attributes: Attributes): boolean => {
    const call = latestOpen((c) => c.target === e.target && c.op !== undefined && c.children === 0);
    if (!call) return false;
    const at = scheduler.now();
    const span = attemptSpan(call, call.segment);
    span.setAttributes({ 'rxheal.call.outcome': 'error', 'error.type': e.reason });
    span.setStatus({ code: SpanStatusCode.ERROR, ...(e.error !== undefined ? { message: e.error } : {}) });
    span.addEvent('rxheal.resume', attributes, hrTime(at));
    span.end(hrTime(at));
    Object.assign(call, { segment: at, reason: 'resume', attempt: ++call.op!.attempts });
    return true;
  };

  const onHeal = (e: HealEvent): void => {
    count(m, e);
    if ('at' in e && typeof e.at === 'number') latestAt = Math.max(latestAt, e.at);
    if (e.type === 'call-start' || e.type === 'call-end') {
      endPending();
      if (e.type === 'call-start') open.push(startCall(e, e.at));
      else onCallEnd(e);
      return;
    }
    const event = spanEventOf(e);
    if (!event) return;
    if (latest && e.type === 'resume' && onResume(e, event.attributes)) return;
    let span: Span | undefined;
    if (e.type === 'reflection') {
      const call = ended?.call.kind === 'tool' && ended.call.id === e.callId ? ended.call : latestOpen((c) => c.kind === 'tool' && c.id === e.callId);
      span = call?.span;
    } else span = event.about === undefined ? spanOf(ended?.call) : spanFor(event.about);
    span?.addEvent(event.name, event.attributes, hrTime(event.at ?? scheduler.now()));
    if (!latest) return;
    if (e.type === 'retry') continues(e.target, 'retry');
    else if (e.type === 'fallback') continues(e.from, 'fallback');
    else if (e.type === 'hedge') onHedge(e);
  };

  let closed = false;
  const closeAll = (error?: unknown): void => {
    if (closed) return;
    closed = true;
    endPending();
    const at = nowHr();
    for (const call of open.splice(0)) {
      if (latest && call.kind === 'model' && call.children === 0) call.span = attemptSpan(call, call.segment);
      call.span?.setAttribute('rxheal.call.outcome', 'unfinished');
      call.span?.end(at);
    }
    if (unclaimed) {
      unclaimed.timer.unsubscribe();
      hedgeSpan();
    }
    for (const span of hedges.values()) {
      span.setAttribute('rxheal.call.outcome', 'unfinished');
      span.end(at);
    }
    hedges.clear();
    op?.span.setAttribute('rxheal.call.outcome', 'unfinished');
    op?.span.end(at);
    op = undefined;
    if (!run) return;
    if (error !== undefined) {
      // the error's class name (the conventions' error.type): rxheal's classifier is not bundled here
      run.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
      run.setStatus({ code: SpanStatusCode.ERROR });
    }
    run.end(hrTime(Math.max(scheduler.now(), latestAt)));
  };

  const subscription = events$.subscribe({
    next: (event) => onHeal(event as HealEvent),
    error: (error: unknown) => closeAll(error ?? '_OTHER'),
    complete: () => closeAll(),
  });
  subscription.add(() => closeAll());
  return subscription;
}
