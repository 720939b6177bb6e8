/**
 * Executes every ```marble block of marble-docs/*.md against the real operators in
 * TestScheduler.run: a diagram that no longer matches the code fails `npm test`.
 * The block format is documented in scripts/marbleBlocks.ts.
 */
import { expect } from 'chai';
import { basename } from 'node:path';
import * as rx from 'rxjs';
import { catchError, defer, mergeMap, of, type Observable, type OperatorFunction } from 'rxjs';
import * as rxheal from '../../src/index.js';
import { CircuitOpenError, HttpError } from '../../src/index.js';
import * as testing from '../../src/testing/index.js';
import { all, named, one, readBlocks, type MarbleBlock } from '../../scripts/marbleBlocks.js';
import { testScheduler } from '../support/marbles.js';

const DOCS = new URL('../../marble-docs/', import.meta.url).pathname;

/** A short text for an error, so a diagram can show which error arrived. */
function label(error: unknown): string {
  if (error instanceof CircuitOpenError) return `open(${error.breaker}, ${error.retryAfterMs})`;
  if (error instanceof HttpError) return `http ${error.status}`;
  if (error instanceof Error) return error.name;
  return String(error);
}

/** What doc expressions can name: rxjs, rxheal, rxheal/testing, and a few errors. */
const base: Record<string, unknown> = {
  ...rx,
  ...rxheal,
  ...testing,
  label,
  e400: new HttpError(400),
  e429: (retryAfter: string) => new HttpError(429, { 'retry-after': retryAfter }),
  e500: new HttpError(500),
  e502: new HttpError(502),
  e503: new HttpError(503),
};

function evaluate(expression: string, scope: Record<string, unknown>, where: string): unknown {
  const names = Object.keys(scope).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n));
  try {
    return new Function(...names, `"use strict"; return (${expression});`)(...names.map((n) => scope[n]));
  } catch (e) {
    throw new Error(`${where}: cannot evaluate ${JSON.stringify(expression)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

function lines(marbles: string | undefined): string[] {
  return marbles === undefined ? [] : marbles.split('\n').map((l) => l.trim());
}

function runBlock(block: MarbleBlock): void {
  const where = `${basename(block.file)}:${block.line}`;
  testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
    const scope: Record<string, unknown> = { ...base };
    const ev = (key: string): unknown => {
      const expr = one(block, key);
      return expr === undefined ? undefined : evaluate(expr, scope, where);
    };
    for (const [name, expr] of named(block, 'let')) scope[name] = evaluate(expr, scope, where);
    const values = ev('values') as Record<string, unknown> | undefined;
    const error = one(block, 'error') === undefined ? base['e503'] : ev('error');
    const resultValues = ev('result-values') as Record<string, unknown> | undefined;
    const resultError = ev('result-error');
    const operator = ev('operator') as OperatorFunction<unknown, unknown> | undefined;
    const result = one(block, 'result');
    const calls = one(block, 'calls');

    if (calls !== undefined) {
      if (!operator) throw new Error(`${where}: "calls" needs an "operator"`);
      const sources = Object.fromEntries(named(block, 'source').map(([name, marbles]) => [name, cold(marbles, values, error)]));
      const result$ = hot(calls, sources).pipe(mergeMap((source) => source.pipe(operator, catchError((e: unknown) => of(label(e))))));
      if (result !== undefined) expectObservable(result$).toBe(result, resultValues);
      else result$.subscribe();
      for (const [name, subs] of named(block, 'subs')) {
        const source = sources[name];
        if (!source) throw new Error(`${where}: "subs ${name}" names no source`);
        expectSubscriptions(source.subscriptions).toBe(lines(subs).filter((l) => l !== '(none)'));
      }
    } else if (operator) {
      const single = one(block, 'source');
      const attempts = all(block, 'attempt').map((m) => cold(m, values, error));
      if (single === undefined && attempts.length === 0) throw new Error(`${where}: give "source", "attempt" lines or "calls"`);
      const source = single !== undefined ? cold(single, values, error) : undefined;
      let n = 0;
      const input: Observable<unknown> = source ?? defer(() => attempts[Math.min(n++, attempts.length - 1)]!);
      if (result === undefined) throw new Error(`${where}: "result" is missing`);
      expectObservable(input.pipe(operator), one(block, 'unsubscribe')).toBe(result, resultValues, resultError);
      const subs = one(block, 'subs');
      if (subs !== undefined) {
        if (!source) throw new Error(`${where}: "subs" needs a single "source"`);
        expectSubscriptions(source.subscriptions).toBe(lines(subs).filter((l) => l !== '(none)'));
      }
    }
    for (const [expr, marbles] of named(block, 'expect')) {
      expectObservable(evaluate(expr, scope, where) as Observable<unknown>).toBe(marbles, resultValues);
    }
  });
}

describe('marble-docs (every diagram runs against the real operator)', () => {
  const blocks = readBlocks(DOCS);

  it('has a page with diagrams for each of the five operators', () => {
    const pages = new Set(blocks.map((b) => basename(b.file)));
    for (const page of ['retryWithBackoff.md', 'circuitBreak.md', 'reflectOnError.md', 'fallbackTo.md', 'degradeAfter.md']) {
      expect(pages.has(page), page).to.equal(true);
    }
  });

  for (const block of blocks) {
    it(`${basename(block.file)}:${block.line} ${block.title}`, () => runBlock(block));
  }
});
