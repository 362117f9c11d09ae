// Request and response schemas of the presigned-URL endpoints (v1 and v2).
import { z } from 'zod';
import { text } from '../shared/validation.js';
import { FILE_STATUSES } from './file.repository.js';

const fileType = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(40, 'must be at most 40 characters')
  .meta({ description: 'File extension, with or without the leading dot, case-insensitive: pdf, .PDF, pdf.p7m...', example: 'pdf.p7m' });

const fileName = text()
  .min(1, 'must not be empty')
  .optional()
  .meta({ description: "The file's original name: the default of docs[].originalFileName when the file is attached to a guarantee." });

export const presignV1 = z.strictObject({ fileType, fileName }).meta({ id: 'PresignRequestV1' });

export const presignV2 = z
  .strictObject({
    fileType,
    fileName,
    isDocumentPublic: z
      .boolean({ error: 'must be a boolean' })
      .optional()
      .meta({ description: 'A public document is also checked for a .p7m (CAdES) signature.' }),
  })
  .meta({ id: 'PresignRequestV2' });

export const presignResult = z
  .object({
    presignedUrl: z.string().meta({ description: 'The URL of the upload form (S3 presigned POST).' }),
    fields: z.record(z.string(), z.unknown()).meta({ description: 'Form fields to send first, in any order; the file goes last, as the field `file`.' }),
    fileType: z.string().meta({ description: 'fileType as the client sent it.' }),
    key: z.string().meta({ description: 'The object key, `<fileUuid>.<ext>`: equal to fields.key; use it as docs[].key.' }),
  })
  .meta({ id: 'PresignResult' });

export type PresignV1 = z.output<typeof presignV1>;
export type PresignV2 = z.output<typeof presignV2>;
export type PresignResult = z.infer<typeof presignResult>;

const trustServiceView = z
  .object({
    territory: z.string().meta({ description: "The trusted list's country (IT, FR, ...)." }),
    provider: z.string().meta({ description: 'The trust service provider.' }),
    name: z.string().meta({ description: 'The service.' }),
    status: z.string().meta({ description: 'Its status at the signing time (granted; before July 2016 the older statuses, e.g. accredited).' }),
    qualified: z.boolean().meta({
      description:
        'Qualified per the list: a qualified CA service (CA/QC) granted when the certificate was issued and at the signing time, issuing for signatures or seals, and a certificate that says QcCompliance (and esign or eseal when it has a QcType); for a TSA, a qualified timestamping service (TSA/QTST) granted at its time.',
    }),
  })
  .meta({ description: "The imported EU trusted list's service the chain ends at, when it ends at one (`cli trust import`)." });

const timestampView = z.object({
  time: z.string().nullable().meta({ description: "The TSA's genTime: when what it covers existed, by a third party's word." }),
  tsa: z.string().nullable().meta({ description: "The time-stamping authority's certificate subject." }),
  chain: z.enum(['trusted', 'untrusted', 'not-checked']),
  trustService: trustServiceView.optional(),
  valid: z.boolean(),
  problems: z.array(z.string()),
});

const signerView = z.object({
  level: z.number().int().meta({ description: "Envelope level: 1 is the outermost (for a signed PDF, the signature's number)." }),
  subject: z.string().nullable(),
  fiscalCode: z
    .string()
    .nullable()
    .optional()
    .meta({ description: "The Italian fiscal code in the certificate's subject serialNumber (TINIT-... or IT:...), null when none." }),
  qualified: z
    .boolean()
    .optional()
    .meta({ description: 'The certificate says it is EU qualified (QcCompliance statement); trustService.qualified says whether a trusted list agrees.' }),
  qualifiedDevice: z.boolean().optional().meta({ description: 'The certificate says its key is in a qualified signature creation device (QcSSCD).' }),
  issuer: z.string().nullable(),
  serialNumber: z.string().nullable(),
  signingTime: z.string().nullable().meta({
    description: "The time the signer claims (signingTime attribute, or a PDF signature's /M): shown as claimed, it never decides (see judgedAt).",
  }),
  digestAlgorithm: z.string().nullable(),
  signatureAlgorithm: z.string().nullable(),
  digestMatches: z.boolean().meta({ description: 'The messageDigest attribute equals the digest of the content.' }),
  signatureValid: z.boolean().meta({ description: "The signature verifies with the signer certificate's key." }),
  certificateValid: z.boolean().meta({ description: 'The certificate was valid at judgedAt.' }),
  judgedAt: z
    .object({
      time: z.string(),
      by: z.enum(['signature-timestamp', 'container-timestamp', 'document-timestamp', 'check']),
      why: z.string(),
    })
    .optional()
    .meta({
      description:
        'The time the certificate and its chain were judged at, and why: the earliest time a verified RFC 3161 timestamp proves the signature existed by (its own signature timestamp, the timestamp of a .tsd/.m7m around it, a PDF document timestamp after it), or else the time of the check. A claimed signing time never moves it.',
    }),
  notes: z.array(z.string()).optional().meta({ description: 'What was found and decided nothing, e.g. a broken signature timestamp, reported and ignored.' }),
  chain: z.enum(['trusted', 'untrusted', 'not-checked']).meta({
    description:
      'Chain to SIGNATURE_TRUST_STORE or to a service of an imported EU trusted list whose status allowed it at the signing time; not-checked when there is neither.',
  }),
  trustService: trustServiceView.optional(),
  counterSignatureOf: z.number().int().optional().meta({
    description:
      'A counter-signature (RFC 5652 §11.4): the index in `signers` of the signer whose signature it signs. Absent for a signer of the content. Every counter-signature must pass too.',
  }),
  timestamp: timestampView.optional().meta({
    description:
      'The RFC 3161 signature timestamp the signer was judged with (the earliest that verifies); when none verifies, the first, valid false: a broken timestamp is reported and ignored.',
  }),
  problems: z.array(z.string()),
});

export const signatureView = z
  .object({
    outcome: z.enum(['signed', 'not-signed']),
    reason: z.string().optional(),
    encoding: z.enum(['der', 'pem', 'base64']).optional(),
    levels: z.number().int().meta({ description: 'Nested envelope levels (0: not an envelope).' }),
    chain: z.enum(['checked', 'not-checked']),
    signers: z.array(signerView),
    container: z.enum(['tsd', 'm7m', 'pdf']).optional().meta({
      description:
        "The container the signatures came in: .tsd (RFC 5544), .m7m (S/MIME bundle of a .p7m and its timestamp), or a signed PDF (PAdES; each signer's level is then its signature's number).",
    }),
    pdf: z
      .object({
        signatures: z.array(
          z.object({
            subFilter: z.string().nullable(),
            coversWholeFile: z.boolean(),
            revision: z.number().int().meta({ description: 'The revision it signed (1: the first of the file).' }),
            coveredBytes: z.number().int().meta({ description: 'The bytes its ByteRange covers (the revision, less its /Contents).' }),
            changesAfter: z.array(z.string()).meta({ description: 'What the incremental updates after it changed, in words.' }),
            intact: z.boolean().meta({
              description:
                "Every update after it is one PAdES allows: later signatures and their fields, document timestamps, validation data (DSS/VRI), metadata, and within the certification's DocMDP level and FieldMDP locks, form values and annotations that cannot cover the page.",
            }),
            notIntactBecause: z.string().optional().meta({ description: 'The first change after it that no rule allows.' }),
          }),
        ),
        modifiedAfterLastSignature: z.boolean().meta({ description: "An update follows the last signature (allowed or not: see each signature's intact)." }),
      })
      .optional(),
    timestamps: z.array(timestampView).optional().meta({
      description:
        "The container's timestamps over the envelope (a .tsd's renewals after the first; a PDF's document timestamps). One that fails is reported and decides nothing.",
    }),
    notes: z.array(z.string()).optional().meta({ description: 'What was found and decided nothing, e.g. a broken container or document timestamp.' }),
  })
  .meta({
    id: 'SignatureVerdict',
    description: 'The signature check of a public v2 document (.p7m, .tsd, .m7m, signed PDF). Revocation (OCSP/CRL) is not checked.',
  });

export const fileView = z
  .object({
    uuid: z.string(),
    key: z.string().meta({ description: 'The object key the file was uploaded to: docs[].key.' }),
    fileType: z.string(),
    fileName: z.string().nullable(),
    isDocumentPublic: z.boolean(),
    status: z.enum(FILE_STATUSES),
    statusReason: z.string().nullable().meta({ description: 'Why the file is Error.' }),
    size: z.number().int().nullable().meta({ description: 'Bytes scanned.' }),
    checksum: z.string().nullable().meta({ description: 'SHA-256 (hex) of the bytes scanned and kept.' }),
    threat: z.string().nullable().meta({ description: 'What the antivirus found (Infected), including limits exceeded.' }),
    scan: z
      .object({ engine: z.string().meta({ description: 'Antivirus engine and signature database that gave the verdict.' }), scannedAt: z.string() })
      .nullable(),
    signature: signatureView.nullable(),
    createdAt: z.string(),
    uploadUrlExpiresAt: z.string(),
  })
  .meta({ id: 'FileView' });

export type FileView = z.infer<typeof fileView>;
