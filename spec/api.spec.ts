/**
 * The public surface: the API report of every entry point (api-extractor on the built `.d.ts`,
 * scripts/apiReport.ts) equals the one checked in under api/. A change to what users can import
 * fails here with its diff until the reports are written anew (`npm run api -- --update`) and
 * committed, so every surface change is a reviewed decision.
 */
import { expect } from 'chai';
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
      const a = expected.split('\n');
      const b = actual.split('\n');
      const lines: string[] = [];
      for (let i = 0; i < Math.max(a.length, b.length) && lines.length < 12; i++) {
        if (a[i] !== b[i]) lines.push(`  line ${i + 1}: - ${a[i] ?? ''}\n           + ${b[i] ?? ''}`);
      }
      return `api/${entry.report} (${entry.subpath}) changed:\n${lines.join('\n')}`;
    });
    expect(diffs, diffs.join('\n')).to.deep.equal([]);
  });
});
