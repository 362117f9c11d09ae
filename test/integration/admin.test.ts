import { expect } from 'chai';
import { boardAction } from '../../src/shared/http/admin.js';
import { select } from '../../src/shared/db/sequelize.js';
import { appWith, harness } from '../support/harness.js';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('Bull Board at /admin/queues', () => {
  it('asks for basic auth, refuses wrong credentials (any spelling of the path), and shows every queue to the admin', async () => {
    const http = await appWith({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse' });
    const anonymous = await http.get('/admin/queues');
    expect(anonymous.status).to.equal(401);
    expect(anonymous.headers['www-authenticate']).to.match(/^Basic realm=/);
    for (const [path, auth] of [
      ['/admin/queues', basic('ops', 'wrong')],
      ['/admin/queues/api/queues', basic('nobody', 'correct horse')],
      ['/ADMIN/queues/api/queues', basic('x', 'y')],
    ] as const) {
      expect((await http.get(path).set('Authorization', auth)).status, path).to.equal(401);
    }
    const page = await http.get('/admin/queues').set('Authorization', basic('ops', 'correct horse'));
    expect(page.status).to.equal(200);
    expect(page.text).to.match(/<html/i);
    const api = await http.get('/admin/queues/api/queues').set('Authorization', basic('ops', 'correct horse'));
    expect(api.status).to.equal(200);
    const names = (api.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
    const { queues } = await harness();
    expect(names).to.deep.equal(queues.all.map((q) => q.name).sort());
    expect(names).to.include.members(['maintenance', 'upload-checks', 'scans', 'signatures']);
  });

  it('is not mounted (404) when ADMIN_USER and ADMIN_PASSWORD are unset', async () => {
    const http = await appWith({ ADMIN_USER: '', ADMIN_PASSWORD: '' });
    expect((await http.get('/admin/queues').set('Authorization', basic('admin', 'pw'))).status).to.equal(404);
    expect((await http.get('/admin/queues/api/queues')).status).to.equal(404);
  });

  it('limits failed logins per client address (429 after AUTH_FAILURES_PER_MINUTE)', async () => {
    const http = await appWith({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'pw', AUTH_FAILURES_PER_MINUTE: '3' });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await http.get('/admin/queues').set('Authorization', basic('ops', `guess${i}`))).status);
    expect(statuses).to.deep.equal([401, 401, 401, 429, 429]);
    // Even the right password waits out the limit.
    expect((await http.get('/admin/queues').set('Authorization', basic('ops', 'pw'))).status).to.equal(429);
  });
});

describe("Bull Board's changes in the audit trail", () => {
  it('records each change twice in the system chain, requested before it runs and how it ended, with the admin user as actor; reads are not recorded', async () => {
    const http = await appWith({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse' });
    const auth = basic('ops', 'correct horse');
    const { queues, db } = await harness();
    const queue = queues.maintenance;
    const jobId = `audit-${Date.now()}`;
    await queue.add('purge-idempotency-keys', {}, { jobId, delay: 3_600_000 });
    const before = await select<{ seq: number }>(db, "SELECT COALESCE(MAX(seq), 0) AS seq FROM audit_log WHERE chain = 'system'", []);
    const since = Number(before[0]?.seq ?? 0);
    try {
      expect((await http.get('/admin/queues/api/queues').set('Authorization', auth)).status).to.equal(200);
      const promoted = await http.put(`/admin/queues/api/queues/${queue.name}/${jobId}/promote`).set('Authorization', auth).set('X-Request-Id', 'board-1');
      expect(promoted.status).to.be.within(200, 204);
      expect(await (await queue.getJob(jobId))?.getState()).to.not.equal('delayed');
      const missing = await http.put(`/admin/queues/api/queues/${queue.name}/no-such-job/promote`).set('Authorization', auth);
      expect(missing.status).to.equal(404);
      const rows = await select<{ actor: string; action: string; target: string; outcome: string; request_id: string | null }>(
        db,
        "SELECT actor, action, target, outcome, request_id FROM audit_log WHERE chain = 'system' AND seq > $1 ORDER BY seq",
        [since],
      );
      expect(rows.map((r) => [r.actor, r.action, r.target, r.outcome])).to.deep.equal([
        ['admin:ops', 'board.promote', `job:${queue.name}/${jobId}`, 'requested'],
        ['admin:ops', 'board.promote', `job:${queue.name}/${jobId}`, 'ok'],
        ['admin:ops', 'board.promote', `job:${queue.name}/no-such-job`, 'requested'],
        ['admin:ops', 'board.promote', `job:${queue.name}/no-such-job`, 'failed 404'],
      ]);
      expect(rows[0]?.request_id).to.equal('board-1');
    } finally {
      await (await queue.getJob(jobId))?.remove();
    }
  });

  it('names what a change does: a job, a queue, or every queue', () => {
    expect(boardAction('PUT', '/admin/queues/api/queues/scans/42/retry')).to.deep.equal({ action: 'board.retry', target: 'job:scans/42' });
    expect(boardAction('PUT', '/admin/queues/api/queues/scans/retry/failed')).to.deep.equal({ action: 'board.retry.failed', target: 'queue:scans' });
    expect(boardAction('PUT', '/admin/queues/api/queues/scans/clean/completed')).to.deep.equal({ action: 'board.clean.completed', target: 'queue:scans' });
    expect(boardAction('PUT', '/admin/queues/api/queues/pause')).to.deep.equal({ action: 'board.pause', target: 'queue:*' });
    expect(boardAction('PUT', '/admin/queues/api/queues/maintenance/job-schedulers/sweep-uploads/remove')).to.deep.equal({
      action: 'board.job-schedulers.remove',
      target: 'job-scheduler:maintenance/sweep-uploads',
    });
    expect(boardAction('PUT', '/admin/queues/api/queues/scans/%E0%A4%A/retry')).to.deep.equal({ action: 'board.retry', target: 'job:scans/%E0%A4%A' });
  });
});
