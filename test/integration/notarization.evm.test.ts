import { spawnSync } from 'node:child_process';
import { testSequencer } from '../support/log.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { DEV_CHAIN_KEY } from '../../scripts/services/evm.js';
import { createGuaranteeRepository } from '../../src/guarantees/guarantee.repository.js';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import { createAnchorKeys } from '../../src/notarization/anchor-keys.js';
import type { Anchor } from '../../src/notarization/anchor.js';
import { checkOnChain, createEvmAnchor, evmProvider, type EvmProvider } from '../../src/notarization/evm.anchor.js';
import { createNotarizationRepository } from '../../src/notarization/notarization.repository.js';
import { createNotarizationService, type CycleResult } from '../../src/notarization/notarization.service.js';
import { verifyProof } from '../../src/notarization/proof.js';
import { select, type Sequelize } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { createSecretBox } from '../../src/shared/secrets.js';
import { startWorkers } from '../../workers/index.js';
import { configWith, eventually, extraDb, harness, newOrg, type TestOrg } from '../support/harness.js';
import { launch, screenshot, serve, watchedPage } from '../support/browser.js';
import { registered } from '../support/guarantees.js';
import { entry } from '../support/entry.js';

const CHAIN = 31337;
const silent = createLogger('silent');

async function evmNotary(opts: { db?: Sequelize; provider?: EvmProvider; chainId?: number; wrap?: (a: Anchor) => Anchor } = {}) {
  const h = await harness();
  const db = opts.db ?? h.db;
  const wrap = opts.wrap ?? ((a: Anchor) => a);
  const anchor: Anchor = wrap(
    createEvmAnchor({
      db,
      provider: opts.provider ?? evmProvider(h.config.EVM_RPC_URL as string, CHAIN),
      keys: createAnchorKeys(db, createSecretBox(h.config.ENCRYPTION_KEY)),
      settings: { chainId: opts.chainId ?? CHAIN, confirmations: 3 },
      logger: silent,
    }),
  );
  return createNotarizationService({
    repo: createNotarizationRepository(db),
    guarantees: createGuaranteeRepository(db),
    amendments: createAmendmentRepository(db),
    outbox: h.events.outbox,
    anchor,
    sequencer: testSequencer(db),
    batchSize: 1000,
    logger: silent,
  });
}

const cycle = (s: Awaited<ReturnType<typeof evmNotary>>): Promise<CycleResult> => eventually('a notarization cycle to run', () => s.cycle(), 15_000);

async function mine(blocks: number): Promise<void> {
  const provider = evmProvider((await harness()).config.EVM_RPC_URL as string, CHAIN);
  await provider.send('hardhat_mine', [`0x${blocks.toString(16)}`]);
  provider.destroy();
}

async function create(org: TestOrg, body: Record<string, unknown> = {}): Promise<string> {
  const res = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', org.key).send(body);
  expect(res.status).to.equal(200);
  return res.body.id as string;
}

const read = async (org: TestOrg, path: string) => (await (await harness()).http.get(path).set('X-API-Key', org.key)).body as Record<string, unknown>;

/** A record registered and notarized on the chain (a cycle, three confirmations, a cycle): the record and its proof as the API gives them. */
async function notarizedOnChain(transactionId: string) {
  const org = await newOrg();
  const id = await create(org, { details: { transactionId } });
  const service = await evmNotary();
  await cycle(service);
  await mine(3);
  await cycle(service);
  return {
    record: await read(org, `/api/v2/guarantees/${id}`),
    proof: (await read(org, `/api/v2/guarantees/${id}/proof`)) as { root: string; anchor: Record<string, unknown> },
  };
}

describe('notarization on an EVM chain (hardhat 2, local)', function () {
  this.timeout(60_000);
  let address: string;

  before(async () => {
    const { db, config } = await harness();
    address = await createAnchorKeys(db, createSecretBox(config.ENCRYPTION_KEY)).setEvmKey(DEV_CHAIN_KEY);
  });

  it('sends nothing to a node of another chain than EVM_CHAIN_ID', async () => {
    const org = await newOrg();
    const id = await create(org);
    let failed: unknown;
    try {
      await cycle(await evmNotary({ chainId: 1 }));
    } catch (err) {
      failed = err;
    }
    expect((failed as Error | undefined)?.message).to.match(/is chain 31337, not EVM_CHAIN_ID 1/);
    const { db } = await harness();
    const sent = await select(db, 'SELECT 1 FROM evm_transactions t JOIN notarization_proofs p ON p.batch_id = t.batch_id WHERE p.guarantee_id = $1', [id]);
    expect(sent).to.have.length(0);
  });

  it("anchors the root in a transaction's data, COMPLETE only after EVM_CONFIRMATIONS blocks; the proof verifies offline and on chain", async () => {
    const org = await newOrg();
    const id = await create(org, { details: { transactionId: 'EVM-1' }, economics: { garantedAmount: 10 } });
    const service = await evmNotary();
    await cycle(service);
    // Mined (automine) in one block: one confirmation of three.
    expect(await read(org, `/api/v2/guarantees/${id}`)).to.include({ notarizationStatus: 'PENDING', txHash: null });
    expect(await read(org, `/api/v2/guarantees/${id}/proof`)).to.deep.equal({ guaranteeId: id, notarizationStatus: 'PENDING' });
    await mine(2);
    await cycle(service);
    const record = await read(org, `/api/v2/guarantees/${id}`);
    expect(record.notarizationStatus).to.equal('COMPLETE');
    expect(record.txHash).to.match(/^0x[0-9a-f]{64}$/);
    const proof = (await read(org, `/api/v2/guarantees/${id}/proof`)) as { root: string; anchor: Record<string, unknown> };
    expect(proof.anchor).to.include({ kind: 'evm', txHash: record.txHash, chainId: CHAIN, from: address });
    const verdict = verifyProof(record, proof);
    expect(verdict.checks.filter((c) => !c.ok)).to.deep.equal([]);
    const provider = evmProvider((await harness()).config.EVM_RPC_URL as string, CHAIN);
    try {
      const tx = await provider.getTransaction(record.txHash as string);
      expect(tx?.data).to.equal(`0x${proof.root}`);
      expect(tx?.to).to.equal(address);
      const onChain = await checkOnChain(provider, {
        txHash: record.txHash as string,
        root: proof.root,
        chainId: CHAIN,
        from: address,
        blockNumber: proof.anchor.blockNumber as number,
      });
      expect(onChain.filter((c) => !c.ok)).to.deep.equal([]);
    } finally {
      provider.destroy();
    }
    // The CLI checks it on the chain too (EVM_RPC_URL from the run's configuration).
    const file = join(mkdtempSync(join(tmpdir(), 'verify-evm-')), 'pair.json');
    writeFileSync(file, JSON.stringify({ guarantee: record, proof }));
    const cli = spawnSync(process.execPath, [...entry('src/cli.ts'), 'verify', file], { encoding: 'utf8', env: process.env });
    expect(cli.status, cli.stderr).to.equal(0);
    expect(cli.stdout).to.equal('verified\n');
    expect(cli.stderr).to.include("ok   the transaction's data is the root");
    expect(cli.stderr).to.include('ok   the transaction comes from the expected sender');
    // Without a chain to ask, the proof only holds offline: exit 3, never a plain "verified".
    const offline = spawnSync(process.execPath, [...entry('src/cli.ts'), 'verify', file], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(offline.status, offline.stderr).to.equal(3);
    expect(offline.stdout).to.equal('verified offline only\n');
    // A proof whose signed transaction was swapped for garbage fails offline.
    const other = { ...proof, anchor: { ...proof.anchor, rawTransaction: '0x02' } };
    expect(verifyProof(record, other).ok).to.equal(false);
  });

  it('cli verify accepts a proof anchored under an earlier key of the registry, after `evm set-key` replaced it', async () => {
    const { record, proof } = await notarizedOnChain('EVM-OLD-KEY');
    expect(record.notarizationStatus).to.equal('COMPLETE');
    const { db, config } = await harness();
    const keys = createAnchorKeys(db, createSecretBox(config.ENCRYPTION_KEY));
    // Hardhat's development account #2 becomes the registry's key.
    const next = await keys.setEvmKey('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a');
    try {
      expect(next).to.not.equal(address);
      const file = join(mkdtempSync(join(tmpdir(), 'verify-old-key-')), 'pair.json');
      writeFileSync(file, JSON.stringify({ guarantee: record, proof }));
      const cli = spawnSync(process.execPath, [...entry('src/cli.ts'), 'verify', file], { encoding: 'utf8', env: process.env });
      expect(cli.status, cli.stderr).to.equal(0);
      expect(cli.stderr).to.include('ok   the transaction comes from the expected sender');
    } finally {
      await keys.setEvmKey(DEV_CHAIN_KEY);
    }
  });

  it("refuses a proof anchored by someone else: a transaction with the same root from another key is not the registry's", async () => {
    const { record, proof } = await notarizedOnChain('EVM-FORGED');
    // Anyone can put the same root on chain from their own account (hardhat's account #1 here).
    const { Wallet } = await import('ethers');
    const provider = evmProvider((await harness()).config.EVM_RPC_URL as string, CHAIN);
    const forger = new Wallet('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d', provider);
    const raw = await forger.signTransaction(await forger.populateTransaction({ to: forger.address, data: `0x${proof.root}`, value: 0n }));
    const sent = await provider.broadcastTransaction(raw);
    const mined = await sent.wait();
    provider.destroy();
    const forged = { ...proof, anchor: { ...proof.anchor, txHash: sent.hash, from: forger.address, rawTransaction: raw, blockNumber: mined?.blockNumber } };
    const claimed = { ...record, txHash: sent.hash };
    // Offline, such a proof is consistent: only the sender tells it apart.
    expect(verifyProof(claimed, forged).ok).to.equal(true);
    const file = join(mkdtempSync(join(tmpdir(), 'verify-forged-')), 'pair.json');
    writeFileSync(file, JSON.stringify({ guarantee: claimed, proof: forged }));
    const cli = spawnSync(process.execPath, [...entry('src/cli.ts'), 'verify', file], { encoding: 'utf8', env: process.env });
    expect(cli.status, cli.stderr).to.equal(1);
    expect(cli.stdout).to.equal('NOT verified\n');
    expect(cli.stderr).to.include('FAIL the transaction comes from the expected sender');
    // A third party names the registry's published address with --from.
    const third = spawnSync(
      process.execPath,
      [...entry('src/cli.ts'), 'verify', file, '--rpc', (await harness()).config.EVM_RPC_URL as string, '--from', address],
      { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
    );
    expect(third.status, third.stderr).to.equal(1);
  });

  it('a worker that died after signing and before broadcasting: the next cycle sends the same transaction, one per batch', async () => {
    const org = await newOrg();
    const id = await create(org, { details: { transactionId: 'EVM-CRASH' } });
    const h = await harness();
    const real = evmProvider(h.config.EVM_RPC_URL as string, CHAIN);
    const dying: EvmProvider = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'broadcastTransaction') return () => Promise.reject(new Error('the worker died before broadcasting'));
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    let failed: unknown;
    try {
      await cycle(await evmNotary({ provider: dying }));
    } catch (err) {
      failed = err;
    }
    expect((failed as Error | undefined)?.message).to.include('the worker died before broadcasting');
    const [written] = await select<{ tx_hash: string; nonce: number; batch_id: number }>(
      h.db,
      'SELECT t.tx_hash, t.nonce, t.batch_id FROM evm_transactions t JOIN notarization_proofs p ON p.batch_id = t.batch_id WHERE p.guarantee_id = $1',
      [id],
    );
    expect(written, 'signed and written before the broadcast').to.not.equal(undefined);
    expect(await real.getTransaction(written?.tx_hash as string)).to.equal(null);

    const service = await evmNotary();
    await cycle(service);
    await mine(3);
    await cycle(service);
    const record = await read(org, `/api/v2/guarantees/${id}`);
    expect(record).to.include({ notarizationStatus: 'COMPLETE', txHash: written?.tx_hash });
    const rows = await select(h.db, 'SELECT 1 FROM evm_transactions WHERE batch_id = $1', [written?.batch_id]);
    expect(rows).to.have.length(1);
    real.destroy();
  });

  it('a worker that died after the transaction was sent and before it was recorded: the same transaction is found, recorded once', async () => {
    const org = await newOrg();
    const id = await create(org, { details: { transactionId: 'EVM-CRASH-2' } });
    const dying = (a: Anchor): Anchor => ({
      ...a,
      submit: async (batch) => {
        await a.submit(batch);
        throw new Error('the worker died after sending');
      },
    });
    let failed: unknown;
    try {
      await cycle(await evmNotary({ wrap: dying }));
    } catch (err) {
      failed = err;
    }
    expect((failed as Error | undefined)?.message).to.equal('the worker died after sending');
    const { db } = await harness();
    const [sent] = await select<{ tx_hash: string; batch_id: number }>(
      db,
      'SELECT t.tx_hash, t.batch_id FROM evm_transactions t JOIN notarization_proofs p ON p.batch_id = t.batch_id WHERE p.guarantee_id = $1',
      [id],
    );
    const service = await evmNotary();
    await mine(3);
    await cycle(service);
    expect(await read(org, `/api/v2/guarantees/${id}`)).to.include({ notarizationStatus: 'COMPLETE', txHash: sent?.tx_hash });
    expect(await select(db, 'SELECT 1 FROM evm_transactions WHERE batch_id = $1', [sent?.batch_id])).to.have.length(1);
    const events = await select(db, "SELECT 1 FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.notarized'", [org.orgId]);
    expect(events).to.have.length(1);
  });

  it('through the worker process (NOTARIZATION_ANCHOR=evm): a record reaches COMPLETE with a transaction hash', async () => {
    const org = await newOrg();
    const id = await create(org, { details: { transactionId: 'EVM-W' } });
    const workers = await startWorkers(['notarization'], {
      config: configWith({ NOTARIZATION_ANCHOR: 'evm', EVM_CONFIRMATIONS: '1', NOTARIZATION_INTERVAL_MS: '200' }),
      logger: silent,
    });
    try {
      const record = await eventually(
        'the record to be notarized on the chain',
        async () => {
          const r = await read(org, `/api/v2/guarantees/${id}`);
          return r.notarizationStatus === 'COMPLETE' && r;
        },
        20_000,
      );
      expect(record.txHash).to.match(/^0x[0-9a-f]{64}$/);
    } finally {
      await workers.close();
    }
  });

  it('notarizers in two processes take turns: nonces are never shared, every batch completes', async () => {
    const org = await newOrg();
    const { config } = await harness();
    const a = await evmNotary({ db: extraDb(config.DATABASE_URL) });
    const b = await evmNotary({ db: extraDb(config.DATABASE_URL) });
    const ids: string[] = [];
    for (let round = 0; round < 3; round++) {
      ids.push(await create(org), await create(org));
      await Promise.all([a.cycle(), b.cycle()]);
    }
    await mine(3);
    await cycle(a);
    for (const id of ids) expect((await read(org, `/api/v2/guarantees/${id}`)).notarizationStatus, id).to.equal('COMPLETE');
    const nonces = (
      await select<{ nonce: string | number }>((await harness()).db, 'SELECT nonce FROM evm_transactions WHERE from_address = $1 ORDER BY nonce', [address])
    ).map((r) => Number(r.nonce));
    expect(new Set(nonces).size).to.equal(nonces.length);
    nonces.forEach((n, i) => {
      if (i) expect(n).to.equal((nonces[i - 1] as number) + 1);
    });
  });

  it('keeps the key sealed under ENCRYPTION_KEY: set from standard input, its address printed, never stored in clear', async () => {
    const { db } = await harness();
    const env = { ...process.env };
    const set = spawnSync(process.execPath, [...entry('src/cli.ts'), 'evm', 'set-key'], { encoding: 'utf8', env, input: `${DEV_CHAIN_KEY}\n` });
    expect(set.status, set.stderr).to.equal(0);
    expect(set.stdout).to.equal(`${address}\n`);
    const [row] = await select<{ key_enc: Buffer }>(db, "SELECT key_enc FROM anchor_keys WHERE kind = 'evm'", []);
    expect(row?.key_enc.toString('latin1')).to.not.include(DEV_CHAIN_KEY.slice(2));
    expect(row?.key_enc.toString('hex')).to.not.include(DEV_CHAIN_KEY.slice(2));
    const shown = spawnSync(process.execPath, [...entry('src/cli.ts'), 'evm', 'address'], { encoding: 'utf8', env });
    expect(shown.stdout).to.equal(`${address}\n`);
    const bad = spawnSync(process.execPath, [...entry('src/cli.ts'), 'evm', 'set-key'], { encoding: 'utf8', env, input: 'not a key' });
    expect(bad.status).to.equal(1);
    expect(bad.stderr).to.include('32 bytes in hex');
  });
  it("on the verification page, says what an EVM proof's checks prove (the transaction is signed by the address the proof states) and what they do not (that it is on the chain, that the address is the registry's), in Italian and English", async () => {
    const g = await registered();
    const service = await evmNotary();
    await cycle(service);
    await mine(3);
    await cycle(service);
    const browser = await launch();
    const app = await serve({ VERIFY_RATE_PER_MINUTE: '0' });
    try {
      const { page, problems } = await watchedPage(browser, app.origin);
      await page.goto(`${app.origin}/verify#${new URLSearchParams({ policyNumber: g.policyNumber, checkCode: g.checkCode }).toString()}`, {
        waitUntil: 'domcontentloaded',
      });
      await page.waitForSelector('[data-check="evm-tx-sender"]', { timeout: 15_000 });
      const said = (selector: string) => page.evaluate(`document.querySelector(${JSON.stringify(selector)}).textContent`) as Promise<string>;
      expect(await page.evaluate(`document.querySelector('[data-check="evm-tx-sender"]').getAttribute('data-passed')`)).to.equal('true');
      expect(await said('[data-check="evm-tx-sender"]'))
        .to.include("firmata dall'indirizzo indicato nella prova")
        .and.not.include('dal registro');
      expect(await said('[data-not-checked="evm"]'))
        .to.include('non interroga la blockchain')
        .and.include("l'indirizzo sia quello del registro");
      await screenshot(page, 'verify-evm');
      await page.click('[data-lang="en"]');
      expect(await said('[data-check="evm-tx-sender"]'))
        .to.include('signed by the address the proof states')
        .and.not.include('by the registry');
      expect(await said('[data-not-checked="evm"]'))
        .to.include('does not query the blockchain')
        .and.include("the address is the registry's");
      expect(problems).to.deep.equal([]);
    } finally {
      await browser.close();
      await new Promise((resolve) => app.server.close(resolve));
    }
  });
});
