/**
 * The resume rule (src/providers/responsesResume.ts) in virtual time: cold observables stand for
 * the POST and each GET `starting_after`; the real ResponsesDecoder reads them across the seams.
 * When it resumes (a drop, a stall past idleMs), from which sequence_number, how often, what it
 * checks at the seam, what goes on when it gives up, and what it cancels.
 */
import { expect } from 'chai';
import type { Observable } from 'rxjs';
import { HttpError, IncompleteStreamError, InvalidOptionError, MalformedStreamError } from '../../src/core/errors/errors.js';
import type { ResumeEvent, TurnEvent } from '../../src/core/events/events.js';
import { ResponsesDecoder } from '../../src/providers/responsesDecoder.js';
import { resumableResponses, resumeRules, type ResumeRules } from '../../src/providers/responsesResume.js';
import type { SseEvent } from '../../src/providers/sseParser.js';
import { virtual, type VirtualRun } from '../support/marbles.js';

const usage = { input_tokens: 3, output_tokens: 4 };
/** The events of one short answer, "abcd": seq 0..8. */
const EVENTS: Record<string, Record<string, unknown>> = {
  c: { type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress' } },
  p: { type: 'response.in_progress', sequence_number: 1, response: { id: 'resp_1', status: 'in_progress' } },
  i: { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { type: 'message', id: 'msg_1' } },
  a: { type: 'response.output_text.delta', sequence_number: 3, output_index: 0, delta: 'a' },
  b: { type: 'response.output_text.delta', sequence_number: 4, output_index: 0, delta: 'b' },
  x: { type: 'response.output_text.delta', sequence_number: 5, output_index: 0, delta: 'c' },
  y: { type: 'response.output_text.delta', sequence_number: 6, output_index: 0, delta: 'd' },
  o: { type: 'response.output_item.done', sequence_number: 7, output_index: 0, item: { type: 'message', id: 'msg_1' } },
  f: { type: 'response.completed', sequence_number: 8, response: { id: 'resp_1', status: 'completed', usage } },
};
const SSE: Record<string, SseEvent> = Object.fromEntries(Object.entries(EVENTS).map(([k, e]) => [k, { event: String(e['type']), data: JSON.stringify(e) }]));
/** What the call emits, by the same letters. */
const OUT: Record<string, TurnEvent> = {
  a: { type: 'text-delta', text: 'a' },
  b: { type: 'text-delta', text: 'b' },
  x: { type: 'text-delta', text: 'c' },
  y: { type: 'text-delta', text: 'd' },
  f: { type: 'finish', reason: 'stop', usage: { inputTokens: 3, outputTokens: 4 } },
};
const dropped = new IncompleteStreamError('m', 'reading failed: terminated', 5);

interface Harness {
  readonly out$: Observable<TurnEvent>;
  readonly reopened: [string, number][];
  readonly cancelled: string[];
  readonly resumes: ResumeEvent[];
}

function harness(run: VirtualRun, rules: ResumeRules, open$: Observable<SseEvent>, reopens: readonly Observable<SseEvent>[]): Harness {
  const reopened: [string, number][] = [];
  const cancelled: string[] = [];
  const resumes: ResumeEvent[] = [];
  const out$ = resumableResponses(
    'm',
    () => new ResponsesDecoder('m'),
    rules,
    {
      open: () => open$,
      reopen: (id, after) => {
        reopened.push([id, after]);
        return reopens[reopened.length - 1]!;
      },
      cancel: (id) => cancelled.push(id),
    },
    run.ts,
    (e) => resumes.push(e),
  );
  return { out$, reopened, cancelled, resumes };
}

describe('resume rule (resumableResponses), in virtual time', () => {
  it('a drop after seq 4: the stream is picked up after 4 at once — the text goes on, nothing repeated, one finish; a resume event', () => {
    let h!: Harness;
    virtual((run) => {
      const { cold, expectObservable, expectSubscriptions } = run;
      const post = cold('cpiab#', SSE, dropped);
      const get = cold('-xyof', SSE);
      h = harness(run, { maxResumes: 2, idleMs: Infinity }, post, [get]);
      expectObservable(h.out$).toBe('---ab-xy-(f|)', OUT);
      expectSubscriptions(post.subscriptions).toBe('^----!');
      expectSubscriptions(get.subscriptions).toBe('-----^---!');
    });
    expect(h.reopened).to.deep.equal([['resp_1', 4]]);
    expect(h.resumes).to.deep.equal([
      { type: 'resume', target: 'model:m', responseId: 'resp_1', startingAfter: 4, attempt: 1, max: 2, reason: 'dropped', error: dropped.message },
    ]);
    expect(h.cancelled).to.deep.equal([]);
  });

  it('a body ending before a terminal event is a drop too', () => {
    virtual((run) => {
      const post = run.cold('cpia|', SSE);
      const get = run.cold('bxyof', SSE);
      const h = harness(run, { maxResumes: 1, idleMs: Infinity }, post, [get]);
      run.expectObservable(h.out$).toBe('---abxy-(f|)', OUT);
    });
  });

  it('a stall: no event for idleMs (5) after seq 4 → that attempt is unsubscribed (its request aborted) and the stream resumed after 4; the deadline counts from the last event', () => {
    let h!: Harness;
    virtual((run) => {
      const post = run.cold('cpiab------', SSE);
      const get = run.cold('--xyof', SSE);
      h = harness(run, { maxResumes: 2, idleMs: 5 }, post, [get]);
      run.expectObservable(h.out$).toBe('---ab------xy-(f|)', OUT);
      run.expectSubscriptions(post.subscriptions).toBe('^--------!');
      run.expectSubscriptions(get.subscriptions).toBe('---------^----!');
    });
    expect(h.resumes.map((e) => [e.reason, e.startingAfter])).to.deep.equal([['stalled', 4]]);
  });

  it('the first event after the seam must be last + 1: a gap (events lost) → MalformedStreamError, the response cancelled', () => {
    let h!: Harness;
    virtual((run) => {
      const post = run.cold('cpiab#', SSE, dropped);
      const get = run.cold('-yof', SSE);
      h = harness(run, { maxResumes: 2, idleMs: Infinity }, post, [get]);
      run
        .expectObservable(h.out$)
        .toBe(
          '---ab-#',
          OUT,
          new MalformedStreamError('m', 'the resumed stream starts at sequence_number 6, not 5 (events lost or repeated across the seam)', ''),
        );
    });
    expect(h.cancelled).to.deep.equal(['resp_1']);
  });

  it('an event repeated across the seam → MalformedStreamError (the decoder’s own sequence check)', () => {
    virtual((run) => {
      const post = run.cold('cpiab#', SSE, dropped);
      const get = run.cold('-bxyof', SSE);
      const h = harness(run, { maxResumes: 2, idleMs: Infinity }, post, [get]);
      run
        .expectObservable(h.out$)
        .toBe(
          '---ab-#',
          OUT,
          new MalformedStreamError('m', 'the resumed stream starts at sequence_number 4, not 5 (events lost or repeated across the seam)', ''),
        );
    });
  });

  it('bounded: each connection drops; after maxResumes (2) the drop goes on as it is (for retries), and the response is cancelled', () => {
    let h!: Harness;
    virtual((run) => {
      const post = run.cold('cpia#', SSE, dropped);
      const get1 = run.cold('-b#', SSE, dropped);
      const get2 = run.cold('-x#', SSE, dropped);
      h = harness(run, { maxResumes: 2, idleMs: Infinity }, post, [get1, get2]);
      run.expectObservable(h.out$).toBe('---a-b-x#', OUT, dropped);
    });
    expect(h.reopened).to.deep.equal([
      ['resp_1', 3],
      ['resp_1', 4],
    ]);
    expect(h.resumes.map((e) => e.attempt)).to.deep.equal([1, 2]);
    expect(h.cancelled).to.deep.equal(['resp_1']);
  });

  it('a drop before the response id is known (no response.created yet) is not resumable: it goes on at once', () => {
    virtual((run) => {
      const post = run.cold('#', SSE, dropped);
      const h = harness(run, { maxResumes: 2, idleMs: Infinity }, post, []);
      run.expectObservable(h.out$).toBe('#', OUT, dropped);
      expect(h.reopened).to.deep.equal([]);
    });
  });

  it('a resuming request refused with an HTTP error (404: expired) → the lost stream’s error goes on; an HTTP error of the POST goes on as it is', () => {
    const gone = new HttpError(404, {}, { error: { message: 'not found' } }, { message: 'HTTP 404' });
    virtual((run) => {
      const h = harness(run, { maxResumes: 2, idleMs: Infinity }, run.cold('cpia#', SSE, dropped), [run.cold('-#', SSE, gone)]);
      run.expectObservable(h.out$).toBe('---a-#', OUT, dropped);
    });
    virtual((run) => {
      const h = harness(run, { maxResumes: 2, idleMs: Infinity }, run.cold('#', SSE, gone), []);
      run.expectObservable(h.out$).toBe('#', OUT, gone);
    });
  });

  it('a network error of a resuming request (fetch’s TypeError) is a drop: resumed again while resumes remain', () => {
    virtual((run) => {
      const h = harness(run, { maxResumes: 2, idleMs: Infinity }, run.cold('cpia#', SSE, dropped), [
        run.cold('-#', SSE, new TypeError('fetch failed')),
        run.cold('bxyof', SSE),
      ]);
      run.expectObservable(h.out$).toBe('---a-bxy-(f|)', OUT);
    });
  });

  it('unsubscribing mid-stream unsubscribes the attempt (aborting its request) and cancels the response; after the finish nothing is cancelled', () => {
    let h!: Harness;
    virtual((run) => {
      const post = run.cold('cpiab#', SSE, dropped);
      const get = run.cold('-xyof', SSE);
      h = harness(run, { maxResumes: 2, idleMs: Infinity }, post, [get]);
      run.expectObservable(h.out$, '^------!').toBe('---ab-x', OUT);
      run.expectSubscriptions(get.subscriptions).toBe('-----^-!');
    });
    expect(h.cancelled).to.deep.equal(['resp_1']);
    virtual((run) => {
      h = harness(run, { maxResumes: 2, idleMs: 3 }, run.cold('cpiabxyof', SSE), []);
      run.expectObservable(h.out$).toBe('---abxy-(f|)', OUT);
    });
    expect(h.cancelled).to.deep.equal([]);
  });

  it('resumeRules: true → 2 resumes, no idle deadline; bad values refused naming the option', () => {
    expect(resumeRules('m', true)).to.deep.equal({ maxResumes: 2, idleMs: Infinity });
    expect(resumeRules('m', { maxResumes: 0, idleMs: 10 })).to.deep.equal({ maxResumes: 0, idleMs: 10 });
    expect(resumeRules('m', false)).to.equal(undefined);
    expect(() => resumeRules('m', { maxResumes: -1 })).to.throw(InvalidOptionError, 'resume.maxResumes');
    expect(() => resumeRules('m', { idleMs: 0 })).to.throw(InvalidOptionError, 'resume.idleMs');
    expect(() => resumeRules('m', { idle: 5 })).to.throw(InvalidOptionError, 'resume.idle');
    expect(() => resumeRules('m', 'yes')).to.throw(InvalidOptionError, 'resume');
  });
});
