/**
 * (t) Several deployments of one model under a 429 storm, in virtual time: 1 000 multi-turn
 * conversations over 3 members of one model, the primary in a storm of 429s (`retry-after`
 * 2–20 s) for a stretch of the run, side by side in the same run:
 *
 * - **rxheal pool**: `modelPool` with its defaults (round-robin placement, affinity on the
 *   conversation's `promptCacheKey`, the default wait-or-move rule at the members' prices,
 *   `maxWaitMs` 3 s, return after a probe);
 * - **fixed chain**: `fallbackModel([primary, secondary, tertiary])`: every call tries the primary
 *   first, a 429 falls over to the next at once (LiteLLM's router with `fallbacks`, most agent SDKs);
 * - **simple-shuffle**: each call tries the members in a random order (LiteLLM's default routing
 *   strategy), a 429 falling over to the next.
 *
 * Every conversation sends the same requests to all three (the same `promptCacheKey`: its id).
 * Each member is rxheal/server's prompt cache model (`PromptCache`: a prefix per key, a 5-minute
 * TTL refreshed on each read; Anthropic-style: what is not read up to the breakpoint is written), and
 * answers after 200 ms plus 50 ms per 1 000 input tokens not read from its cache (the server's
 * `uncachedMsPer1kTokens` rule: a cold prefix is slower to prefill). Prices: $3 / M input, $0.30 cached, $3.75 cache write, $15 output.
 *
 * Rows: cost (total $), cache hit rate (cached ÷ input tokens), p99 time to first token, success
 * rate, and the hit rate of the turns that start after the storm's end, one turn after it
 * (each conversation's first turn after the storm excluded: the turn the pool's return happens on).
 */
import { Observable, timer, type SchedulerLike } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { HttpError } from '../../src/core/errors/errors.js';
import type { Message, TurnEvent, Usage } from '../../src/core/events/events.js';
import { streamModel, type Model, type ModelRequest } from '../../src/core/model/model.js';
import { costUsd, type ModelPrice } from '../../src/core/money/prices.js';
import { fallbackModel } from '../../src/sources/fallbackModel.js';
import { modelPool, type ModelPoolOptions } from '../../src/sources/modelPool.js';
import { PromptCache, uncachedDelayMs } from '../../src/server/providerSide.js';
import { percentile, printFigure, type Row, type Verdict } from '../lib/harness.js';
import { Rng } from '../../spec/soak/seeded.js';

export const FIGURE = 't. 3 deployments, 429 storm on the primary: pool vs fixed chain vs shuffle';

const PRICE: ModelPrice = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 };
const MEMBERS = ['primary', 'secondary', 'tertiary'] as const;
const TTL_MS = 300_000;

/** The scenario: how many conversations, how long, and the storm. */
export interface PoolScenario {
  readonly conversations: number;
  /** Turns per conversation. */
  readonly turns: number;
  /** Conversations start uniformly over this long, in ms. */
  readonly spreadMs: number;
  /** Between a turn's answer and the next question, uniform in this range, in ms. */
  readonly thinkMs: readonly [number, number];
  /** The storm: from, to (ms), and each block's retry-after (s) and each open spell's mean (ms). */
  readonly storm: { readonly from: number; readonly to: number; readonly retryAfterS: readonly [number, number]; readonly openMeanMs: number };
  readonly seed: number;
  /** Time to first token grows by this much per 1 000 input tokens not read from the cache, in ms. */
  readonly uncachedMsPer1kTokens: number;
}

export const SCENARIO: PoolScenario = {
  conversations: 1_000,
  turns: 8,
  spreadMs: 20 * 60_000,
  thinkMs: [15_000, 90_000],
  storm: { from: 5 * 60_000, to: 25 * 60_000, retryAfterS: [2, 20], openMeanMs: 10_000 },
  seed: 7,
  uncachedMsPer1kTokens: 50,
};

/** A seeded stream of numbers in [0, 1) (the soaks' mulberry32). */
const random = (seed: number): (() => number) => new Rng(seed).next;

/** The primary's blocked spells: [from, to) in ms, alternating with open spells through the storm. */
function stormBlocks(s: PoolScenario): [number, number][] {
  const rnd = random(s.seed * 31 + 1);
  const blocks: [number, number][] = [];
  let t = s.storm.from;
  while (t < s.storm.to) {
    const [lo, hi] = s.storm.retryAfterS;
    const blocked = Math.round((lo + rnd() * (hi - lo)) * 1000);
    blocks.push([t, t + blocked]);
    t += blocked + Math.round(-Math.log(1 - rnd()) * s.storm.openMeanMs);
  }
  return blocks;
}

/** What one turn was: its cost, tokens, time to first token, when it started, and whether it answered. */
interface TurnRecord {
  readonly conversation: number;
  readonly startedAt: number;
  readonly ok: boolean;
  readonly usd: number;
  readonly input: number;
  readonly cached: number;
  readonly ttftMs: number;
}

/** A member: rxheal/server's prompt cache model on the scheduler's clock, a 429 while the storm blocks it (the primary). */
function member(id: string, scheduler: SchedulerLike, blocks: readonly [number, number][], uncachedMsPer1kTokens: number): Model {
  const cache = new PromptCache({ ttlMs: TTL_MS, now: () => scheduler.now() });
  let next = 0;
  return {
    id,
    stream: (request: ModelRequest) =>
      new Observable<TurnEvent>((subscriber) => {
        const now = scheduler.now();
        while (next < blocks.length && blocks[next]![1] <= now) next++;
        const block = blocks[next];
        if (block && block[0] <= now) {
          const retryAfter = Math.ceil((block[1] - now) / 1000);
          const t = timer(50, scheduler).subscribe(() => subscriber.error(new HttpError(429, { 'retry-after': String(retryAfter) })));
          return () => t.unsubscribe();
        }
        // the breakpoint on the last message: everything before the answer cached (Anthropic-style)
        const parts = request.messages.map((m) => m.content);
        const { read, write } = cache.use(request.promptCacheKey ?? '', parts, parts.length);
        const input = Math.ceil(parts.reduce((n, p) => n + p.length, 0) / 4);
        const usage: Usage = {
          inputTokens: input,
          outputTokens: 300,
          cachedInputTokens: Math.min(read, input),
          cacheWriteTokens: Math.min(write, input - Math.min(read, input)),
        };
        const t = timer(200 + uncachedDelayMs(uncachedMsPer1kTokens, input, usage.cachedInputTokens!), scheduler).subscribe(() => {
          subscriber.next({ type: 'text-delta', text: ANSWER });
          subscriber.next({ type: 'finish', reason: 'stop', usage });
          subscriber.complete();
        });
        return () => t.unsubscribe();
      }),
  };
}

/** 300 tokens of answer, 100 of question, 20 000 of instructions and documents: a long agent prefix. */
const ANSWER = 'a'.repeat(1_200);
const question = (c: number, k: number): string => `conversation ${c}, question ${k}: `.padEnd(400, 'q');
const SYSTEM = 's'.repeat(80_000);

type Contender = 'rxheal pool' | 'fixed chain' | 'simple-shuffle';

/** Runs the scenario for one contender in virtual time; every turn's record. */
function simulate(contender: Contender, s: PoolScenario, pool: ModelPoolOptions = {}): TurnRecord[] {
  const ts = new TestScheduler(() => undefined);
  const records: TurnRecord[] = [];
  ts.run(() => {
    const scheduler = ts;
    const blocks = stormBlocks(s);
    const members = MEMBERS.map((id, i) => member(id, scheduler, i === 0 ? blocks : [], s.uncachedMsPer1kTokens));
    const rnd = random(s.seed);
    const shuffles = [
      [0, 1, 2],
      [0, 2, 1],
      [1, 0, 2],
      [1, 2, 0],
      [2, 0, 1],
      [2, 1, 0],
    ].map((order) => fallbackModel(order.map((i) => members[i]!)));
    const model: Model =
      contender === 'rxheal pool'
        ? modelPool(members, { prices: Object.fromEntries(MEMBERS.map((id) => [id, PRICE])), scheduler, ...pool })
        : contender === 'fixed chain'
          ? fallbackModel(members)
          : { id: 'shuffle', stream: (request, context) => streamModel(shuffles[Math.floor(rnd() * 6)]!, request, context) };
    const conversation = (c: number): void => {
      const messages: Message[] = [{ role: 'system', content: SYSTEM }];
      const turn = (k: number): void => {
        if (k >= s.turns) return;
        messages.push({ role: 'user', content: question(c, k) });
        const startedAt = scheduler.now();
        let first: number | undefined;
        let usage: Usage | undefined;
        streamModel(model, { messages: [...messages], tools: [], promptCacheKey: `c${c}` }, { scheduler }).subscribe({
          next: (e) => {
            if (e.type === 'text-delta' && first === undefined) first = scheduler.now();
            if (e.type === 'finish') usage = e.usage;
          },
          error: () => {
            records.push({ conversation: c, startedAt, ok: false, usd: 0, input: 0, cached: 0, ttftMs: scheduler.now() - startedAt });
            next(k);
          },
          complete: () => {
            const u = usage!;
            records.push({
              conversation: c,
              startedAt,
              ok: true,
              usd: costUsd(PRICE, u),
              input: u.inputTokens,
              cached: u.cachedInputTokens ?? 0,
              ttftMs: first! - startedAt,
            });
            messages.push({ role: 'assistant', content: ANSWER });
            next(k);
          },
        });
      };
      const next = (k: number): void => {
        const [lo, hi] = s.thinkMs;
        timer(Math.round(lo + rnd() * (hi - lo)), scheduler).subscribe(() => turn(k + 1));
      };
      turn(0);
    };
    for (let c = 0; c < s.conversations; c++) timer(Math.round(rnd() * s.spreadMs), scheduler).subscribe(() => conversation(c));
  });
  return records;
}

/** One contender's figures. */
interface PoolFigures {
  readonly usd: number;
  readonly hitRate: number;
  readonly p99TtftMs: number;
  readonly success: number;
  /** The hit rate of turns one turn after the storm's end (each conversation's first turn after it excluded). */
  readonly hitAfterRecovery: number;
}

function figuresOf(records: readonly TurnRecord[], s: PoolScenario): PoolFigures {
  const ok = records.filter((r) => r.ok);
  const sum = (xs: readonly TurnRecord[], f: (r: TurnRecord) => number): number => xs.reduce((n, r) => n + f(r), 0);
  const seen = new Set<number>();
  const after: TurnRecord[] = [];
  for (const r of [...ok].sort((a, b) => a.startedAt - b.startedAt)) {
    if (r.startedAt < s.storm.to) continue;
    if (!seen.has(r.conversation)) seen.add(r.conversation);
    else after.push(r);
  }
  return {
    usd: sum(ok, (r) => r.usd),
    hitRate: sum(ok, (r) => r.cached) / sum(ok, (r) => r.input),
    p99TtftMs: percentile(
      ok.map((r) => r.ttftMs),
      99,
    ),
    success: ok.length / records.length,
    hitAfterRecovery: after.length === 0 ? NaN : sum(after, (r) => r.cached) / sum(after, (r) => r.input),
  };
}

/**
 * The figure: each contender's rows (the pool twice: with its defaults — `maxWaitMs` 3 s — and
 * with `maxWaitMs: 10 000`, which keeps more caches warm and waits longer), the floor (the
 * same conversations without a storm: every turn after the first on a warm cache — what no router
 * can beat), and the verdicts against the targets.
 */
export function poolFigure(s: PoolScenario = SCENARIO): { rows: Row[]; verdicts: Verdict[] } {
  const calm: PoolScenario = { ...s, storm: { ...s.storm, to: s.storm.from } };
  const all = {
    'rxheal pool': figuresOf(simulate('rxheal pool', s), s),
    'rxheal pool (maxWaitMs 10 s)': figuresOf(simulate('rxheal pool', s, { maxWaitMs: 10_000 }), s),
    'fixed chain': figuresOf(simulate('fixed chain', s), s),
    'simple-shuffle': figuresOf(simulate('simple-shuffle', s), s),
  };
  const floor = figuresOf(simulate('fixed chain', calm), calm);
  const fixed = all['fixed chain'];
  const ratio = (x: number): Row['ratio'] => ({ to: 'fixed chain', median: x / fixed.usd, min: x / fixed.usd, max: x / fixed.usd });
  const rows: Row[] = [];
  for (const [name, f] of Object.entries(all)) {
    rows.push({ figure: FIGURE, name: `${name}: cost`, unit: '$', value: Math.round(f.usd * 100) / 100, ratio: ratio(f.usd) });
    rows.push({ figure: FIGURE, name: `${name}: cache hit rate`, unit: '%', value: Math.round(f.hitRate * 1000) / 10 });
    rows.push({ figure: FIGURE, name: `${name}: hit rate one turn after recovery`, unit: '%', value: Math.round(f.hitAfterRecovery * 1000) / 10 });
    rows.push({ figure: FIGURE, name: `${name}: p99 time to first token`, unit: 'ms', value: Math.round(f.p99TtftMs) });
    rows.push({ figure: FIGURE, name: `${name}: success rate`, unit: '%', value: Math.round(f.success * 1000) / 10 });
  }
  rows.push({
    figure: FIGURE,
    name: 'floor (no storm: every turn after the first warm)',
    unit: '$',
    value: Math.round(floor.usd * 100) / 100,
    ratio: ratio(floor.usd),
    note: 'what no router can go below',
  });
  const pool = all['rxheal pool'];
  const long = all['rxheal pool (maxWaitMs 10 s)'];
  const x = (n: number): string => `${(n / fixed.usd).toFixed(3)}×`;
  const verdicts: Verdict[] = [
    {
      figure: FIGURE,
      target: 'pool cost ≤ 0.6× the fixed chain’s',
      measured: `${x(pool.usd)} (maxWaitMs 10 s: ${x(long.usd)}; the floor: ${x(floor.usd)})`,
      met: pool.usd <= 0.6 * fixed.usd,
    },
    {
      figure: FIGURE,
      target: 'pool hit rate ≥ 95 % one turn after the primary’s recovery',
      measured: `${(pool.hitAfterRecovery * 100).toFixed(1)} %`,
      met: pool.hitAfterRecovery >= 0.95,
    },
    {
      figure: FIGURE,
      target: 'pool p99 time to first token ≤ the fixed chain’s',
      measured: `${Math.round(pool.p99TtftMs)} ms vs ${Math.round(fixed.p99TtftMs)} ms`,
      met: pool.p99TtftMs <= fixed.p99TtftMs,
    },
    {
      figure: FIGURE,
      target: 'equal success rate',
      measured: `${(pool.success * 100).toFixed(1)} % vs ${(fixed.success * 100).toFixed(1)} %`,
      met: pool.success >= fixed.success,
    },
  ];
  return { rows, verdicts };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows, verdicts } = poolFigure();
  printFigure(rows, verdicts, 3);
}
