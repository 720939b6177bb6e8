/**
 * `expect(() => f()).to.throw(Class, message)` for what returns a promise: the promise must
 * reject with an instance of `kind` whose message contains `message` (a string) or matches it
 * (a RegExp). Returns the error for further checks. A synchronous throw counts as a rejection.
 */
import { expect } from 'chai';

export async function rejects(work: () => PromiseLike<unknown>, kind: abstract new (...args: never[]) => Error, message?: string | RegExp): Promise<Error> {
  let outcome: { readonly error: unknown } | undefined;
  try {
    await work();
  } catch (error) {
    outcome = { error };
  }
  if (outcome === undefined) throw new Error(`expected a rejection with ${kind.name}, but it resolved`);
  const { error } = outcome;
  expect(error, `rejected with ${String(error)}`).to.be.instanceOf(kind);
  const text = (error as Error).message;
  if (typeof message === 'string') expect(text).to.contain(message);
  else if (message instanceof RegExp) expect(text).to.match(message);
  return error as Error;
}
