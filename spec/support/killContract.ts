/**
 * The real-process kill spec on one store: the fault-free baseline (the same providers and
 * faults, never killed), then each of {@link KILL_PLANS}' episodes checked against it.
 */
import { expect } from 'chai';
import { checkEpisode, episode, ANSWER, type Episode } from './killResume.js';
import { KILL_PLANS } from './killPlans.js';
import type { StoreAt } from './storeAt.js';

export function killContract(name: string, store: () => StoreAt): void {
  describe(`${name}: an agent in a child process, SIGKILLed 20 times and resumed by new processes`, function () {
    this.timeout(180_000);
    let baseline: Episode | undefined;
    before(async () => {
      baseline = await episode(store(), []);
    });

    it('the run never killed: the answer, each tool once, the primary healed by a retry and the secondary', () => {
      const end = baseline!.lives[0]!.lines.at(-1);
      expect(end).to.deep.include({ done: 'answer', text: ANSWER });
      expect(baseline!.effects.lookup).to.have.length(1);
      expect(baseline!.effects.book).to.have.length(1);
      expect(baseline!.effects.notify).to.have.length(1);
    });

    KILL_PLANS.forEach((kills, i) => {
      const where = kills.map((k) =>
        k.at === 'append' ? `append #${k.n} ${k.phase}` : k.at === 'effect' ? `${k.tool} ${k.phase} its effect` : `delta #${k.n}`,
      );
      it(`episode ${i + 1}: killed ${where.join(', ')} — the same answer, no committed turn requested again, the booking once, the notice at most once`, async () => {
        const run = await episode(store(), kills);
        checkEpisode(run, baseline!, kills);
      });
    });
  });
}
