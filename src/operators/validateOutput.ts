import * as t from 'io-ts';
import { InvalidOptionError } from '../core/errors/errors.js';
import { NonNegativeInteger, describeProblems, formatProblem, isLeft, validateOptions } from '../core/errors/options.js';

/**
 * A check on a final answer: return the problems found (a string, a list, or nothing). If it
 * throws, `check()` throws what it threw and `runAgent` ends the run with it (a broken check is
 * a bug to surface, not a problem to send the model).
 */
export type OutputCheck = (answer: string) => string | readonly string[] | undefined | null;

/** Built by {@link validateOutput}; give it to `runAgent` as `output`. */
export interface OutputValidator {
  /** Re-asks allowed before the last answer is returned unvalidated. */
  readonly maxCorrections: number;
  /** The problems with an answer; empty when it passes. Throws what a check throws. */
  check(answer: string): string[];
  /** The message that re-asks the model, listing the problems. */
  correction(problems: readonly string[]): string;
}

/** Options of {@link validateOutput}. */
export interface ValidateOutputOptions {
  /** Re-asks before giving up (the last answer is then returned, marked unvalidated). Defaults to 2. */
  readonly maxCorrections?: number;
}

/**
 * Output self-correction (the article's validators). With a codec, the answer must be JSON that
 * decodes; with checks, each returns the problems it finds. When an answer has problems,
 * `runAgent` re-asks the model with the list (emitting `validation` and `reset` events); after
 * `maxCorrections` re-asks it keeps the last answer and marks its message `validated: false`.
 *
 * @example
 * ```ts
 * runAgent({ model, messages, output: validateOutput(t.type({ city: t.string, celsius: t.number })) });
 * runAgent({ model, messages, output: validateOutput([(a) => (a.length > 500 ? 'answer is longer than 500 characters' : undefined)]) });
 * ```
 * @throws {InvalidOptionError} for a bad codec, check list or option.
 */
export function validateOutput(rule: t.Mixed | readonly OutputCheck[], options?: ValidateOutputOptions): OutputValidator {
  const o = validateOptions('validateOutput', { maxCorrections: NonNegativeInteger }, options);
  const checks: readonly OutputCheck[] = rule instanceof t.Type ? [codecCheck(rule)] : rule;
  if (!Array.isArray(checks) || checks.length === 0 || !checks.every((c) => typeof c === 'function')) {
    throw new InvalidOptionError('validateOutput', 'rule', rule, 'an io-ts codec or a non-empty array of check functions');
  }
  return {
    maxCorrections: o.maxCorrections ?? 2,
    check: (answer) => {
      const problems: string[] = [];
      for (const check of checks) {
        const found = check(answer);
        if (typeof found === 'string' && found !== '') problems.push(found);
        else if (Array.isArray(found)) problems.push(...(found as string[]).filter((p) => typeof p === 'string' && p !== ''));
      }
      return problems;
    },
    correction: (problems) =>
      `Your previous answer has ${problems.length === 1 ? 'a problem' : 'these problems'}:\n` +
      problems.map((p) => `- ${p}`).join('\n') +
      '\nReply again with a corrected answer, and only the answer.',
  };
}

/**
 * The answer without a Markdown fence: a leading ```` ```json ```` or ```` ``` ```` and a trailing
 * ```` ``` ````, with the whitespace around them. Linear: no regex (`/\s*```$/g` rescans every
 * run of whitespace from each of its positions).
 */
function stripFence(answer: string): string {
  let text = answer.trim();
  if (text.startsWith('```')) text = text.slice(text.startsWith('json', 3) ? 7 : 3).trimStart();
  if (text.endsWith('```')) text = text.slice(0, -3).trimEnd();
  return text;
}

function codecCheck(codec: t.Mixed): OutputCheck {
  return (answer) => {
    let value: unknown;
    try {
      value = JSON.parse(stripFence(answer));
    } catch (e) {
      return `the answer is not valid JSON (${e instanceof Error ? e.message : String(e)})`;
    }
    const decoded = codec.decode(value);
    return isLeft(decoded) ? describeProblems(decoded.left).map(formatProblem) : undefined;
  };
}
