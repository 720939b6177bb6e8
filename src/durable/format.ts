/**
 * The file journal's format, and the one reader of it. A journal file is an 8-byte magic
 * (`RXHEALJ` and the format's version, 1) and then records, each framed as
 *
 *     u32 LE  body length
 *     u32 LE  CRC-32 of the body
 *     u32 LE  CRC-32 of the 8 bytes before it (the header's own check: a corrupt length is told
 *             apart from a record cut short)
 *     body    UTF-8 JSON: [generation, seq, data] — an entry — or [generation] — a claim
 *
 * CRC-32 is Node's `zlib.crc32`. Records are only ever appended (`O_APPEND`), each fsync'd before
 * the append that wrote it says so.
 *
 * Generations fence off a former holder: each claim takes the next lease generation and appends
 * its claim record before it reads the run; from a claim record on, only entries of that
 * generation count — an entry of an older one (a holder whose lease lapsed, writing after another
 * process claimed the run) is skipped, and the holder that wrote it is told it lost the run. So no
 * reader ever sees a record that is later taken back, and two writers never both count.
 *
 * What the reader makes of a bad record: at the end of the file — fewer bytes than its header or
 * its body needs, a header that is only zeros, or a body whose checksum fails and which ends the
 * file — it is a record torn by a crash while it was written, never committed: dropped (and the
 * claimer truncates the file back to the last whole record before it writes). Anywhere else, or
 * a checksum that holds on a body that is not a record, it is a {@link JournalCorruptError} naming
 * the file and the record's offset: nothing after it is read as the run.
 *
 * @module
 */
/// <reference types="node" />
import { crc32 } from 'node:zlib';
import { JournalCorruptError } from '../core/journal/errors.js';
import type { JournalData, JournalEntry } from '../core/journal/journal.js';

/** What begins a journal file: `RXHEALJ`, then the format's version. */
const MAGIC = Buffer.from('RXHEALJ', 'latin1');
/** The version this rxheal writes and reads. */
export const FORMAT_VERSION = 1;
/** The file's first bytes: the magic and {@link FORMAT_VERSION}. */
export const FILE_HEADER = Buffer.concat([MAGIC, Buffer.from([FORMAT_VERSION])]);
const HEADER = 12;

/**
 * One record, framed: header and body, ready for one `write`.
 *
 * @example
 * ```ts
 * frame('[3,0,{"v":1}]'); // a Buffer of 12 + 13 bytes
 * ```
 */
export function frame(body: string): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  const out = Buffer.allocUnsafe(HEADER + bytes.length);
  out.writeUInt32LE(bytes.length, 0);
  out.writeUInt32LE(crc32(bytes), 4);
  out.writeUInt32LE(crc32(out.subarray(0, 8)), 8);
  bytes.copy(out, HEADER);
  return out;
}

/** An entry's body: `[generation, seq, data]`, the data already JSON text. */
export const entryBody = (generation: number, seq: number, text: string): string => `[${generation},${seq},${text}]`;
/** A claim's body: `[generation]`. */
export const claimBody = (generation: number): string => `[${generation}]`;

/** What a file holds, read as a run. */
export interface Scan {
  /** The run's entries: every entry of each generation up to the next claim, in order. */
  readonly entries: JournalEntry[];
  /** The newest claim's generation (0: none). */
  readonly generation: number;
  /** The offset after the last whole record (the file's length unless its tail is torn). */
  readonly end: number;
  /** Whether bytes after `end` are a torn record. */
  readonly torn: boolean;
}

const isZeros = (bytes: Buffer): boolean => bytes.every((b) => b === 0);
const isCount = (u: unknown): u is number => Number.isSafeInteger(u) && (u as number) >= 0;

/**
 * The one reader of a journal file (its whole content, `path` for the errors).
 *
 * @throws {JournalCorruptError} for a file that is not a journal of this format, or a bad record before the end.
 * @example
 * ```ts
 * const { entries, end, torn } = scan('/var/runs/r1/journal', await readFile('/var/runs/r1/journal'));
 * ```
 */
export function scan(path: string, file: Buffer): Scan {
  const fail = (reason: string, offset?: number): never => {
    throw new JournalCorruptError('file', path, reason, offset === undefined ? {} : { offset });
  };
  if (file.length < FILE_HEADER.length || !file.subarray(0, MAGIC.length).equals(MAGIC))
    fail(`not an rxheal journal (it does not begin with ${JSON.stringify(MAGIC.toString('latin1'))})`, 0);
  const version = file[MAGIC.length]!;
  if (version !== FORMAT_VERSION) fail(`written in format ${version}, which this rxheal does not read (it reads format ${FORMAT_VERSION})`, MAGIC.length);
  const entries: JournalEntry[] = [];
  let generation = 0;
  let at = FILE_HEADER.length;
  const torn = (): Scan => ({ entries, generation, end: at, torn: true });
  while (at < file.length) {
    if (file.length - at < HEADER) return torn();
    const length = file.readUInt32LE(at);
    if (crc32(file.subarray(at, at + 8)) !== file.readUInt32LE(at + 8))
      return isZeros(file.subarray(at)) ? torn() : fail("the record's header checksum does not match", at);
    const end = at + HEADER + length;
    if (end > file.length) return torn();
    const body = file.subarray(at + HEADER, end);
    if (crc32(body) !== file.readUInt32LE(at + 4)) return end === file.length ? torn() : fail("the record's checksum does not match", at);
    let record: unknown;
    try {
      record = JSON.parse(body.toString('utf8'));
    } catch {
      fail('the record is not JSON', at);
    }
    const fields = Array.isArray(record) ? (record as unknown[]) : [];
    if (!isCount(fields[0]) || (fields.length !== 1 && fields.length !== 3)) fail('the record is not a journal record', at);
    const [gen, seq, data] = fields as [number, unknown, unknown];
    if (fields.length === 1) generation = Math.max(generation, gen);
    else if (gen === generation) {
      if (seq !== entries.length) fail(`the record's seq is ${String(seq)} where ${entries.length} was next`, at);
      if (typeof data !== 'object' || data === null || Array.isArray(data)) fail("the record's data is not a JSON object", at);
      entries.push({ seq: entries.length, data: data as JournalData });
    } else if (gen > generation) fail(`an entry of generation ${gen} before that generation's claim`, at);
    // else: an entry of an older generation after a newer claim — a former holder's, fenced off
    at = end;
  }
  return { entries, generation, end: at, torn: false };
}
