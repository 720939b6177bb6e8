// The suite's two lanes, for `npm run spec` (scripts/spec.mjs): most spec files run in mocha's
// parallel mode, four files at a time (on a 2-core machine: the specs wait on child
// processes, npm, tsc and servers as much as they compute), then the files below one at a time,
// on an otherwise idle machine. These are the specs whose outcome depends on wall-clock timing
// across processes — a fleet's probe windows, Redis command deadlines, a Sentinel failover or a
// cluster's, the soak runs.
//
// RXHEAL_LANE=parallel or RXHEAL_LANE=serial picks a lane in .mocharc.cjs and .ci/mocharc.nodes.cjs;
// unset, a config runs its whole set in one process, as `npx mocha` always has.
/* global module, process */
// (the run journal's Redis and Postgres specs — the store contract, the killed and resumed
// processes — start their servers the same way but time nothing across processes: they run in
// the parallel lane; a port taken between freePort and the server's start fails that start at
// once, it cannot give a wrong result)
const SERIAL = [
  'spec/redis/client.spec.ts',
  'spec/redis/clients.spec.ts',
  'spec/redis/cluster.spec.ts',
  'spec/redis/keys.spec.ts',
  'spec/redis/options.spec.ts',
  'spec/redis/sentinel.spec.ts',
  'spec/redis/spendFleet.spec.ts',
  'spec/redis/stores.spec.ts',
  'spec/fleet/**/*.spec.ts',
  'spec/demo/fleet.spec.ts',
  'spec/soak/**/*.spec.ts',
];

/** Files at a time in the parallel lane. */
// Measured on a clean clone (.ci/run): 2 at a time 999 s in all (Node 20 phase 725 s), 3 at a time 826 s (596 s), every spec passing;
// 3 at a time later read 751–978 s (Node 20 phase 540–722 s) on the same code as the machine slowed: 4 at a time since
const JOBS = 4;

/**
 * A config's options for the lane RXHEAL_LANE names (none: the config as it is). `spec`: the
 * config's list; the serial lane keeps the serial globs among them (its own list when they are
 * all the config's, as the whole suite's glob is).
 */
function lane(config, spec) {
  const which = process.env.RXHEAL_LANE;
  if (which === undefined || which === '') return { ...config, spec };
  if (which === 'parallel') return { ...config, spec, parallel: true, jobs: JOBS, ignore: [...(config.ignore ?? []), ...SERIAL] };
  if (which === 'serial') {
    const covered = (glob) =>
      spec.some((s) => s === glob || s === 'spec/**/*.spec.ts' || (s.endsWith('/**/*.spec.ts') && glob.startsWith(s.slice(0, -'**/*.spec.ts'.length))));
    return { ...config, spec: SERIAL.filter(covered) };
  }
  throw new Error(`RXHEAL_LANE=${which}: 'parallel', 'serial' or unset`);
}

module.exports = { SERIAL, JOBS, lane };
