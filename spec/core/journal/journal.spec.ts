import { expect } from 'chai';
import { InvalidOptionError } from '../../../src/core/errors/errors.js';
import { jsonRecord, recordText } from '../../../src/core/journal/journal.js';

describe('core/journal: records as text', () => {
  it('recordText: JSON data is serialised as is; the first value that is not is named by its path', () => {
    expect(recordText('t', { v: 1, list: [1, 'a', null, { ok: true }] })).to.equal('{"v":1,"list":[1,"a",null,{"ok":true}]}');
    const bad: [unknown, string][] = [
      [{ messages: [{}, {}, { at: new Date(0) }] }, 'data.messages.2.at'],
      [{ a: { b: undefined } }, 'data.a.b'],
      [{ n: NaN }, 'data.n'],
      [{ list: [1, () => 1] }, 'data.list.1'],
    ];
    for (const [data, path] of bad)
      expect(() => recordText('t', data), path)
        .to.throw(InvalidOptionError)
        .with.property('option', path);
    const cyclic: Record<string, unknown> = { a: {} };
    (cyclic['a'] as Record<string, unknown>)['back'] = cyclic;
    expect(() => recordText('t', cyclic))
      .to.throw(InvalidOptionError, /without a cycle/)
      .with.property('option', 'data.a.back');
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(() => recordText('t', { deep })).to.throw(InvalidOptionError, /nested at most 256 deep/);
  });

  it('jsonRecord: a value as JSON stores it (undefined dropped, a Date its ISO text), serialised once — recordText gives the same text', () => {
    const record = jsonRecord('t', { v: 1, note: undefined, at: new Date(0), list: [1, undefined] });
    expect(record).to.deep.equal({ v: 1, at: '1970-01-01T00:00:00.000Z', list: [1, null] });
    expect(recordText('t', record)).to.equal(JSON.stringify(record));
    // a plain copy of it is checked and serialised the usual way, to the same text
    expect(recordText('t', { ...record })).to.equal(recordText('t', record));
  });

  it('jsonRecord: refuses what is not an object once serialised, and what nests deeper than a record may', () => {
    expect(() => jsonRecord('t', { toJSON: () => 'text' })).to.throw(InvalidOptionError, /a plain object of JSON data/);
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = { d: deep };
    expect(() => jsonRecord('t', { deep })).to.throw(InvalidOptionError, /nested at most 256 deep/);
  });
});
