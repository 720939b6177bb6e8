/**
 * (p) What committing one step costs: a journal append — a record of ~1 kB, the size of an
 * assistant message with a tool call — from its subscription to its `seq`, sequential, on each
 * store on this machine: the memory journal (the floor), the file journal (written and fsync'd on
 * the local disk, under the OS's temp folder), Redis on loopback (a redis-server of its own: as
 * the specs start it, no persistence; and again with `appendfsync always`, every write fsync'd
 * before Redis answers), Postgres on loopback (Debian's, started as the specs start it: fsync on,
 * `synchronous_commit` on). Median and p99 of every append, over `reps` runs of `n` appends,
 * interleaved store by store within each repetition; the file journal's cost also as the paired
 * ratio of its median to the memory journal's in the same repetition. Then a claim of a 100-entry
 * run on the file journal: the store's share of a resume (verdict: ≤ 20 ms median). And what the
 * effect ledger adds to one guarded tool call (`effectLedger(store).guard`, a tool that answers at
 * once): one write before the tool (the key's claim with `started`, `claimWith`) and one after
 * (`done` with the release, `finish`), beside the same store without those two (a claim, then
 * `started` and `done` appended: three round trips), interleaved rep by rep. A store whose
 * server is not installed is skipped with a row saying so. Alone: `npx tsx bench/figures/journal.ts`.
 */
import { performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import * as t from 'io-ts';
import { firstValueFrom, lastValueFrom, map, of } from 'rxjs';
import type { JournalSession, JournalStore } from '../../src/core/journal/journal.js';
import { effectLedger, fileJournal, memoryJournal } from '../../src/durable/index.js';
import { defineTool } from '../../src/sources/tool.js';
import { redisJournal } from '../../src/redis/index.js';
import { postgresJournal } from '../../src/postgres/index.js';
import { findProgram } from '../../spec/support/systemPackage.js';
import { startRedis, type RedisServer } from '../../spec/support/redisServer.js';
import { postgresProgram, startPostgres, type PostgresServer } from '../../spec/support/postgresServer.js';
import { printFigure, stats, type Row, type Verdict } from '../lib/harness.js';

export const FIGURE = 'p. journal commit per step';

/** A record of ~1 kB: an assistant message with one tool call. */
const RECORD = {
  v: 1,
  type: 'message',
  message: {
    role: 'assistant',
    content: 'Let me look that up. '.repeat(30),
    toolCalls: [{ id: 'call_01', name: 'search_flights', args: { from: 'LIS', to: 'BER', date: '2026-06-01', passengers: 2 } }],
  },
};

const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** `n` calls of a tool that answers at once, each under the effect ledger on `store` with a fresh key, each timed (ms). */
async function guardedCalls(store: JournalStore, n: number, tag: string): Promise<number[]> {
  const ledger = effectLedger(store, { holder: 'bench' });
  const tool = defineTool({ name: 'charge', description: 'bench', args: t.unknown, execute: () => ['ok'] });
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const key = `bench-${tag}-${process.pid}-${i}-${Math.random().toString(36).slice(2)}/1/0/charge`;
    const call = {
      key,
      runId: 'bench',
      tool,
      call: { id: `c${i}`, name: 'charge', args: { amount: i } },
      hub: undefined,
      onUnknownOutcome: 'tell-model' as const,
    };
    const t0 = performance.now();
    await lastValueFrom(ledger.guard(call, of('ok')));
    times.push(performance.now() - t0);
  }
  return times;
}

/** `store` as a store of one's own without `claimWith` and sessions' `finish`: what the ledger does then (a claim, two appends). */
function withoutOneWrite(store: JournalStore): JournalStore {
  const plain = (session: JournalSession): JournalSession => ({
    runId: session.runId,
    entries: session.entries,
    append: (data) => session.append(data),
    renew: () => session.renew(),
    release: () => session.release(),
  });
  return { claim: (claim) => store.claim(claim).pipe(map(plain)), read: (runId) => store.read(runId) };
}

/** `n` appends to a fresh run of `store`, each timed (ms). */
async function appends(store: JournalStore, n: number, tag: string): Promise<number[]> {
  const runId = `bench-${tag}-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const session = await firstValueFrom(store.claim({ runId, holder: 'bench', leaseMs: 600_000 }));
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await firstValueFrom(session.append(RECORD));
    times.push(performance.now() - t);
  }
  await lastValueFrom(session.release(), { defaultValue: undefined });
  return times;
}

export async function journalCommit(options: { n: number; reps: number }): Promise<{ rows: Row[]; verdicts: Verdict[] }> {
  const rows: Row[] = [];
  const verdicts: Verdict[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-bench-journal-'));
  const closers: (() => Promise<unknown>)[] = [async () => rmSync(dir, { recursive: true, force: true })];
  const stores: [string, JournalStore, string][] = [
    ['memory journal', memoryJournal(), 'in this process: the floor'],
    ['file journal', fileJournal({ dir }), `one fsync'd O_APPEND write per append (${tmpdir()}, local disk)`],
  ];
  try {
    const redisProgram = findProgram({ name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server' });
    if (redisProgram === undefined)
      rows.push({ figure: FIGURE, name: 'Redis: skipped, redis-server not found (apt-get install redis-server)', unit: '', value: 0 });
    else {
      for (const fsync of [false, true]) {
        const server: RedisServer = await startRedis(redisProgram);
        closers.push(() => server.stop());
        if (fsync) {
          await server.command('CONFIG SET appendonly yes');
          await server.command('CONFIG SET appendfsync always');
        }
        const client = await createClient({ url: server.url, disableOfflineQueue: true })
          .on('error', () => undefined)
          .connect();
        closers.unshift(() => client.quit());
        stores.push([
          fsync ? 'Redis, appendfsync always (loopback)' : 'Redis (loopback)',
          redisJournal(client),
          fsync
            ? 'node-redis; every write in the AOF, fsync’d before Redis answers'
            : 'node-redis; acknowledged in memory (no persistence, as the specs start it)',
        ]);
      }
    }
    const pgProgram = findProgram(postgresProgram());
    if (pgProgram === undefined)
      rows.push({ figure: FIGURE, name: 'Postgres: skipped, PostgreSQL not found (apt-get install postgresql)', unit: '', value: 0 });
    else {
      const server: PostgresServer = await startPostgres(pgProgram);
      closers.push(() => server.stop());
      stores.push(['Postgres (loopback)', postgresJournal(server.pool(2)), 'pg Pool; each INSERT committed (fsync on, synchronous_commit on)']);
    }
    // warm-up: tables made, scripts loaded, clocks probed, JIT warm
    for (const [name, store] of stores) await appends(store, 50, `warm-${name.replace(/\W/g, '')}`);
    const all = new Map<string, number[]>(stores.map(([name]) => [name, []]));
    const medians = new Map<string, number[]>(stores.map(([name]) => [name, []]));
    for (let rep = 0; rep < options.reps; rep++)
      for (const [name, store] of stores) {
        const times = await appends(store, options.n, `${rep}`);
        all.get(name)!.push(...times);
        medians.get(name)!.push(stats(times).median);
      }
    for (const [name, , note] of stores) {
      const sorted = [...all.get(name)!].sort((a, b) => a - b);
      const m = stats(medians.get(name)!);
      const p99 = quantile(sorted, 0.99);
      const ratio = name === 'memory journal' ? undefined : stats(medians.get(name)!.map((x, i) => x / medians.get('memory journal')![i]!));
      rows.push({
        figure: FIGURE,
        name: `append, ${name}`,
        unit: 'ms',
        value: quantile(sorted, 0.5),
        min: m.min,
        max: m.max,
        ...(ratio === undefined ? {} : { ratio: { to: 'memory journal', median: ratio.median, min: ratio.min, max: ratio.max } }),
        note: `median of ${sorted.length} appends; p99 ${p99.toFixed(3)} ms; min–max: the ${options.reps} runs' medians; ${note}`,
      });
    }
    // what the effect ledger adds to one non-idempotent tool call, per store: as the store is (one
    // write before the tool, claimWith; one after, finish), and beside it, interleaved rep by rep,
    // the same store without those two (a claim, then two appends: a store of your own that lacks them)
    for (const [name, store, note] of stores) {
      const separate = withoutOneWrite(store);
      await guardedCalls(store, 20, 'warm');
      await guardedCalls(separate, 20, 'warm-separate');
      const times: number[] = [];
      const separateTimes: number[] = [];
      for (let rep = 0; rep < options.reps; rep++) {
        times.push(...(await guardedCalls(store, Math.ceil(options.n / 5), `${rep}`)));
        separateTimes.push(...(await guardedCalls(separate, Math.ceil(options.n / 5), `${rep}-separate`)));
      }
      const sorted = [...times].sort((a, b) => a - b);
      const sortedSeparate = [...separateTimes].sort((a, b) => a - b);
      const median = quantile(sorted, 0.5);
      const medianSeparate = quantile(sortedSeparate, 0.5);
      rows.push({
        figure: FIGURE,
        name: `guarded tool call (effect ledger), ${name}`,
        unit: 'ms',
        value: median,
        ratio: {
          to: 'the same store without claimWith and finish',
          median: median / medianSeparate,
          min: median / medianSeparate,
          max: median / medianSeparate,
        },
        note:
          `added latency: median of ${sorted.length} calls of a tool that answers at once (one write before: the claim with started; one after: done with the release); ` +
          `p99 ${quantile(sorted, 0.99).toFixed(3)} ms; without claimWith and finish (a claim, started, done: three round trips, two before the tool) ` +
          `${medianSeparate.toFixed(3)} ms median, p99 ${quantile(sortedSeparate, 0.99).toFixed(3)} ms, interleaved rep by rep; ${note}`,
      });
    }
    // the store's share of a resume: claiming (reading back) a run of 100 entries
    const file = stores[1]![1];
    const runId = `bench-resume-${process.pid}`;
    const writer = await firstValueFrom(file.claim({ runId, holder: 'writer', leaseMs: 600_000 }));
    for (let i = 0; i < 100; i++) await firstValueFrom(writer.append(RECORD));
    await lastValueFrom(writer.release(), { defaultValue: undefined });
    const claims: number[] = [];
    for (let i = 0; i < Math.max(20, options.reps * 10); i++) {
      const t = performance.now();
      const session = await firstValueFrom(file.claim({ runId, holder: `reader-${i}`, leaseMs: 600_000 }));
      claims.push(performance.now() - t);
      await lastValueFrom(session.release(), { defaultValue: undefined });
    }
    const c = stats(claims);
    rows.push({
      figure: FIGURE,
      name: 'claim of a 100-entry run, file journal',
      unit: 'ms',
      value: c.median,
      min: c.min,
      max: c.max,
      note: `${claims.length} claims: the lease taken (link + fsync of the folder), the claim record appended and fsync'd, 100 entries read and checked`,
    });
    verdicts.push({
      figure: 'p',
      target: 'claiming a 100-entry run on the file journal (the store’s share of a resume) ≤ 20 ms median',
      measured: `${c.median.toFixed(2)} ms`,
      met: c.median <= 20,
    });
  } finally {
    for (const close of closers) await close().catch(() => undefined);
  }
  return { rows, verdicts };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const quick = process.env['BENCH_QUICK'] === '1';
  const { rows, verdicts } = await journalCommit(quick ? { n: 200, reps: 3 } : { n: 500, reps: 7 });
  printFigure(rows, verdicts, 3);
  process.exit(0);
}
