import { Observable, type MonoTypeOperatorFunction, type Subscription } from 'rxjs';
import { CircuitBreakerRegistry, type CircuitBreaker } from '../core/CircuitBreaker.js';
import { classifyError, type ErrorClassifier } from '../core/classify.js';
import { AllFallbacksFailedError, InvalidOptionError } from '../core/errors.js';
import { decideFallback, guardedAttempt, nextAlternative, type ChainLink, type Hop } from '../core/fallbackChain.js';
import { TextBuffer } from '../core/textBuffer.js';
import type { TurnEvent } from '../core/events.js';
import type { HealHub } from '../core/hub.js';
import { check, Func, Hub, NonEmptyString, NonNegativeInteger, PositiveInteger, oneOf, validateOptions } from '../core/options.js';
import { circuitBreak } from '../operators/circuitBreak.js';
import { streamModel, type Model, type ModelRequest } from '../core/model.js';

/**
 * The user message that asks a fallback model to continue a cut-off answer (`midStream:
 * 'continue'`), sent after an assistant message holding the partial text.
 *
 * @example
 * ```ts
 * fallbackModel([primary, secondary], { midStream: 'continue', continueInstruction: DEFAULT_CONTINUE_INSTRUCTION + ' Keep the same language.' });
 * ```
 */
export const DEFAULT_CONTINUE_INSTRUCTION =
  'Your previous answer was cut off. Continue it exactly where it stopped: do not repeat any of it, do not start over, and add no preamble.';

/**
 * Options of {@link fallbackModel}.
 *
 * @example
 * ```ts
 * const options: FallbackModelOptions = { breakers: new CircuitBreakerRegistry({ failureThreshold: 3 }), midStream: 'continue', hub };
 * ```
 */
export interface FallbackModelOptions {
  /** The composite model's id. Defaults to `fallback(<id>, <id>, …)`. */
  readonly id?: string;
  /**
   * One breaker per model, named `model:<id>`: a model whose breaker is open is skipped without a
   * call (its {@link CircuitOpenError} joins the error list), and every call's outcome is counted.
   * None by default.
   */
  readonly breakers?: CircuitBreakerRegistry;
  /**
   * Provider-specific prompt adaptation: the request as it will be sent to `model` (with the
   * continuation messages in `'continue'` mode) → the request to send. A throw errors the turn at
   * once. None by default.
   */
  readonly adapt?: (request: ModelRequest, model: Model) => ModelRequest;
  /**
   * Where each switch is reported as `{ type: 'fallback', from: 'model:<id>', to, reason,
   * midStream }`, each skip as a `circuit` `rejected` event; the breakers are watched
   * (`hub.watch`). None by default.
   */
  readonly hub?: HealHub;
  /**
   * What to do when a model fails after the consumer saw part of its answer:
   * - `'restart'` (default): emit `{ type: 'reset', reason: 'fallback', target: 'model:<next id>' }`,
   *   then the next model's whole answer.
   * - `'continue'`: send the next model the request plus the partial text (an assistant message)
   *   and {@link DEFAULT_CONTINUE_INSTRUCTION} (a user message); emit only the continuation, with
   *   any repeat of the partial text's tail trimmed. A turn that already emitted a `tool-call`
   *   cannot be continued: it restarts as with `'restart'`.
   * - `'error'`: no fallback after the first event; the error passes on unchanged.
   */
  readonly midStream?: 'restart' | 'continue' | 'error';
  /** The user message asking for a continuation. Defaults to {@link DEFAULT_CONTINUE_INSTRUCTION}. */
  readonly continueInstruction?: string;
  /**
   * Longest repeat of the partial text's tail looked for at the start of a continuation, in
   * characters: the continuation's first deltas are held back only while they could still be
   * such a repeat, so never more than this many. `0` turns trimming off. Defaults to 1000.
   */
  readonly maxOverlap?: number;
  /**
   * A repeat at least this long is trimmed wherever it falls. A shorter one (of at least 2
   * non-space characters) is trimmed only when it restarts a word of the partial text (`'wea'`
   * then `'weather…'`) or repeats whole words (`' is'` then `' is sunny'`), so a coincidence
   * such as `'to the'` then `' theatre'` is kept. Defaults to 16.
   */
  readonly longOverlap?: number;
  /**
   * Decides whether an error is worth trying the next model. Errors it rejects pass through
   * unchanged, at once. Defaults to the classifier's `fallback`.
   */
  readonly shouldFallback?: (error: unknown) => boolean;
  /** Gives `fallback` and the category reported as `reason`. Defaults to {@link classifyError}. */
  readonly classifier?: ErrorClassifier;
}

const props = {
  id: NonEmptyString,
  breakers: check('a CircuitBreakerRegistry', (u): u is CircuitBreakerRegistry => u instanceof CircuitBreakerRegistry),
  adapt: Func,
  hub: Hub,
  midStream: oneOf('restart', 'continue', 'error'),
  continueInstruction: NonEmptyString,
  maxOverlap: NonNegativeInteger,
  longOverlap: PositiveInteger,
  shouldFallback: Func,
  classifier: Func,
};

const WORD_CHAR = /[\p{L}\p{N}]/u;
const SPACE = /\s/;

/**
 * Holds back the start of a continuation until it is known whether it repeats the tail of the
 * partial text, then lets through what is new.
 */
class OverlapTrimmer {
  decided = false;
  private buffer = '';
  /** Overlap lengths still consistent with the buffered text. */
  private candidates: number[] | undefined;

  constructor(
    private readonly partial: string,
    private readonly maxOverlap: number,
    private readonly longOverlap: number,
  ) {}

  /** One delta's text in; what may be shown now out (`''` while undecided). */
  push(text: string): string {
    if (this.decided) return text;
    this.buffer += text;
    const buf = this.buffer;
    if (buf === '') return '';
    const p = this.partial;
    const len = p.length;
    if (this.candidates === undefined) {
      const first = buf.charCodeAt(0);
      this.candidates = [];
      for (let k = 1, max = Math.min(len, this.maxOverlap); k <= max; k++) if (p.charCodeAt(len - k) === first) this.candidates.push(k);
    }
    this.candidates = this.candidates.filter((k) => p.startsWith(buf.slice(0, Math.min(k, buf.length)), len - k));
    // a candidate not yet followed by a character could still turn out to be the repeat
    if (this.candidates.some((k) => buf.length <= k)) return '';
    return this.decide(false);
  }

  /** The continuation's text ended (another event came, or completion): decide now. */
  end(): string {
    return this.decided ? '' : this.decide(true);
  }

  private decide(ended: boolean): string {
    this.decided = true;
    let best = 0;
    for (const k of this.candidates ?? []) if (k > best && k <= this.buffer.length && this.acceptable(k, ended)) best = k;
    const out = this.buffer.slice(best);
    this.buffer = '';
    this.candidates = undefined;
    return out;
  }

  private acceptable(k: number, ended: boolean): boolean {
    if (k >= this.longOverlap) return true;
    const p = this.partial;
    const overlap = p.slice(p.length - k);
    if (overlap.replace(/\s+/g, '').length < 2) return false;
    if (!SPACE.test(overlap.charAt(0))) {
      // restarts the partial text's last word(s): the overlap begins where a word begins
      const before = p.charAt(p.length - k - 1);
      return before === '' || !WORD_CHAR.test(before);
    }
    // repeats whole words: what follows the overlap starts a new word (or nothing follows)
    const after = this.buffer.charAt(k);
    return after === '' ? ended : !WORD_CHAR.test(after);
  }
}

function isModel(u: unknown): u is Model {
  return typeof u === 'object' && u !== null && typeof (u as Model).id === 'string' && (u as Model).id !== '' && typeof (u as Model).stream === 'function';
}

/**
 * A {@link Model} that tries several models in order, per request: a failure worth a fallback
 * (per `shouldFallback`, by default the classifier's `fallback`) hands the request to the next
 * model; when all have failed, {@link AllFallbacksFailedError} lists each model's error in
 * order ({@link CircuitOpenError} for skipped ones). Errors not worth a fallback pass through
 * unchanged. Each request starts from the first model unless its breaker is open.
 *
 * A model whose stream ends without a `finish` event failed too (`streamModel` errors with
 * `IncompleteStreamError`, counted by its breaker). A failure after the consumer saw part of the
 * answer follows `midStream` (`'restart'` by default): a `reset` event then the next model's whole answer, or — `'continue'` — the next
 * model continues the partial text and only the new text is emitted, never repeated. Calls go
 * through `streamModel`, so unsubscribing aborts the model in flight.
 *
 * ```
 * primary:    -a-b-c-#            (3 text deltas, then a 503)
 * secondary:         -x-y-(f|)    (subscribed at 7)
 * restart:    -a-b-c-Rx-y-(f|)    R = { type: 'reset', reason: 'fallback', target: 'model:secondary' }
 * ```
 *
 * @example
 * ```ts
 * const breakers = new CircuitBreakerRegistry({ failureThreshold: 3, resetTimeoutMs: 60_000 });
 * const model = fallbackModel([gpt, claude, local], {
 *   breakers,
 *   hub,
 *   midStream: 'continue',
 *   adapt: (req, m) => (m.id === 'local' ? { ...req, tools: [] } : req),
 * });
 * streamModel(model, { messages, tools }).subscribe((e) => e.type === 'text-delta' && ui.append(e.text));
 * ```
 * @throws {InvalidOptionError} at once, for no models, a non-model, duplicate ids, or an
 * invalid option.
 */
export function fallbackModel(models: readonly Model[], options?: FallbackModelOptions): Model {
  if (!Array.isArray(models) || models.length === 0) throw new InvalidOptionError('fallbackModel', 'models', models, 'a non-empty array of models');
  const seen = new Set<string>();
  Array.from(models, (m: unknown, i) => {
    if (!isModel(m)) throw new InvalidOptionError('fallbackModel', `models[${i}]`, m, 'a Model ({ id: non-empty string, stream(request, context) })');
    if (seen.has(m.id)) throw new InvalidOptionError('fallbackModel', `models[${i}].id`, m.id, 'unique (breakers and events are named model:<id>)');
    seen.add(m.id);
  });
  const o = validateOptions('fallbackModel', props, options);
  const list = [...models];
  const names = list.map((m) => `model:${m.id}`);
  const breakers: (CircuitBreaker | undefined)[] = names.map((name) => o.breakers?.get(name));
  const hub = o.hub as HealHub | undefined;
  // with a hub, circuitBreak watches each breaker and reports the calls it rejects
  const guards: (MonoTypeOperatorFunction<TurnEvent> | undefined)[] = breakers.map((b) => (b ? circuitBreak<TurnEvent>(b, { hub }) : undefined));
  const links: ChainLink[] = names.map((name, i) => ({ name, breaker: breakers[i] }));
  const adapt = o.adapt as ((request: ModelRequest, model: Model) => ModelRequest) | undefined;
  const midStream = o.midStream ?? 'restart';
  const instruction = o.continueInstruction ?? DEFAULT_CONTINUE_INSTRUCTION;
  const maxOverlap = o.maxOverlap ?? 1000;
  const longOverlap = o.longOverlap ?? 16;
  const shouldFallback = o.shouldFallback as ((error: unknown) => boolean) | undefined;
  const classifier = (o.classifier as ErrorClassifier | undefined) ?? classifyError;

  const stream = (request: ModelRequest): Observable<TurnEvent> =>
    new Observable<TurnEvent>((subscriber) => {
      const errors: unknown[] = [];
      /** What the consumer holds since the last reset: text, and whether it saw a tool call or anything at all. */
      // the text itself is kept only by 'continue', which sends it on (flat: ~1 byte per character)
      const text = new TextBuffer(midStream === 'continue');
      let toolCalled = false;
      let visible = false;
      let inner: Subscription | undefined;
      let generation = 0;

      const emit = (event: TurnEvent): void => {
        if (event.type === 'reset') {
          text.clear();
          toolCalled = false;
          visible = false;
        } else {
          visible = true;
          if (event.type === 'text-delta') text.append(event.text);
          else if (event.type === 'tool-call') toolCalled = true;
        }
        subscriber.next(event);
      };

      const start = (j: number): void => {
        const model = list[j]!;
        let req = request;
        let partial: string | undefined;
        if (visible) {
          if (midStream === 'continue' && !text.empty && !toolCalled) {
            partial = text.toString();
            req = {
              ...request,
              messages: [...request.messages, { role: 'assistant', content: partial }, { role: 'user', content: instruction }],
            };
          } else {
            emit({ type: 'reset', reason: 'fallback', target: names[j]! });
            if (subscriber.closed) return;
          }
        }
        if (adapt) {
          try {
            req = adapt(req, model);
          } catch (adaptError) {
            return subscriber.error(adaptError);
          }
        }
        const sent = req;
        const { input, called } = guardedAttempt(() => streamModel(model, sent), guards[j]);
        const trimmer = partial !== undefined && maxOverlap > 0 ? new OverlapTrimmer(partial, maxOverlap, longOverlap) : undefined;
        const flush = (): void => {
          const rest = trimmer!.end();
          if (rest !== '') emit({ type: 'text-delta', text: rest });
        };
        const id = ++generation;
        /** Whether this model's output reached the consumer (held-back text did not). */
        let emitted = false;
        const sub = input.subscribe({
          next: (event) => {
            if (trimmer && !trimmer.decided) {
              if (event.type === 'text-delta') {
                const shown = trimmer.push(event.text);
                if (shown !== '') {
                  emitted = true;
                  emit({ type: 'text-delta', text: shown });
                }
                return;
              }
              flush();
            }
            emitted = true;
            emit(event);
          },
          // held-back text was never shown: a further fallback continues from what was
          error: (error: unknown) => onError(j, error, called(), emitted),
          complete: () => {
            if (trimmer && !trimmer.decided) flush();
            subscriber.complete();
          },
        });
        if (subscriber.closed) sub.unsubscribe();
        else if (id === generation) inner = sub;
      };

      const onError = (j: number, error: unknown, called: boolean, emitted: boolean): void => {
        errors.push(error);
        // the consumer holds this answer's output: 'error' hands over no further (a model skipped
        // by its breaker never follows visible output here, so it needs no exception)
        if (visible && midStream === 'error') return subscriber.error(error);
        const verdict = decideFallback(error, called, classifier, shouldFallback);
        if ('fail' in verdict) return subscriber.error(verdict.fail);
        advance(j + 1, { from: names[j], reason: verdict.reason, midStream: emitted });
      };

      /** Starts the first model from `j` whose breaker is not open. */
      const advance = (j: number, hop: Hop): void => {
        const next = nextAlternative(links, j, hop, errors, hub);
        if (next < 0) return subscriber.error(new AllFallbacksFailedError([...errors]));
        start(next);
      };

      advance(0, { from: undefined, reason: '', midStream: false });
      return () => inner?.unsubscribe();
    });

  return { id: o.id ?? `fallback(${list.map((m) => m.id).join(', ')})`, stream };
}
