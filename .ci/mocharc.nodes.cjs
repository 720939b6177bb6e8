// The specs .ci/run runs on Node 22 and Node 24, after the whole suite (`npm test`) on the
// machine's Node: every spec whose outcome can depend on the Node running it, the rest being
// the same JavaScript on any Node.
//
// - packaging (spec/package.spec.ts, spec/package/): the packed tarball installs in a fresh
//   project and every entry point loads by import and by require(esm) on that Node; no installed
//   package refuses it (engines). Not spec/package/install.spec.ts: it already runs every README
//   install line on Node 20 and Node 24 itself, from the machine's run.
// - the adapters and the frameworks they drive (spec/adapters, spec/ai-sdk, spec/openai,
//   spec/anthropic, spec/langchain, spec/otel, spec/redis), and the classifier on errors as the
//   real clients throw them (spec/core/errors/classifyClients.spec.ts): the peers' own code runs
//   on that Node — and on Node >= 22 these specs run each case on the frameworks' 7.x lines too
//   (ai 7, @ai-sdk/provider 4, openai 7: spec/support/kits.ts), which need Node >= 22, so here is
//   the only place they run.
// - the providers and the server (spec/providers, spec/server): Node's fetch, web streams,
//   AbortSignal and http server, which change between Node lines.
// - the file journal (spec/durable: Node's fs — O_APPEND, link, fsync — and zlib.crc32, in real
//   processes), and the Postgres journal with the Redis specs (below: pg's sockets, as node-redis's).
// - the durable-execution engines (spec/dbos, spec/restate: DBOS on Debian's Postgres, the Restate
//   server, agent workflows killed and recovered in real processes): their SDKs need Node >= 22
//   (spec/support/majors), so here is the only place they run — on Node 24 alone (below).
// - the agent frameworks (the OpenAI Agents SDK, Mastra 1.x: spec/ai-sdk/agentsSdk.spec.ts,
//   spec/ai-sdk/mastra.spec.ts, and the README's snippets for them, spec/docs/agentFrameworks.spec.ts):
//   they need Node >= 22 (spec/support/majors), so here is the only place they run.
//
// Of the packaging specs, not the TypeScript consumers' typechecks: tsc is JavaScript reading the
// same files on every Node (the consumer's @types/node is the project's), so its answer cannot
// change with the Node running it, and they are ~60 s of the ~100 s pack.spec takes here.
//
// Left to the machine's run: core, operators, sources, property, leaks, observe, testing (RxJS
// logic in virtual time), docs (the README and marble pages, but for the agent frameworks' snippets), demo (Chromium), fleet and soak.
// Measured on this 2-core machine (loaded): this set 46 s on Node 24 (2 min with the typechecks),
// the whole suite 3.5–6 min.
/* global require, module, process */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a mocha config file is CommonJS
const base = require('../.mocharc.cjs');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a mocha config file is CommonJS
const { lane } = require('../spec/lanes.cjs');

// The Redis specs (spec/redis: real redis-server, a 3-master cluster and a Sentinel set started
// by the specs, ~75 s a Node line here) run on the machine's Node (20, in the whole suite) and on
// Node 24, not on Node 22 between them: npm resolves node-redis and ioredis the same on 22 and 24
// (neither declares an engines split), and the clients' socket code is Node's net module on both
// ends of the range. Measured: a fresh-clone .ci/run took 870 s with them on 22 (Node 22 phase 183 s).
// The Postgres journal's specs (spec/postgres, ~25 s) follow the same rule, for the same reason (pg).
// Not the kill-and-resume specs (spec/{durable,redis,postgres}/killResume.spec.ts, ~75 s a Node line
// when run one file at a time): what they add to the stores' own specs here is the agent loop's
// resume logic above the store — RxJS in the same JavaScript on any Node —; the stores' Node-bound
// parts (fs, sockets, killed writers) are in fileJournal, processes and the journal specs, which stay.
// Nor the 16-process money proof (spec/redis/spendFleet.spec.ts, ~13 s): 16 workers × 4 callers on one
// script whose Node-bound part — node-redis on Node's sockets — the spend store's own cases in
// stores and clients already cover on this Node; the rest is the same JavaScript.
// Nor the Redis Cluster and Sentinel specs (spec/redis/cluster.spec.ts, spec/redis/sentinel.spec.ts: a
// cluster resharded and a primary failed over mid-traffic, ~40 s here): what they add to the client and
// store specs that stay is the clients' topology handling — node-redis's and ioredis's JavaScript, the
// same on any Node —; their sockets are the ones client, clients and stores already drive on this Node.
// They run on the machine's Node in the whole suite. (Dropped when the clean-clone run read 901–978 s
// against its 900 s limit, 2026-12-07.)
const major = Number(process.versions.node.split('.')[0]);
const redisHere = major !== 22;
// The engines' specs (spec/dbos, spec/restate: kill-and-recover, the AI SDK route; and the guide's two
// programs, spec/docs/durableEngines.spec.ts — ~80 s one file after another here, each file a Postgres or a
// Restate server and its worker processes) on Node 24 alone: npm resolves the SDKs the same on 22
// and 24 (dbos-sdk says >=20; restate-sdk needs Node 22's Promise.withResolvers, which 24 has), and
// the kill-and-recover proof is asked of Node 24.
const enginesHere = major >= 24;

// the base's loader, extension, timeout and reporter (not its spec, or its lane's options)
const { 'node-option': nodeOption, extension, timeout, reporter } = base;

module.exports = lane(
  {
    'node-option': nodeOption,
    extension,
    timeout,
    reporter,
    ignore: [
      'spec/package/install.spec.ts',
      'spec/*/killResume.spec.ts',
      'spec/redis/spendFleet.spec.ts',
      'spec/redis/cluster.spec.ts',
      'spec/redis/sentinel.spec.ts',
      'spec/support/majors/node_modules/**',
    ],
    grep: '^the packed tarball in a fresh consumer project .*typecheck',
    invert: true,
  },
  [
    'spec/package.spec.ts',
    'spec/package/**/*.spec.ts',
    'spec/adapters/**/*.spec.ts',
    'spec/core/errors/classifyClients.spec.ts',
    'spec/ai-sdk/**/*.spec.ts',
    'spec/openai/**/*.spec.ts',
    'spec/anthropic/**/*.spec.ts',
    'spec/langchain/**/*.spec.ts',
    'spec/otel/**/*.spec.ts',
    ...(redisHere ? ['spec/redis/**/*.spec.ts', 'spec/postgres/**/*.spec.ts'] : []),
    ...(enginesHere ? ['spec/dbos/**/*.spec.ts', 'spec/restate/**/*.spec.ts', 'spec/docs/durableEngines.spec.ts'] : []),
    'spec/durable/**/*.spec.ts',
    'spec/providers/**/*.spec.ts',
    'spec/server/**/*.spec.ts',
    'spec/docs/agentFrameworks.spec.ts',
  ],
);
