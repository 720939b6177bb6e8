/**
 * The public surface: the API report of every entry point (api-extractor on the built `.d.ts`,
 * scripts/apiReport.ts) equals the one checked in under api/. A change to what users can import
 * fails here with its diff until the reports are written anew (`npm run api -- --update`) and
 * committed, so every surface change is a reviewed decision.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareReports, entries } from '../scripts/apiReport.js';

describe('the public surface (api/*.api.md)', function () {
  this.timeout(120_000);

  it('has a report for every entry point with types in package.json exports', () => {
    expect(entries().map((e) => e.subpath)).to.include.members(['.', './testing', './providers', './ai-sdk', './redis']);
  });

  it('every entry point’s surface is the checked-in one (npm run api -- --update after a reviewed change)', () => {
    const changed = compareReports();
    const diffs = changed.map(({ entry, expected, actual }) => {
      if (expected === undefined) return `api/${entry.report}: missing`;
      const dir = mkdtempSync(join(tmpdir(), 'rxheal-api-diff-'));
      try {
        writeFileSync(join(dir, 'expected'), expected);
        writeFileSync(join(dir, 'actual'), actual);
        // diff exits 1 when the files differ: its output is the point
        const out = spawnSync('diff', ['-u', '--label', `api/${entry.report}`, '--label', 'built from dist/', join(dir, 'expected'), join(dir, 'actual')], {
          encoding: 'utf8',
        });
        return out.stdout.split('\n').slice(0, 60).join('\n');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    expect(diffs, diffs.join('\n')).to.deep.equal([]);
  });
});
