import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { asyncScheduler, timer } from 'rxjs';
import { after, inBackground, MAX_TIMER_MS, wait } from '../../../src/core/rx/wait.js';
import { testScheduler } from '../../support/marbles.js';
import { NodeTimerScheduler } from '../../support/nodeTimers.js';

const DAY = 86_400_000;

describe('wait / after (src/core/rx/wait.ts: every wait in rxheal)', () => {
  describe('in virtual time', () => {
    it('a delay up to 2³¹−1 ms is one timer, exactly as timer() makes it', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(wait(500, asyncScheduler)).toBe('500ms (0|)', { 0: 0 });
        expectObservable(wait(MAX_TIMER_MS, asyncScheduler)).toBe(`${MAX_TIMER_MS}ms (0|)`, { 0: 0 });
        expectObservable(wait(0, asyncScheduler)).toBe('(0|)', { 0: 0 });
      });
    });

    it('a 3e9 ms wait fires at 3e9 ms, and a 30-day one at 30 days', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(wait(3e9, asyncScheduler)).toBe('3000000000ms (0|)', { 0: 0 });
        expectObservable(wait(30 * DAY, asyncScheduler)).toBe(`${30 * DAY}ms (0|)`, { 0: 0 });
      });
    });

    it('Infinity never fires and leaves nothing scheduled', () => {
      const ts = new NodeTimerScheduler();
      let fired = false;
      const sub = after(Infinity, ts, () => (fired = true));
      expect(ts.actions.length).to.equal(0);
      ts.advanceTo(100 * 365 * DAY);
      expect(fired).to.equal(false);
      expect(sub.closed).to.equal(false);
      sub.unsubscribe();
    });

    it('a negative or NaN delay runs as soon as possible (0)', () => {
      testScheduler().run(({ expectObservable }) => {
        expectObservable(wait(-5, asyncScheduler)).toBe('(0|)', { 0: 0 });
        expectObservable(wait(NaN, asyncScheduler)).toBe('(0|)', { 0: 0 });
      });
    });

    it("no timer is ever armed above 2³¹−1 ms: under Node's clamp a 3e9 ms wait still fires at 3e9, not after 1 ms", () => {
      const ts = new NodeTimerScheduler();
      const firedAt: number[] = [];
      after(3e9, ts, () => firedAt.push(ts.now()));
      ts.advanceTo(3e9 - 1);
      expect(firedAt).to.deep.equal([]);
      ts.advanceTo(3e9);
      expect(firedAt).to.deep.equal([3e9]);
      expect(ts.warnings).to.deep.equal([]);
      expect(ts.actions.length).to.equal(0);
    });

    it('the scheduler used in these specs reproduces the clamp: timer(3e9) fires after 1 ms with a warning', () => {
      const ts = new NodeTimerScheduler();
      const firedAt: number[] = [];
      timer(3e9, ts).subscribe(() => firedAt.push(ts.now()));
      ts.advanceTo(10);
      expect(firedAt).to.deep.equal([1]);
      expect(ts.warnings).to.deep.equal([3e9]);
    });

    it('unsubscribing cancels a chunked wait between chunks', () => {
      const ts = new NodeTimerScheduler();
      let fired = false;
      const sub = after(5 * MAX_TIMER_MS, ts, () => (fired = true));
      ts.advanceTo(2 * MAX_TIMER_MS + 5);
      expect(ts.actions.length).to.equal(1);
      sub.unsubscribe();
      expect(ts.actions.length).to.equal(0);
      ts.advanceTo(10 * MAX_TIMER_MS);
      expect(fired).to.equal(false);
    });
  });

  describe('in real time (asyncScheduler)', () => {
    it('a 3e9 ms wait has not fired after a short real wait, and Node printed no TimeoutOverflowWarning', async () => {
      const warnings: string[] = [];
      const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
      process.on('warning', onWarning);
      let fired = 0;
      const subs = [
        after(3e9, asyncScheduler, () => fired++),
        wait(30 * DAY, asyncScheduler).subscribe(() => fired++),
        after(Infinity, asyncScheduler, () => fired++),
      ];
      try {
        await new Promise((resolve) => setTimeout(resolve, 50));
        // warnings are emitted on the next tick
        await new Promise((resolve) => setImmediate(resolve));
        expect(fired).to.equal(0);
        expect(warnings.filter((w) => w.startsWith('TimeoutOverflowWarning'))).to.deep.equal([]);
      } finally {
        for (const sub of subs) sub.unsubscribe();
        process.off('warning', onWarning);
      }
    });
  });

  describe('one place: no file in src/ other than core/rx/wait.ts arms a timer', () => {
    const SRC = new URL('../../../src/', import.meta.url).pathname;
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
      });
    // rxjs timer(…), scheduler.schedule(…) / this.scheduler.schedule(…), setTimeout / setInterval calls
    const TIMER = /(?<![\w.$])timer\s*\(|\.schedule\s*(?:<[^>]*>)?\s*\(|(?<![\w.$])(?:setTimeout|setInterval)\s*\(/;

    it('finds the source tree and the pattern catches each form', () => {
      expect(files(SRC).length).to.be.greaterThan(20);
      for (const line of [
        'timer(5, scheduler)',
        'this.scheduler.schedule(() => x, 5)',
        'scheduler.schedule<number>(work, 1)',
        'setTimeout(f, 1)',
        'setInterval(f)',
      ]) {
        expect(TIMER.test(line), line).to.equal(true);
      }
      for (const line of ['timer?.unsubscribe()', 'let timer: Subscription', 'after(5, scheduler, work)', 'wait(5, scheduler)']) {
        expect(TIMER.test(line), line).to.equal(false);
      }
    });

    it('every other file waits through wait() / after()', () => {
      const offenders: string[] = [];
      for (const file of files(SRC)) {
        const name = relative(SRC, file);
        if (name === 'core/rx/wait.ts') continue;
        readFileSync(file, 'utf8')
          .split('\n')
          .forEach((line, i) => {
            const code = line.replace(/\/\/.*$/, '');
            if (/^\s*\*/.test(code)) return; // doc comments show usage
            if (TIMER.test(code)) offenders.push(`${name}:${i + 1}: ${line.trim()}`);
          });
      }
      expect(offenders).to.deep.equal([]);
    });
  });

  describe('in real time: what keeps a Node process alive', () => {
    /** Runs a module with tsx in a fresh Node; resolves with its stdout once it exits (killed after 20 s: it hung). */
    const runNode = (code: string): Promise<string> =>
      new Promise((resolve, reject) =>
        execFile(
          process.execPath,
          ['--import', 'tsx', '--input-type=module', '-e', code],
          { cwd: new URL('../../../', import.meta.url).pathname, timeout: 20_000 },
          (error, stdout, stderr) =>
            error ? reject(new Error(`${error.killed ? 'still running after 20 s (killed)' : `exit ${String(error.code)}`}: ${stderr}`)) : resolve(stdout),
        ),
      );

    it('a breaker left open (reset timeout 10 min) does not keep the process running: its half-open notice is a background timer', async function () {
      this.timeout(30_000);
      const out = await runNode(`
        import { throwError } from 'rxjs';
        import { CircuitBreaker, circuitBreak, HttpError } from './src/index.ts';
        const breaker = new CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 600_000 });
        throwError(() => new HttpError(503)).pipe(circuitBreak(breaker)).subscribe({ error: () => console.log('state', breaker.state) });
      `);
      expect(out.trim()).to.equal('state open');
    });

    it('a wait that work depends on still holds the process until it fires; a background one does not', async function () {
      this.timeout(30_000);
      const out = await runNode(`
        import { asyncScheduler } from 'rxjs';
        import { after } from './src/core/rx/wait.ts';
        after(600_000, asyncScheduler, () => console.log('background fired'), { background: true });
        after(50, asyncScheduler, () => console.log('retry fired'));
      `);
      expect(out.trim()).to.equal('retry fired');
    });

    it('inBackground(scheduler): what it schedules does not hold the process (a reconnection backoff nobody waits on); the rest still does', async function () {
      this.timeout(30_000);
      const out = await runNode(`
        import { asyncScheduler, timer } from 'rxjs';
        import { inBackground } from './src/core/rx/wait.ts';
        timer(600_000, inBackground(asyncScheduler)).subscribe(() => console.log('background fired'));
        timer(50, asyncScheduler).subscribe(() => console.log('retry fired'));
      `);
      expect(out.trim()).to.equal('retry fired');
    });

    it("inBackground(scheduler) keeps the scheduler's time and order (virtual time too)", () => {
      testScheduler().run(({ expectObservable }) => {
        const background = inBackground(asyncScheduler);
        expectObservable(timer(500, background)).toBe('500ms (0|)', { 0: 0 });
        expectObservable(wait(30 * DAY, background)).toBe(`${30 * DAY}ms (0|)`, { 0: 0 });
      });
    });
  });
});
