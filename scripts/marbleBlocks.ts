/**
 * Executable marble diagrams: the ```marble blocks of marble-docs/*.md, parsed once, used by the
 * doc spec (which runs each against the real operator in TestScheduler.run) and by
 * `npm run docs` (which renders them to SVG with swirly).
 *
 * A block is `key: value` lines; a line starting with spaces continues the previous key; `//`
 * starts a comment. Values are JavaScript expressions or marbles; a key cannot contain `:`. Keys:
 *
 * - `let NAME: expr` — a variable for later expressions (evaluated in order, inside run()).
 * - `operator: expr` — the operator under test (an OperatorFunction).
 * - `source: marble` — the source (a cold observable); or several `attempt: marble` lines, one
 *   per subscription (the last repeats); or `source X: marble` lines naming sources for `calls`.
 * - `calls: marble` — each letter subscribes the named source through `operator`, at that time;
 *   errors become `label(error)` values.
 * - `values: expr` — values for letters in sources (default: the letters themselves).
 * - `error: expr` — the error of `#` in sources (default `e503`); `error X: expr` — the error of
 *   `#` in source `X` only (with `calls`).
 * - `subs: marble…` — the source's expected subscriptions (one per line); `subs X: marble…` —
 *   those of source `X`, or of a `let X` made with `cold()` or `hot()` (`(none)`: never subscribed).
 * - `unsubscribe: marble` — when the result is unsubscribed.
 * - `result: marble` — the expected output; `result-values: expr`; `result-error: expr`.
 * - `expect EXPR: marble` — any other observable expression's expected output, subscribed at 0
 *   (uses `result-values` and `result-error`).
 * - `box: text` — the drawn diagram's operator box (default: the `operator` expression). The run
 *   ignores it.
 * - `legend X: text` — a line of the drawn diagram's legend, for `X` (a letter, or a call's source
 *   name); it replaces what the renderer would say about `X`. The run ignores it.
 *
 * Besides the doc spec's scope (rxjs, rxheal, rxheal/testing, …), expressions can use the run's
 * `cold(marbles, values?, error?)` and `hot(…)`, and `pendingAt(ms)`: an observable that emits, at
 * `ms`, how many actions are scheduled on the virtual clock (0: no timer left behind). Errors are
 * compared by name, message and own fields (so `new AllFallbacksFailedError([e503, e502])` checks
 * its list). Every block must assert something: a `result`, `subs` or `expect` line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One ```marble block of a doc page. */
export interface MarbleBlock {
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The nearest heading above the block. */
  readonly title: string;
  /** Key/value lines in order (keys may repeat). */
  readonly entries: readonly (readonly [string, string])[];
}

/** The ```marble blocks of one Markdown text. */
export function parseBlocks(file: string, markdown: string): MarbleBlock[] {
  const lines = markdown.split('\n');
  const blocks: MarbleBlock[] = [];
  let title = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) title = heading[1]!.trim();
    if (line.trim() !== '```marble') continue;
    const start = i + 1;
    const entries: [string, string][] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) {
      const raw = lines[i]!.replace(/\s+\/\/.*$/, '');
      if (raw.trim() === '') continue;
      if (/^\s/.test(raw)) {
        const last = entries[entries.length - 1];
        if (!last) throw new Error(`${file}:${i + 1}: a continuation line with nothing to continue`);
        last[1] += `\n${raw.trim()}`;
        continue;
      }
      const match = /^([A-Za-z-]+(?: [^:]+)?):\s*(.*)$/.exec(raw);
      if (!match) throw new Error(`${file}:${i + 1}: expected "key: value", got ${JSON.stringify(raw)}`);
      entries.push([match[1]!, match[2]!.trim()]);
    }
    blocks.push({ file, line: start, title, entries });
  }
  return blocks;
}

/** Every block of every page in `dir`. */
export function readBlocks(dir: string): MarbleBlock[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .flatMap((f) => parseBlocks(join(dir, f), readFileSync(join(dir, f), 'utf8')));
}

/** The value of the only `key` entry, if any. */
export function one(block: MarbleBlock, key: string): string | undefined {
  const found = block.entries.filter(([k]) => k === key);
  if (found.length > 1) throw new Error(`${block.file}:${block.line}: "${key}" given ${found.length} times`);
  return found[0]?.[1];
}

/** Values of every `key` entry, in order. */
export function all(block: MarbleBlock, key: string): string[] {
  return block.entries.filter(([k]) => k === key).map(([, v]) => v);
}

/** Entries whose key starts with `prefix ` (e.g. `let x`, `source f`), as [name, value]. */
export function named(block: MarbleBlock, prefix: string): [string, string][] {
  return block.entries.filter(([k]) => k.startsWith(`${prefix} `)).map(([k, v]) => [k.slice(prefix.length + 1).trim(), v]);
}
