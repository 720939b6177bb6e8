import * as t from 'io-ts';
import { InvalidOptionError } from '../core/errors.js';
import { NonNegativeInteger, describeProblems, formatProblem, isLeft, validateOptions } from '../core/options.js';

/** A check on a final answer: return the problems found (a string, a list, or nothing). */
export type OutputCheck = (answer: string) => string | readonly string[] | undefined | null;

/** Built by {@link validateOutput}; give it to `runAgent` as `output`. */
export interface OutputValidator {
  /** Re-asks allowed before the last answer is returned unvalidated. */
  readonly maxCorrections: number;
  /** The problems with an answer; empty when it passes. Never throws. */
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
export function validateOutput(
  rule: t.Mixed | readonly OutputCheck[],
  options?: ValidateOutputOptions,
): OutputValidator {
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
        let found: ReturnType<OutputCheck>;
        try {
          found = check(answer);
        } catch (e) {
          found = `a check failed: ${e instanceof Error ? e.message : String(e)}`;
        }
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

function codecCheck(codec: t.Mixed): OutputCheck {
  return (answer) => {
    let value: unknown;
    try {
      value = JSON.parse(answer.trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
    } catch (e) {
      return `the answer is not valid JSON (${e instanceof Error ? e.message : String(e)})`;
    }
    const decoded = codec.decode(value);
    return isLeft(decoded) ? describeProblems(decoded.left).map(formatProblem) : undefined;
  };
}
