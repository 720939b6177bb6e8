import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BEGIN, END, expectedReadme, LOCAL_RESULTS, RESULTS, renderTable, replaceTable, resultsPath, type Results } from '../../bench/readmeTable.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe("the README's benchmark table (bench/readmeTable.ts)", () => {
  it('is exactly what bench/results.json says (regenerate: npm run bench -- --save, or npx tsx bench/readmeTable.ts)', () => {
    const { current, expected } = expectedReadme();
    expect(current === expected, 'README.md is stale: run npx tsx bench/readmeTable.ts').to.equal(true);
  });

  it('shows the date, the machine, the load and every target with what was measured', () => {
    const results: Results = {
      machine: {
        cpu: 'CPU X',
        cores: 2,
        node: 'v20.20.2',
        date: '2026-11-30T18:40:12.000Z',
        loadAverageAtStart: [9.71, 5, 2],
        loadAverageAtEnd: [11.02, 8, 4],
        seconds: 412.4,
        quick: false,
      },
      verdicts: [
        { figure: 'a', target: '≤ 1.0× cockatiel', measured: '0.70× (0.6–0.8)', met: true },
        { figure: 'd', target: 'bundle | gz', measured: '8 007 B', met: false },
      ],
    };
    const table = renderTable(results);
    expect(table.startsWith(BEGIN) && table.endsWith(END)).to.equal(true);
    expect(table).to.contain('2026-11-30 18:40 UTC, CPU X, 2 cores, Node v20.20.2, 412 s; load average 9.7 at the start, 11.0 at the end');
    expect(table).to.contain('1 of 2 targets met');
    expect(table).to.contain('| a | ≤ 1.0× cockatiel | 0.70× (0.6–0.8) | yes |');
    expect(table).to.contain('| d | bundle \\| gz | 8 007 B | **no** |');
    expect(replaceTable(`intro\n${BEGIN}\nold\n${END}\noutro`, table)).to.equal(`intro\n${table}\noutro`);
    expect(() => replaceTable('no markers', table)).to.throw(/markers/);
  });

  it('says when a figure was measured again on its own (npm run bench:bundles -- --save: figure d)', () => {
    const results: Results = {
      machine: {
        cpu: 'CPU X',
        cores: 2,
        node: 'v20.20.2',
        date: '2026-11-30T18:40:12.000Z',
        loadAverageAtStart: [1, 1, 1],
        loadAverageAtEnd: [1, 1, 1],
        seconds: 100,
        quick: false,
      },
      verdicts: [{ figure: 'd', target: 'x ≤ 10 B', measured: '9 B', met: true }],
      remeasured: { figure: 'd', date: '2026-12-01T05:07:00.000Z', by: 'npm run bench:bundles -- --save' },
    };
    expect(renderTable(results)).to.contain(
      'Figure d measured again on 2026-12-01 05:07 UTC (`npm run bench:bundles -- --save`; bundle sizes do not depend on the machine). 1 of 1 targets met.',
    );
    expect(renderTable({ machine: results.machine, verdicts: results.verdicts })).not.to.contain('measured again');
  });

  it('npm run bench writes an untracked, ignored file; only --save writes the committed results', () => {
    expect(resultsPath(['node', 'bench/index.ts'])).to.equal(LOCAL_RESULTS);
    expect(resultsPath(['node', 'bench/index.ts', '--save'])).to.equal(RESULTS);
    const local = relative(ROOT, LOCAL_RESULTS);
    // git check-ignore exits 0 when the path is ignored
    expect(execFileSync('git', ['check-ignore', local], { cwd: ROOT, encoding: 'utf8' }).trim()).to.equal(local);
    expect(execFileSync('git', ['ls-files', relative(ROOT, RESULTS)], { cwd: ROOT, encoding: 'utf8' }).trim()).to.equal('bench/results.json');
  });
});
