// The production anchor: an EVM chain over JSON-RPC (ethers 6). A batch's root goes in the data
// of a 0-value transaction from the anchor's address to itself; txHash is the transaction's
// hash, final after EVM_CONFIRMATIONS blocks. Sending is serialized by the notarization cycle's
// database lock (one sender across worker processes), and nonces are handed out here: the
// larger of the chain's pending count and the last one recorded + 1, with a unique index on
// (chain, sender, nonce). Each transaction is signed and written to evm_transactions BEFORE it
// is broadcast; a worker that dies in between leaves the signed bytes, which the next cycle
// broadcasts again (the same transaction: a batch is never anchored twice).
import { FetchRequest, JsonRpcProvider, Network, Transaction, Wallet, type TransactionRequest } from 'ethers';
import { select, write, type Sequelize } from '../shared/db/sequelize.js';
import type { Logger } from '../shared/logger.js';
import type { Anchor, BatchToAnchor, FinalReceipt, Submission } from './anchor.js';
import type { AnchorKeys } from './anchor-keys.js';

/** The JSON-RPC calls the anchor makes (an ethers JsonRpcProvider; tests may wrap one). */
export type EvmProvider = Pick<
  JsonRpcProvider,
  | 'send'
  | 'getTransactionCount'
  | 'getFeeData'
  | 'estimateGas'
  | 'broadcastTransaction'
  | 'getTransactionReceipt'
  | 'getTransaction'
  | 'getBlockNumber'
  | 'getBlock'
  | 'destroy'
>;

/**
 * A provider that makes one request per call (no batching, no cache: ethers' defaults reuse a
 * nonce), each given up after `timeoutMs` (ethers' default is five minutes).
 */
export function evmProvider(rpcUrl: string, chainId: number, timeoutMs = 30_000): JsonRpcProvider {
  const request = new FetchRequest(rpcUrl);
  request.timeout = timeoutMs;
  return new JsonRpcProvider(request, Network.from(chainId), { staticNetwork: true, cacheTimeout: -1, batchMaxCount: 1, pollingInterval: 200 });
}

/**
 * The registry's own record of which of its keys sent the transaction `txHash` (every
 * transaction is written before it is broadcast), or undefined when it sent none such. A proof
 * anchored before `cli evm set-key` changed the key names its own sender, still the registry's.
 */
export async function evmSenderOf(db: Sequelize, txHash: string): Promise<string | undefined> {
  const [row] = await select<{ from_address: string }>(db, 'SELECT from_address FROM evm_transactions WHERE tx_hash = $1', [txHash]);
  return row?.from_address;
}

interface TxRow {
  batch_id: string | number;
  chain_id: string | number;
  from_address: string;
  nonce: string | number;
  tx_hash: string;
  raw_tx: string;
}

export interface EvmSettings {
  chainId: number;
  confirmations: number;
}

export function createEvmAnchor(deps: {
  db: Sequelize;
  provider: EvmProvider;
  keys: Pick<AnchorKeys, 'evmKey'>;
  settings: EvmSettings;
  logger: Logger;
}): Anchor {
  const { db, provider, keys, settings, logger } = deps;
  let chainChecked = false;

  async function checkChain(): Promise<void> {
    if (chainChecked) return;
    const id = Number(await provider.send('eth_chainId', []));
    if (id !== settings.chainId) throw new Error(`the EVM node at EVM_RPC_URL is chain ${id}, not EVM_CHAIN_ID ${settings.chainId}: nothing is sent`);
    chainChecked = true;
  }

  /** The key as stored now (read at each send, so that `cli evm set-key` takes effect at once). */
  async function signer(): Promise<Wallet> {
    await checkChain();
    const key = await keys.evmKey();
    if (!key) throw new Error('no EVM anchor key: set one with `cli evm set-key` (the key on standard input)');
    return new Wallet(key.privateKey);
  }

  const recorded = async (batchId: number): Promise<TxRow | undefined> =>
    (await select<TxRow>(db, 'SELECT batch_id, chain_id, from_address, nonce, tx_hash, raw_tx FROM evm_transactions WHERE batch_id = $1', [batchId]))[0];

  const submissionOf = (row: TxRow): Submission => ({
    txHash: row.tx_hash,
    receipt: { chainId: Number(row.chain_id), from: row.from_address, nonce: Number(row.nonce), rawTransaction: row.raw_tx },
  });

  /** Broadcasts signed bytes; a node that already has them (or mined them) is fine. */
  async function broadcast(row: TxRow): Promise<void> {
    await checkChain();
    if (Number(row.chain_id) !== settings.chainId) {
      throw new Error(
        `the transaction of batch ${row.batch_id} was signed for chain ${row.chain_id}, not EVM_CHAIN_ID ${settings.chainId}: it waits for an operator`,
      );
    }
    try {
      await provider.broadcastTransaction(row.raw_tx);
    } catch (err) {
      if (await provider.getTransaction(row.tx_hash)) return;
      // Under-priced (fees rose past the signed maximum), or refused: the batch waits for an operator, visibly.
      throw new Error(`the node refused the transaction of batch ${row.batch_id} (${row.tx_hash}): ${(err as Error).message}`, { cause: err });
    }
  }

  return {
    kind: 'evm',

    async submit(batch: BatchToAnchor): Promise<Submission> {
      const existing = await recorded(batch.id);
      if (existing) {
        await broadcast(existing);
        return submissionOf(existing);
      }
      const w = await signer();
      const [last] = await select<{ n: string | number | null }>(db, 'SELECT MAX(nonce) AS n FROM evm_transactions WHERE chain_id = $1 AND from_address = $2', [
        settings.chainId,
        w.address,
      ]);
      const pending = await provider.getTransactionCount(w.address, 'pending');
      const nonce = Math.max(pending, last?.n === null || last?.n === undefined ? 0 : Number(last.n) + 1);
      const request: TransactionRequest = { type: 2, chainId: settings.chainId, nonce, from: w.address, to: w.address, value: 0n, data: `0x${batch.root}` };
      const fees = await provider.getFeeData();
      const gas = await provider.estimateGas(request);
      const raw = await w.signTransaction({
        ...request,
        gasLimit: gas + gas / 5n,
        maxFeePerGas: fees.maxFeePerGas ?? fees.gasPrice,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas ?? 0n,
      });
      const hash = Transaction.from(raw).hash as string;
      // Written before it is sent: from here on, this batch has exactly this transaction.
      await write(
        db,
        `INSERT INTO evm_transactions (batch_id, chain_id, from_address, nonce, tx_hash, raw_tx, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [batch.id, settings.chainId, w.address, nonce, hash, raw, new Date()],
      );
      const row = (await recorded(batch.id)) as TxRow;
      await broadcast(row);
      logger.info({ batch: batch.id, txHash: hash, nonce }, 'batch root sent to the chain');
      return submissionOf(row);
    },

    async confirm(batch: BatchToAnchor, s: Submission): Promise<FinalReceipt | undefined> {
      const receipt = await provider.getTransactionReceipt(s.txHash);
      if (!receipt) {
        // Not mined: make sure the node has it (it may have dropped it, or never got it).
        const row = await recorded(batch.id);
        if (row && !(await provider.getTransaction(s.txHash))) {
          // The sender that signed it (the key may have been replaced since).
          const mined = await provider.getTransactionCount(row.from_address, 'latest');
          if (mined > Number(row.nonce)) {
            throw new Error(
              `nonce ${row.nonce} of ${row.from_address} was taken by another transaction: is the anchor key used elsewhere? Batch ${batch.id} waits for an operator`,
            );
          }
          await broadcast(row);
          logger.warn({ batch: batch.id, txHash: s.txHash }, "the node did not know the batch's transaction: broadcast again");
        }
        return undefined;
      }
      if (receipt.status !== 1) throw new Error(`the transaction of batch ${batch.id} (${s.txHash}) failed on chain`);
      const head = await provider.getBlockNumber();
      if (head - receipt.blockNumber + 1 < settings.confirmations) return undefined;
      const block = await provider.getBlock(receipt.blockNumber);
      if (!block) return undefined;
      return {
        txHash: s.txHash,
        receipt: {
          chainId: settings.chainId,
          blockNumber: receipt.blockNumber,
          from: receipt.from,
          nonce: s.receipt.nonce,
          rawTransaction: s.receipt.rawTransaction,
        },
        anchoredAt: new Date(block.timestamp * 1000),
      };
    },

    close(): Promise<void> {
      provider.destroy();
      return Promise.resolve();
    },
  };
}

/**
 * What the chain says of a proof's transaction (for `cli verify`): that it holds the root, came
 * from the proof's sender, succeeded, and how many blocks confirm it.
 */
export async function checkOnChain(
  provider: EvmProvider,
  proof: { txHash: string; root: string; chainId: number; from: string; blockNumber?: number },
): Promise<Array<{ name: string; ok: boolean; detail?: string }>> {
  const chainId = Number(await provider.send('eth_chainId', []));
  if (chainId !== proof.chainId)
    return [{ name: "the node is on the proof's chain", ok: false, detail: `the node is chain ${chainId}, the proof names ${proof.chainId}` }];
  const tx = await provider.getTransaction(proof.txHash);
  if (!tx) return [{ name: 'the chain has the transaction', ok: false, detail: `no transaction ${proof.txHash}` }];
  const receipt = await provider.getTransactionReceipt(proof.txHash);
  const head = await provider.getBlockNumber();
  return [
    { name: 'the chain has the transaction', ok: true },
    { name: "the transaction's data is the root", ok: tx.data.toLowerCase() === `0x${proof.root}`, detail: `data ${tx.data}` },
    {
      name: 'the transaction comes from the expected sender',
      ok: tx.from.toLowerCase() === proof.from.toLowerCase(),
      detail: `from ${tx.from}, expected ${proof.from}`,
    },
    {
      name: "the transaction succeeded in the proof's block",
      ok: receipt?.status === 1 && (proof.blockNumber === undefined || receipt.blockNumber === proof.blockNumber),
      detail: `status ${receipt?.status ?? 'none'}, block ${receipt?.blockNumber ?? 'none'}`,
    },
    { name: `confirmed by ${receipt ? head - receipt.blockNumber + 1 : 0} block(s)`, ok: receipt !== null },
  ];
}
