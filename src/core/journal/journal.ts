/**
 * The run journal's store contract: what a run keeps so that another process can resume it. A
 * store keeps, per run, an append-only list of records (JSON data, opaque to the store: the run
 * layer versions and decodes them) and one lease — who may write the run now. Every operation is
 * a cold Observable: nothing happens until it is subscribed, and unsubscribing stops listening
 * (what a store was already sent, it still does, and the session still learns its outcome).
 *
 * The lease rules, the same in every store ({@link memoryJournal} is their reference model):
 *
 * - a claim by another holder while a lease is live is refused ({@link RunLockedError}, `'held'`),
 *   whatever it is doing; a lapsed lease (its `leaseMs` over, not renewed) or a released one
 *   admits the next claim at once; the same holder may claim its own live lease again;
 * - every claim starts a new session: the sessions of earlier claims can no longer write
 *   (`'taken'`), so two writers never both append — never a fork;
 * - a session whose lease lapsed but that nobody claimed since still writes: no one else did;
 * - `read` never takes the lease and never waits for it.
 *
 * @module
 */
import type { Observable } from 'rxjs';
import { InvalidOptionError } from '../errors/errors.js';
import { check, NonEmptyString, validateOptions } from '../errors/options.js';

/**
 * A record as a store keeps it: JSON data (null, booleans, finite numbers, strings, arrays and
 * plain objects of them), opaque to the store — the run layer gives it a version and a codec.
 *
 * @example
 * ```ts
 * const data: JournalData = { v: 1, type: 'message', message: { role: 'user', content: 'Hi' } };
 * ```
 */
export type JournalData = { readonly [key: string]: unknown };

/**
 * One record of a run, as read back: `seq` counts from 0, without gaps, in the order appended.
 *
 * @example
 * ```ts
 * const entry: JournalEntry = { seq: 0, data: { v: 1, type: 'start' } };
 * ```
 */
export interface JournalEntry {
  readonly seq: number;
  readonly data: JournalData;
}

/**
 * A claim of a run: who asks (`holder`: a process, a worker — its own name) and for how long the
 * lease lasts unless renewed.
 *
 * @example
 * ```ts
 * const claim: JournalClaim = { runId: 'order-7421', holder: `worker-${process.pid}`, leaseMs: 30_000 };
 * ```
 */
export interface JournalClaim {
  /** The run's id: 1 to 100 characters, each a letter, a digit, '_', '-' or '.', the first not '.' — the same rule in every store. */
  readonly runId: string;
  /** Who claims: a non-empty string; the same holder may claim its own live lease again. */
  readonly holder: string;
  /** How long the lease lasts from the claim (and from each renewal), in ms: > 0 and at most 2^31 − 1. */
  readonly leaseMs: number;
}

/**
 * A claimed run: what it held when claimed, and the only way to write it. Appends, renewals and
 * the release run one after another, in the order they were subscribed.
 *
 * @example
 * ```ts
 * const session = await firstValueFrom(store.claim({ runId: 'order-7421', holder: 'worker-1', leaseMs: 30_000 }));
 * const seq = await firstValueFrom(session.append({ v: 1, type: 'start' })); // 0 on a new run
 * await firstValueFrom(session.release());
 * ```
 */
export interface JournalSession {
  readonly runId: string;
  /** What the run held when it was claimed, in order (empty for a run never written). */
  readonly entries: readonly JournalEntry[];
  /**
   * Appends one record: emits its `seq` (the next one) once it is durable — fsync'd, or
   * acknowledged by the server — then completes. Errors with {@link RunLockedError} when another
   * claim took the run since this session's (`'taken'`: nothing of this record is read back as
   * written by this session after that claim), after `release` (`'released'`), or after an
   * earlier append of this session failed with its outcome unknown (`'interrupted'`: claim the
   * run again to read what was committed). Throws {@link InvalidOptionError} at once for data
   * that is not JSON data: nothing is written.
   */
  append(data: JournalData): Observable<number>;
  /** Extends the lease to `leaseMs` from now. Errors with {@link RunLockedError} (`'taken'`, `'released'`). */
  renew(): Observable<void>;
  /** Gives the run up: the next claim takes it at once. A session another claim took releases nothing (and completes). */
  release(): Observable<void>;
  /**
   * A session's last write: appends `data` and gives the run up — emits its `seq` once the record
   * is durable, as {@link JournalSession.append | append} does, and errors as it does. Where the store can, the record and
   * the release are one write (one round trip); elsewhere the release follows the record, not
   * waited for. Every session `claim` hands out has it (optional only for a store of your own).
   */
  finish?(data: JournalData): Observable<number>;
  /**
   * Whether this session's claim appended the record it was given ({@link JournalStore.claimWith}):
   * true when the run had no record and `first` is now its entry 0 (in {@link JournalSession.entries | entries}); false or
   * absent otherwise.
   */
  readonly firstWritten?: boolean;
}

/**
 * Where runs are journaled. Implementations: `memoryJournal` (`rxheal/durable`; the reference model, in
 * virtual time), `fileJournal` (`rxheal/durable`), `redisJournal` (`rxheal/redis`) and
 * `postgresJournal` (`rxheal/postgres`).
 *
 * @example
 * ```ts
 * const store: JournalStore = memoryJournal();
 * store.claim({ runId: 'r1', holder: 'me', leaseMs: 10_000 }).subscribe((session) => console.log(session.entries.length));
 * ```
 */
export interface JournalStore {
  /**
   * Takes the run's lease (refused with {@link RunLockedError} while another holder's is live),
   * then reads its entries back: emits the session once, then completes. Unsubscribed before
   * it emits, a lease it took is released. Throws {@link InvalidOptionError} at once for a bad claim.
   */
  claim(claim: JournalClaim): Observable<JournalSession>;
  /** The run's entries, without taking its lease (never waits for it): empty for a run never written. */
  read(runId: string): Observable<readonly JournalEntry[]>;
  /**
   * {@link JournalStore.claim | claim}, and when the run has no record yet, `first` appended in the same write (one round
   * trip where a claim and an append are two): the session's `firstWritten` says whether it was,
   * and its `entries` then hold it as entry 0. A run that has records is claimed as it is. Throws
   * {@link InvalidOptionError} at once for a bad claim or data that is not JSON data. Every store of
   * rxheal has it; a store of your own may leave it out (a caller then claims and appends).
   */
  claimWith?(claim: JournalClaim, first: JournalData): Observable<JournalSession>;
}

/**
 * The rule every store keys a run by, said in {@link InvalidOptionError}s: the characters a file
 * name, a Redis key and a Postgres text all take as they are.
 *
 * @example
 * ```ts
 * isRunId('order-7421'); // true
 * isRunId('a/b'); // false
 * ```
 */
export const RUN_ID_RULE = "1 to 100 characters, each a letter (A-Z, a-z), a digit, '_', '-' or '.', the first not '.'";

const RUN_ID = /^[\w-][\w.-]{0,99}$/;

/**
 * Whether `u` is a run id every store can key ({@link RUN_ID_RULE}).
 *
 * @example
 * ```ts
 * isRunId('01J9ZX3K7Q'); // true
 * ```
 */
export function isRunId(u: unknown): u is string {
  return typeof u === 'string' && RUN_ID.test(u);
}

/** A run id ({@link RUN_ID_RULE}). */
export const RunId = check(RUN_ID_RULE, isRunId);

/** A lease: ms > 0, at most what one timer holds (2^31 − 1) — a Redis `PX`, a Postgres interval alike. */
export const LeaseMs = check(
  'a number of ms > 0 and at most 2147483647',
  (u): u is number => typeof u === 'number' && Number.isFinite(u) && u > 0 && u <= 2 ** 31 - 1,
);

const claimProps = { runId: RunId, holder: NonEmptyString, leaseMs: LeaseMs };

/**
 * The one check of a claim (every store's `claim` makes it before anything happens).
 *
 * @throws {InvalidOptionError} naming `runId`, `holder` or `leaseMs`.
 * @example
 * ```ts
 * validateClaim('fileJournal.claim', { runId: 'r1', holder: 'me', leaseMs: 0 });
 * // fileJournal.claim: option "leaseMs" must be a number of ms > 0 and at most 2147483647, got 0
 * ```
 */
export function validateClaim(target: string, claim: unknown): JournalClaim {
  const o = validateOptions(target, claimProps, claim);
  for (const key of ['runId', 'holder', 'leaseMs'] as const)
    if (o[key] === undefined) throw new InvalidOptionError(target, key, undefined, claimProps[key].name);
  return o as JournalClaim;
}

/**
 * The one check of a run id given alone (`read`).
 *
 * @throws {InvalidOptionError} naming `runId`.
 * @example
 * ```ts
 * validateRunId('fileJournal.read', 'a/b'); // throws: option "runId" must be 1 to 100 characters, …
 * ```
 */
export function validateRunId(target: string, runId: unknown): string {
  if (!isRunId(runId)) throw new InvalidOptionError(target, 'runId', runId, RUN_ID_RULE);
  return runId;
}

/** What a record must be, in the words of the error. */
export const JSON_DATA = 'JSON data (null, a boolean, a finite number, a string, an array or a plain object of them)';

/** How deep a record may nest: deeper is refused rather than risking the stack of a parser. */
const MAX_DEPTH = 256;

/**
 * A record as the text a store keeps: its JSON, after checking that it is JSON data all the way
 * down — so what is read back equals what was appended (no `undefined` dropped, no `NaN` turned
 * `null`, no `Date` turned a string, no class instance flattened).
 *
 * @throws {InvalidOptionError} naming the first value that is not (`data.messages.2.at`).
 * @example
 * ```ts
 * recordText('memoryJournal.append', { v: 1, n: 2 }); // '{"v":1,"n":2}'
 * recordText('memoryJournal.append', { at: new Date() }); // throws: option "data.at" must be JSON data …, got "…"
 * ```
 */
export function recordText(target: string, data: unknown): string {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new InvalidOptionError(target, 'data', data, `a plain object of ${JSON_DATA}`);
  const known = TEXTS.get(data);
  if (known !== undefined) return known;
  // the check walks without building paths; only a record it refuses is walked again for the path of its first bad value
  if (!isJsonData(data, 0, new Set())) refuse(target, data);
  return JSON.stringify(data);
}

/** The texts of records made by {@link jsonRecord}: JSON data by construction, serialised once. */
const TEXTS = new WeakMap<object, string>();

/**
 * A value as JSON would store it — `undefined` fields dropped, `toJSON` called (a `Date` a string),
 * class instances flattened, as `JSON.stringify` does —, made once into a record that
 * {@link recordText} then neither checks nor serialises again. For a writer's own records
 * (the run's, built with optional fields); the record must not be changed afterwards.
 *
 * @throws {InvalidOptionError} when the value is not an object once serialised, or nests deeper than a record may.
 * @example
 * ```ts
 * const record = jsonRecord('durableRun', { kind: 'step', note: undefined, at: new Date(0) }); // { kind: 'step', at: '1970-01-01T00:00:00.000Z' }
 * session.append(record).subscribe();
 * ```
 */
export function jsonRecord(target: string, value: object): JournalData {
  const text = JSON.stringify(value);
  const data: unknown = text === undefined ? undefined : JSON.parse(text);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new InvalidOptionError(target, 'data', value, `a plain object of ${JSON_DATA}`);
  if (!isJsonData(data, 0, new Set())) refuse(target, data);
  TEXTS.set(data, text);
  return data as JournalData;
}

function isJsonData(value: unknown, depth: number, onPath: Set<object>): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth > MAX_DEPTH || onPath.has(value)) return false;
  onPath.add(value);
  let ok = true;
  if (Array.isArray(value)) {
    for (let i = 0; ok && i < value.length; i++) ok = isJsonData(value[i], depth + 1, onPath);
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    ok = proto === Object.prototype || proto === null;
    for (const key in value)
      if (ok && Object.prototype.hasOwnProperty.call(value, key)) ok = isJsonData((value as Record<string, unknown>)[key], depth + 1, onPath);
  }
  onPath.delete(value);
  return ok;
}

/** Throws the error naming the first value of `data` that is not JSON data (its path: `data.messages.2.at`). */
function refuse(target: string, data: object): never {
  const onPath = new Set<object>();
  const visit = (value: unknown, path: string, depth: number): void => {
    const bad = (expected = JSON_DATA): never => {
      throw new InvalidOptionError(target, path, value, expected);
    };
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
    if (typeof value === 'number') return void (Number.isFinite(value) || bad());
    if (typeof value !== 'object') return bad();
    if (depth > MAX_DEPTH) bad(`${JSON_DATA} nested at most ${MAX_DEPTH} deep`);
    if (onPath.has(value)) bad(`${JSON_DATA} without a cycle`);
    onPath.add(value);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visit(value[i], `${path}.${i}`, depth + 1);
    } else {
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) bad();
      for (const key of Object.keys(value)) visit((value as Record<string, unknown>)[key], `${path}.${key}`, depth + 1);
    }
    onPath.delete(value);
  };
  visit(data, 'data', 0);
  throw new InvalidOptionError(target, 'data', data, JSON_DATA);
}

/**
 * A stored record's text as data, or why it is not a record (not JSON, not a plain object): what
 * each store reads back, then reports as `JournalCorruptError` with its own location.
 *
 * @example
 * ```ts
 * parseRecord('{"v":1}'); // { v: 1 }
 * parseRecord('[1]'); // 'not a JSON object'
 * ```
 */
export function parseRecord(text: string): JournalData | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JournalData) : 'not a JSON object';
}
