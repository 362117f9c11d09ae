import { expect } from 'chai';
import { Signature, Transaction, Wallet } from 'ethers';
import type { GuaranteeV2 } from '../../../src/guarantees/guarantee.schemas.js';
import { guaranteeDigest } from '../../../src/notarization/canonical.js';
import { buildTree } from '../../../src/notarization/merkle.js';
import { verifyProof } from '../../../src/notarization/proof.js';

const record: GuaranteeV2 = {
  details: { actType: null, checkCode: null, emittedAt: null, effectiveAt: null, expiresAt: null, isFixedExpiry: null, cig: null, batchCode: null },
  economics: { garantedAmount: null, contractAmount: null, isAutomaticRenewal: null },
  note: { shared: '' },
  sign: { emissionAt: null },
  txHash: null,
  notarizationStatus: 'COMPLETE',
  docs: [],
  createdAt: '2026-11-23T02:31:07.243Z',
  id: '01a2063e-2aeb-7015-89dd-221cf9156a3c',
  orgId: '01a2063d-fd0d-7406-bcb2-977977e358c8',
};

/** An EVM proof of `record` in a batch of 3, its transaction signed by `wallet` (or carrying `raw`). */
function evmProof(raw: (root: string) => Promise<string>): Promise<Record<string, unknown>> {
  const digest = guaranteeDigest(record);
  const { root, paths } = buildTree([digest, 'aa'.repeat(32), 'bb'.repeat(32)]);
  return raw(root).then((signed) => {
    const tx = (() => {
      try {
        return Transaction.from(signed);
      } catch {
        return undefined;
      }
    })();
    return {
      guaranteeId: record.id,
      notarizationStatus: 'COMPLETE',
      canonicalization: 'guarantee-registry/notarization/v1',
      digest,
      leafIndex: 0,
      batchSize: 3,
      path: paths[0],
      root,
      anchor: {
        kind: 'evm',
        txHash: tx?.hash ?? `0x${'cd'.repeat(32)}`,
        anchoredAt: '2026-11-23T02:32:00.000Z',
        chainId: 31337,
        blockNumber: 5,
        from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
        rawTransaction: signed,
      },
    };
  });
}

const wallet = new Wallet('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');
const sign = (root: string) =>
  wallet.signTransaction({
    type: 2,
    chainId: 31337,
    nonce: 0,
    to: wallet.address,
    value: 0n,
    data: `0x${root}`,
    gasLimit: 30000n,
    maxFeePerGas: 1n,
    maxPriorityFeePerGas: 1n,
  });

describe('proof verification (offline)', () => {
  it('accepts an EVM proof whose signed transaction hashes to txHash, carries the root and comes from the named sender', async () => {
    const proof = await evmProof(sign);
    const result = verifyProof(record, proof);
    expect(result.checks.filter((c) => !c.ok)).to.deep.equal([]);
  });

  it('answers a verdict, never an exception, for a signed transaction whose signature is not on the curve', async () => {
    const proof = await evmProof((root) => {
      const tx = Transaction.from({
        type: 2,
        chainId: 31337,
        nonce: 0,
        to: wallet.address,
        value: 0n,
        data: `0x${root}`,
        gasLimit: 30000n,
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
      });
      tx.signature = Signature.from({ r: `0x${'0'.repeat(63)}5`, s: `0x${'0'.repeat(63)}7`, v: 27 });
      return Promise.resolve(tx.serialized);
    });
    const result = verifyProof(record, proof);
    expect(result.ok).to.equal(false);
    expect(result.checks.find((c) => !c.ok)?.name).to.equal('the proof carries its signed transaction');
  });

  it('refuses a path that claims another position, or a position outside the tree', async () => {
    const proof = await evmProof(sign);
    expect(verifyProof(record, { ...proof, leafIndex: 1 }).ok).to.equal(false);
    expect(verifyProof(record, { ...proof, leafIndex: 3 }).ok).to.equal(false);
    expect(verifyProof(record, { ...proof, batchSize: 2 }).ok).to.equal(false);
  });

  it('says what is wrong with JSON that is not a guarantee or not a proof', () => {
    const result = verifyProof({ id: 1 }, { digest: 'x' });
    expect(result.ok).to.equal(false);
    expect(result.checks.map((c) => c.name)).to.deep.equal(['guarantee JSON is a v2 guarantee', 'proof JSON is a notarization proof']);
  });
});
