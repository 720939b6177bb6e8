// `npm run spec` (the last step of `npm test`): the suite in its two lanes (spec/lanes.cjs) — most
// files in mocha's parallel mode, then the wall-clock-timed, server-starting ones one at a time —
// and, last, mocha's counts of both runs summed, in mocha's own words ("N passing", "N failing",
// "N pending"), so the closing lines tell the whole suite. Exits non-zero when either run failed.
//
// `npm run spec -- --config .ci/mocharc.nodes.cjs` does the same for that config's set (.ci/run on
// Node 22 and 24). Naming spec files (`npm run spec -- spec/x.spec.ts`) runs them in one plain
// mocha, as `npx mocha spec/x.spec.ts` does.
/* global process, console */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const args = process.argv.slice(2);
const require = createRequire(import.meta.url);
const mocha = require.resolve('mocha/bin/mocha.js');

/** Runs mocha with `args` and RXHEAL_LANE=`lane`, its output passed on; resolves with its exit code and counts. */
function run(lane, extra) {
  return new Promise((done) => {
    const counts = { passing: 0, failing: 0, pending: 0 };
    let seen = false;
    let tail = '';
    const child = spawn(process.execPath, [mocha, ...extra], { env: { ...process.env, RXHEAL_LANE: lane }, stdio: ['inherit', 'pipe', 'inherit'] });
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      tail = (tail + chunk.toString('utf8')).slice(-4096);
    });
    child.on('close', (code, signal) => {
      // mocha's summary: the last "N passing" / "N failing" / "N pending" lines (colours stripped)
      // eslint-disable-next-line no-control-regex -- the escape that starts a colour code
      const text = tail.replace(/\x1b\[[0-9;]*m/g, '');
      for (const kind of Object.keys(counts)) {
        const all = [...text.matchAll(new RegExp(`^\\s*(\\d+) ${kind}\\b`, 'gm'))];
        if (all.length > 0) {
          counts[kind] = Number(all.at(-1)[1]);
          seen = true;
        }
      }
      done({ code: code ?? (signal ? 1 : 0), counts, seen });
    });
  });
}

const namesFiles = args.some(
  (a, i) => !a.startsWith('-') && !['--config', '--grep', '-g', '--timeout', '-t', '--reporter', '-R', '--jobs', '-j'].includes(args[i - 1] ?? ''),
);
if (namesFiles) {
  const child = spawn(process.execPath, [mocha, ...args], { stdio: 'inherit' });
  child.on('close', (code) => process.exit(code ?? 1));
} else {
  const at = args.indexOf('--config');
  const config = resolve(at >= 0 ? args[at + 1] : '.mocharc.cjs');
  // the serial lane's files under this config (none: that lane is not run)
  process.env.RXHEAL_LANE = 'serial';
  const serial = require(config).spec ?? [];
  delete process.env.RXHEAL_LANE;
  const runs = [await run('parallel', args)];
  if (serial.length > 0) runs.push(await run('serial', args));
  const sum = (kind) => runs.reduce((n, r) => n + r.counts[kind], 0);
  console.log(`\n  the suite's ${runs.length} lanes together (spec/lanes.cjs):`);
  console.log(`  ${sum('passing')} passing`);
  if (sum('failing') > 0) console.log(`  ${sum('failing')} failing`);
  if (sum('pending') > 0) console.log(`  ${sum('pending')} pending`);
  process.exit(runs.some((r) => r.code !== 0 || !r.seen) ? 1 : 0);
}
