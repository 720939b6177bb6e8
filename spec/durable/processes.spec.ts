/**
 * fileJournal across real processes (spec/support/journalProcesses.ts): one folder, each process
 * its own fileJournal — takeovers raced at the same instant, SIGSTOP past the lease, SIGKILL in
 * the middle of appends of 200 kB records (a write that the kill cuts short leaves a torn tail).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processContract } from '../support/journalProcesses.js';

describe('fileJournal in processes', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxheal-journal-procs-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  processContract('fileJournal', () => ({ kind: 'file', dir }));
});
