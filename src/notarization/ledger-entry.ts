// A ledger entry and its hash (ledger.anchor.ts): apart from the anchor, which needs the
// database, because the verification page checks entries in the browser.
import canonicalize from 'canonicalize';
import { sha256Hex } from '../shared/sha256.js';

export const LEDGER_SCHEMA = 'guarantee-registry/ledger/v1';

/** A ledger entry as it is hashed. */
export interface LedgerEntry {
  schema: string;
  seq: number;
  prevHash: string;
  root: string;
  size: number;
  recordedAt: string;
}

/** SHA-256 (hex) of the entry's RFC 8785 JSON: the ledger's txHash of the entry's batch. */
export function ledgerEntryHash(entry: LedgerEntry): string {
  const { schema, seq, prevHash, root, size, recordedAt } = entry;
  return sha256Hex(canonicalize({ schema, seq, prevHash, root, size, recordedAt }) as string);
}
