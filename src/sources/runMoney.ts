/**
 * A run's money: `runAgent({ prices, budget: { maxUsd }, spend })`. Before each provider attempt
 * (retries, hedges, fallbacks, each an attempt) its worst case is reserved — on the run's own
 * `maxUsd` and on every fleet-wide limit in `spend` —, refused with `BudgetExceededError`
 * (`resource: 'usd'`) when it does not fit; while the attempt streams its output is counted live
 * and the call is cut where it would cross what it may spend; at its end the reservation becomes
 * the attempt's actual cost (from its `usage`), or is given back.
 *
 * **The reservation rule.** An attempt of model `m` on request `r` reserves
 * `(inputTokens(r) × worstInput(m) + reserveOutputTokens × worstOutput(m)) / 10⁶` dollars, where
 * `inputTokens` is the estimate of `core/money/estimate.ts` (UTF-8 bytes ÷ 3, plus 4 per message:
 * high for English, about right for CJK), `worstInput` the highest of the model's `input`,
 * `cachedInput` and `cacheWrite` prices, `worstOutput` the higher of `output` and `reasoning`, and
 * `reserveOutputTokens` the request's `maxOutputTokens` (the provider stops there; `runAgent`'s
 * `maxOutputTokens` sets it on every request), else the budget's `reserveOutputTokens` (default
 * 4 096). It fits when what the run has spent, plus
 * what its attempts in flight hold, plus it, is at most `maxUsd`.
 *
 * **The live count** (`cutOff`, on by default). Each text, reasoning and tool-call event adds its
 * estimated tokens at the output (or reasoning) price to the attempt's live cost (input included
 * at the estimate; the output never counted past the request's `maxOutputTokens`, which the
 * provider does not pass). When the live cost passes what the attempt holds, the hold grows out of what
 * is left of `maxUsd`; where it cannot — the run's money is gone, or the attempt passed what a
 * fleet-wide limit granted it (that hold cannot grow mid-stream) — the event is passed on (it was
 * generated: it is paid for) and the call is cut after it: the provider's request aborted, the
 * turn ended with `finish` `{ reason: 'budget' }`, and a `budget-exceeded` event (`cut: true`).
 * So a run's spending stays within `maxUsd` plus one event's price; without the cut-off, within
 * `maxUsd` plus what its attempts' actual costs came to above their reservations.
 *
 * **The end.** A `finish` with `usage` charges `costUsd(price, usage)` (`core/money/prices.ts`),
 * the rest given back; a `finish` without usage, a cut, or an attempt that ended after output
 * without a `finish` charges the estimate; an attempt that ended before any output gives all back
 * (a request refused or cancelled before it answered is not billed). Each charge is a `spend`
 * event on the hub.
 *
 * @module
 */
import { Observable, type Subscription } from 'rxjs';
import { BudgetExceededError } from '../core/errors/errors.js';
import type { TurnEvent, Usage } from '../core/events/events.js';
import type { HealHub } from '../core/hub/hub.js';
import type { AttemptSpend } from '../core/money/meter.js';
import { estimateInputTokens, outputBytes, tokensOfBytes } from '../core/money/estimate.js';
import { checkPrices, costUsd, priceOf, type ModelPrice, type Prices } from '../core/money/prices.js';
import type { SpendContext, SpendGate, SpendHold } from '../core/money/spendGate.js';
import { modelsInside, type Model, type ModelRequest } from '../core/model/model.js';
import { InvalidOptionError } from '../core/errors/errors.js';
import { guard } from '../core/rx/guard.js';

/** Output tokens an attempt reserves by default: Anthropic's default `max_tokens` here (4 096). */
export const DEFAULT_RESERVE_OUTPUT_TOKENS = 4096;

/** What a run's money is configured with (checked by `runAgent`). */
export interface RunMoneyOptions {
  readonly prices: Prices;
  readonly maxUsd: number | undefined;
  readonly reserveOutputTokens: number;
  readonly cutOff: boolean;
  readonly gates: readonly SpendGate[];
  /** Who is spending, for the fleet-wide limits' keys (read at each reservation). */
  readonly context: () => { readonly runId: string; readonly tags?: Readonly<Record<string, string>> };
}

/** Dollars a comparison forgives (floating point sums of many small prices). */
const EPSILON = 1e-12;

/**
 * A run's money (see the module header): what it spent, what its attempts in flight hold, and the
 * reservation of each attempt.
 *
 * @example
 * ```ts
 * const money = new RunMoney({ prices, maxUsd: 0.5, reserveOutputTokens: 4096, cutOff: true, gates: [], context: () => ({ runId: 'r1' }) }, hub);
 * const spend = money.reserve('gpt-5-mini', request); // an AttemptSpend, or BudgetExceededError
 * ```
 */
export class RunMoney {
  /** Dollars charged so far (a resumed run starts from what its journal holds). */
  spentUsd = 0;
  /** Dollars the attempts in flight hold. */
  heldUsd = 0;
  /** The last cut or refusal: the error the run ends with, when it ends for money. */
  exceeded: BudgetExceededError | undefined;

  constructor(
    readonly options: RunMoneyOptions,
    private readonly hub: HealHub,
  ) {}

  /** What is left of `maxUsd` (Infinity without one). */
  leftUsd(): number {
    const { maxUsd } = this.options;
    return maxUsd === undefined ? Infinity : Math.max(0, maxUsd - this.spentUsd - this.heldUsd);
  }

  /** The worst case of an attempt of `modelId` on `request` (throws InvalidOptionError: no price). */
  quote(modelId: string, request: ModelRequest): number {
    return this.worstCase(priceOf('runAgent', this.options.prices, modelId), this.inputTokensOf(request), request).totalUsd;
  }

  /** The last request estimated, and its estimate: a turn's retries, and a chain's quotes then its attempt, share one request. */
  private estimated: { readonly request: ModelRequest; readonly tokens: number } | undefined;

  /** The request's estimated input tokens (linear in the whole conversation: made once per request). */
  private inputTokensOf(request: ModelRequest): number {
    const last = this.estimated;
    if (last?.request === request) return last.tokens;
    const tokens = estimateInputTokens(request);
    this.estimated = { request, tokens };
    return tokens;
  }

  /** The output an attempt on `request` reserves: the request's own cap, else the budget's `reserveOutputTokens`. */
  private outputTokens(request: ModelRequest): number {
    return request.maxOutputTokens ?? this.options.reserveOutputTokens;
  }

  private worstCase(price: ModelPrice, inputTokens: number, request: ModelRequest): { inputUsd: number; totalUsd: number } {
    const worstIn = Math.max(price.input, price.cachedInput ?? price.input, price.cacheWrite ?? price.input);
    const worstOut = Math.max(price.output, price.reasoning ?? price.output);
    const inputUsd = (inputTokens * worstIn) / 1e6;
    return { inputUsd, totalUsd: inputUsd + (this.outputTokens(request) * worstOut) / 1e6 };
  }

  /** Reserves an attempt's worst case (see the module): its spend, at once or once every fleet-wide limit granted it. */
  reserve(modelId: string, request: ModelRequest): AttemptSpend | Observable<AttemptSpend> {
    const price = priceOf('runAgent', this.options.prices, modelId);
    const inputTokens = this.inputTokensOf(request);
    const { inputUsd, totalUsd } = this.worstCase(price, inputTokens, request);
    const { maxUsd, gates } = this.options;
    if (maxUsd !== undefined && this.spentUsd + this.heldUsd + totalUsd > maxUsd + EPSILON) {
      throw this.refuse(maxUsd, this.spentUsd + this.heldUsd + totalUsd, false, modelId);
    }
    this.heldUsd += totalUsd;
    const attempt = new RunAttempt(this, modelId, price, inputTokens, inputUsd, totalUsd, gates.length > 0, request.maxOutputTokens);
    if (gates.length === 0) return attempt;
    const { runId, tags } = this.options.context();
    const context: SpendContext = tags ? { runId, model: modelId, tags } : { runId, model: modelId };
    return reserveOnGates(gates, totalUsd, context, attempt);
  }

  /** A reservation or a live count that does not fit: reported, and the error the run ends with. */
  refuse(limit: number, used: number, cut: boolean, model: string, limiter?: string): BudgetExceededError {
    const error = new BudgetExceededError('usd', limit, used);
    this.exceeded = error;
    this.hub.report({ type: 'budget-exceeded', resource: 'usd', limit, used, cut, model, ...(limiter === undefined ? {} : { limiter }) });
    return error;
  }

  /** An attempt ended: its hold let go, `actualUsd` charged. */
  charge(model: string, heldUsd: number, actualUsd: number, estimated: boolean): void {
    this.heldUsd = Math.max(0, this.heldUsd - heldUsd);
    if (actualUsd <= 0) return;
    this.spentUsd += actualUsd;
    this.hub.report({ type: 'spend', model, usd: actualUsd, totalUsd: this.spentUsd, estimated });
  }
}

/**
 * Every fleet-wide limit's reservation, made at once: the attempt's spend once all granted; the
 * first refusal (or a gate that throws) errors, and what the others granted is given back, as is
 * everything when the caller leaves first.
 */
function reserveOnGates(gates: readonly SpendGate[], usd: number, context: SpendContext, attempt: RunAttempt): Observable<AttemptSpend> {
  return new Observable<AttemptSpend>((subscriber) => {
    const holds: (SpendHold | undefined)[] = gates.map(() => undefined);
    const subscriptions: Subscription[] = [];
    let waiting = gates.length;
    let done = false;
    const fail = (error: unknown): void => {
      if (done) return;
      done = true;
      for (const s of subscriptions) s.unsubscribe();
      for (const hold of holds) if (hold) guard(() => hold.refund());
      attempt.release();
      subscriber.error(error);
    };
    gates.forEach((gate, i) => {
      if (done) return;
      let held = false;
      try {
        subscriptions.push(
          gate.reserve(usd, context).subscribe({
            next: (hold) => {
              if (held) return;
              held = true;
              // a hold that arrives after the reservation failed or was left: given back at once
              if (done) return void guard(() => hold.refund());
              holds[i] = hold;
            },
            error: (error: unknown) => {
              if (error instanceof BudgetExceededError) attempt.refusedBy(gate.name, error);
              fail(error);
            },
            complete: () => {
              if (done) return;
              if (!held) return fail(new Error(`the spend limit "${gate.name}" completed without a hold`));
              if (--waiting > 0) return;
              done = true;
              attempt.holds = holds as SpendHold[];
              subscriber.next(attempt);
              subscriber.complete();
            },
          }),
        );
      } catch (error) {
        fail(error);
      }
    });
    return () => {
      if (done) return;
      done = true;
      for (const s of subscriptions) s.unsubscribe();
      for (const hold of holds) if (hold) guard(() => hold.refund());
      attempt.release();
    };
  });
}

/** One provider attempt's money (the run's {@link AttemptSpend}). */
class RunAttempt implements AttemptSpend {
  /** The fleet-wide limits' holds (set once they all granted). */
  holds: readonly SpendHold[] = [];
  /** What this attempt holds of the run's money (grows with the live count). */
  private heldUsd: number;
  private outBytes = 0;
  private reasoningBytes = 0;
  private received = false;
  private ended = false;
  /** What the live count crossed (reported when the call is cut). */
  private crossed: { limit: number; used: number; limiter?: string } | undefined;

  constructor(
    private readonly money: RunMoney,
    private readonly model: string,
    private readonly price: ModelPrice,
    private readonly inputTokens: number,
    private readonly inputUsd: number,
    /** What the fleet-wide limits granted (the hold there: it cannot grow mid-stream). */
    private readonly gateUsd: number,
    private readonly gated: boolean,
    /** The request's cap on output (`maxOutputTokens`): the provider stops there, so the live count does too. */
    private readonly cap: number | undefined,
  ) {
    this.heldUsd = gateUsd;
  }

  /** Estimated output and reasoning tokens so far, together no more than the request's cap. */
  private outputSoFar(): { output: number; reasoning: number } {
    let output = tokensOfBytes(this.outBytes);
    let reasoning = tokensOfBytes(this.reasoningBytes);
    const cap = this.cap;
    if (cap !== undefined && output + reasoning > cap) {
      reasoning = Math.min(reasoning, cap);
      output = cap - reasoning;
    }
    return { output, reasoning };
  }

  /** A fleet-wide limit refused the reservation: reported as the run's money running out there. */
  refusedBy(limiter: string, error: BudgetExceededError): void {
    this.money.refuse(error.limit, error.used, false, this.model, limiter);
  }

  private estimate(): Usage {
    const { output, reasoning } = this.outputSoFar();
    return reasoning > 0
      ? { inputTokens: this.inputTokens, outputTokens: output + reasoning, reasoningTokens: reasoning }
      : { inputTokens: this.inputTokens, outputTokens: output };
  }

  private liveUsd(): number {
    const { price } = this;
    const { output, reasoning } = this.outputSoFar();
    return this.inputUsd + (output * price.output + reasoning * (price.reasoning ?? price.output)) / 1e6;
  }

  output(event: TurnEvent): boolean {
    const out = outputBytes(event);
    if (out === undefined || this.ended) return true;
    this.received = true;
    if (out.reasoning) this.reasoningBytes += out.bytes;
    else this.outBytes += out.bytes;
    const { money } = this;
    if (!money.options.cutOff) return true;
    const live = this.liveUsd();
    if (live <= this.heldUsd + EPSILON) return true;
    // past what a fleet-wide limit granted: that hold cannot grow mid-stream
    if (this.gated && live > this.gateUsd + EPSILON) {
      this.crossed = { limit: this.gateUsd, used: live, limiter: 'spend' };
      return false;
    }
    const extra = live - this.heldUsd;
    const { maxUsd } = money.options;
    if (maxUsd !== undefined && money.spentUsd + money.heldUsd + extra > maxUsd + EPSILON) {
      this.crossed = { limit: maxUsd, used: money.spentUsd + money.heldUsd + extra };
      return false;
    }
    this.heldUsd = live;
    money.heldUsd += extra;
    return true;
  }

  cut(): Usage {
    // reported here, after the event that crossed it was passed on
    const crossed = this.crossed;
    if (crossed) this.money.refuse(crossed.limit, crossed.used, true, this.model, crossed.limiter);
    const usage = this.estimate();
    this.end(costUsd(this.price, usage), true);
    return usage;
  }

  settle(usage: Usage | undefined): void {
    this.end(costUsd(this.price, usage ?? this.estimate()), usage === undefined);
  }

  release(delegated?: boolean): void {
    if (delegated || !this.received) this.end(0, false);
    else this.end(costUsd(this.price, this.estimate()), true);
  }

  private end(actualUsd: number, estimated: boolean): void {
    if (this.ended) return;
    this.ended = true;
    // a gate's hold is the user's code (a custom SpendGate): a throw there must not end the call
    for (const hold of this.holds) guard(() => (actualUsd > 0 ? hold.settle(actualUsd) : hold.refund()));
    this.money.charge(this.model, this.heldUsd, actualUsd, estimated);
  }
}

/** The options of a run that {@link moneyOptions} reads (`runAgent`'s `model`, `prices`, `budget`, `spend`). */
export interface MoneyConfig {
  readonly model: Model;
  readonly prices?: Prices;
  readonly budget?: { readonly maxUsd?: number; readonly reserveOutputTokens?: number; readonly cutOff?: boolean };
  readonly spend?: readonly SpendGate[];
}

/**
 * A run that counts money (`budget.maxUsd` or `spend`): its checked price list, with a price for
 * every model the run's model is made of (`modelsInside`, all the way down); undefined otherwise.
 * `prices` without either is checked too (a mistake in it is one still).
 *
 * @example
 * ```ts
 * moneyOptions('runAgent', { model, prices, budget: { maxUsd: 0.5 } }); // { prices, maxUsd: 0.5, reserveOutputTokens: 4096, cutOff: true, gates: [] }
 * ```
 */
export function moneyOptions(target: string, config: MoneyConfig): Omit<RunMoneyOptions, 'context'> | undefined {
  const { budget, spend } = config;
  const counts = budget?.maxUsd !== undefined || (spend !== undefined && spend.length > 0);
  if (config.prices === undefined) {
    if (!counts) return undefined;
    throw new InvalidOptionError(
      target,
      'prices',
      undefined,
      `a price list (model id → { input, output, … } $ per million tokens): ${budget?.maxUsd !== undefined ? 'budget.maxUsd' : 'spend'} counts dollars`,
    );
  }
  const prices = checkPrices(target, config.prices);
  if (!counts) return undefined;
  for (const model of providerModels(config.model)) priceOf(target, prices, model.id);
  return {
    prices,
    maxUsd: budget?.maxUsd,
    reserveOutputTokens: budget?.reserveOutputTokens ?? DEFAULT_RESERVE_OUTPUT_TOKENS,
    cutOff: budget?.cutOff ?? true,
    gates: spend ?? [],
  };
}

/** The models a model is made of, all the way down (itself, when it says it is made of none). */
function providerModels(model: Model, seen = new Set<Model>()): Model[] {
  if (seen.has(model)) return [];
  seen.add(model);
  const inside = modelsInside(model);
  return inside === undefined ? [model] : inside.flatMap((m) => providerModels(m, seen));
}
