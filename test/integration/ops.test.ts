import { expect } from 'chai';
import { appWith, extraDb, harness, newOrg } from '../support/harness.js';

describe('operations endpoints', () => {
  it('answers /healthz and /readyz without a key', async () => {
    const { http } = await harness();
    expect((await http.get('/healthz')).body).to.deep.equal({ status: 'ok' });
    expect((await http.get('/readyz')).body).to.deep.equal({ status: 'ready', database: 'up' });
  });

  it('answers /readyz 503 when the database does not answer', async () => {
    const db = extraDb('mysql://registry:x@127.0.0.1:1/registry_test');
    const http = await appWith({}, db);
    const res = await http.get('/readyz');
    expect(res.status).to.equal(503);
    expect(res.body.database).to.equal('down');
  });

  it('counts requests by route pattern and status in /metrics', async () => {
    const org = await newOrg();
    const { http } = await harness();
    await http.get('/api/v1/guarantees/00000000-0000-7000-8000-000000000000').set('X-API-Key', org.key);
    const res = await http.get('/metrics');
    expect(res.status).to.equal(200);
    expect(res.text).to.match(/http_requests_total\{method="GET",route="\/api\/v1\/guarantees\/:id",status="404"\} \d+/);
    expect(res.text).to.match(/http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/api\/v1\/guarantees\/:id",status="404"\}/);
  });

  it('guards /metrics with METRICS_TOKEN when it is set', async () => {
    const http = await appWith({ METRICS_TOKEN: 'metrics-secret' });
    expect((await http.get('/metrics')).status).to.equal(401);
    expect((await http.get('/metrics').set('Authorization', 'Bearer wrong')).status).to.equal(401);
    expect((await http.get('/metrics').set('Authorization', 'Bearer metrics-secret')).status).to.equal(200);
  });

  it('serves an OpenAPI 3.1 document of every endpoint, with the validating schemas', async () => {
    const { http } = await harness();
    const res = await http.get('/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.body.openapi).to.equal('3.1.0');
    for (const path of [
      '/api/v1/guarantees',
      '/api/v1/guarantees/{id}',
      '/api/v2/guarantees',
      '/api/v2/guarantees/{id}',
      '/api/v1/presigned-url',
      '/api/v2/presigned-url',
      '/api/v2/file-status/{uuid}',
      '/api/v2/files/{uuid}',
      '/api/v2/guarantees/{id}/proof',
      '/api/public/v1/verifications',
      '/.well-known/jwks.json',
      '/verify',
      '/api/v2/guarantees/{id}/verification',
      '/api/v2/guarantees/{id}/verification.svg',
      '/api/v2/guarantees/{id}/verification.png',
      '/healthz',
      '/readyz',
      '/metrics',
    ]) {
      expect(res.body.paths, path).to.have.property(path);
    }
    const create = res.body.components.schemas.CreateGuaranteeV2;
    expect(create.additionalProperties).to.equal(false);
    expect(create.properties.details.properties.actType.anyOf ?? create.properties.details.properties.actType.enum).to.exist;
    expect(res.body.components.schemas.GuaranteeV1.properties.details.properties).to.not.have.property('transactionId');
    expect(res.body.components.schemas.NotarizationProof.properties).to.include.keys('digest', 'path', 'root', 'anchor');
  });

  it('documents exactly the routes the app answers, each with a unique operationId, its server, and integer paging', async () => {
    const { http, app } = await harness();
    const doc = (await http.get('/openapi.json')).body as {
      servers: Array<{ url: string }>;
      paths: Record<string, Record<string, { operationId?: string; parameters?: Array<{ name: string; schema: { type: string } }> }>>;
    };
    // A path with servers of its own is another process's (the witness's): not the app's routes.
    const documented = Object.entries(doc.paths)
      .filter(([, item]) => !('servers' in item))
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`))
      .sort();
    // Served, and not API operations: the document itself, the docs page and its assets, the
    // verification page's script and styles, and the store's upload events (an internal hook
    // authenticated by its path), and the specified 400 for a file-status without a key.
    const undocumented = [
      /^get \/openapi\.json$/,
      /^get \/docs(\/|$)/,
      /^get \/verify\/app\./,
      // The authorities' pages below /authority/ (sign-in, forms, style sheet): HTML for people,
      // whose acts are the authority API's; GET /authority, their entry, is documented.
      /^(get|post) \/authority\//,
      /^post \/internal\/storage-events\//,
      /^get \/api\/v2\/file-status$/,
    ];
    const routes = [...new Set(app.routes)].filter((r) => !undocumented.some((u) => u.test(r))).sort();
    expect(routes).to.deep.equal(documented);
    const ids = Object.values(doc.paths).flatMap((item) =>
      Object.entries(item)
        .filter(([k]) => k !== 'servers')
        .map(([, op]) => op.operationId),
    );
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]+$/.test(id))).to.equal(true);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(doc.servers).to.have.length(1);
    const paging = doc.paths['/api/v2/guarantees']?.get?.parameters?.filter((p) => p.name === 'page' || p.name === 'limit').map((p) => p.schema.type);
    expect(paging).to.deep.equal(['integer', 'integer']);
  });

  it('serves a docs page whose assets come from the service itself (no CDN)', async () => {
    const { http } = await harness();
    const page = await http.get('/docs');
    expect(page.status).to.equal(200);
    const srcs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(srcs.length).to.be.greaterThan(1);
    for (const src of srcs) {
      expect(src.startsWith('/'), src).to.equal(true);
      const asset = await http.get(src);
      expect(asset.status, src).to.equal(200);
      expect(Number(asset.headers['content-length'] ?? asset.text.length)).to.be.greaterThan(10);
    }
  });

  it('answers an unknown path 404 and a wrong method 405, with empty bodies', async () => {
    const { http } = await harness();
    const org = await newOrg();
    const missing = await http.get('/nothing-here');
    expect(missing.status).to.equal(404);
    expect(missing.text).to.equal('');
    const wrong = await http.delete('/api/v1/guarantees').set('X-API-Key', org.key);
    expect(wrong.status).to.equal(405);
    expect(wrong.headers.allow).to.equal('HEAD, GET, POST');
    expect(wrong.text).to.equal('');
    const unknown = await http.trace('/healthz');
    expect(unknown.status).to.equal(501);
    expect(unknown.text).to.equal('');
  });

  it('matches paths exactly, and wants a key on any spelling of /api', async () => {
    const { http } = await harness();
    const org = await newOrg();
    for (const path of ['/API/v1/guarantees', '/Api/v2/guarantees', '/api/V1/guarantees']) {
      expect((await http.get(path)).status, path).to.equal(401);
      expect((await http.post(path).send({})).status, path).to.equal(401);
      expect((await http.get(path).set('X-API-Key', org.key)).status, path).to.equal(404);
    }
  });

  it('echoes a sane X-Request-Id and makes one otherwise', async () => {
    const { http } = await harness();
    expect((await http.get('/healthz').set('X-Request-Id', 'abc-123')).headers['x-request-id']).to.equal('abc-123');
    expect((await http.get('/healthz').set('X-Request-Id', 'x'.repeat(200))).headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });
});

describe('availability', () => {
  it('answers 503 quickly, never hangs, when the database is unreachable', async () => {
    const org = await newOrg();
    const http = await appWith({}, extraDb('mysql://registry:x@127.0.0.1:1/registry_test', 500));
    const started = Date.now();
    const res = await http.post('/api/v2/guarantees').set('X-API-Key', org.key).send({});
    expect(res.status).to.equal(503);
    expect(res.headers['retry-after']).to.equal('5');
    expect(Date.now() - started).to.be.below(8000);
  });

  it('registers a guarantee with Redis unreachable: creation needs the database only', async () => {
    const org = await newOrg();
    const http = await appWith({ REDIS_URL: 'redis://127.0.0.1:1/0' });
    const res = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'no-redis' } });
    expect(res.status).to.equal(200);
  });
});
