/**
 * checkHealing over its own gallery (./gallery.ts): each broken agent is caught, by the
 * invariants it breaks, with a shrunk schedule whose replay spec fails on it; each fixed agent
 * passes; twice each, with the same report — deterministic, under fast-check's seed and the
 * replay's own.
 */
import { expect } from 'chai';
import { checkHealing, replaySchedule } from '../../src/chaos/index.js';
import { GALLERY } from './gallery.js';

describe('checkHealing over its gallery of broken and fixed agents', function () {
  this.timeout(60_000);

  for (const entry of GALLERY) {
    if (entry.broken) {
      it(`catches ${entry.name} (${entry.caughtBy!.join(', ')}), the same twice; the shrunk schedule still breaks it on replay`, async () => {
        const first = await checkHealing(entry.broken!, entry.options);
        const second = await checkHealing(entry.broken!, entry.options);
        if (first.ok || second.ok) throw new Error(`${entry.name}: not caught`);
        expect(first.message).to.equal(second.message);
        expect(first.failure.violations.map((v) => v.invariant)).to.include.members([...entry.caughtBy!]);
        expect(first.failure.violations.map((v) => v.invariant)).to.not.include('replays-same');
        const replay = await replaySchedule(entry.broken!, first.failure.schedule, entry.options);
        expect(replay.violations).to.deep.equal(first.failure.violations);
      });
    }
    it(`passes ${entry.broken ? `the fix of ${entry.name}` : entry.name}, the same twice`, async () => {
      const first = await checkHealing(entry.fixed, entry.options);
      expect(first.ok, first.ok ? '' : first.message).to.equal(true);
      const second = await checkHealing(entry.fixed, entry.options);
      expect(second).to.deep.equal(first);
    });
  }
});
