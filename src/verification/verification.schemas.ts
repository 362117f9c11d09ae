// The public verification's request and answer, and the issuer's view of its guarantee's
// verification (docs/authorities.md).
import { z } from 'zod';
import { amendmentView, stateView } from '../guarantees/amendment.schemas.js';
import { guaranteeV2 } from '../guarantees/guarantee.schemas.js';
import { amendmentProof, notarizationProof } from '../notarization/proof.js';
import { money } from '../shared/validation.js';

const code = (what: string) =>
  z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .meta({ description: `${what}, compared exactly (case and spaces included).` });

export const verificationRequest = z
  .strictObject({
    policyNumber: code('The policy number printed on the guarantee'),
    checkCode: code('The verification key printed on the guarantee (only a code of at least 10 characters that cannot be guessed ever matches)'),
    cig: code("The tender's CIG: when given, it must match too").optional(),
    garantedAmount: money.optional().meta({ description: 'The guaranteed amount: when given, it must match too.' }),
  })
  .meta({ id: 'VerificationRequest' });

export type VerificationRequest = z.output<typeof verificationRequest>;

const signerSummary = z.object({
  commonName: z.string().nullable().meta({ description: "The signer certificate's common name (CN): never its fiscal code or another personal identifier." }),
  issuer: z.string().nullable().meta({ description: "Who issued the signer's certificate." }),
  signingTime: z.string().nullable().meta({ description: 'The time the signer claims (signingTime attribute).' }),
  timestampedAt: z
    .string()
    .nullable()
    .meta({ description: 'The time a timestamping authority vouches for (RFC 3161), when the signature has a valid timestamp.' }),
  qualified: z.boolean().meta({ description: 'The certificate says it is EU qualified (QcCompliance).' }),
  trustedList: z
    .object({
      territory: z.string().meta({ description: "The EU trusted list's country." }),
      provider: z.string().meta({ description: 'The trust service provider that issued the certificate (or the CA above it).' }),
      qualified: z.boolean().meta({
        description:
          'The list makes the certificate qualified: issued under a qualified CA service granted then and at the signing time, for signatures or seals, and it says QcCompliance.',
      }),
    })
    .nullable()
    .meta({ description: 'The imported EU trusted list the chain ends at, when it does.' }),
  counterSignature: z.boolean().meta({ description: "A counter-signature of another signer's signature." }),
  valid: z.boolean().meta({ description: 'Digest, signature and certificate validity at signing time all check.' }),
  chain: z.enum(['trusted', 'untrusted', 'not-checked']),
});

export const verifiedDocument = z
  .object({
    type: z.string().nullable(),
    key: z.string(),
    originalFileName: z.string().nullable(),
    checksum: z.string().nullable().meta({ description: 'SHA-256 (hex) of the registered file: hash the file you hold and compare.' }),
    status: z.string().nullable().meta({ description: "The file's scan and signature verdict (File status)." }),
    signature: z.object({ outcome: z.enum(['signed', 'not-signed']), signers: z.array(signerSummary) }).nullable(),
  })
  .meta({ id: 'VerifiedDocument' });

export const verificationMatch = z
  .object({
    issuer: z.object({
      orgId: z.string(),
      name: z.string(),
      vatNumber: z.string().nullable().meta({ description: "Recorded by the registry's operator, never by the issuer itself." }),
      register: z.string().nullable(),
    }),
    state: stateView.meta({ description: 'What the guarantee covers now, folded from the registration and its amendments (GET .../state).' }),
    guarantee: guaranteeV2.meta({ description: 'The record as registered: it never changes (the amendments say what changed since).' }),
    proof: notarizationProof.nullable().meta({ description: 'Null while the record is not notarized.' }),
    amendments: z
      .array(
        amendmentView.extend({
          privateDocuments: z
            .number()
            .int()
            .meta({ description: "The amendment's documents not uploaded as public: not listed in its docs (its digest covers them)." }),
          proof: amendmentProof.nullable().meta({ description: 'Null while the amendment is not notarized.' }),
        }),
      )
      .meta({
        description:
          'The guarantee\'s latest amendments (at most 100), oldest first, each with its proof: a chain from the record (docs/api.md "An amendment\'s proof: the chain").',
      }),
    earlierAmendments: z.number().int().meta({
      description: "How many amendments come before those listed (not listed: the first listed one's proof links to them by its previousDigest).",
    }),
    documents: z
      .array(verifiedDocument)
      .meta({ description: 'The documents uploaded as public (isDocumentPublic: true) and those uploaded through v1 (no such flag).' }),
    privateDocuments: z.number().int().meta({
      description:
        "The registration's documents not uploaded as public: neither listed here nor in guarantee.docs (the record's digest covers them, so it cannot be recomputed from this answer when there are any).",
    }),
  })
  .meta({ id: 'VerificationMatch' });

export const verificationResult = z
  .object({
    verifiedAt: z.string(),
    matches: z.array(verificationMatch),
    receipt: z.string().meta({
      description:
        "Compact JWS (EdDSA, Ed25519) over {verifiedAt, query, matches: [{guaranteeId, digest, notarizationStatus, txHash, status, lastSeq, log?}]} (status and lastSeq: the state at verifiedAt; log: the record's leaf in the transparency log, {index, checkpoint, inclusion}, once a checkpoint holds it); keys at /.well-known/jwks.json.",
    }),
  })
  .meta({ id: 'VerificationResult' });

export type VerificationMatch = z.infer<typeof verificationMatch>;
export type VerificationResult = z.infer<typeof verificationResult>;

export const issuerVerificationView = z
  .object({
    verifiable: z.boolean(),
    reason: z.string().optional().meta({ description: 'Why a contracting authority cannot verify it, when it cannot.' }),
    url: z.string().meta({ description: '<PUBLIC_BASE_URL>/verify#policyNumber=...&checkCode=...: print it, or its QR code, on the guarantee.' }),
    verifications: z.object({ count: z.number().int(), lastAt: z.string().nullable() }),
  })
  .meta({ id: 'IssuerVerificationView' });

export type IssuerVerificationView = z.infer<typeof issuerVerificationView>;
