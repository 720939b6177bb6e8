/**
 * The capability registry: which capabilities (a tool, a knowledge source, a model feature) are
 * unavailable right now and why, so the agent can keep going without them and the model can tell
 * the user. `degradeAfter` disables and re-enables capabilities here; `runAgent` appends
 * {@link CapabilityRegistry.systemPromptSuffix} to its instruction while anything is degraded.
 *
 * @module
 */
import { Observable, Subject } from 'rxjs';
import { InvalidOptionError } from '../errors/errors.js';
import type { DegradedEvent, RestoredEvent } from '../events/events.js';
import type { HealHub } from '../hub/hub.js';
import { Hub, validateOptions } from '../errors/options.js';
import { sanitizeText } from '../errors/sanitize.js';

/**
 * What {@link CapabilityRegistry.events$} emits: a capability became unavailable (or its reason
 * changed), or it is available again. The same events go to the registry's hub.
 *
 * @example
 * ```ts
 * const e: CapabilityEvent = { type: 'degraded', capability: 'knowledge_search', reason: 'no result within 3000 ms' };
 * ```
 */
export type CapabilityEvent = DegradedEvent | RestoredEvent;

/**
 * Options of {@link CapabilityRegistry}.
 *
 * @example
 * ```ts
 * const capabilities = new CapabilityRegistry({ hub } satisfies CapabilityRegistryOptions);
 * ```
 */
export interface CapabilityRegistryOptions {
  /** Where `degraded` / `restored` events are also reported. None by default. */
  readonly hub?: HealHub;
}

/** Longest reason (and name) shown to the model by `systemPromptSuffix`, in characters. */
const MAX_PROMPT_TEXT = 200;

const props = { hub: Hub };

/** One line of prompt text from something that may come from an error: no newlines, no secrets, bounded. */
function promptText(text: string): string {
  return sanitizeText(text.replace(/\s+/g, ' ').trim(), MAX_PROMPT_TEXT);
}

/**
 * Which capabilities are degraded, and why. Disabling an already disabled capability with the
 * same reason, or enabling an available one, changes nothing and emits nothing.
 *
 * @example
 * ```ts
 * const capabilities = new CapabilityRegistry({ hub });
 * search$.pipe(degradeAfter(3000, [], { capability: 'knowledge_search', capabilities }));
 * capabilities.degraded$.subscribe((now) => ui.showDegraded([...now.keys()]));
 * runAgent({ model, tools, messages, instruction, capabilities }); // adds the suffix while degraded
 * ```
 */
export class CapabilityRegistry {
  /** The hub given to the constructor, if any (operators use it to avoid reporting twice). */
  readonly hub: HealHub | undefined;
  private readonly unavailable = new Map<string, string>();
  private readonly changes = new Subject<CapabilityEvent>();

  /**
   * Every change as it happens: `{ type: 'degraded', capability, reason }` and
   * `{ type: 'restored', capability }`. Hot: subscribe before the work starts. A listener that
   * throws disturbs neither `disable`/`enable` nor the other listeners: RxJS reports the throw
   * (`config.onUnhandledError`).
   */
  readonly events$: Observable<CapabilityEvent> = this.changes.asObservable();

  /**
   * The degraded capabilities (name → reason) at subscription, then again after every change.
   * Each value is a fresh snapshot.
   */
  readonly degraded$: Observable<ReadonlyMap<string, string>> = new Observable<ReadonlyMap<string, string>>((subscriber) => {
    subscriber.next(this.degraded());
    return this.changes.subscribe(() => subscriber.next(this.degraded()));
  });

  /** @throws {InvalidOptionError} at once, for an invalid option. */
  constructor(options: CapabilityRegistryOptions = {}) {
    const o = validateOptions('CapabilityRegistry', props, options);
    this.hub = o.hub as HealHub | undefined;
  }

  /**
   * Marks `name` unavailable because of `reason` (shown to the model: keep it short, no
   * secrets). Returns whether anything changed: `false` when it was already disabled with the
   * same reason; a new reason replaces the old one and is reported again.
   *
   * @example
   * ```ts
   * capabilities.disable('knowledge_search', 'no result within 3000 ms'); // true
   * capabilities.disable('knowledge_search', 'no result within 3000 ms'); // false: nothing new
   * ```
   * @throws {InvalidOptionError} for an empty or non-string name or reason.
   */
  disable(name: string, reason: string): boolean {
    checkName('CapabilityRegistry.disable', name);
    if (typeof reason !== 'string') throw new InvalidOptionError('CapabilityRegistry.disable', 'reason', reason, 'a string');
    if (this.unavailable.get(name) === reason) return false;
    this.unavailable.set(name, reason);
    this.emit({ type: 'degraded', capability: name, reason });
    return true;
  }

  /**
   * Marks `name` available again. Returns whether it was disabled.
   *
   * @example
   * ```ts
   * capabilities.enable('knowledge_search'); // true, and a `restored` event
   * ```
   * @throws {InvalidOptionError} for an empty or non-string name.
   */
  enable(name: string): boolean {
    checkName('CapabilityRegistry.enable', name);
    if (!this.unavailable.delete(name)) return false;
    this.emit({ type: 'restored', capability: name });
    return true;
  }

  /**
   * Whether `name` is available (it is unless disabled).
   *
   * @example
   * ```ts
   * if (!capabilities.isAvailable('knowledge_search')) return of(noSearchResults);
   * ```
   */
  isAvailable(name: string): boolean {
    return !this.unavailable.has(name);
  }

  /**
   * The degraded capabilities now, name → reason, in the order they were disabled. A copy.
   *
   * @example
   * ```ts
   * for (const [name, reason] of capabilities.degraded()) console.log(`${name}: ${reason}`);
   * ```
   */
  degraded(): ReadonlyMap<string, string> {
    return new Map(this.unavailable);
  }

  /**
   * Text to add to the system instruction (as its own paragraph; `runAgent` joins it with a
   * blank line): `''` while everything is available; otherwise a list of each unavailable
   * capability with its reason (flattened to one line, secrets redacted, at most 200
   * characters) and an instruction to tell the user and continue without them.
   *
   * @example
   * ```ts
   * capabilities.disable('knowledge_search', 'no result within 3000 ms');
   * capabilities.systemPromptSuffix();
   * // 'These capabilities are unavailable right now:\n- knowledge_search: no result within 3000 ms\n' +
   * // 'Do not try to use them. Tell the user which of them you could not use, and continue without them.'
   * ```
   */
  systemPromptSuffix(): string {
    if (this.unavailable.size === 0) return '';
    const lines = [...this.unavailable].map(([name, reason]) => {
      const why = promptText(reason);
      return `- ${promptText(name)}${why === '' ? '' : `: ${why}`}`;
    });
    return (
      'These capabilities are unavailable right now:\n' +
      lines.join('\n') +
      '\nDo not try to use them. Tell the user which of them you could not use, and continue without them.'
    );
  }

  private emit(event: CapabilityEvent): void {
    this.changes.next(event);
    this.hub?.report(event);
  }
}

function checkName(target: string, name: unknown): void {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidOptionError(target, 'name', name, 'a non-empty string');
}
