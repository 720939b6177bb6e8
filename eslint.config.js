// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';

const timingRule = {
  'no-restricted-properties': [
    'error',
    { object: 'Date', property: 'now', message: 'Read time with scheduler.now(): Date.now() does not run in virtual time.' },
  ],
  'no-restricted-globals': [
    'error',
    { name: 'setTimeout', message: 'Wait with timer(ms, scheduler): setTimeout does not run in virtual time.' },
    { name: 'setInterval', message: 'Use interval(ms, scheduler): setInterval does not run in virtual time.' },
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'docs/site/**', 'test-artifacts/**', 'marble-docs/**/*.svg'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  { files: ['src/core/**/*.ts', 'src/operators/**/*.ts'], rules: timingRule },
  { files: ['spec/**/*.ts'], rules: { '@typescript-eslint/no-unused-expressions': 'off' } },
  // linear time on untrusted text: no regex in src/ may backtrack or rescan super-linearly
  {
    files: ['src/**/*.ts'],
    plugins: { regexp },
    rules: { 'regexp/no-super-linear-backtracking': 'error', 'regexp/no-super-linear-move': 'error' },
  },
);
