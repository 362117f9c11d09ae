// The transparency log's publisher lease: a second row of log_sequencer (id 2), taken by the
// process that publishes tiles, a checkpoint and the witnesses' cosignatures, so that publishing
// runs in one process at a time without holding the sequencer's lease (row 1) that the
// notarizer's appends need. The previous release never reads it.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0032-log-publisher',
  async up({ context: q }) {
    await q(`INSERT IGNORE INTO log_sequencer (id, expires_at) VALUES (2, '1970-01-02 00:00:00')`);
  },
  async down({ context: q }) {
    await q('DELETE FROM log_sequencer WHERE id = 2');
  },
};
