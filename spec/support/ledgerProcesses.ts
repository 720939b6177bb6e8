/**
 * The effect ledger across real processes (spec/support/ledgerWorker.ts, one Node process each,
 * on the store a {@link StoreAt} describes): two processes start the same guarded call, under the
 * same key, at the same instant, against one payment API that keeps no keys — so only the ledger
 * stands between them and two charges. The charge happens once; one process ran it, the other
 * waited for the key and got the winner's receipt, saying so (`tool-deduplicated`).
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { lastValueFrom } from 'rxjs';
import type { LedgerAnswer, LedgerCommand } from './ledgerWorker.js';
import { PaymentApi } from './paymentApi.js';
import type { StoreAt } from './storeAt.js';

const WORKER = fileURLToPath(new URL('./ledgerWorker.ts', import.meta.url));

/** One worker process and its command channel. */
class LedgerWorker {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<number, (answer: LedgerAnswer) => void>();
  readonly exited: Promise<void>;
  /** Settles once the process says its store is up. */
  readonly ready: Promise<void>;
  private up: () => void = () => undefined;

  constructor(at: StoreAt, api: string) {
    this.ready = new Promise((resolve) => (this.up = resolve));
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(at), api], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const answer = JSON.parse(line) as LedgerAnswer | 'ready';
      if (answer === 'ready') return this.up();
      this.waiting.get(answer.id)?.(answer);
    });
  }

  send(command: LedgerCommand): Promise<LedgerAnswer> {
    return new Promise((resolve) => {
      this.waiting.set(command.id, resolve);
      this.child.stdin!.write(`${JSON.stringify(command)}\n`);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** The payment API over HTTP (one for every process): each POST is one request to it; a charge takes `latencyMs`. */
async function serveApi(api: PaymentApi): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const { to, amount } = JSON.parse(body) as { to: string; amount: number };
      const key = req.headers['idempotency-key'];
      lastValueFrom(api.charge(to, amount, typeof key === 'string' ? key : undefined)).then(
        (receipt) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(receipt)),
        (e: unknown) => res.writeHead(500).end(String(e)),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/charge`, server };
}

let unique = 0;

/** Registers the cross-process ledger case for the store `at()` describes (called when it runs). */
export function ledgerProcessContract(kind: string, at: () => StoreAt): void {
  describe(`${kind}: the effect ledger shared by two real processes`, function () {
    this.timeout(60_000);
    let workers: LedgerWorker[] = [];
    let server: Server | undefined;
    after(async () => {
      for (const w of workers.splice(0)) await w.stop();
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    });

    it('two processes race one key at the same instant: one charge; one ran it, the other got its receipt (tool-deduplicated)', async () => {
      // the API keeps no keys and takes 300 ms per charge: the loser's claim lands while the winner's charge is in flight
      const api = new PaymentApi([], false, 300);
      const served = await serveApi(api);
      server = served.server;
      workers = [new LedgerWorker(at(), served.url), new LedgerWorker(at(), served.url)];
      await Promise.all(workers.map((w) => w.ready));
      for (let round = 0; round < 3; round++) {
        const key = `race-${process.pid}-${Date.now().toString(36)}-${++unique}/1/0/charge`;
        const before = api.charges.length;
        // an instant far enough ahead that both processes have the command
        const when = Date.now() + 300;
        const answers = await Promise.all(workers.map((w, i) => w.send({ id: round * 10 + i, key, at: when })));
        expect(
          answers.every((a) => a.ok),
          JSON.stringify(answers),
        ).to.equal(true);
        expect(api.charges.length - before, `round ${round}: charges`).to.equal(1);
        expect(api.charges[api.charges.length - 1]!.key, 'the key reached the API').to.equal(key);
        expect(answers[0]!.value, 'both got the one receipt').to.deep.equal(answers[1]!.value);
        expect(answers.map((a) => a.deduplicated).sort(), `round ${round}: one ran, the other was answered from the ledger`).to.deep.equal([false, true]);
      }
      expect(api.requests, 'requests: one per round').to.equal(3);
    });
  });
}
