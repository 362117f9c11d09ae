import { expect } from 'chai';
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
