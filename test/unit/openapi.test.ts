import { expect } from 'chai';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { buildOpenApiDocument } from '../../src/openapi.js';

describe('the OpenAPI document, for those who generate clients from it', function () {
  this.timeout(30_000);

  it("passes Redocly's recommended rules, but for the warnings explained here", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(buildOpenApiDocument('https://registry.example.it')), absoluteRef: 'openapi.json', config });
    // The service is not published under a licence; and liveness, readiness, the published
    // receipt keys, the log's key and the verification page answer every GET (no 4xx is theirs to give).
    const explained = [
      'info-license #/info',
      ...['/healthz', '/readyz', '/.well-known/jwks.json', '/verify', '/log/key'].map(
        (p) => `operation-4xx-response #/paths/${p.replaceAll('/', '~1')}/get/responses`,
      ),
    ];
    const found = problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer ?? ''}`);
    expect(problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message}`)).to.deep.equal([]);
    expect(found.sort()).to.deep.equal(explained.sort());
  });
});
