import { InvalidOptionError } from '../core/errors/errors.js';
import { check, validateOptions } from '../core/errors/options.js';

/**
 * Options of a {@link HedgeBudget}.
 *
 * @example
 * ```ts
 * const options: HedgeBudgetOptions = { ratio: 0.05, maxTokens: 10 }; // ≤ 5 % extra calls, bursts of 10
 * ```
 */
export interface HedgeBudgetOptions {
  /** Tokens each call puts in (0 < ratio ≤ 1): hedges in the long run are at most this share of calls. Defaults to 0.05. */
  readonly ratio?: number;
  /** The most tokens the bucket holds (≥ 1): the longest burst of hedges. Defaults to 10. */
  readonly maxTokens?: number;
  /** Tokens at the start (0 ≤ initialTokens ≤ maxTokens). Defaults to `maxTokens`. */
  readonly initialTokens?: number;
}

const props = {
  ratio: check('a number in (0, 1]', (u): u is number => typeof u === 'number' && u > 0 && u <= 1),
  maxTokens: check('a finite number >= 1', (u): u is number => typeof u === 'number' && Number.isFinite(u) && u >= 1),
  initialTokens: check('a finite number >= 0', (u): u is number => typeof u === 'number' && Number.isFinite(u) && u >= 0),
};

/**
 * What caps the extra load hedging makes, as gRPC's retry throttling does: a token bucket that
 * each call fills by `ratio` (up to `maxTokens`) and each hedge empties by one; a hedge is only
 * started with a whole token in the bucket. So over any run of `n` calls, at most
 * `initialTokens + ratio × n` hedges are made: a provider slow for everyone gets `ratio` more
 * traffic, not double. Share one budget between the `hedge` operators of one provider.
 *
 * @example
 * ```ts
 * const budget = new HedgeBudget({ ratio: 0.05, maxTokens: 10 });
 * const answer$ = streamModel(gpt, request).pipe(hedge({ after: 2000, budget }));
 * budget.tokens; // 10 at the start; each call adds 0.05, each hedge takes 1
 * ```
 * @throws {InvalidOptionError} at construction, for an invalid option.
 */
export class HedgeBudget {
  /** Tokens each call puts in. */
  readonly ratio: number;
  /** The most tokens the bucket holds. */
  readonly maxTokens: number;
  private left: number;

  constructor(options?: HedgeBudgetOptions) {
    const o = validateOptions('HedgeBudget', props, options);
    this.ratio = o.ratio ?? 0.05;
    this.maxTokens = o.maxTokens ?? 10;
    const initial = o.initialTokens ?? this.maxTokens;
    if (initial > this.maxTokens) throw new InvalidOptionError('HedgeBudget', 'initialTokens', initial, `<= maxTokens (${this.maxTokens})`);
    this.left = initial;
  }

  /** Tokens in the bucket now. */
  get tokens(): number {
    return this.left;
  }

  /** A call started: `ratio` tokens in, up to `maxTokens`. */
  deposit(): void {
    this.left = Math.min(this.maxTokens, this.left + this.ratio);
  }

  /** A hedge asks to start: takes one token and says yes, or says no when there is not a whole one. */
  withdraw(): boolean {
    // a tolerance for the sum of many ratios (0.05 × 20 is 0.9999999999999999 in floating point)
    if (this.left < 1 - 1e-9) return false;
    this.left = Math.max(0, this.left - 1);
    return true;
  }

  /**
   * A token withdrawn for a hedge that was then not started (its breaker refused it) goes back,
   * up to `maxTokens`.
   *
   * @example
   * ```ts
   * if (budget.withdraw() && !start()) budget.refund(); // the bucket holds what it held before
   * ```
   */
  refund(): void {
    this.left = Math.min(this.maxTokens, this.left + 1);
  }
}
