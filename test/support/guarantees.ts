// Registered guarantees for the verification tests (API and page): an issuer with its public
// identity, documents with verdicts, and a notarization cycle over the run's ledger.
import { testSequencer } from './log.js';
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { createGuaranteeRepository } from '../../src/guarantees/guarantee.repository.js';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import { createLedgerAnchor } from '../../src/notarization/ledger.anchor.js';
import { createNotarizationRepository } from '../../src/notarization/notarization.repository.js';
import { createNotarizationService } from '../../src/notarization/notarization.service.js';
import { execute } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { eventually, harness, issueFile, newOrg, type TestOrg } from './harness.js';

export const checksum = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
export const unique = () => Math.random().toString(36).slice(2, 10).toUpperCase();

export async function create(org: TestOrg, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', org.key).send(body);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body as Record<string, unknown>;
}

export async function notarizeAll(): Promise<void> {
  const { db, events } = await harness();
  const service = createNotarizationService({
    repo: createNotarizationRepository(db),
    guarantees: createGuaranteeRepository(db),
    amendments: createAmendmentRepository(db),
    outbox: events.outbox,
    anchor: createLedgerAnchor(db),
    sequencer: testSequencer(db),
    batchSize: 1000,
    logger: createLogger('silent'),
  });
  await eventually('a notarization cycle to run', () => service.cycle(), 10_000);
}

export const SIGNATURE = JSON.stringify({
  outcome: 'signed',
  encoding: 'der',
  levels: 1,
  chain: 'checked',
  signers: [
    {
      level: 1,
      subject: 'CN=Mario Rossi,O=Assicurazioni Esempio S.p.A.,C=IT',
      issuer: 'CN=Test CA',
      serialNumber: '01',
      signingTime: '2026-03-01T10:00:00.000Z',
      fiscalCode: 'RSSMRA80A01H501U',
      qualified: true,
      qualifiedDevice: true,
      digestAlgorithm: 'sha256',
      signatureAlgorithm: 'rsa',
      digestMatches: true,
      signatureValid: true,
      certificateValid: true,
      chain: 'trusted',
      trustService: { territory: 'IT', provider: 'Certificatore di prova S.p.A.', name: 'Test QC CA', status: 'granted', qualified: true },
      timestamp: { time: '2026-03-01T10:00:05.000Z', tsa: 'CN=Test TSA', chain: 'trusted', valid: true, problems: [] },
      problems: [],
    },
  ],
});

/** An issuer with its public identity, and a guarantee with a clean and a signed document. */
/** `pdfContent`: the bytes whose SHA-256 the PDF document is registered with (random otherwise). */
export async function registered(
  opts: {
    checkCode?: string;
    policyNumber?: string;
    org?: TestOrg;
    cig?: string;
    amount?: number;
    pdfContent?: Buffer | string;
    /** The contracting authority the issuer names (details.beneficiaryFiscalCode). */
    beneficiaryFiscalCode?: string;
  } = {},
) {
  const { orgs, db } = await harness();
  const org = opts.org ?? (await newOrg(`Assicurazioni ${unique()} S.p.A.`));
  // One VAT number for every such issuer: a group of companies, as far as the registry knows.
  if (!opts.org) await orgs.setPublicIdentity(org.orgId, { vat: 'IT00743110157', allowSharedVat: true, register: 'IVASS 1.00012' });
  // Both shown by the public verification: the PDF uploaded through v1 (no flag), the .p7m as public.
  const pdf = await issueFile(org.orgId, { status: 'Clean', checksum: checksum(opts.pdfContent ?? `pdf-${unique()}`), fileName: 'polizza.pdf', public: 'v1' });
  const p7m = await issueFile(org.orgId, {
    status: 'Signed',
    checksum: checksum(`p7m-${unique()}`),
    fileName: 'polizza.pdf.p7m',
    ext: 'pdf.p7m',
    public: true,
  });
  await execute(db, 'UPDATE files SET signature = $2 WHERE object_key = $1', [p7m, SIGNATURE]);
  const policyNumber = opts.policyNumber ?? `POL-${unique()}`;
  // 18 random letters and digits: a code that cannot be guessed (src/verification/check-code.ts).
  const checkCode = opts.checkCode ?? `K${unique()}${unique().toLowerCase()}x`;
  const g = await create(org, {
    details: {
      policyNumber,
      checkCode,
      actType: 'BAIL_ACT',
      cig: opts.cig ?? 'A1B2C3D4E5',
      expiresAt: '2027-12-31T00:00:00Z',
      ...(opts.beneficiaryFiscalCode !== undefined && { beneficiaryFiscalCode: opts.beneficiaryFiscalCode }),
    },
    economics: { garantedAmount: opts.amount ?? 15000.5 },
    docs: [
      { type: 'BAIL_ACT', key: pdf },
      { type: 'BAIL_ACT', key: p7m },
    ],
  });
  return { org, g, id: g.id as string, policyNumber, checkCode, pdf, p7m };
}
