import fc from 'fast-check';
import { retryProperty } from './retryProperty.js';

describe('property: retryWithBackoff', () => {
  it('subscribes at most maxRetries + 1 times, never ends silently after an error, and its virtual time is the attempts plus the reported delays', () => {
    fc.assert(retryProperty, { numRuns: 300 });
  });
});
