// The project's mocha configuration. `npx mocha` (and `npm run spec`, which `npm test` runs)
// loads the whole suite; `npx mocha spec/one.spec.ts` loads that file only. Mocha adds a config's
// `spec` to the files named on the command line instead of replacing them, so the suite's glob is
// given here only when no file is named (a positional argument, or --spec). .ci/mocharc.nodes.cjs
// starts from this file and lists its own specs.
/* global require, module, process */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a mocha config file is CommonJS
const { aliases, types } = require('mocha/lib/cli/run-option-metadata.cjs');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a mocha config file is CommonJS
const { lane } = require('./spec/lanes.cjs');

const SUITE = 'spec/**/*.spec.ts';

const canonical = Object.fromEntries(Object.entries(aliases).flatMap(([name, short]) => short.map((alias) => [alias, name])));
/** Mocha's options that take a value (`--grep x`, `-t 60000`); any other is a flag (Node's included). */
const takesValue = new Set([...types.array, ...types.number, ...types.string]);

/** Whether mocha's command line (the arguments after `mocha`) names a spec file or folder. */
function namesSpecs(args) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--') return i < args.length - 1;
    if (!arg.startsWith('-') || arg === '-') return true;
    const name = arg.replace(/^--?/, '').split('=')[0];
    const option = canonical[name] ?? name;
    if (option === 'spec') return true;
    if (takesValue.has(option) && !arg.includes('=')) i++;
  }
  return false;
}

const config = {
  'node-option': ['import=tsx'],
  ignore: ['spec/support/majors/node_modules/**'],
  extension: ['ts'],
  timeout: 10000,
  reporter: 'spec',
};

// the whole suite, or in `npm run spec` one of its lanes (spec/lanes.cjs); files named: those alone
module.exports = namesSpecs(process.argv.slice(2)) ? config : lane(config, [SUITE]);
