/**
 * The "Side effects exactly once" guide's program (docs/guides/side-effects.md), run as it is: a program of its own (written next
 * to the package, so `rxheal` and `rxheal/durable` resolve to the build through the exports map, as
 * for a user), started with Node and tsx. Its payment service loses the first answer after the
 * charge; what it prints must be the one charge, under the call's key, retried with that key.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The guide's first ```ts block (its program). */
function guideProgram(page: string): string {
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(readFileSync(join(ROOT, page), 'utf8'));
  expect(block, `a ts block in ${page}`).to.not.equal(null);
  return block![1]!;
}

describe('docs/guides/side-effects.md: the side effects exactly once program, run as it is', function () {
  this.timeout(60_000);

  it('prints the one charge under the call key, retried after the lost answer', async () => {
    const file = join(ROOT, 'spec', 'docs', `.guide-effects-${process.pid}.ts`);
    writeFileSync(file, guideProgram('docs/guides/side-effects.md'));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, timeout: 30_000 });
      expect(stdout.trimEnd().split('\n')).to.deep.equal(['charged 42 under invoice-7/1/0/charge', '1 charge(s)']);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
