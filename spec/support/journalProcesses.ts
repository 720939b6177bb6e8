/**
 * The journal's lease rules across real processes (spec/support/journalWorker.ts, one Node
 * process each, on the store a {@link StoreAt} describes): takeovers raced by several processes
 * at the same instant, a live lease that refuses and a release that frees at once, a holder
 * stopped (SIGSTOP) past its lease while another process takes the run, and a holder killed
 * (SIGKILL) in the middle of its appends.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { JournalEntry } from '../../src/core/journal/journal.js';
import type { Answer, Command, StoreAt } from './journalWorker.js';

const WORKER = fileURLToPath(new URL('./journalWorker.ts', import.meta.url));

/** One worker process and its command channel. */
export class Worker {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  /** Answers with no id: an append loop's seqs. */
  readonly loop: number[] = [];
  readonly exited: Promise<void>;

  constructor(at: StoreAt) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(at)], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const answer = JSON.parse(line) as Answer;
      if (answer.id === undefined) this.loop.push(answer.value as number);
      else this.waiting.get(answer.id)?.(answer);
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Sends `command`, resolves with its answer. */
  send(command: Command): Promise<Answer> {
    const id = ++this.next;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin!.write(`${JSON.stringify({ ...command, id })}\n`);
    });
  }

  signal(signal: NodeJS.Signals): void {
    process.kill(this.child.pid!, signal);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

let unique = 0;
const freshRun = (): string => `proc-${process.pid}-${Date.now().toString(36)}-${++unique}`;

/** Registers the cross-process cases for the store `at()` describes (called when they run). */
export function processContract(kind: string, at: () => StoreAt): void {
  describe(`${kind}: the lease across real processes`, function () {
    this.timeout(90_000);
    const workers: Worker[] = [];
    const start = async (n: number): Promise<Worker[]> => {
      const made = Array.from({ length: n }, () => new Worker(at()));
      workers.push(...made);
      // each answers a read once its store is up
      await Promise.all(made.map((w) => w.send({ op: 'read', runId: 'warm-up' })));
      return made;
    };
    afterEach(async () => {
      for (const w of workers.splice(0)) await w.stop();
    });

    it('six processes claiming at the same instant — a run never claimed, then a lapsed lease — exactly one wins each time', async function () {
      // six Node processes start (tsx) on two shared cores: slow on a loaded machine
      this.timeout(240_000);
      const racers = await start(6);
      for (let round = 0; round < 8; round++) {
        const runId = freshRun();
        if (round % 2 === 1) {
          // a lease that lapses before the race
          expect((await racers[0]!.send({ op: 'claim', runId, holder: 'seed', leaseMs: 100 })).ok).to.equal(true);
          await sleep(150);
        }
        // an instant far enough ahead that every process has its command first (else it claims on arrival)
        const when = Date.now() + 500;
        const answers = await Promise.all(racers.map((w, i) => w.send({ op: 'claim', runId, holder: `racer-${i}`, leaseMs: 60_000, at: when })));
        const won = answers.flatMap((a, i) => (a.ok ? [i] : []));
        expect(won, `round ${round}: ${JSON.stringify(answers)}`).to.have.length(1);
        for (const a of answers) if (!a.ok) expect([a.name, a.reason], a.message).to.deep.equal(['RunLockedError', 'held']);
        const winner = racers[won[0]!]!;
        expect((await winner.send({ op: 'append', runId, data: { by: won[0] } })).value).to.equal(0);
        // the losers' sessions do not exist; a loser's claim now is refused by the winner's live lease
        const loser = racers[(won[0]! + 1) % racers.length]!;
        expect((await loser.send({ op: 'claim', runId, holder: 'late', leaseMs: 1000 })).reason).to.equal('held');
        await winner.send({ op: 'release', runId });
      }
    });

    it('a live lease refuses another process, read never waits for it, and a release frees the run at once', async () => {
      const [a, b, c] = await start(3);
      const runId = freshRun();
      await a!.send({ op: 'claim', runId, holder: 'a', leaseMs: 60_000 });
      await a!.send({ op: 'append', runId, data: { step: 'started' } });
      const refused = await b!.send({ op: 'claim', runId, holder: 'b', leaseMs: 60_000 });
      expect([refused.name, refused.reason]).to.deep.equal(['RunLockedError', 'held']);
      expect(refused.message).to.include('"a"');
      const read = await c!.send({ op: 'read', runId });
      expect(read.value).to.deep.equal([{ seq: 0, data: { step: 'started' } }]);
      await a!.send({ op: 'append', runId, data: { step: 'done' } });
      await a!.send({ op: 'release', runId });
      const claimed = await b!.send({ op: 'claim', runId, holder: 'b', leaseMs: 60_000 });
      expect(claimed.ok, claimed.message).to.equal(true);
      expect((claimed.value as JournalEntry[]).map((e) => e.data['step'])).to.deep.equal(['started', 'done']);
    });

    it('a holder stopped past its lease: another process takes the run; resumed, its append is refused and never read', async () => {
      const [a, b, c] = await start(3);
      const runId = freshRun();
      await a!.send({ op: 'claim', runId, holder: 'a', leaseMs: 400 });
      await a!.send({ op: 'append', runId, data: { by: 'a', n: 0 } });
      a!.signal('SIGSTOP');
      try {
        await sleep(600);
        const taken = await b!.send({ op: 'claim', runId, holder: 'b', leaseMs: 60_000 });
        expect(taken.ok, taken.message).to.equal(true);
        expect((await b!.send({ op: 'append', runId, data: { by: 'b', n: 1 } })).value).to.equal(1);
      } finally {
        a!.signal('SIGCONT');
      }
      const late = await a!.send({ op: 'append', runId, data: { by: 'a', late: true } });
      expect([late.name, late.reason], late.message).to.deep.equal(['RunLockedError', 'taken']);
      expect((await b!.send({ op: 'append', runId, data: { by: 'b', n: 2 } })).value).to.equal(2);
      const read = (await c!.send({ op: 'read', runId })).value as JournalEntry[];
      expect(read.map((e) => e.data)).to.deep.equal([
        { by: 'a', n: 0 },
        { by: 'b', n: 1 },
        { by: 'b', n: 2 },
      ]);
    });

    it('a holder killed (SIGKILL) in the middle of its appends, five times: each next process reads every acknowledged record whole, and writes on', async () => {
      const runId = freshRun();
      let acknowledged = 0;
      for (let round = 0; round < 5; round++) {
        const [w] = await start(1);
        // the previous holder's lease (300 ms) has lapsed by the time this one is up
        const claimed = await w!.send({ op: 'claim', runId, holder: `holder-${round}`, leaseMs: 300 });
        expect(claimed.ok, claimed.message).to.equal(true);
        const entries = claimed.value as JournalEntry[];
        expect(entries.length, 'every acknowledged record').to.be.at.least(acknowledged);
        entries.forEach((e, seq) => {
          expect(e.seq).to.equal(seq);
          expect(e.data['pad']).to.equal(String((e.data['i'] as number) % 10).repeat(200_000));
        });
        expect((await w!.send({ op: 'appendLoop', runId, size: 200_000 })).value).to.equal('looping');
        // killed once it has appended, at a different point each round
        for (let i = 0; i < 500 && w!.loop.length === 0; i++) await sleep(20);
        await sleep(30 + 70 * round);
        w!.signal('SIGKILL');
        await w!.exited;
        acknowledged = entries.length + w!.loop.length;
        expect(w!.loop.length, 'it appended before it was killed').to.be.greaterThan(0);
        await sleep(350);
      }
    });
  });
}
