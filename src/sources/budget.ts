/**
 * A run's budget: the limits {@link runAgent} takes (`budget`), their option check, and the
 * tracker that counts what a run spends — model calls, tool calls, tokens, steps — and stops it
 * with a `BudgetExceededError` (after a `budget-exceeded` event) when a limit is crossed.
 *
 * @module
 */
import { BudgetExceededError } from '../core/errors/errors.js';
import type { Usage } from '../core/events/events.js';
import type { HealHub } from '../core/hub/hub.js';
import { check } from '../core/errors/options.js';
import type { BudgetMeter, ModelRequest, MoneyLeft } from '../core/model/model.js';
import type { Observable } from 'rxjs';
import type { AttemptSpend } from '../core/money/meter.js';
import { RunMoney, type RunMoneyOptions } from './runMoney.js';

/**
 * Limits on one run, counted across retries, reflections and fallbacks. Crossing one ends the run
 * with `BudgetExceededError` (its `resource` names the limit: `'modelCalls'`, `'tokens'`,
 * `'toolCalls'`, or `'steps'` for `maxSteps`), after a `budget-exceeded` event.
 *
 * @example
 * ```ts
 * const budget: Budget = { maxModelCalls: 10, maxTokens: 20_000, maxToolCalls: 20 };
 * ```
 */
export interface Budget {
  /**
   * Provider attempts: each subscription to a model's stream, wherever it happens — a turn, each
   * retry of it, each model a `fallbackModel` tries (a wrapping model is not a call of its own:
   * the models it calls are), each `fallbackTo` model alternative given the run's context. An
   * attempt that would cross the limit is not made. A model skipped because its breaker is open
   * is not called, so not counted. An attempt the provider served with more than one sampling on
   * its side (`finish.usage.iterations`: Anthropic's server-side fallback) counts one call per
   * sampling, when its `finish` arrives.
   */
  readonly maxModelCalls?: number;
  /**
   * Input + output tokens, from each provider attempt's `finish.usage` (an attempt cut off before
   * its `finish` reports none). The run errors after the `finish` that crosses it. Prompt-cache
   * reads and writes are part of the input and count as any token (`cachedInputTokens` and
   * `cacheWriteTokens` say how many of them there were; they are not counted again).
   */
  readonly maxTokens?: number;
  /** Tool executions (every retry counts; calls rejected before running do not). */
  readonly maxToolCalls?: number;
  /**
   * Dollars, at the run's `prices`, that the run may spend — a hard limit: each provider attempt
   * reserves its worst case before it is made and is refused (`BudgetExceededError`, `resource:
   * 'usd'`) when that does not fit, and its output is counted live and cut where it would cross
   * what is left (`cutOff`). The reservation rule, the live count and what is charged are in
   * `src/sources/runMoney.ts`'s header (and the README's "Budgets in money"). Needs `prices`.
   */
  readonly maxUsd?: number;
  /**
   * What the run does when its money runs out mid-turn (a cut): `'error'` (the default) —
   * `BudgetExceededError` after the partial answer's message —, or `'finish'`: the run completes
   * with the partial answer (its message carries `cut: true`, its turn's `finish` reason `'budget'`).
   * A reservation refused before a turn started always errors (there is no answer to finish with).
   */
  readonly onExhausted?: 'error' | 'finish';
  /** Output tokens each attempt reserves (its worst case: no request here caps the provider's output). Defaults to 4 096. */
  readonly reserveOutputTokens?: number;
  /** Count output live and cut a call where it would cross what is left (see `maxUsd`). Defaults to true. */
  readonly cutOff?: boolean;
}

const NonNegOrInfinity = check('a number >= 0 or Infinity', (u): u is number => typeof u === 'number' && u >= 0);
const LIMITS = ['maxModelCalls', 'maxTokens', 'maxToolCalls', 'maxUsd'];
export const budgetCodec = check(
  "an object with maxModelCalls / maxTokens / maxToolCalls / maxUsd (each a number >= 0), onExhausted ('error' | 'finish'), reserveOutputTokens (an integer >= 1), cutOff (a boolean)",
  (u): u is Budget => {
    if (typeof u !== 'object' || u === null) return false;
    return Object.entries(u).every(([k, v]) => {
      if (v === undefined) return true;
      if (LIMITS.includes(k)) return NonNegOrInfinity.is(v);
      if (k === 'onExhausted') return v === 'error' || v === 'finish';
      if (k === 'reserveOutputTokens') return Number.isInteger(v) && (v as number) >= 1;
      if (k === 'cutOff') return typeof v === 'boolean';
      return false;
    });
  },
);

/** The budget: counts what a run spends and stops it, with `BudgetExceededError`, when a limit is crossed. */
export class BudgetTracker implements BudgetMeter {
  /** A run that counts money: its reservations (see {@link MoneyBudgetTracker}). */
  money: RunMoney | undefined;

  // what was spent: a journaled run records it with each step, and a resumed one restores it (no fresh budget)
  modelCalls = 0;
  toolCalls = 0;
  tokens = 0;

  constructor(
    private readonly budget: Budget,
    protected readonly hub: HealHub,
  ) {}

  modelCall(): void {
    this.check('modelCalls', this.budget.maxModelCalls, ++this.modelCalls);
  }

  toolCall(): void {
    this.check('toolCalls', this.budget.maxToolCalls, ++this.toolCalls);
  }

  usage(usage: Usage): void {
    // samplings the provider ran on its side for one attempt (a server-side fallback): each a model call
    const extra = usage.iterations !== undefined && usage.iterations > 1 ? Math.floor(usage.iterations) - 1 : 0;
    if (extra > 0) {
      this.modelCalls += extra;
      this.check('modelCalls', this.budget.maxModelCalls, this.modelCalls);
    }
    this.tokens += usage.inputTokens + usage.outputTokens;
    this.check('tokens', this.budget.maxTokens, this.tokens);
  }

  steps(limit: number, used: number): never {
    this.check('steps', limit, used);
    throw new Error('unreachable');
  }

  private check(resource: string, limit: number | undefined, used: number): void {
    if (limit === undefined || used <= limit) return;
    this.hub.report({ type: 'budget-exceeded', resource, limit, used });
    throw new BudgetExceededError(resource, limit, used);
  }
}

/**
 * The budget of a run that counts money (`budget.maxUsd` or `spend`): every provider attempt is
 * reserved, counted live and charged by its {@link RunMoney}.
 */
export class MoneyBudgetTracker extends BudgetTracker {
  constructor(budget: Budget, hub: HealHub, options: RunMoneyOptions) {
    super(budget, hub);
    this.money = new RunMoney(options, hub);
  }

  spend(modelId: string, request: ModelRequest): AttemptSpend | Observable<AttemptSpend> {
    return this.money!.reserve(modelId, request);
  }

  moneyLeft(): MoneyLeft | undefined {
    const money = this.money!;
    const maxUsd = money.options.maxUsd;
    if (maxUsd === undefined) return undefined;
    const leftUsd = money.leftUsd();
    return { leftUsd, share: maxUsd > 0 ? leftUsd / maxUsd : 0, quote: (modelId, request) => money.quote(modelId, request) };
  }
}
