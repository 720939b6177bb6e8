// `npm run spec:fast`: the fast lane — the unit, property and marble specs, in virtual time, with
// no server, no browser, no package build and no Redis: what a change to the operators, the
// sources or the core can break, in under a minute on a 2-core machine. CI runs the whole suite
// (`npm test`, which includes every file here); this lane is for the edit–run loop
// (CONTRIBUTING.md, "The fast lane").
//
// Left out of the folders below, as they start servers or processes: the breaker's real-process
// exit checks (spec/core/breaker/processExit.spec.ts), the classifier on errors as real HTTP
// clients throw them against local servers (spec/core/errors/classifyClients.spec.ts), and
// incidents recorded from runs against local providers (spec/chaos/incident.spec.ts).
//
// Measured: 32 s for `time npm run spec:fast` (1 787 specs) on a shared 2-core machine at load
// average 10 (2026-12-03).
/* global require, module */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a mocha config file is CommonJS
const base = require('./.mocharc.cjs');

module.exports = {
  ...base,
  spec: [
    'spec/core/**/*.spec.ts',
    'spec/operators/**/*.spec.ts',
    'spec/sources/**/*.spec.ts',
    'spec/observe/**/*.spec.ts',
    'spec/testing/**/*.spec.ts',
    'spec/property/**/*.spec.ts',
    'spec/leaks/**/*.spec.ts',
    'spec/chaos/**/*.spec.ts',
    'spec/docs/marbleDocs.spec.ts',
    'spec/a2a/taskStream.spec.ts',
    'spec/layers.spec.ts',
    'spec/surface.spec.ts',
    'spec/linearTime.spec.ts',
  ],
  ignore: [...base.ignore, 'spec/core/breaker/processExit.spec.ts', 'spec/core/errors/classifyClients.spec.ts', 'spec/chaos/incident.spec.ts'],
  reporter: 'dot',
};
