/**
 * The agents guide's "Resuming a cut stream" snippet (docs/guides/agents.md), run as it is: a program of its own (written next
 * to the package, so `rxheal` and `rxheal/server` resolve to the build through the exports map, as
 * for a user), started with Node and tsx. Its local Responses API cuts the first connection after
 * five tokens; what it prints must be one resume after event 8 (created, in_progress, the item and
 * its content part, five deltas) and the whole answer, each word once.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { RIVERS_ANSWER } from '../support/interop.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The ```ts block of the agents guide's section `heading`. */
function sectionSnippet(heading: string): string {
  const guide = readFileSync(join(ROOT, 'docs', 'guides', 'agents.md'), 'utf8');
  const start = guide.indexOf(`\n## ${heading}`);
  expect(start, heading).to.be.greaterThan(-1);
  const section = guide.slice(start + 1, guide.indexOf('\n## ', start + 1));
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(section);
  expect(block, `a ts block under ${heading}`).to.not.equal(null);
  return block![1]!;
}

describe('the agents guide: the resume snippet, run as it is against rxheal/server', function () {
  this.timeout(60_000);

  it('prints one resume (dropped, after event 8) and the whole answer, each word once', async () => {
    const file = join(ROOT, 'spec', 'docs', `.readme-resume-${process.pid}.ts`);
    writeFileSync(file, sectionSnippet('Resuming a cut stream instead of restarting it'));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, timeout: 30_000 });
      const lines = stdout.trimEnd().split('\n');
      expect(lines).to.deep.equal(['[resumed resp_req_1 after event 8: dropped]', RIVERS_ANSWER]);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
