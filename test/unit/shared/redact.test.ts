import { expect } from 'chai';
import { createServer } from 'node:http';
import { evmProvider } from '../../../src/notarization/evm.anchor.js';
import { redactingProxy, redactText, secretPartsOfUrl } from '../../../src/shared/redact.js';

describe('secrets in configuration URLs (redact)', () => {
  it("takes an RPC URL's key out of an ethers error, wherever it sits (path, query, user info)", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"down"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const url = `http://user:PASSWORD-9@127.0.0.1:${port}/v3/PATHKEY-1234?apikey=QUERYKEY-5678`;
    const provider = evmProvider(url, 1, 2000);
    try {
      // ethers itself names the URL in its message: what the worker must never pass on.
      const raw = await provider.send('eth_chainId', []).then(
        () => '',
        (err: Error) => err.message,
      );
      expect(raw).to.include('PATHKEY-1234');
      const wrapped = redactingProxy(provider, secretPartsOfUrl(url));
      const err = await wrapped.send('eth_chainId', []).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err).to.be.instanceOf(Error);
      for (const secret of ['PATHKEY-1234', 'QUERYKEY-5678', 'PASSWORD-9']) {
        expect(err?.message).to.not.include(secret);
        expect(err?.stack).to.not.include(secret);
      }
      expect(err?.message).to.include('[redacted]').and.include('500');
    } finally {
      provider.destroy();
      server.close();
    }
  });

  it("takes out a key echoed alone, and one given as the URL's user name", () => {
    const secrets = secretPartsOfUrl('https://USERKEY-0001@rpc.example.org/v3/PATHKEY-abcdef?apikey=QUERYKEY-abcdef');
    const text = redactText('invalid project id PATHKEY-abcdef; key QUERYKEY-abcdef; user USERKEY-0001', secrets);
    for (const secret of ['PATHKEY-abcdef', 'QUERYKEY-abcdef', 'USERKEY-0001']) expect(text).to.not.include(secret);
  });

  it('leaves text without the secrets as it is', () => {
    expect(redactText('nonce too low', secretPartsOfUrl('https://rpc.example.org/KEY-abcdef'))).to.equal('nonce too low');
  });
});
