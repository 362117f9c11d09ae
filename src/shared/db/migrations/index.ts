// Every migration, in order. A listed module (not a glob) works the same from src/ under tsx
// and from dist/ in production. Each must leave a schema the previous release's code can use.
import { migration as initial } from './0001-initial.js';
import { migration as claimOwnerAndCreatedOrder } from './0002-claim-owner-and-created-order.js';
import { migration as fileVerdicts } from './0003-file-verdicts.js';
import { migration as webhooks } from './0004-webhooks.js';
import { migration as webhookAttemptSuccesses } from './0005-webhook-attempt-successes.js';
import { migration as notarization } from './0006-notarization.js';
import { migration as evmAnchor } from './0007-evm-anchor.js';
import { migration as selfHealing } from './0008-self-healing.js';
import { migration as organizationIdentity } from './0009-organization-identity.js';
import { migration as publicVerification } from './0010-public-verification.js';
import { migration as verificationKey } from './0011-verification-key.js';
import { migration as verificationWrites } from './0012-verification-writes.js';
import { migration as trustedLists } from './0013-trusted-lists.js';
import { migration as amendments } from './0014-amendments.js';
import { migration as lifecycleNotices } from './0015-lifecycle-notices.js';
import { migration as amendmentNotarization } from './0016-amendment-notarization.js';
import { migration as amendmentDocChecksums } from './0017-amendment-doc-checksums.js';
import { migration as documentRetention } from './0018-document-retention.js';
import { migration as retention } from './0019-retention.js';
import { migration as audit } from './0020-audit.js';
import { migration as auditSeqOnOrganizations } from './0021-audit-seq-on-organizations.js';
import { migration as retentionQueues } from './0022-retention-queues.js';
import { migration as guaranteeFolds } from './0023-guarantee-folds.js';
import { migration as documentLockRetries } from './0024-document-lock-retries.js';
import { migration as lifecycleCheckStart } from './0025-lifecycle-check-start.js';
import { migration as uploadApi } from './0026-upload-api.js';
import { migration as authorities } from './0027-authorities.js';
import { migration as amendmentsByEffectiveTime } from './0028-amendments-by-effective-time.js';
import { migration as authoritySessions } from './0029-authority-sessions.js';
import { migration as transparencyLog } from './0030-transparency-log.js';
import { migration as vatHeldOnce } from './0031-vat-held-once.js';
import { migration as logPublisher } from './0032-log-publisher.js';

export type Query = (sql: string) => Promise<unknown>;

export interface Migration {
  name: string;
  up(params: { context: Query }): Promise<void>;
  down(params: { context: Query }): Promise<void>;
}

export const migrations: Migration[] = [
  initial,
  claimOwnerAndCreatedOrder,
  fileVerdicts,
  webhooks,
  webhookAttemptSuccesses,
  notarization,
  evmAnchor,
  selfHealing,
  organizationIdentity,
  publicVerification,
  verificationKey,
  verificationWrites,
  trustedLists,
  amendments,
  lifecycleNotices,
  amendmentNotarization,
  amendmentDocChecksums,
  documentRetention,
  retention,
  audit,
  auditSeqOnOrganizations,
  retentionQueues,
  guaranteeFolds,
  documentLockRetries,
  lifecycleCheckStart,
  uploadApi,
  authorities,
  amendmentsByEffectiveTime,
  authoritySessions,
  transparencyLog,
  vatHeldOnce,
  logPublisher,
];
