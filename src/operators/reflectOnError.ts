import { catchError, of, throwError, type OperatorFunction } from 'rxjs';
import { classifyError, type ErrorClassifier } from '../core/errors/classify.js';
import { InvalidOptionError, ToolError } from '../core/errors/errors.js';
import { Bool, Func, NonNegativeInteger, PositiveInteger, check, oneOf, validateOptions } from '../core/errors/options.js';
import { DEFAULT_MAX_ERROR_CHARS, errorText, sanitizeText } from '../core/errors/sanitize.js';
import { markFatal, runOf, type RunScope } from '../core/rx/runScope.js';
import { guard, Thrown } from '../core/rx/guard.js';

/** The reference's reflection prompt. */
export const DEFAULT_REFLECTION_TEMPLATE = "The tool '{tool_name}' failed with: {error}. Analyze what went wrong and provide corrected arguments.";

/** What the model is told once a tool has failed more than `maxReflections` times in a row. */
export const DEFAULT_EXHAUSTED_TEMPLATE =
  "The tool '{tool_name}' has failed {attempt} times in a row (last error: {error}). Do not call it again. " +
  'Tell the user it is unavailable right now and continue without it.';

/**
 * A tool failure turned into a prompt for the model. `runAgent` sends `prompt` as the tool
 * message's content (marked as an error) and emits a `reflection` event.
 */
export class Reflection {
  constructor(
    readonly toolName: string,
    readonly callId: string,
    /** Consecutive failures of this tool, this one included. */
    readonly attempt: number,
    readonly max: number,
    /** True for the give-up instruction (past `maxReflections`). */
    readonly exhausted: boolean,
    readonly prompt: string,
    readonly error: ToolError,
  ) {}
}

/** Options of {@link reflectOnError}. */
export interface ReflectOnErrorOptions {
  /**
   * The prompt. Placeholders: `{tool_name}`, `{error}` (the error text, quoted), `{args}` (the
   * arguments as JSON), `{attempt}`, `{max}`. Placeholders inside the error text or the
   * arguments are never expanded. Defaults to {@link DEFAULT_REFLECTION_TEMPLATE}.
   */
  readonly template?: string;
  /** The instruction past the limit (same placeholders). Defaults to {@link DEFAULT_EXHAUSTED_TEMPLATE}. */
  readonly exhaustedTemplate?: string;
  /** Reflections per tool before giving up: consecutive failures of that tool in a run. Defaults to 3. */
  readonly maxReflections?: number;
  /**
   * Past the limit: `'instruct'` (default) tells the model to stop using the tool and tell the
   * user; `'error'` ends the run with the tool's error.
   */
  readonly onExhausted?: 'instruct' | 'error';
  /** Only these tools are reflected on (default: all). */
  readonly includeTools?: readonly string[];
  /** These tools never are. */
  readonly excludeTools?: readonly string[];
  /**
   * Which tool errors to reflect on. Defaults to {@link shouldReflectByDefault}: bad arguments,
   * bad requests and other non-transient failures; transient ones belong to retryWithBackoff. If
   * it throws, the operator errors with what it threw.
   */
  readonly shouldReflect?: (error: ToolError) => boolean;
  /** Cap on the error text (and the arguments) placed in the prompt. Defaults to 2 000. */
  readonly maxErrorChars?: number;
  /** Count failures across runs (this operator's lifetime) rather than per run. Defaults to false. */
  readonly countAcrossRuns?: boolean;
  /** Classifier used by the default `shouldReflect`. Defaults to {@link classifyError}. If it throws, the operator errors with what it threw. */
  readonly classifier?: ErrorClassifier;
}

const TRANSIENT = new Set([
  'request_timeout',
  'rate_limit',
  'server_error',
  'bad_gateway',
  'service_unavailable',
  'gateway_timeout',
  'timeout',
  'connection',
  'transient',
]);
const NEVER = new Set(['cancelled', 'budget_exceeded', 'circuit_open']);

/**
 * The default `shouldReflect`: a `ToolError` whose cause is not transient (those belong to
 * retryWithBackoff), not a cancellation, a budget stop or an open breaker.
 *
 * @example
 * ```ts
 * shouldReflectByDefault(new ToolError({ ..., phase: 'validate', message: 'units: …' })); // true
 * ```
 */
export function shouldReflectByDefault(error: ToolError, classifier: ErrorClassifier = classifyError): boolean {
  if (error.phase === 'validate') return true;
  const category = classifier(error.cause ?? error).category;
  return !TRANSIENT.has(category) && !NEVER.has(category);
}

const Strings = check('an array of strings', (u): u is readonly string[] => Array.isArray(u) && u.every((s) => typeof s === 'string'));
const Template = check('a non-empty string', (u): u is string => typeof u === 'string' && u.length > 0);

const props = {
  template: Template,
  exhaustedTemplate: Template,
  maxReflections: NonNegativeInteger,
  onExhausted: oneOf('instruct', 'error'),
  includeTools: Strings,
  excludeTools: Strings,
  shouldReflect: Func,
  maxErrorChars: PositiveInteger,
  countAcrossRuns: Bool,
  classifier: Func,
};

/** Fills placeholders in one pass: values inserted are never scanned again. */
function render(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(tool_name|error|args|attempt|max)\}/g, (whole, key: string) => values[key] ?? whole);
}

function argsText(args: unknown, maxChars: number): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(args);
  } catch {
    json = undefined;
  }
  return sanitizeText(json ?? String(args), maxChars);
}

/**
 * Intercepts tool failures before they reach the model and turns them into a reflection the
 * model can act on (the reference's retry-and-reflect behaviour): the tool message says what
 * went wrong and asks for corrected arguments. Counts consecutive failures per tool within a
 * run (a success of that tool resets it); past `maxReflections` it tells the model to stop
 * using the tool, or ends the run (`onExhausted: 'error'`). Use it in `runAgent`'s
 * `toolPipeline`, after `retryWithBackoff`.
 *
 * ```
 * call$:   --#                       ToolError 'Invalid units. Supported: celsius, fahrenheit'
 * result:  --(r|)                    r = Reflection { attempt: 1, max: 3, prompt: "The tool 'get_weather' failed with: …" }
 * ```
 *
 * Errors it does not handle (not a `ToolError`, excluded tools, transient failures) pass
 * through unchanged. Error text is capped and secrets are redacted.
 *
 * @example
 * ```ts
 * runAgent({
 *   model, tools, messages,
 *   toolPipeline: (call, call$) => call$.pipe(retryWithBackoff({ maxRetries: 2 }), reflectOnError({ maxReflections: 3 })),
 * });
 * ```
 * @throws {InvalidOptionError} at once, for an invalid option.
 */
export function reflectOnError<T>(options?: ReflectOnErrorOptions): OperatorFunction<T, T | Reflection> {
  const o = validateOptions('reflectOnError', props, options);
  if (o.includeTools && o.excludeTools) {
    const both = o.includeTools.filter((n) => o.excludeTools?.includes(n));
    if (both.length) throw new InvalidOptionError('reflectOnError', 'excludeTools', both, 'disjoint from includeTools');
  }
  const template = o.template ?? DEFAULT_REFLECTION_TEMPLATE;
  const exhaustedTemplate = o.exhaustedTemplate ?? DEFAULT_EXHAUSTED_TEMPLATE;
  const max = o.maxReflections ?? 3;
  const onExhausted = o.onExhausted ?? 'instruct';
  const maxChars = o.maxErrorChars ?? DEFAULT_MAX_ERROR_CHARS;
  const classifier = (o.classifier as ErrorClassifier | undefined) ?? classifyError;
  const shouldReflect = (o.shouldReflect as ((e: ToolError) => boolean) | undefined) ?? ((e: ToolError) => shouldReflectByDefault(e, classifier));
  const include = o.includeTools ? new Set(o.includeTools) : undefined;
  const exclude = new Set(o.excludeTools ?? []);
  // counts shared across runs live here; a run's successes reset them through its scope
  const own = new Map<string, number>();
  const listening = new WeakSet<RunScope>();

  const countsFor = (error: ToolError): Map<string, number> => {
    const scope = runOf(error);
    if (!scope) return own;
    if (!o.countAcrossRuns) return scope.toolFailures;
    if (!listening.has(scope)) {
      listening.add(scope);
      scope.onToolSuccess((name) => own.delete(name));
    }
    return own;
  };

  return catchError((error: unknown) => {
    if (!(error instanceof ToolError)) return throwError(() => error);
    const tool = error.toolName;
    if ((include && !include.has(tool)) || exclude.has(tool)) return throwError(() => error);
    const reflect = guard(shouldReflect, error);
    if (reflect instanceof Thrown) return throwError(() => reflect.error);
    if (!reflect) return throwError(() => error);
    const counts = countsFor(error);
    const attempt = (counts.get(tool) ?? 0) + 1;
    counts.set(tool, attempt);
    const exhausted = attempt > max;
    if (exhausted && onExhausted === 'error') {
      markFatal(error);
      return throwError(() => error);
    }
    const values = {
      tool_name: tool,
      error: JSON.stringify(errorText(error, maxChars)),
      args: argsText(error.args, maxChars),
      attempt: String(attempt),
      max: String(max),
    };
    const prompt = render(exhausted ? exhaustedTemplate : template, values);
    return of(new Reflection(tool, error.callId, attempt, max, exhausted, prompt, error));
  });
}
