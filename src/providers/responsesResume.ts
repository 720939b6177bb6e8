/**
 * Resume, the third mid-stream mode beside restart (retries, fallbacks) and continue (a fallback
 * continuing the text): a stored background response of OpenAI's Responses API whose stream was
 * lost — the connection dropped, or it stalled — is picked up again with
 * `GET /responses/{id}?stream=true&starting_after=<sequence_number>`, by the same decoder, so
 * nothing is regenerated, lost or doubled. The rule is here, its transport is injected (the
 * `fetch` of `openAIResponsesModel`, or cold observables in marble specs). Browser-safe.
 *
 * @module
 */
import { asyncScheduler, Observable, type SchedulerLike, type Subscription } from 'rxjs';
import { HttpError, InvalidOptionError } from '../core/errors/errors.js';
import type { ResumeEvent, TurnEvent } from '../core/events/events.js';
import { after } from '../core/rx/wait.js';
import { IncompleteStreamError, MalformedStreamError, isObject, parseEventJson } from './sse.js';
import type { SseEvent } from './sseParser.js';

/**
 * How `openAIResponsesModel({ resume })` resumes a lost stream.
 *
 * @example
 * ```ts
 * const resume: ResponsesResumeOptions = { maxResumes: 3, idleMs: 20_000 };
 * ```
 */
export interface ResponsesResumeOptions {
  /** Resumes per model call before the error goes on to retries and fallbacks. Defaults to 2. */
  readonly maxResumes?: number;
  /**
   * A stall: no event for this long (ms, on the call's scheduler) — the connection is then dropped
   * and the stream resumed. No idle deadline by default: a reasoning model may think for minutes
   * between two events, so pick it above the longest silence you expect.
   */
  readonly idleMs?: number;
}

/**
 * The rule's settings, checked (what `openAIResponsesModel`'s `resume` option becomes).
 *
 * @example
 * ```ts
 * const rules: ResumeRules = { maxResumes: 2, idleMs: Infinity }; // resume: true
 * ```
 */
export interface ResumeRules {
  readonly maxResumes: number;
  /** `Infinity`: no idle deadline. */
  readonly idleMs: number;
}

/**
 * Checks `openAIResponsesModel`'s `resume` option: `true` (the defaults), or
 * {@link ResponsesResumeOptions}; `undefined` / `false` mean no resuming.
 *
 * @example
 * ```ts
 * resumeRules('openAIResponsesModel', true); // { maxResumes: 2, idleMs: Infinity }
 * ```
 * @throws {InvalidOptionError} naming the bad field.
 */
export function resumeRules(where: string, resume: unknown): ResumeRules | undefined {
  if (resume === undefined || resume === false) return undefined;
  if (resume === true) return { maxResumes: 2, idleMs: Infinity };
  if (!isObject(resume)) throw new InvalidOptionError(where, 'resume', resume, 'true, false or { maxResumes?, idleMs? }');
  for (const key of Object.keys(resume)) {
    if (key !== 'maxResumes' && key !== 'idleMs') throw new InvalidOptionError(where, `resume.${key}`, resume[key], 'absent (known: maxResumes, idleMs)');
  }
  const { maxResumes = 2, idleMs } = resume as ResponsesResumeOptions;
  if (!Number.isInteger(maxResumes) || maxResumes < 0) throw new InvalidOptionError(where, 'resume.maxResumes', maxResumes, 'a non-negative integer');
  if (idleMs !== undefined && (typeof idleMs !== 'number' || !(idleMs > 0) || idleMs > 2147483647)) {
    throw new InvalidOptionError(where, 'resume.idleMs', idleMs, 'a number of ms from 1 to 2147483647');
  }
  return { maxResumes, idleMs: idleMs ?? Infinity };
}

/**
 * What the resume rule needs of a transport.
 *
 * @example
 * ```ts
 * const seams: ResumeSeams = {
 *   open: () => fetchSse({ ...request, body }),
 *   reopen: (id, after) => fetchSse({ ...request, method: 'GET', url: `${url}/${id}?stream=true&starting_after=${after}`, body: undefined }),
 *   cancel: (id) => void fetch(`${url}/${id}/cancel`, { method: 'POST', headers }),
 * };
 * ```
 */
export interface ResumeSeams {
  /** The first attempt's events (the `POST /responses` with `background: true`). */
  readonly open: () => Observable<SseEvent>;
  /** The stored response's events after `startingAfter` (`GET /responses/{id}?stream=true&starting_after=…`). */
  readonly reopen: (responseId: string, startingAfter: number) => Observable<SseEvent>;
  /** Best effort, never awaited: stop the background response (`POST /responses/{id}/cancel`). */
  readonly cancel: (responseId: string) => void;
}

/**
 * What a stream's decoder must be for the rule: `ResponsesDecoder`, one per call, kept across resumes.
 *
 * @example
 * ```ts
 * const decoder: ResumableDecoder = new ResponsesDecoder('gpt');
 * ```
 */
export interface ResumableDecoder {
  readonly done: boolean;
  pushEvent(event: Record<string, unknown>, data?: string): readonly TurnEvent[];
  end(): void;
}

/** A stream stopped sending: what the idle deadline fails an attempt with. */
class Stalled extends IncompleteStreamError {}

/**
 * One model call's events over a resumable Responses stream:
 *
 * - the first attempt is `seams.open()`; each event is parsed, numbered (`sequence_number`) and
 *   handed to one decoder for the whole call; the response id comes from the first event carrying
 *   a `response` (`response.created`);
 * - a **mid-stream failure** — an {@link IncompleteStreamError} (the connection dropped, the body
 *   ended before a terminal event), no event for `idleMs` (a stall: that attempt is unsubscribed,
 *   which aborts its request), or a network error of a resuming request — with the id known and
 *   fewer than `maxResumes` resumes so far: a `resume` event (`report`), then
 *   `seams.reopen(id, last)`, `last` the last `sequence_number` received. The decoder goes on with
 *   its state: the text already emitted is not emitted again, and no `reset` is sent;
 * - the first event after each seam must be numbered `last + 1`, else a
 *   {@link MalformedStreamError} (events lost or repeated across the seam);
 * - any other error (an HTTP error, a malformed event, `response.failed`) goes on as it is; so
 *   does a mid-stream failure past `maxResumes`, or before the id is known; and when a resuming
 *   request is refused with an HTTP error (an expired response: 404), the lost stream's error goes
 *   on (retries restart the call);
 * - giving up on a response not finished, or the consumer leaving before its end:
 *   `seams.cancel(id)`, so the provider stops generating what nobody reads;
 * - `checkpoint` (the model call's `context.checkpoint`) is told the response id and the last
 *   `sequence_number` after each event of a response not finished (its events passed on first);
 *   a throw from it is the call's error. With it, the consumer leaving does not cancel the
 *   response: a journaled run resumed elsewhere may pick it up (it expires on the provider's side).
 *
 * @example
 * ```ts
 * resumableResponses('gpt', () => new ResponsesDecoder('gpt'), { maxResumes: 2, idleMs: 10_000 }, seams, scheduler, (e) => hub.report(e));
 * ```
 */
export function resumableResponses(
  model: string,
  decoder: () => ResumableDecoder,
  rules: ResumeRules,
  seams: ResumeSeams,
  scheduler: SchedulerLike = asyncScheduler,
  report?: (event: ResumeEvent) => void,
  checkpoint?: (responseId: string, sequence: number) => void,
): Observable<TurnEvent> {
  return new Observable<TurnEvent>((subscriber) => {
    const state = decoder();
    let responseId: string | undefined;
    let last = -1;
    let events = 0;
    let resumes = 0;
    /** Set after a seam until the first event of the resumed stream is checked. */
    let seam = false;
    let reopened = false;
    let settled = false;
    let attempt: Subscription | undefined;
    let attempts = 0;
    let idle: Subscription | undefined;
    let lastAt = 0;

    const settle = (): void => {
      settled = true;
      idle?.unsubscribe();
      attempt?.unsubscribe();
    };
    const fail = (error: unknown): void => {
      if (settled) return;
      const id = responseId;
      const midStream = error instanceof IncompleteStreamError || (reopened && error instanceof TypeError);
      if (midStream && id !== undefined && resumes < rules.maxResumes) {
        resumes++;
        const stalled = error instanceof Stalled;
        idle?.unsubscribe();
        attempt?.unsubscribe();
        report?.({
          type: 'resume',
          target: `model:${model}`,
          responseId: id,
          startingAfter: last,
          attempt: resumes,
          max: rules.maxResumes,
          reason: stalled ? 'stalled' : 'dropped',
          error: (error as Error).message,
        });
        seam = true;
        reopened = true;
        run(seams.reopen(id, last), error);
        return;
      }
      giveUp(error);
    };
    const giveUp = (error: unknown): void => {
      settle();
      if (responseId !== undefined && !state.done) seams.cancel(responseId);
      subscriber.error(error);
    };
    /** The idle deadline came: a stall, unless an event came since (then it waits for what is left). */
    const checkIdle = (): void => {
      const left = lastAt + rules.idleMs - scheduler.now();
      if (left > 0) idle = after(left, scheduler, checkIdle);
      else fail(new Stalled(model, `stalled: no event for ${rules.idleMs} ms`, events));
    };
    const armIdle = (): void => {
      if (rules.idleMs === Infinity) return;
      lastAt = scheduler.now();
      idle = after(rules.idleMs, scheduler, checkIdle);
    };
    /** One attempt's events; `lost`: the error of the stream it picks up, which goes on if this one is refused. */
    const run = (events$: Observable<SseEvent>, lost?: unknown): void => {
      armIdle();
      const mine = ++attempts;
      const subscription = events$.subscribe({
        next: (sse) => {
          if (settled) return;
          lastAt = scheduler.now();
          events++;
          let out: readonly TurnEvent[];
          try {
            const event = parseEventJson(model, sse.data);
            const sequence = event['sequence_number'];
            if (seam) {
              seam = false;
              if (sequence !== last + 1)
                throw new MalformedStreamError(
                  model,
                  `the resumed stream starts at sequence_number ${String(sequence)}, not ${last + 1} (events lost or repeated across the seam)`,
                  sse.data,
                );
            }
            out = state.pushEvent(event, sse.data);
            if (typeof sequence === 'number') last = sequence;
            const response = event['response'];
            if (responseId === undefined && isObject(response) && typeof response['id'] === 'string') responseId = response['id'];
          } catch (error) {
            return giveUp(error);
          }
          for (const value of out) subscriber.next(value);
          if (state.done) {
            settle();
            subscriber.complete();
          } else if (checkpoint && responseId !== undefined && !settled) {
            try {
              checkpoint(responseId, last);
            } catch (error) {
              giveUp(error);
            }
          }
        },
        error: (error: unknown) => {
          // a resuming request refused outright (404: expired, unknown): the lost stream's error goes on
          if (lost !== undefined && seam && error instanceof HttpError) return giveUp(lost);
          fail(error);
        },
        complete: () => {
          if (settled) return;
          try {
            state.end();
          } catch (error) {
            return fail(error);
          }
          settle();
          subscriber.complete();
        },
      });
      // an attempt that failed at once, inside subscribe, may have started the next one already
      if (mine === attempts && !settled) attempt = subscription;
      else subscription.unsubscribe();
    };

    run(seams.open());
    return () => {
      const left = !settled;
      settle();
      // a checkpointed response may be resumed by another process (a journaled run): left to expire, not cancelled
      if (left && responseId !== undefined && !state.done && checkpoint === undefined) seams.cancel(responseId);
    };
  });
}
