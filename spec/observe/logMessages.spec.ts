/**
 * The messages the logger writes that rxheal/chaos reads back: a pool event's record, read back,
 * is the event it was written for.
 */
import { expect } from 'chai';
import type { PoolEvent } from '../../src/core/events/events.js';
import { logRecord } from '../../src/observe/logger.js';
import { POOL_MESSAGES, poolEventOf } from '../../src/observe/logMessages.js';
import { everyAgentEvent } from '../support/everyEvent.js';

describe('log messages read back', () => {
  it('every pool event: its record, read back, is the event (kind, members, reason and figures)', () => {
    expect(everyAgentEvent.pool.length).to.be.greaterThan(2);
    for (const event of everyAgentEvent.pool as PoolEvent[]) {
      const record = logRecord(event)!;
      expect(record.message).to.equal(POOL_MESSAGES[event.kind]);
      expect(poolEventOf(record.message, record.fields)).to.deep.equal(event);
    }
  });

  it('another message is no pool event', () => {
    expect(poolEventOf('hedge won', { pool: 'p' })).to.equal(undefined);
  });
});
