// A local EVM development chain for the notarization anchor: hardhat 2's in-memory node (an npm
// devDependency, runs offline on Node 20), one per profile under .data/<profile>/evm. Started
// by default for the test profile, and for the others when NOTARIZATION_ANCHOR=evm. Chain id
// 31337, accounts from the well-known development mnemonic; state is lost when it stops.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPid, startDaemon, stopDaemon, waitFor } from './process.js';
import type { LocalService, ServiceContext } from './types.js';

const dirOf = (ctx: ServiceContext) => join(ctx.dataDir, 'evm');

/** Account #0 of hardhat's development mnemonic: public knowledge, for local chains only. */
export const DEV_CHAIN_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

async function chainId(port: number): Promise<string | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    signal: AbortSignal.timeout(1000),
  });
  return ((await res.json()) as { result?: string }).result;
}

export const evm: LocalService = {
  name: 'evm',
  externalWhen: ['EVM_RPC_URL'],
  byDefault: (profile, env) => profile === 'test' || env.NOTARIZATION_ANCHOR === 'evm',
  install() {
    // An npm devDependency: `npm install` (which npm start and npm test run first) brings it.
    return undefined;
  },
  async isUp(ctx) {
    if (readPid(join(dirOf(ctx), 'daemon.pid')) === undefined) return false;
    return (await chainId(ctx.ports.evm).catch(() => undefined)) !== undefined;
  },
  async start(ctx) {
    const dir = dirOf(ctx);
    mkdirSync(dir, { recursive: true });
    const bin = join(ctx.root, 'node_modules', '.bin', 'hardhat');
    if (!existsSync(bin)) throw new Error('hardhat is not installed: run npm install');
    // Hardhat wants a config file inside the project (where it finds itself installed); the
    // package is an ES module, so the config is CommonJS by name. A transaction is mined at once
    // (automine); outside tests a block also comes every second, so that batches gather their
    // EVM_CONFIRMATIONS when nothing else is sent. Tests mine the blocks they need themselves.
    const mining = ctx.profile === 'test' ? {} : { networks: { hardhat: { mining: { auto: true, interval: 1000 } } } };
    writeFileSync(join(dir, 'hardhat.config.cjs'), `module.exports = ${JSON.stringify(mining)};\n`);
    process.env.HARDHAT_DISABLE_TELEMETRY_PROMPT = 'true';
    // The binary itself, not npx: a kill of npx would leave the node orphaned.
    startDaemon(bin, ['--config', 'hardhat.config.cjs', 'node', '--hostname', '127.0.0.1', '--port', String(ctx.ports.evm)], {
      logFile: join(dir, 'hardhat.log'),
      pidFile: join(dir, 'daemon.pid'),
      cwd: dir,
    });
    await waitFor('evm', () => this.isUp(ctx), 30_000, join(dir, 'hardhat.log'));
  },
  async stop(ctx) {
    const pid = await stopDaemon('evm', join(dirOf(ctx), 'daemon.pid'));
    return pid === undefined ? [] : [pid];
  },
  env(ctx) {
    return { EVM_RPC_URL: `http://127.0.0.1:${ctx.ports.evm}`, EVM_CHAIN_ID: '31337' };
  },
};
