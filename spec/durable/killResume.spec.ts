/** The real-process kill spec on fileJournal (spec/support/killContract.ts). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killContract } from '../support/killContract.js';

describe('durable runs across real processes (fileJournal)', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxheal-kill-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  killContract('fileJournal', () => ({ kind: 'file', dir }));
});
