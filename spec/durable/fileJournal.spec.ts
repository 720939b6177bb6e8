/**
 * fileJournal: the store contract (spec/support/journalContract.ts) through two instances on one
 * folder, then the file itself — torn tails dropped and cut off, a bad record elsewhere a
 * JournalCorruptError naming the file and offset, files that are not rxheal's or of a newer
 * format, ids that differ in case, and a former holder's records fenced off by generation.
 */
import { expect } from 'chai';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileJournal } from '../../src/durable/index.js';
import { entryBody, frame } from '../../src/durable/format.js';
import type { JournalStore } from '../../src/core/journal/journal.js';
import { corrupt, failure, freshRun, journalContract, locked } from '../support/journalContract.js';
import { ledgerContract } from '../support/ledgerContract.js';
import { refusal } from '../support/refusal.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'rxheal-journal-'));
  dirs.push(dir);
  return dir;
};
after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

journalContract('fileJournal', async () => {
  const dir = tempDir();
  return { a: fileJournal({ dir }), b: fileJournal({ dir }) };
});
ledgerContract('fileJournal', async () => {
  const dir = tempDir();
  return { a: fileJournal({ dir }), b: fileJournal({ dir }) };
});

/** Flips bits of one byte of `bytes`. */
const flip = (bytes: Buffer, at: number, mask = 0x01): void => void bytes.writeUInt8(bytes.readUInt8(at) ^ mask, at);
const get = <T>(o: import('rxjs').Observable<T>): Promise<T> => firstValueFrom(o);
const done = (o: import('rxjs').Observable<unknown>): Promise<unknown> => lastValueFrom(o, { defaultValue: undefined });

describe('fileJournal: the file', () => {
  let dir: string;
  let store: JournalStore;
  beforeEach(() => {
    dir = tempDir();
    store = fileJournal({ dir });
  });

  /** A run of `n` entries, released; its journal's path and the offset where each record begins. */
  async function written(runId: string, n: number): Promise<{ path: string; size: number }> {
    const session = await get(store.claim({ runId, holder: 'writer', leaseMs: 60_000 }));
    for (let i = 0; i < n; i++) await get(session.append({ i, pad: 'p'.repeat(i * 10) }));
    await done(session.release());
    const path = join(
      dir,
      runId.replace(/[A-Z]/g, (c) => `^${c.toLowerCase()}`),
      'journal',
    );
    return { path, size: statSync(path).size };
  }

  /** The offsets of the records in a journal file (after its 8-byte header). */
  const offsets = (path: string): number[] => {
    const bytes = readFileSync(path);
    const out: number[] = [];
    for (let at = 8; at < bytes.length; at += 12 + bytes.readUInt32LE(at)) out.push(at);
    return out;
  };

  it('a journal is its header and framed records: [generation] for each claim, [generation, seq, data] for each entry', async () => {
    const runId = freshRun();
    const { path } = await written(runId, 2);
    const bytes = readFileSync(path);
    expect(bytes.subarray(0, 8).toString('latin1')).to.equal('RXHEALJ\x01');
    const bodies = offsets(path).map((at) => bytes.subarray(at + 12, at + 12 + bytes.readUInt32LE(at)).toString('utf8'));
    expect(bodies).to.deep.equal(['[1]', '[1,0,{"i":0,"pad":""}]', `[1,1,{"i":1,"pad":"${'p'.repeat(10)}"}]`]);
  });

  for (const [kind, tear] of [
    ['fewer bytes than a header', (path: string) => appendFileSync(path, Buffer.from([1, 2, 3, 4, 5]))],
    ['a header whose body is cut short', (path: string) => appendFileSync(path, frame(entryBody(2, 3, '{"cut":true}')).subarray(0, 20))],
    [
      'a last body whose checksum fails',
      (path: string) => {
        const whole = frame(entryBody(2, 3, '{"bad":true}'));
        flip(whole, whole.length - 2, 0xff);
        appendFileSync(path, whole);
      },
    ],
    ['a header of zeros (a power cut after the length grew)', (path: string) => appendFileSync(path, Buffer.alloc(4096))],
  ] as const) {
    it(`a torn last record — ${kind} — is dropped by read and cut off by the next claim`, async () => {
      const runId = freshRun();
      const { path, size } = await written(runId, 3);
      tear(path);
      const read = await get(store.read(runId));
      expect(read.map((e) => e.data['i'])).to.deep.equal([0, 1, 2]);
      expect(statSync(path).size, 'read never writes').to.be.greaterThan(size);
      const session = await get(store.claim({ runId, holder: 'next', leaseMs: 60_000 }));
      expect(session.entries.map((e) => e.data['i'])).to.deep.equal([0, 1, 2]);
      expect(statSync(path).size, 'cut back to the last whole record, then the claim record').to.equal(size + 12 + '[2]'.length);
      expect(await get(session.append({ i: 3 }))).to.equal(3);
      expect((await get(store.read(runId))).map((e) => e.data['i'])).to.deep.equal([0, 1, 2, 3]);
      await done(session.release());
    });
  }

  it('a bad record before the end is a JournalCorruptError naming the file and its offset, for read and claim alike', async () => {
    const runId = freshRun();
    const { path } = await written(runId, 3);
    const at = offsets(path)[2]!; // the second entry
    const bytes = readFileSync(path);
    flip(bytes, at + 14);
    writeFileSync(path, bytes);
    const e = corrupt(await failure(store.read(runId)), path);
    expect(e.offset).to.equal(at);
    expect(e.store).to.equal('file');
    expect(e.message).to.include(`${path} is corrupt at offset ${at}: the record's checksum does not match`);
    expect(corrupt(await failure(store.claim({ runId, holder: 'next', leaseMs: 60_000 })), path).offset).to.equal(at);
    const header = readFileSync(path);
    flip(header, at + 1); // its length too: the header's own checksum fails
    writeFileSync(path, header);
    expect(corrupt(await failure(store.read(runId)), path).reason).to.equal("the record's header checksum does not match");
  });

  it('a claim refused by a corrupt journal gives its lease back', async () => {
    const runId = freshRun();
    const { path } = await written(runId, 2);
    const bytes = readFileSync(path);
    flip(bytes, offsets(path)[1]! + 13);
    writeFileSync(path, bytes);
    corrupt(await failure(store.claim({ runId, holder: 'a', leaseMs: 60_000 })), path);
    corrupt(await failure(store.claim({ runId, holder: 'b', leaseMs: 60_000 })), path); // not RunLockedError: nothing holds it
  });

  it("a file that is not rxheal's, or of a newer format, is refused at offset 0 / 7", async () => {
    const [notOurs, newer, empty] = [freshRun(), freshRun(), freshRun()];
    for (const [runId, content] of [
      [notOurs, 'hello, I am a text file\n'],
      [newer, 'RXHEALJ\x02'],
      [empty, ''],
    ] as const) {
      mkdirSync(join(dir, runId));
      writeFileSync(join(dir, runId, 'journal'), Buffer.from(content, 'latin1'));
    }
    const e = corrupt(await failure(store.read(notOurs)), join(notOurs, 'journal'));
    expect([e.offset, e.reason]).to.deep.equal([0, 'not an rxheal journal (it does not begin with "RXHEALJ")']);
    const v = corrupt(await failure(store.claim({ runId: newer, holder: 'a', leaseMs: 1000 })), join(newer, 'journal'));
    expect([v.offset, v.reason]).to.deep.equal([7, 'written in format 2, which this rxheal does not read (it reads format 1)']);
    corrupt(await failure(store.read(empty)), join(empty, 'journal'));
    expect(readFileSync(join(dir, newer, 'journal'), 'latin1'), 'nothing written').to.equal('RXHEALJ\x02');
  });

  it('ids that differ only in case are two runs, in two folders (a file system that ignores case keeps them apart)', async () => {
    await written('Order-7', 1);
    await written('order-7', 2);
    expect(await get(store.read('Order-7'))).to.have.length(1);
    expect(await get(store.read('order-7'))).to.have.length(2);
    expect(readdirSync(dir).sort()).to.deep.equal(['^order-7', 'order-7']);
  });

  it("a former holder's record written after another's claim is never read, and the new holder writes on after it", async () => {
    const runId = freshRun();
    const old = await get(store.claim({ runId, holder: 'old', leaseMs: 50 }));
    await get(old.append({ by: 'old' }));
    await sleep(100);
    const fresh = await get(store.claim({ runId, holder: 'new', leaseMs: 60_000 }));
    const path = join(dir, runId, 'journal');
    // what the old holder's append puts in the file if it passed its check just before the claim
    appendFileSync(path, frame(entryBody(1, 1, '{"by":"old","late":true}')));
    await locked(old.append({ by: 'old', again: true }), 'taken');
    expect((await get(store.read(runId))).map((e) => e.data)).to.deep.equal([{ by: 'old' }]);
    // and one it tore (killed while writing): cut off before the new holder's next record
    appendFileSync(path, frame(entryBody(1, 2, '{"by":"old","torn":true}')).subarray(0, 15));
    expect(await get(fresh.append({ by: 'new' }))).to.equal(1);
    expect((await get(store.read(runId))).map((e) => e.data)).to.deep.equal([{ by: 'old' }, { by: 'new' }]);
    await done(fresh.release());
  });

  it('lock files: one per generation; a claim removes the older ones', async () => {
    const runId = freshRun();
    for (const holder of ['a', 'b', 'c']) await done((await get(store.claim({ runId, holder, leaseMs: 60_000 }))).release());
    expect(readdirSync(join(dir, runId)).sort()).to.deep.equal(['journal', 'lease.3']);
    expect(JSON.parse(readFileSync(join(dir, runId, 'lease.3'), 'utf8'))).to.include({ holder: 'c', released: true });
  });

  it('options are checked when it is made', () => {
    expect(refusal(() => fileJournal(undefined as never)).option).to.equal('dir');
    expect(refusal(() => fileJournal({ dir: '' })).option).to.equal('dir');
    expect(refusal(() => fileJournal({ dir, scheduler: 1 } as never)).option).to.equal('scheduler');
  });
});
