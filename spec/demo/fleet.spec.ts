import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { requireProgram } from '../support/systemPackage.js';

const DEMO = fileURLToPath(new URL('../../examples/demo/fleet.ts', import.meta.url));

describe('npm run demo:fleet (three processes, one redis-server, a dead primary)', function () {
  this.timeout(90_000);
  let lines: string[] = [];

  before(async function () {
    requireProgram(this, { name: 'redis-server', command: 'redis-server', install: 'apt-get install redis-server (.ci/run does)' });
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', DEMO], { timeout: 80_000, env: { ...process.env, REDIS_URL: '' } }, (error, out) =>
        error ? reject(error) : resolve(out),
      ),
    );
    lines = stdout
      .split('\n')
      .map((l) => l.replace(/^\s*\d+ ms {2}/, '').trim())
      .filter((l) => l !== '');
  });

  it('the three open together, then each period one probes under the lease while the others wait', () => {
    const opened = new Set(lines.filter((l) => / closed → open /.test(l)).map((l) => l.split(' ')[0]));
    expect([...opened].sort()).to.deep.equal(['p1', 'p2', 'p3']);
    const probes = lines.map((l, i) => [l, i] as const).filter(([l]) => l.includes('probe_lease'));
    expect(probes.length, 'probing periods').to.be.at.least(3);
    for (const [, i] of probes) {
      // between a probe and the next transition, exactly one request reaches the primary: the probe
      const next = lines.findIndex((l, j) => j > i && / → /.test(l) && !l.startsWith('primary'));
      expect(
        lines.slice(i + 1, next).filter((l) => l.startsWith('primary ←')),
        lines[i],
      ).to.have.length(1);
    }
  });

  it('the primary back: one probe succeeds and closes all three', () => {
    const back = lines.indexOf('the primary is back');
    expect(back).to.be.greaterThan(0);
    const after = lines.slice(back);
    expect(after.filter((l) => l.startsWith('primary ←'))).to.deep.equal([after.find((l) => l.startsWith('primary ←'))!]);
    expect(after.find((l) => l.startsWith('primary ←'))).to.match(/: 200$/);
    expect(
      after
        .filter((l) => / → closed /.test(l))
        .map((l) => l.split(' ')[0])
        .sort(),
    ).to.deep.equal(['p1', 'p2', 'p3']);
    expect(after[after.length - 1]).to.match(/^all three closed/);
  });
});
