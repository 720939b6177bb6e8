/**
 * The `InvalidOptionError` a constructor or factory throws for a bad option or client, returned so
 * a spec can check what it names; a failure if it throws anything else, or nothing.
 */
import { expect } from 'chai';
import { InvalidOptionError } from '../../src/core/errors/errors.js';

export function refusal(make: () => unknown): InvalidOptionError {
  try {
    make();
  } catch (e) {
    expect(e).to.be.instanceOf(InvalidOptionError);
    return e as InvalidOptionError;
  }
  expect.fail('accepted');
}
