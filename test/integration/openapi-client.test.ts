import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { newOrg } from '../support/harness.js';
import { serve, type Served } from '../support/browser.js';

/**
 * What a client's developer does with the document: openapi-typescript generates its types,
 * a strict TypeScript compile checks a client written against them (openapi-fetch), and that
 * client drives the API.
 */
const CLIENT = `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

export async function roundTrip(baseUrl: string, key: string, transactionId: string) {
  const client = createClient<paths>({ baseUrl, headers: { 'X-API-Key': key } });
  const created = await client.POST('/api/v2/guarantees', {
    body: { details: { transactionId, policyNumber: 'P-CLIENT-1', actType: 'BAIL_ACT', effectiveAt: '2026-03-01T00:00:00Z' }, economics: { garantedAmount: 15000.5 } },
  });
  if (!created.data) throw new Error(\`create: \${created.response.status}\`);
  const id: string = created.data.id;
  const one = await client.GET('/api/v2/guarantees/{id}', { params: { path: { id } } });
  // page and limit are numbers for the client: the document says integer.
  const page = await client.GET('/api/v2/guarantees', { params: { query: { page: 1, limit: 5 } } });
  const missing = await client.GET('/api/v2/guarantees/{id}', { params: { path: { id: '00000000-0000-7000-8000-000000000000' } } });
  return { id, policyNumber: one.data?.details.policyNumber, listed: page.data?.guarantees.map((g) => g.id) ?? [], total: page.data?.totalItems, missingStatus: missing.response.status };
}
`;

describe('a TypeScript client generated from the OpenAPI document', function () {
  this.timeout(120_000);
  let app: Served;
  const dir = join('.data', 'test', `openapi-client-${randomUUID().slice(0, 8)}`);
  before(async () => {
    app = await serve();
  });
  after(async () => {
    app.server.closeAllConnections();
    await new Promise((resolve) => app.server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('compiles in strict mode (openapi-typescript + openapi-fetch) and registers, reads and lists guarantees end to end', async () => {
    const document = (await (await fetch(`${app.origin}/openapi.json`)).json()) as Parameters<typeof openapiTS>[0];
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(document)));
    writeFileSync(join(dir, 'client.ts'), CLIENT);
    // The generated operations are typed: a client written against them compiles, strictly. The
    // compiler runs beside this process, never blocking it: the API it serves goes on answering
    // (blocked for longer than its keep-alive, it closed the connection the client then reused:
    // 'fetch failed', seen once with the suite on two workers).
    await promisify(execFile)(
      process.execPath,
      [
        'node_modules/typescript/bin/tsc',
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        join(dir, 'client.ts'),
      ],
      {},
    );
    const { roundTrip } = (await import(join(process.cwd(), dir, 'client.ts'))) as {
      roundTrip: (url: string, key: string, tx: string) => Promise<Record<string, unknown>>;
    };
    const org = await newOrg();
    const result = await roundTrip(app.origin, org.key, `TX-${randomUUID()}`);
    expect(result).to.include({ policyNumber: 'P-CLIENT-1', total: 1, missingStatus: 404 });
    expect(result.listed).to.deep.equal([result.id]);
  });
});
