import { expect } from 'chai';
import { TestScheduler } from 'rxjs/testing';

/**
 * A fresh TestScheduler whose assertions are chai deep equality. Errors compare by name and
 * message (chai's rule), so specs assert custom error fields separately.
 */
export function testScheduler(): TestScheduler {
  return new TestScheduler((actual, expected) => {
    expect(actual).to.deep.equal(expected);
  });
}
