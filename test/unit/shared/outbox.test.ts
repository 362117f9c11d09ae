import { expect } from 'chai';
import { createOutbox, type LateEvent } from '../../../src/shared/events/outbox.js';
import { lateEventPending, lateEventStatement } from '../../../src/webhooks/event.repository.js';

describe('the outbox: events written by their producer’s script (inScript)', () => {
  function outbox() {
    const made: LateEvent[] = [];
    let wakes = 0;
    const box = createOutbox({
      store: {
        insertEvent: () => Promise.resolve(),
        insertEvents: () => Promise.resolve(),
        lateEventStatement: (e) => {
          made.push(e);
          return lateEventStatement(e);
        },
        lateEventPending,
      },
      onCommit: () => wakes++,
      atWrite: { statements: () => [], taken: () => undefined },
    });
    return { box, made, wakes: () => wakes };
  }
  const event = (box: ReturnType<typeof outbox>['box']) =>
    box.inScript({
      orgId: 'org-1',
      type: 'guarantee.created',
      data: { id: 'MARK-ID', name: 'x' },
      idSql: '@reg_event_id',
      at: { sql: '@reg_at', iso: { mark: 'MARK-AT', sql: '@reg_iso' } },
      late: [{ mark: 'MARK-ID', sql: '@reg_id' }],
      whenSql: '@reg_ms IS NOT NULL',
    });

  it('writes the body with its marks, each replaced by its SQL in the statement, the time and id from SQL', () => {
    const o = outbox();
    const { statement } = event(o.box);
    expect(o.made[0]?.body).to.equal('{"type":"guarantee.created","timestamp":"MARK-AT","data":{"id":"MARK-ID","name":"x"}}');
    expect(statement.sql).to.include('REPLACE(REPLACE($3, $4, @reg_iso), $5, @reg_id)');
    expect(statement.sql).to.include('SELECT @reg_event_id, $1, $2,');
    expect(statement.sql).to.include('WHERE @reg_ms IS NOT NULL');
    expect(statement.bind).to.deep.equal(['org-1', 'guarantee.created', o.made[0]?.body, 'MARK-AT', 'MARK-ID']);
  });

  it('wakes the relay after the commit only when the event waits for it', () => {
    const o = outbox();
    const e = event(o.box);
    e.committed([{ dispatched_at: new Date() }]); // written dispatched: no endpoint
    e.committed([]); // not written: the change did not happen
    expect(o.wakes()).to.equal(0);
    e.committed([{ dispatched_at: null }]);
    expect(o.wakes()).to.equal(1);
  });
});
