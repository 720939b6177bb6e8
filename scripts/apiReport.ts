/**
 * The public surface, one API report per entry point of package.json's `exports` (api-extractor
 * reading the built `.d.ts`), checked in under `api/` so every change shows its surface diff.
 *
 *   npm run api            # compare dist/ against api/*.api.md; exit 1 and print the diff on a change
 *   npm run api -- --update  # write the reports anew (review the diff, then commit it)
 *
 * `npm test` runs the comparison after the build (spec/api.spec.ts). A report is named after its
 * subpath (`.` → `rxheal.api.md`, `./ai-sdk` → `ai-sdk.api.md`), not after the file it is built
 * from, so moving an entry's source does not move its report.
 */
import { Extractor, ExtractorConfig, ExtractorLogLevel, ExtractorMessageCategory } from '@microsoft/api-extractor';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
export const REPORT_DIR = join(ROOT, 'api');

/** An entry point of the package: its subpath, the report's name, and its built `.d.ts`. */
export interface Entry {
  readonly subpath: string;
  readonly report: string;
  readonly types: string;
}

/** Every entry point with types in package.json's `exports`, in its order. */
export function entries(): Entry[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types?: string }>;
  };
  return Object.entries(pkg.exports).flatMap(([subpath, target]) => {
    if (typeof target === 'string' || target.types === undefined) return [];
    const name = subpath === '.' ? 'rxheal' : subpath.slice(2).replace(/\//g, '-');
    return [{ subpath, report: `${name}.api.md`, types: join(ROOT, target.types) }];
  });
}

/** The report api-extractor writes for `entry` from the current dist/ (its text). */
export function buildReport(entry: Entry, work: string): string {
  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: ROOT,
      mainEntryPointFilePath: entry.types,
      bundledPackages: [],
      compiler: { tsconfigFilePath: join(ROOT, 'tsconfig.build.json') },
      apiReport: {
        enabled: true,
        reportFileName: entry.report,
        reportFolder: work,
        reportTempFolder: work,
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        // Findings go into the report itself (so a new forgotten export shows in the diff), none
        // stops the run: the report is the record, the comparison is the check.
        compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
        extractorMessageReporting: {
          default: { logLevel: ExtractorLogLevel.None, addToApiReportFile: true },
          // rxheal has no release stages, and TypeDoc checks the links (npm run docs)
          'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None, addToApiReportFile: false },
          'ae-unresolved-link': { logLevel: ExtractorLogLevel.None, addToApiReportFile: false },
          // reported with a file and line of dist/ (moves with every edit); the report marks each
          // undocumented member `(undocumented)` in place anyway
          'ae-undocumented': { logLevel: ExtractorLogLevel.None, addToApiReportFile: false },
        },
        tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
      },
    },
    configObjectFullPath: join(ROOT, 'api-extractor.json'),
    packageJsonFullPath: join(ROOT, 'package.json'),
  });
  const result = Extractor.invoke(config, {
    localBuild: true,
    showVerboseMessages: false,
    messageCallback: (message) => {
      // api-extractor's notes on itself (the compiler version it bundles) are not findings
      if (message.category === ExtractorMessageCategory.Console && message.logLevel !== ExtractorLogLevel.Error) message.handled = true;
    },
  });
  if (result.errorCount > 0) throw new Error(`api-extractor failed on ${entry.subpath} (${result.errorCount} errors)`);
  // The report names the file it was built from (its header, each forgotten export): the subpath
  // is what counts, so a moved source file leaves its entry's report as it was.
  return readFileSync(join(work, entry.report), 'utf8')
    .replace(/^## API Report File for .*$/m, `## API Report File for "rxheal${entry.subpath === '.' ? '' : entry.subpath.slice(1)}"`)
    .replace(/ needs to be exported by the entry point \S+\.d\.ts$/gm, ' needs to be exported by the entry point');
}

/** Each entry's report against the checked-in one: the entries whose surface changed. */
export function compareReports(update = false): { entry: Entry; expected: string | undefined; actual: string }[] {
  const work = mkdtempSync(join(tmpdir(), 'rxheal-api-'));
  const changed: { entry: Entry; expected: string | undefined; actual: string }[] = [];
  try {
    mkdirSync(REPORT_DIR, { recursive: true });
    for (const entry of entries()) {
      const actual = buildReport(entry, work);
      const path = join(REPORT_DIR, entry.report);
      let expected: string | undefined;
      try {
        expected = readFileSync(path, 'utf8');
      } catch {
        expected = undefined;
      }
      if (expected !== actual) {
        changed.push({ entry, expected, actual });
        if (update) writeFileSync(path, actual);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return changed;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const update = process.argv.includes('--update');
  const changed = compareReports(update);
  for (const { entry } of changed) console.log(`${update ? 'wrote' : 'changed'}: api/${entry.report} (${entry.subpath})`);
  if (changed.length === 0) console.log(`api/: ${entries().length} reports, no surface change`);
  else if (!update) {
    console.log('The public surface changed. Review it, then `npm run api -- --update` and commit api/.');
    process.exit(1);
  }
}
