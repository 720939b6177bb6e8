/**
 * Executes every ```marble block of marble-docs/*.md against the real operators in
 * TestScheduler.run: a diagram that no longer matches the code fails `npm test`.
 * The block format is documented in scripts/marbleBlocks.ts.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as t from 'io-ts';
import * as rx from 'rxjs';
import { catchError, defer, mergeMap, Observable, of, type OperatorFunction } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import * as rxheal from '../../src/index.js';
import { CircuitOpenError, HttpError, type TurnEvent } from '../../src/index.js';
import * as testing from '../../src/testing/index.js';
import { all, named, one, readBlocks, type MarbleBlock } from '../../scripts/marbleBlocks.js';

const DOCS = new URL('../../marble-docs/', import.meta.url).pathname;

/** A short text for an error, so a diagram can show which error arrived. */
function label(error: unknown): string {
  if (error instanceof CircuitOpenError) return `open(${error.breaker}, ${error.retryAfterMs})`;
  if (error instanceof HttpError) return `http ${error.status}`;
  if (error instanceof Error) return error.name;
  return String(error);
}

/**
 * What doc expressions can name: rxjs, rxheal, rxheal/testing, io-ts as `t` (tool arguments), a few
 * errors, and `delta(text)`, one text-delta event.
 */
const base: Record<string, unknown> = {
  ...rx,
  ...rxheal,
  ...testing,
  t,
  label,
  delta: (text: string): TurnEvent => ({ type: 'text-delta', text }),
  e400: new HttpError(400),
  e429: (retryAfter: string) => new HttpError(429, { 'retry-after': retryAfter }),
  e500: new HttpError(500),
  e502: new HttpError(502),
  e503: new HttpError(503),
};

/**
 * What a diagram's values and errors are compared as: errors become `{ name, message, …own fields }`
 * (chai alone compares errors by name and message only), so a `result-error` such as
 * `new AllFallbacksFailedError([e503, e502])` also checks the list it carries.
 */
function comparable(value: unknown, seen: Set<unknown> = new Set()): unknown {
  if (typeof value !== 'object' || value === null || seen.has(value)) return value;
  const inner = new Set(seen).add(value);
  if (Array.isArray(value)) return value.map((v) => comparable(v, inner));
  if (value instanceof Error) {
    const fields = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, comparable(v, inner)]));
    return { name: value.name, message: value.message, ...fields };
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, comparable(v, inner)]));
}

function docScheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => {
    expect(comparable(actual)).to.deep.equal(comparable(expected));
  });
}

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

/** Keys that assert something: a block without one would pass whatever the code does. */
const ASSERTING = /^(result|subs|expect)( |$)/;

function runBlock(block: MarbleBlock): void {
  const where = `${basename(block.file)}:${block.line}`;
  if (!block.entries.some(([key]) => ASSERTING.test(key))) throw new Error(`${where}: the block asserts nothing (give "result", "subs" or "expect")`);
  const ts = docScheduler();
  ts.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
    // the run's marble factories; pendingAt(ms) emits, at ms, how many actions wait on the virtual clock (0: no timer left behind)
    const pendingAt = (ms: number): Observable<number> => testing.pendingAt(ts, ms);
    const scope: Record<string, unknown> = { ...base, cold, hot, pendingAt };
    const ev = (key: string): unknown => {
      const expr = one(block, key);
      return expr === undefined ? undefined : evaluate(expr, scope, where);
    };
    for (const [name, expr] of named(block, 'let')) scope[name] = evaluate(expr, scope, where);
    const values = ev('values') as Record<string, unknown> | undefined;
    const error = one(block, 'error') === undefined ? base['e503'] : ev('error');
    const errors = new Map(named(block, 'error').map(([name, expr]) => [name, evaluate(expr, scope, where)]));
    const resultValues = ev('result-values') as Record<string, unknown> | undefined;
    const resultError = ev('result-error');
    const operator = ev('operator') as OperatorFunction<unknown, unknown> | undefined;
    const result = one(block, 'result');
    const calls = one(block, 'calls');
    let sources: Record<string, Observable<unknown>> = {};

    for (const [name] of errors) {
      if (calls === undefined || !named(block, 'source').some(([n]) => n === name)) throw new Error(`${where}: "error ${name}" names no source of "calls"`);
    }

    if (calls !== undefined) {
      if (!operator) throw new Error(`${where}: "calls" needs an "operator"`);
      sources = Object.fromEntries(named(block, 'source').map(([name, marbles]) => [name, cold(marbles, values, errors.has(name) ? errors.get(name) : error)]));
      const result$ = hot(calls, sources).pipe(mergeMap((source) => source.pipe(operator, catchError((e: unknown) => of(label(e))))));
      if (result !== undefined) expectObservable(result$).toBe(result, resultValues);
      else result$.subscribe();
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
    // `subs NAME`: a named source, or a `let` observable made with cold() or hot()
    for (const [name, subs] of named(block, 'subs')) {
      const target = sources[name] ?? scope[name];
      const logs = (target as { subscriptions?: unknown } | undefined)?.subscriptions;
      if (!Array.isArray(logs)) throw new Error(`${where}: "subs ${name}" names no source and no cold() or hot() observable`);
      expectSubscriptions(logs as Parameters<typeof expectSubscriptions>[0]).toBe(lines(subs).filter((l) => l !== '(none)'));
    }
    for (const [expr, marbles] of named(block, 'expect')) {
      expectObservable(evaluate(expr, scope, where) as Observable<unknown>).toBe(marbles, resultValues, resultError);
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

  it('keeps no diagram outside a marble block (every fenced block names its language)', () => {
    for (const page of readdirSync(DOCS).filter((f) => f.endsWith('.md'))) {
      let open = false;
      readFileSync(join(DOCS, page), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (!line.trim().startsWith('```')) return;
          if (!open) expect(line.trim(), `${page}:${i + 1}: a fenced block without a language (a diagram? make it a marble block)`).not.to.equal('```');
          open = !open;
        });
    }
  });

  for (const block of blocks) {
    it(`${basename(block.file)}:${block.line} ${block.title}`, () => runBlock(block));
  }
});
