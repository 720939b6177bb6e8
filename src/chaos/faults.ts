/**
 * `faults`: fast-check arbitraries of fault schedules — per model call and per tool execution,
 * each kind weighted, every delay and count bounded. Shrinking is fast-check's: a failing schedule
 * shrinks toward fewer faults, `ok` ones, and smaller delays and counts.
 *
 * @module
 */
import { fc, type Arbitrary } from './fastCheck.js';
import { ChaosInputError, type FaultSchedule, type ModelFault, type ToolFault } from './schedule.js';

/**
 * Weights of model fault kinds (0 leaves a kind out; `ok` is the weight of no fault).
 *
 * @example
 * ```ts
 * const weights: ModelFaultWeights = { ok: 6, reset: 3, stall: 0 };
 * ```
 */
export type ModelFaultWeights = Partial<Record<ModelFault['kind'], number>>;

/**
 * Weights of tool fault kinds (0 leaves a kind out; `ok` is the weight of no fault).
 *
 * @example
 * ```ts
 * const weights: ToolFaultWeights = { ok: 4, throw: 2, stall: 1 };
 * ```
 */
export type ToolFaultWeights = Partial<Record<ToolFault['kind'], number>>;

/**
 * Bounds of the generated faults.
 *
 * @example
 * ```ts
 * const bounds: FaultBounds = { maxDelayMs: 5_000, maxAfterEvents: 4, statuses: [429, 503] };
 * ```
 */
export interface FaultBounds {
  /** Longest delay (first byte, retry-after, a slow tool, a status's wait). Defaults to 5 000 ms. */
  readonly maxDelayMs?: number;
  /** Longest `down` period. Defaults to 30 000 ms. */
  readonly maxDownMs?: number;
  /** Most events before a reset, stall or malformed event. Defaults to 6. */
  readonly maxAfterEvents?: number;
  /** Status codes drawn for `status` (and `throw`). Defaults to 429, 500, 503. */
  readonly statuses?: readonly number[];
}

/**
 * Default weights of model fault kinds: about one call in three has a fault.
 *
 * @example
 * ```ts
 * faults.schedule({ models: ['gpt'], model: { weights: { ...DEFAULT_MODEL_WEIGHTS, stall: 0 } } });
 * ```
 */
export const DEFAULT_MODEL_WEIGHTS: Readonly<Record<ModelFault['kind'], number>> = Object.freeze({
  ok: 12,
  status: 3,
  down: 1,
  reset: 2,
  malformed: 1,
  stall: 1,
  'slow-first-byte': 1,
  'bad-tool-args': 1,
});

/**
 * Default weights of tool fault kinds: about one execution in three has a fault.
 *
 * @example
 * ```ts
 * faults.schedule({ tools: ['book'], tool: { weights: { ...DEFAULT_TOOL_WEIGHTS, throw: 6 } } });
 * ```
 */
export const DEFAULT_TOOL_WEIGHTS: Readonly<Record<ToolFault['kind'], number>> = Object.freeze({
  ok: 8,
  throw: 2,
  timeout: 1,
  stall: 1,
  'is-error': 1,
  slow: 1,
  // opt in (weights: { 'lost-answer': n }): the default schedules stay as they were
  'lost-answer': 0,
});

/** A whole number of at most 2³¹−1 that is `>= min`, or a `ChaosInputError` naming `where` and the value. */
function whole(value: unknown, where: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 2_147_483_647)
    throw new ChaosInputError(`faults: ${where} must be a whole number >= ${min}, got ${String(value)}`);
  return value;
}

const bounded = (bounds: FaultBounds | undefined, where: string) => {
  if (bounds !== undefined && (typeof bounds !== 'object' || bounds === null))
    throw new ChaosInputError(`faults: ${where} must be an object of bounds, got ${String(bounds)}`);
  const statuses = bounds?.statuses ?? [429, 500, 503];
  if (!Array.isArray(statuses) || statuses.length === 0)
    throw new ChaosInputError(`faults: ${where}.statuses must be a non-empty array of HTTP statuses, got ${String(statuses)}`);
  statuses.forEach((s, i) => {
    if (!Number.isInteger(s) || s < 400 || s > 599)
      throw new ChaosInputError(`faults: ${where}.statuses[${i}] must be an HTTP error status (400–599), got ${String(s)}`);
  });
  return {
    delay: fc.integer({ min: 0, max: whole(bounds?.maxDelayMs ?? 5_000, `${where}.maxDelayMs`) }),
    down: fc.integer({ min: 0, max: whole(bounds?.maxDownMs ?? 30_000, `${where}.maxDownMs`) }),
    afterEvents: fc.integer({ min: 0, max: whole(bounds?.maxAfterEvents ?? 6, `${where}.maxAfterEvents`) }),
    status: fc.constantFrom(...statuses),
  };
};

/** `fc.oneof` over the weighted kinds, `ok` first (shrinking goes toward the first). */
function weighted<F>(
  weights: Readonly<Record<string, number>>,
  defaults: Readonly<Record<string, number>>,
  arbs: Readonly<Record<string, Arbitrary<F>>>,
  where: string,
): Arbitrary<F> {
  if (typeof weights !== 'object' || weights === null)
    throw new ChaosInputError(`faults: ${where} must be an object of weights by fault kind, got ${String(weights)}`);
  for (const [k, w] of Object.entries(weights)) {
    if (!(k in defaults)) throw new ChaosInputError(`faults: unknown fault kind '${k}' in ${where} (known: ${Object.keys(defaults).join(', ')})`);
    if (typeof w !== 'number' || !Number.isFinite(w) || w < 0)
      throw new ChaosInputError(`faults: ${where}.${k} must be a finite number >= 0 (0 leaves the kind out), got ${String(w)}`);
  }
  const kinds = Object.keys(defaults).filter((k) => (weights[k] ?? defaults[k]!) > 0);
  if (kinds.length === 0) throw new ChaosInputError(`faults: every weight in ${where} is 0`);
  // fast-check takes whole weights: fractions are scaled, in proportion
  const scale = Math.max(1, ...kinds.map((k) => decimals(weights[k] ?? defaults[k]!)));
  return fc.oneof(...kinds.map((k) => ({ arbitrary: arbs[k]!, weight: Math.round((weights[k] ?? defaults[k]!) * scale) })));
}

/** 10 to the number of decimals a weight has (at most 6): what makes it whole. */
function decimals(weight: number): number {
  for (let scale = 1; scale <= 1e6; scale *= 10) if (Number.isInteger(weight * scale)) return scale;
  return 1e6;
}

/**
 * One model call's fault ({@link ModelFault}), kinds weighted (`weights` over
 * {@link DEFAULT_MODEL_WEIGHTS}).
 *
 * @example
 * ```ts
 * fc.sample(modelFault({ weights: { ok: 0, stall: 0 } }), 3);
 * ```
 */
export function modelFault(options: { readonly weights?: ModelFaultWeights; readonly bounds?: FaultBounds } = {}): Arbitrary<ModelFault> {
  const b = bounded(options.bounds, 'model.bounds');
  const arbs: Record<ModelFault['kind'], Arbitrary<ModelFault>> = {
    ok: fc.constant({ kind: 'ok' }),
    status: fc
      .record({ status: b.status, retryAfterMs: fc.option(b.delay, { nil: undefined }) })
      .map(({ status, retryAfterMs }) =>
        status === 429 && retryAfterMs !== undefined ? { kind: 'status', status, retryAfterMs } : { kind: 'status', status },
      ),
    down: b.down.map((forMs) => ({ kind: 'down', forMs })),
    reset: b.afterEvents.map((afterEvents) => ({ kind: 'reset', afterEvents })),
    malformed: b.afterEvents.map((afterEvents) => ({ kind: 'malformed', afterEvents })),
    stall: b.afterEvents.map((afterEvents) => ({ kind: 'stall', afterEvents })),
    'slow-first-byte': b.delay.map((delayMs) => ({ kind: 'slow-first-byte', delayMs })),
    'bad-tool-args': fc.constant({ kind: 'bad-tool-args' }),
  };
  return weighted(options.weights ?? {}, DEFAULT_MODEL_WEIGHTS, arbs, 'model.weights');
}

/**
 * One tool execution's fault ({@link ToolFault}), kinds weighted (`weights` over
 * {@link DEFAULT_TOOL_WEIGHTS}).
 *
 * @example
 * ```ts
 * fc.sample(toolFault({ weights: { throw: 5 } }), 3);
 * ```
 */
export function toolFault(options: { readonly weights?: ToolFaultWeights; readonly bounds?: FaultBounds } = {}): Arbitrary<ToolFault> {
  const b = bounded(options.bounds, 'tool.bounds');
  const arbs: Record<ToolFault['kind'], Arbitrary<ToolFault>> = {
    ok: fc.constant({ kind: 'ok' }),
    throw: fc.option(b.status, { nil: undefined }).map((status) => (status === undefined ? { kind: 'throw' } : { kind: 'throw', status })),
    timeout: b.delay.map((afterMs) => ({ kind: 'timeout', afterMs })),
    stall: fc.constant({ kind: 'stall' }),
    'is-error': fc.constant({ kind: 'is-error' }),
    'lost-answer': fc.constant({ kind: 'lost-answer' }),
    slow: b.delay.map((delayMs) => ({ kind: 'slow', delayMs })),
  };
  return weighted(options.weights ?? {}, DEFAULT_TOOL_WEIGHTS, arbs, 'tool.weights');
}

/**
 * What {@link schedule} takes: the models' ids and tools' names the schedule may fault (each the
 * name the agent's `chaos.model` / `chaos.tool` wraps), weights and bounds, and how many calls of
 * each a schedule plans (later calls are `ok`).
 *
 * @example
 * ```ts
 * const options: ScheduleOptions = { models: ['primary', 'secondary'], tools: ['book'], maxCalls: 4, tool: { weights: { stall: 0 } } };
 * ```
 */
export interface ScheduleOptions {
  readonly models?: readonly string[];
  readonly tools?: readonly string[];
  /** Calls of each model and executions of each tool that get a fault drawn. Defaults to 4. */
  readonly maxCalls?: number;
  readonly model?: { readonly weights?: ModelFaultWeights; readonly bounds?: FaultBounds };
  readonly tool?: { readonly weights?: ToolFaultWeights; readonly bounds?: FaultBounds };
}

/**
 * Where a {@link schedule} arbitrary keeps the names it may fault (checkHealing checks them
 * against what the agent wraps before any run).
 *
 * @example
 * ```ts
 * schedule({ models: ['gpt'] })[SCHEDULE_NAMES]; // { models: ['gpt'], tools: [] }
 * ```
 */
export const SCHEDULE_NAMES = Symbol.for('rxheal.chaos.scheduleNames');

/**
 * An arbitrary of {@link FaultSchedule}s, with the names it faults.
 *
 * @example
 * ```ts
 * const schedules: ScheduleArbitrary = faults.schedule({ models: ['gpt'], tools: ['search'] });
 * ```
 */
export type ScheduleArbitrary = Arbitrary<FaultSchedule> & {
  readonly [SCHEDULE_NAMES]: { readonly models: readonly string[]; readonly tools: readonly string[] };
};

/**
 * Fault schedules for an agent's models and tools: for each, a list of up to `maxCalls` faults.
 *
 * @example
 * ```ts
 * const schedules = faults.schedule({ models: ['primary', 'secondary'], tools: ['book'] });
 * await checkHealing(agent, { faults: schedules, runs: 200 });
 * ```
 */
export function schedule(options: ScheduleOptions): ScheduleArbitrary {
  if (typeof options !== 'object' || options === null) throw new ChaosInputError(`faults.schedule: options must be an object, got ${String(options)}`);
  const maxLength = whole(options.maxCalls ?? 4, 'maxCalls');
  const names = (key: 'models' | 'tools'): string[] => {
    const list = options[key] ?? [];
    if (!Array.isArray(list) || list.some((n) => typeof n !== 'string' || n === ''))
      throw new ChaosInputError(`faults.schedule: ${key} must be an array of non-empty names, got ${JSON.stringify(list)}`);
    return [...list];
  };
  const models = names('models');
  const tools = names('tools');
  if (models.length + tools.length === 0) throw new ChaosInputError('faults.schedule: name at least one model (models) or tool (tools)');
  const table = <F>(names: readonly string[], fault: Arbitrary<F>): Arbitrary<Record<string, F[]>> =>
    fc.record(Object.fromEntries(names.map((n) => [n, fc.array(fault, { maxLength })])) as Record<string, Arbitrary<F[]>>);
  const arb = fc
    .record({ models: table(models, modelFault(options.model)), tools: table(tools, toolFault(options.tool)) })
    .map(({ models: m, tools: t }): FaultSchedule => ({ ...(models.length ? { models: m } : {}), ...(tools.length ? { tools: t } : {}) }));
  return Object.assign(arb, { [SCHEDULE_NAMES]: { models, tools } });
}

/**
 * The arbitraries of `rxheal/chaos`: {@link schedule} (what `checkHealing` takes),
 * {@link modelFault} and {@link toolFault}.
 *
 * @example
 * ```ts
 * import { faults } from 'rxheal/chaos';
 * const schedules = faults.schedule({ models: ['gpt'], tools: ['search'], model: { weights: { stall: 3 } } });
 * ```
 */
export const faults = Object.freeze({ schedule, modelFault, toolFault });
