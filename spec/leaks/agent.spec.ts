import { expect } from 'chai';
import * as t from 'io-ts';
import { Subject, type Observable } from 'rxjs';
import { CircuitBreakerRegistry } from '../../src/core/breaker/registry.js';
import { HttpError } from '../../src/core/errors/errors.js';
import type { AgentEvent, TurnEvent } from '../../src/core/events/events.js';
import { circuitBreak } from '../../src/operators/circuitBreak.js';
import { degradeAfter } from '../../src/operators/degradeAfter.js';
import { reflectOnError } from '../../src/operators/reflectOnError.js';
import { retryWithBackoff } from '../../src/operators/retryWithBackoff.js';
import { abortable } from '../../src/core/model/abortable.js';
import { runAgent } from '../../src/sources/runAgent.js';
import { callTool, defineTool } from '../../src/sources/tool.js';
import { finish, scriptedModel, scriptedTool, textDeltas, toolCall } from '../../src/testing/index.js';
import { testScheduler } from '../support/marbles.js';

/**
 * Cancellation reaches the work: an unsubscribed call's AbortSignal is aborted, and a whole agent
 * run — unsubscribed in the middle, or run to the end — leaves no source subscribed and no action
 * scheduled.
 */
describe('leaks: cancellation reaches the work', () => {
  describe('AbortSignal', () => {
    it('abortable: unsubscribing before the work settles aborts its signal (an AbortError reason)', () => {
      let signal: AbortSignal | undefined;
      const sub = abortable(({ signal: s }) => {
        signal = s;
        return new Promise<never>(() => undefined);
      }).subscribe();
      expect(signal!.aborted).to.equal(false);
      sub.unsubscribe();
      expect(signal!.aborted).to.equal(true);
      expect((signal!.reason as DOMException).name).to.equal('AbortError');
    });

    it('abortable: a finished call is not aborted by the unsubscription that follows', async () => {
      let signal: AbortSignal | undefined;
      await new Promise<void>((resolve) =>
        abortable(({ signal: s }) => {
          signal = s;
          return Promise.resolve(1);
        }).subscribe({ complete: resolve }),
      );
      expect(signal!.aborted).to.equal(false);
    });

    it('callTool through the operators: unsubscribing aborts the tool’s signal and frees everything', () => {
      const pending = new Subject<string>();
      let signal: AbortSignal | undefined;
      const tool = defineTool({
        name: 'search',
        description: 'search',
        args: t.type({ q: t.string }),
        idempotent: true,
        execute: (_args, context) => {
          signal = context.signal;
          return pending;
        },
      });
      const ts = testScheduler();
      ts.maxFrames = Infinity;
      const breakers = new CircuitBreakerRegistry({ scheduler: ts });
      const sub = callTool(tool, { id: 'c1', name: 'search', args: { q: 'x' } })
        .pipe(retryWithBackoff({ scheduler: ts }), circuitBreak(breakers.get('tool:search')), reflectOnError(), degradeAfter(3_000, 'none', { scheduler: ts }))
        .subscribe();
      expect(pending.observed).to.equal(true);
      sub.unsubscribe();
      expect(signal!.aborted).to.equal(true);
      expect(pending.observed).to.equal(false);
      expect(ts.actions.length).to.equal(0);
    });
  });

  describe('runAgent with a scripted model', () => {
    it('unsubscribed mid-stream: the model’s signal is aborted, its stream and the pending tool are released, nothing is scheduled', () => {
      const ts = testScheduler();
      ts.maxFrames = Infinity;
      const turn = new Subject<TurnEvent>();
      const toolResult = new Subject<string>();
      const signals: AbortSignal[] = [];
      const tool = defineTool({
        name: 'search',
        description: 'search',
        args: t.unknown,
        idempotent: true,
        execute: (_args, context) => {
          signals.push(context.signal);
          return toolResult;
        },
      });
      const model = scriptedModel('fake', [
        [toolCall('c1', 'search', {}), finish('tool-calls')],
        (_request, context) => {
          signals.push(context.signal);
          return turn;
        },
      ]);
      const breakers = new CircuitBreakerRegistry({ scheduler: ts });
      const events: AgentEvent[] = [];
      const run$: Observable<AgentEvent> = runAgent({
        model,
        tools: [tool],
        messages: [{ role: 'user', content: 'hi' }],
        scheduler: ts,
        toolPipeline: (call, call$, { hub }) =>
          call$.pipe(
            retryWithBackoff({ scheduler: ts, hub, target: `tool:${call.name}` }),
            circuitBreak(breakers.get(`tool:${call.name}`), { hub }),
            reflectOnError(),
            degradeAfter(10_000, 'none', { scheduler: ts }),
          ),
        modelPipeline: (_request, turn$, { hub }) =>
          turn$.pipe(retryWithBackoff({ scheduler: ts, hub, target: 'model:fake', afterEmit: 'error' }), circuitBreak(breakers.get('model:fake'), { hub })),
      });
      const sub = run$.subscribe({ next: (e) => events.push(e), error: () => undefined });
      // the tool is running: finish it, so the second model turn starts streaming
      expect(toolResult.observed).to.equal(true);
      toolResult.next('result');
      toolResult.complete();
      expect(turn.observed).to.equal(true);
      for (const e of textDeltas('Half an answer')) turn.next(e);
      sub.unsubscribe();
      expect(turn.observed, 'model stream released').to.equal(false);
      expect(signals.length).to.equal(2);
      expect(signals[0]!.aborted, 'the finished tool call is not aborted').to.equal(false);
      expect(signals[1]!.aborted, 'the model call is aborted').to.equal(true);
      expect(ts.actions.length, 'scheduled actions').to.equal(0);
    });

    it('unsubscribed while a tool runs: the tool’s signal is aborted', () => {
      const ts = testScheduler();
      ts.maxFrames = Infinity;
      const toolResult = new Subject<string>();
      let signal: AbortSignal | undefined;
      const tool = defineTool({
        name: 'slow',
        description: 'slow',
        args: t.unknown,
        idempotent: false,
        execute: (_args, context) => {
          signal = context.signal;
          return toolResult;
        },
      });
      const model = scriptedModel('fake', [[toolCall('c1', 'slow', {}), finish('tool-calls')]]);
      const sub = runAgent({ model, tools: [tool], messages: [{ role: 'user', content: 'hi' }], scheduler: ts }).subscribe({ error: () => undefined });
      expect(toolResult.observed).to.equal(true);
      sub.unsubscribe();
      expect(signal!.aborted).to.equal(true);
      expect(toolResult.observed).to.equal(false);
      expect(ts.actions.length).to.equal(0);
    });

    it('run to the end in virtual time (a flaky tool retried twice): nothing left scheduled', () => {
      const ts = testScheduler();
      let actionsLeft = -1;
      let completed = false;
      let executions = 0;
      ts.run(({ flush }) => {
        const tool = scriptedTool('search', [{ error: new HttpError(503) }, { error: new HttpError(503) }, { result: 'found' }], { idempotent: true });
        const model = scriptedModel('fake', [
          [toolCall('c1', 'search', {}), finish('tool-calls')],
          [...textDeltas('Done.'), finish('stop')],
        ]);
        const breakers = new CircuitBreakerRegistry();
        runAgent({
          model,
          tools: [tool],
          messages: [{ role: 'user', content: 'hi' }],
          toolPipeline: (call, call$, { hub }) =>
            call$.pipe(retryWithBackoff({ hub, jitter: 'none' }), circuitBreak(breakers.get(`tool:${call.name}`), { hub }), reflectOnError()),
        }).subscribe({ complete: () => (completed = true) });
        flush();
        executions = tool.executions.length;
        actionsLeft = ts.actions.length;
      });
      expect(completed).to.equal(true);
      expect(executions).to.equal(3);
      expect(actionsLeft).to.equal(0);
    });
  });
});
