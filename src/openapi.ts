// The OpenAPI 3.1 document of the whole API, generated from the zod schemas that validate
// requests. Served at /openapi.json; the docs page at /docs renders it offline.
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { FILE_STATUSES } from './files/file.repository.js';
import { EVENT_TYPES } from './shared/events/outbox.js';
import { amendmentProof, notarizationProof, pendingAmendmentProof, pendingProof } from './notarization/proof.js';
import { auditPage, auditQuery } from './audit/audit.schemas.js';
import { authorityGuaranteeView, authorityList, authorityListQuery, createAuthorityAct, takeCharge } from './authorities/authority.schemas.js';
import { issuerVerificationView, verificationRequest, verificationResult } from './verification/verification.schemas.js';
import { fileView, presignResult, presignV1, presignV2 } from './files/file.schemas.js';
import { amendmentList, amendmentsQuery, amendmentView, createAmendment, stateView } from './guarantees/amendment.schemas.js';
import { createGuaranteeV1, createGuaranteeV2, guaranteeListV1, guaranteeListV2, guaranteeV1, guaranteeV2, listQuery } from './guarantees/guarantee.schemas.js';
import {
  attemptList,
  attemptsQuery,
  registerFailure,
  registerResult,
  registerWebhook,
  replayRequest,
  replayResult,
  rotateResult,
  webhookList,
  webhookView,
} from './webhooks/webhook.schemas.js';

const empty = (description: string) => ({ description });

const problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    errors: z.array(z.object({ pointer: z.string(), detail: z.string() })).optional(),
  })
  .meta({
    id: 'Problem',
    description: 'RFC 9457 problem document, sent only to a client whose Accept header includes application/problem+json; otherwise error bodies are empty.',
  });

const errorResponse = (description: string) => ({
  description: `${description} Empty body, or a problem document when the client accepts application/problem+json.`,
  content: { 'application/problem+json': { schema: problem } },
});

const commonErrors = {
  401: errorResponse('API key missing, malformed, unknown or revoked.'),
  403: errorResponse(
    "The key's kind of organization does not reach this route: an authority's key on an issuer's route, or an issuer's key on an authority's (the webhooks endpoints take both).",
  ),
  429: errorResponse('Rate limit exceeded; see Retry-After.'),
  500: errorResponse('Internal server error.'),
  503: errorResponse('Database unavailable; retry later (Retry-After).'),
};

const idempotencyHeader = z.string().min(1).max(255).optional().meta({
  description:
    'Makes a create safe to retry: same key and body within 24 h replays the first response; a different body, or a retry while the first is running, is a 409.',
});

/** The authorities' API takes an authority's key (an organization of kind `authority`), in either header. */
const AUTHORITY_SECURITY: Array<Record<string, string[]>> = [{ authorityKey: [] }, { authorityBearer: [] }];

const idParam = z.object({ id: z.string().meta({ description: 'The guarantee id (a UUID). A malformed id is a 404.' }) });

function listOperation(version: 1 | 2): ZodOpenApiOperationObject {
  return {
    summary: `List guarantees (v${version} shape)`,
    description:
      "Newest first (registration order, which is createdAt descending). totalItems counts the organization's guarantees. A page past the end is 200 with an empty array. page >= 1 and 1 <= limit <= 100, else 400.",
    tags: ['Guarantees'],
    requestParams: { query: listQuery },
    responses: {
      200: { description: 'A page of guarantees.', content: { 'application/json': { schema: version === 1 ? guaranteeListV1 : guaranteeListV2 } } },
      400: errorResponse('Invalid page or limit (not an integer, out of range, or repeated).'),
      ...commonErrors,
    },
  };
}

function createOperation(version: 1 | 2): ZodOpenApiOperationObject {
  return {
    summary: `Register a guarantee (v${version} shape)`,
    description:
      'The service assigns id, orgId, createdAt, txHash, notarizationStatus (PENDING) and docs[].checksum/notarizedAt; values sent for them are ignored. Any other unknown field is a 400. Each docs[].key must be a key this organization obtained from a presigned-URL endpoint, not Infected or Error.',
    tags: ['Guarantees'],
    requestParams: { header: z.object({ 'idempotency-key': idempotencyHeader }) },
    requestBody: { required: false, content: { 'application/json': { schema: version === 1 ? createGuaranteeV1 : createGuaranteeV2 } } },
    responses: {
      200: {
        description: 'The registered guarantee (or, for a retry, the one registered first).',
        content: { 'application/json': { schema: version === 1 ? guaranteeV1 : guaranteeV2 } },
      },
      400: errorResponse('Invalid body: malformed JSON, not an object, unknown field, wrong type, rule broken.'),
      409: errorResponse(
        version === 2
          ? 'details.transactionId or Idempotency-Key already used with a different body, or a retry while the first request is running.'
          : 'Idempotency-Key already used with a different body, or a retry while the first request is running.',
      ),
      413: errorResponse('Body over 1 MiB.'),
      ...commonErrors,
    },
  };
}

function getOperation(version: 1 | 2): ZodOpenApiOperationObject {
  return {
    summary: `Get one guarantee (v${version} shape)`,
    tags: ['Guarantees'],
    requestParams: { path: idParam },
    responses: {
      200: { description: 'The guarantee.', content: { 'application/json': { schema: version === 1 ? guaranteeV1 : guaranteeV2 } } },
      404: errorResponse("No such guarantee in this organization (another organization's answers the same)."),
      ...commonErrors,
    },
  };
}

function presignOperation(version: 1 | 2): ZodOpenApiOperationObject {
  return {
    summary: version === 1 ? 'Upload URL for a document' : 'Upload URL for a document, with a .p7m signature check when public',
    description:
      'An S3 presigned POST bound to exactly `key`, 1 byte to MAX_UPLOAD_BYTES, valid UPLOAD_URL_TTL_SECONDS (15 minutes by default). Send every `fields` entry first and the file last, as the form field `file` (a browser form, or `curl -F key=... ... -F file=@doc.pdf <presignedUrl>`). Every upload is scanned; then use `key` as docs[].key.',
    tags: ['Uploads'],
    requestBody: { required: true, content: { 'application/json': { schema: version === 1 ? presignV1 : presignV2 } } },
    responses: {
      200: { description: 'The upload form.', content: { 'application/json': { schema: presignResult } } },
      400: errorResponse('fileType missing or not accepted, or another invalid field.'),
      ...commonErrors,
    },
  };
}

/** A file named by its UUID or its whole key (endpoint 8 and the extended view). */
const fileRefParam = z.object({ uuid: z.string().meta({ description: "The file's UUID, or the whole key `<uuid>.<ext>`." }) });

const webhookIdParam = z.object({ id: z.string().meta({ description: 'The webhookId.' }) });

const paths: ZodOpenApiPathsObject = {
  '/api/v1/presigned-url': { post: presignOperation(1) },
  '/api/v2/presigned-url': { post: presignOperation(2) },
  '/api/v2/file-status/{uuid}': {
    get: {
      summary: 'Status of an uploaded file',
      description:
        "In Progress (issued, not yet uploaded, or being processed), Clean, Signed (clean and validly signed), Infected (or beyond the scanner's limits), Error (the scan could not complete, or nothing arrived before the URL expired). The path takes the file's UUID or its whole key.",
      tags: ['Uploads'],
      requestParams: { path: fileRefParam },
      responses: {
        200: { description: 'The status, as a JSON string.', content: { 'application/json': { schema: z.enum(FILE_STATUSES) } } },
        400: errorResponse('The file key is missing.'),
        404: errorResponse('No such file in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v2/files/{uuid}': {
    get: {
      summary: 'Everything known about an uploaded file',
      description:
        "Status and why it is Error; size and SHA-256 of the bytes scanned and kept; the threat found; the antivirus engine and database that judged it; and, for public v2 documents, the signature verdict (.p7m, .tsd, .m7m, signed PDF) with each signer's checks (digest, signature, timestamp, certificate validity at signing time, chain to SIGNATURE_TRUST_STORE or an imported EU trusted list, qualified or not) and counter-signers. Revocation (OCSP/CRL) is not checked.",
      tags: ['Uploads'],
      requestParams: { path: fileRefParam },
      responses: {
        200: { description: 'The file.', content: { 'application/json': { schema: fileView } } },
        404: errorResponse('No such file in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v1/guarantees': { get: listOperation(1), post: createOperation(1) },
  '/api/v1/guarantees/{id}': { get: getOperation(1) },
  '/api/v2/guarantees': { get: listOperation(2), post: createOperation(2) },
  '/api/v2/guarantees/{id}': { get: getOperation(2) },
  '/api/v2/guarantees/{id}/proof': {
    get: {
      summary: "The record's notarization proof",
      description:
        "Once the record is COMPLETE: its digest (SHA-256 of the RFC 8785 JSON of a documented projection of the v2 record), the Merkle path from the digest to its batch's root, the root, and the anchor that holds the root (kind, txHash, anchored time; for the embedded ledger, the entry itself). Check it offline with `cli verify`, or by hand as docs/api.md, Notarization and proofs, explains. Before that: notarizationStatus PENDING, with the reason when the record will never be notarized (a doc ended Infected or Error).",
      tags: ['Guarantees'],
      requestParams: { path: idParam },
      responses: {
        200: { description: 'The proof, or PENDING.', content: { 'application/json': { schema: z.union([notarizationProof, pendingProof]) } } },
        404: errorResponse('No such guarantee in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v2/guarantees/{id}/amendments': {
    post: {
      summary: 'Record an amendment (extension, amount change, partial release, release, claim, claim settled or rejected, cancellation)',
      description:
        "Appends an amendment to the guarantee's chain; the registration itself never changes. seq is 1, 2, 3... per guarantee without gaps, however many race. 409 when the type's rule does not hold for the current state (nothing after RELEASE or CANCELLATION; one open claim at a time; CLAIM_SETTLED/CLAIM_REJECTED only with an open claim; CLAIM at most the current amount; PARTIAL_RELEASE strictly lower; EXTENSION strictly later) or when expectedSeq is not the last seq. Emits guarantee.amended `{amendment, state}`.",
      tags: ['Guarantees'],
      requestParams: {
        path: idParam,
        header: z.object({
          'idempotency-key': z.string().min(1).max(255).optional().meta({
            description:
              'Makes the amendment safe to retry: the same key and body within 24 h replays the first response; another body, another guarantee, or a retry while the first is running, is a 409.',
          }),
        }),
      },
      requestBody: { required: true, content: { 'application/json': { schema: createAmendment } } },
      responses: {
        200: { description: 'The amendment recorded.', content: { 'application/json': { schema: amendmentView } } },
        400: errorResponse('A missing, malformed or foreign field, or a bad doc key.'),
        404: errorResponse('No such guarantee in this organization.'),
        413: errorResponse('Body over 1 MiB.'),
        409: errorResponse(
          "The type's rule does not hold for the current state, or expectedSeq is stale, or the Idempotency-Key was used for another request or is in use; nothing recorded.",
        ),
        ...commonErrors,
      },
    },
    get: {
      summary: "The guarantee's amendments, a page at a time",
      description:
        "Oldest first, by seq: at most limit amendments with seq greater than after. Page with after = the previous answer's next, until next is null. The state they fold to is GET .../state.",
      tags: ['Guarantees'],
      requestParams: { path: idParam, query: amendmentsQuery },
      responses: {
        200: { description: 'The page of amendments.', content: { 'application/json': { schema: amendmentList } } },
        400: errorResponse('after or limit malformed, or limit outside 1 to 500.'),
        404: errorResponse('No such guarantee in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v2/guarantees/{id}/amendments/{seq}/proof': {
    get: {
      summary: "An amendment's notarization proof, one link of the guarantee's chain",
      description:
        "Once the amendment is COMPLETE: its digest (SHA-256 of the RFC 8785 JSON of a documented projection of the amendment, which includes guaranteeDigest, the guarantee's own notarization digest, and previousDigest, the digest of amendment seq - 1, null for seq 1), the Merkle path to its batch's root, the root and the anchor, as for a record. An amendment, or a whole chain, is checked offline with `cli verify` (docs/api.md \"An amendment's proof: the chain\"). Before that: PENDING, with the reason when it will never be notarized (a doc ended Infected or Error, or the guarantee's notarization is blocked) and then, when known, the digest that the next amendment links to.",
      tags: ['Guarantees'],
      requestParams: {
        path: z.object({
          id: z.string().meta({ description: "The guarantee's id." }),
          seq: z.string().meta({ description: "The amendment's seq (1, 2, 3...)." }),
        }),
      },
      responses: {
        200: { description: 'The proof, or PENDING.', content: { 'application/json': { schema: z.union([amendmentProof, pendingAmendmentProof]) } } },
        404: errorResponse('No such guarantee in this organization, or no amendment with this seq.'),
        ...commonErrors,
      },
    },
  },
  '/api/v2/audit': {
    get: {
      summary: "The organization's audit trail",
      description:
        "Every change the organization made through the API, one row each, written in the same transaction as the change, oldest first by seq (1, 2, 3... without gaps), hash-chained: each row's hash covers its fields and the previous row's hash (docs/api.md \"Audit\"). Page with since = the previous answer's next.",
      tags: ['Audit'],
      requestParams: { query: auditQuery },
      responses: {
        200: { description: 'The rows after since.', content: { 'application/json': { schema: auditPage } } },
        400: errorResponse('since or limit malformed, or limit outside 1 to 100.'),
        ...commonErrors,
      },
    },
  },
  '/api/v2/guarantees/{id}/state': {
    get: {
      summary: 'What the guarantee covers now',
      description:
        'Folded from the registration and its amendments (the fold is kept as each amendment is recorded: one read, however many there are): status, current amount and expiry, the open claim and its due date, the last seq.',
      tags: ['Guarantees'],
      requestParams: { path: idParam },
      responses: {
        200: { description: 'The state.', content: { 'application/json': { schema: stateView } } },
        404: errorResponse('No such guarantee in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v1/webhooks': {
    get: {
      summary: 'List webhooks',
      description: "This organization's endpoints, oldest first.",
      tags: ['Webhooks'],
      responses: { 200: { description: 'The endpoints.', content: { 'application/json': { schema: webhookList } } }, ...commonErrors },
    },
    post: {
      summary: 'Register a webhook',
      description:
        'Events (' +
        EVENT_TYPES.join(', ') +
        ') are POSTed to the endpoint as `{type, timestamp, data}`, signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature with the returned `whsec_` secret): verify with any Standard Webhooks library. A 2xx within 15 s is a delivery; otherwise retried after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (Retry-After honoured on 429/503); 410 disables the endpoint, as does failing for 5 days. Redirects are not followed. The same endpoint (after URL normalization) registered again returns the same webhookId and secret. At most 20 per organization. Each event\'s data: docs/api.md, "Webhooks".',
      tags: ['Webhooks'],
      requestBody: { required: true, content: { 'application/json': { schema: registerWebhook } } },
      responses: {
        200: { description: 'Registered (or already registered).', content: { 'application/json': { schema: registerResult } } },
        400: {
          description:
            'endpoint missing or invalid (not an absolute https URL, over 2048 characters, credentials, not resolving to a public address unless WEBHOOK_ALLOWED_NETWORKS allows it), or the organization has 20 already.',
          content: { 'application/json': { schema: registerFailure } },
        },
        ...commonErrors,
      },
    },
  },
  '/api/v1/webhooks/{id}': {
    get: {
      summary: 'One webhook',
      tags: ['Webhooks'],
      requestParams: { path: webhookIdParam },
      responses: {
        200: { description: 'The endpoint.', content: { 'application/json': { schema: webhookView } } },
        404: errorResponse('No such webhook in this organization.'),
        ...commonErrors,
      },
    },
    delete: {
      summary: 'Delete a webhook',
      description: 'Its pending deliveries and its attempts go with it.',
      tags: ['Webhooks'],
      requestParams: { path: webhookIdParam },
      responses: { 204: empty('Deleted.'), 404: errorResponse('No such webhook in this organization.'), ...commonErrors },
    },
  },
  '/api/v1/webhooks/{id}/rotate-secret': {
    post: {
      summary: "Rotate a webhook's secret",
      description:
        'A new secret signs from now on; the previous one also signs (a second signature in webhook-signature) until previousSecretValidUntil (WEBHOOK_SECRET_GRACE_SECONDS, a day by default).',
      tags: ['Webhooks'],
      requestParams: { path: webhookIdParam },
      responses: {
        200: { description: 'The new secret.', content: { 'application/json': { schema: rotateResult } } },
        404: errorResponse('No such webhook in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v1/webhooks/{id}/enable': {
    post: {
      summary: 'Re-enable a disabled webhook',
      description: 'Deliveries missed while disabled are kept as failed: replay them with `since`.',
      tags: ['Webhooks'],
      requestParams: { path: webhookIdParam },
      responses: {
        200: { description: 'The endpoint.', content: { 'application/json': { schema: webhookView } } },
        404: errorResponse('No such webhook in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v1/webhooks/{id}/attempts': {
    get: {
      summary: 'Delivery attempts to a webhook, newest first',
      tags: ['Webhooks'],
      requestParams: { path: webhookIdParam, query: attemptsQuery },
      responses: {
        200: { description: 'A page of attempts.', content: { 'application/json': { schema: attemptList } } },
        400: errorResponse('Invalid page or limit.'),
        404: errorResponse('No such webhook in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v1/webhooks/{id}/replay': {
    post: {
      summary: 'Replay an event, or every failed delivery since a time',
      description: 'The deliveries are queued again with the same webhook-id (receivers can deduplicate on it).',
      tags: ['Webhooks'],
      requestParams: { path: webhookIdParam },
      requestBody: { required: true, content: { 'application/json': { schema: replayRequest } } },
      responses: {
        202: { description: 'Queued.', content: { 'application/json': { schema: replayResult } } },
        400: errorResponse('Neither eventId nor since, or the webhook is disabled.'),
        404: errorResponse('No such webhook, or no such event, in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/authority/v1/guarantees': {
    post: {
      summary: 'Take charge of a guarantee with the tender data (contracting authorities)',
      description: [
        "The authority (the stazione appaltante the guarantee is issued to) identifies the guarantee with the tender's data: the policy number and checkCode printed on it, compared exactly as the public verification compares them, the tender's CIG, which the record must carry, and the guaranteed amount. All four are required.",
        'A guarantee has at most one authority: taking charge again is 200 with the same view and records nothing; another authority gets a 409. When the issuer named the beneficiary (details.beneficiaryFiscalCode), only the authority with that fiscal code can take charge; any other gets the 404 of a miss.',
        "Taking charge is the guarantee's BENEFICIARY_LINKED amendment (actor: authority), dated by the server, notarized in the guarantee's chain, a row of both parties' audit trails, and the guarantee.beneficiary_linked event to both. From then on the issuer cannot record a CLAIM: the demand is the authority's.",
        "Every kind of miss is the same 404 as a public verification's, with the same limits per client address (VERIFY_RATE_PER_MINUTE).",
      ].join(' '),
      tags: ['Contracting authorities'],
      security: AUTHORITY_SECURITY,
      requestBody: { content: { 'application/json': { schema: takeCharge } } },
      responses: {
        200: { description: 'The guarantee as the authority sees it.', content: { 'application/json': { schema: authorityGuaranteeView } } },
        400: errorResponse('Malformed body, a missing field or an unknown one.'),
        404: errorResponse('No guarantee matches (whatever the reason).'),
        409: errorResponse('Another authority took charge of the guarantee, it was released or cancelled, or several guarantees match.'),
        ...commonErrors,
      },
    },
    get: {
      summary: 'The guarantees the authority took charge of',
      description:
        'The latest first (the order it took charge), each with its issuer and what it covers now (its state: status, amount, expiry, the open claim and its due date). page >= 1 and 1 <= limit <= 100, else 400; `cig` keeps those of one tender.',
      tags: ['Contracting authorities'],
      security: AUTHORITY_SECURITY,
      requestParams: { query: authorityListQuery },
      responses: {
        200: { description: 'A page of guarantees.', content: { 'application/json': { schema: authorityList } } },
        400: errorResponse('Invalid page, limit or cig.'),
        ...commonErrors,
      },
    },
  },
  '/api/authority/v1/guarantees/{id}/amendments': {
    post: {
      summary: "Record the authority's act on a guarantee it took charge of: a demand, its withdrawal, an answer to a pending amendment, a release",
      description: [
        "DEMAND (escussione: claimedAmount > 0, at most the current amount, one open at a time; reason; docs uploaded with the authority's own presigned URLs), DEMAND_WITHDRAWN and AMENDMENT_RESPONSE (amendmentSeq, decision ACCEPT or REFUSE) are dated by the server at receipt: they take no effectiveAt. A demand's claimDueAt is 15 × 24 h after it (art. 117 c.7); the issuer hears of it at once (guarantee.demanded).",
        'PARTIAL_RELEASE and RELEASE (svincolo) take effectiveAt and apply at once.',
        "An issuer's amendment that would reduce the authority's cover (a partial release, a release, a cancellation, a lower amount) waits for the authority's answer: ACCEPT applies it, REFUSE leaves the state as it was.",
        "Each act is an amendment of the guarantee's chain (actor: authority), notarized, with the same rules, dense seq, expectedSeq and Idempotency-Key as the issuer's; a broken rule is a 409 that changes nothing.",
      ].join(' '),
      tags: ['Contracting authorities'],
      security: AUTHORITY_SECURITY,
      requestParams: { path: idParam, header: z.object({ 'idempotency-key': idempotencyHeader }) },
      requestBody: { content: { 'application/json': { schema: createAuthorityAct } } },
      responses: {
        200: { description: 'The act, as an amendment.', content: { 'application/json': { schema: amendmentView } } },
        400: errorResponse('Malformed body, a field of another type, an effectiveAt on an act the server dates.'),
        404: errorResponse('No such guarantee among those the authority took charge of.'),
        409: errorResponse(
          'A rule broken (nothing after a release, one open demand, no pending amendment with that seq...), a stale expectedSeq, or an Idempotency-Key reused.',
        ),
        ...commonErrors,
      },
    },
  },
  '/api/authority/v1/presigned-url': {
    post: {
      ...presignOperation(2),
      summary: "Upload URL for a document of the authority's (a demand's)",
      tags: ['Contracting authorities'],
      security: AUTHORITY_SECURITY,
    },
  },
  '/api/authority/v1/file-status/{uuid}': {
    get: {
      summary: "Status of the authority's uploaded file",
      tags: ['Contracting authorities'],
      security: AUTHORITY_SECURITY,
      requestParams: { path: fileRefParam },
      responses: {
        200: { description: 'The status, as a JSON string.', content: { 'application/json': { schema: z.enum(FILE_STATUSES) } } },
        404: errorResponse("No such file among the authority's."),
        ...commonErrors,
      },
    },
  },
  '/api/authority/v1/guarantees/{id}': {
    get: {
      summary: 'A guarantee the authority took charge of',
      description:
        "The record as registered with its proof, what it covers now, its latest amendments (each with its actor and proof) and every document with its verdict, public or not. Another authority's guarantee, or one it did not take charge of, is a 404.",
      tags: ['Contracting authorities'],
      security: AUTHORITY_SECURITY,
      requestParams: { path: idParam },
      responses: {
        200: { description: 'The guarantee as the authority sees it.', content: { 'application/json': { schema: authorityGuaranteeView } } },
        404: errorResponse('No such guarantee among those the authority took charge of.'),
        ...commonErrors,
      },
    },
  },
  '/api/public/v1/verifications': {
    post: {
      summary: 'Verify a guarantee by its codes (contracting authorities; no key)',
      description: [
        'The policy number and checkCode printed on the guarantee, compared exactly; a checkCode that could be guessed (under 10 characters or 50 bits, or containing the policy number or the CIG) never matches; cig and garantedAmount must match too when given.',
        "At most 10 matches, the oldest. Each match: the issuer's public identity (recorded by the registry's operator), the record as registered, its notarization proof (null while PENDING), what it covers now and its amendments with their proofs, and its public documents with their verdicts (signers by common name); documents not uploaded as public are only counted (privateDocuments).",
        'The receipt is a compact JWS (EdDSA, Ed25519) to check against /.well-known/jwks.json; it never contains the checkCode.',
        'Every kind of miss is the same 404. Limited per client address and per IPv6 /64 (VERIFY_RATE_PER_MINUTE, VERIFY_RATE_PER_MINUTE_PER_NETWORK, malformed requests counted, for every web process together), never per policy.',
      ].join(' '),
      tags: ['Public verification'],
      security: [],
      requestBody: { content: { 'application/json': { schema: verificationRequest } } },
      responses: {
        200: { description: 'One or more guarantees match.', content: { 'application/json': { schema: verificationResult } } },
        400: errorResponse('Malformed body or unknown property.'),
        404: errorResponse('No guarantee matches (whatever the reason).'),
        408: errorResponse('The body did not arrive whole within PUBLIC_BODY_TIMEOUT_MS; the connection is closed.'),
        413: errorResponse('Body over 4 KiB.'),
        429: errorResponse('Too many requests from this address or its IPv6 /64; see Retry-After.'),
        500: commonErrors[500],
        503: commonErrors[503],
      },
    },
  },
  '/.well-known/jwks.json': {
    get: {
      summary: 'The public keys of verification receipts (every key that has signed, rotated ones included)',
      tags: ['Public verification'],
      security: [],
      responses: {
        200: {
          description: 'A JWK Set of Ed25519 (OKP) keys.',
          content: {
            'application/json': {
              schema: z.object({
                keys: z.array(
                  z.object({
                    kty: z.literal('OKP'),
                    crv: z.literal('Ed25519'),
                    x: z.string(),
                    kid: z.string(),
                    alg: z.literal('EdDSA'),
                    use: z.literal('sig'),
                    retiredAt: z.string().optional().meta({ description: 'Once retired (cli verification-key retire): since when it signs nothing.' }),
                    compromisedSince: z
                      .string()
                      .optional()
                      .meta({ description: 'Once known to have leaked: a receipt it signed at or after this time proves nothing.' }),
                  }),
                ),
              }),
            },
          },
        },
      },
    },
  },
  '/log/checkpoint': {
    get: {
      summary: "The transparency log's latest checkpoint, with the witnesses' cosignatures",
      description:
        "A C2SP signed note (tlog-checkpoint): the log's origin, its size and its RFC 6962 root hash (base64), signed by the log's key (GET /log/key) and by each witness that cosigned it (tlog-cosignature v1). Whoever keeps one can ask any later one to prove it grew from it.",
      tags: ['Transparency log'],
      security: [],
      responses: {
        200: { description: 'The note (Cache-Control: no-cache).', content: { 'text/plain': { schema: z.string() } } },
        404: { description: 'No checkpoint yet.' },
      },
    },
  },
  '/log/key': {
    get: {
      summary: "The log's verifier key: <origin>+<hex key id>+<base64 of 0x01 and the Ed25519 public key>",
      tags: ['Transparency log'],
      security: [],
      responses: {
        200: { description: 'One line.', content: { 'text/plain': { schema: z.string() } } },
      },
    },
  },
  '/log/tile/{path}': {
    get: {
      summary: "The log's tiles (tlog-tiles): tile/<L>/<N>[.p/<W>] (hashes) and tile/entries/<N>[.p/<W>] (entries)",
      description:
        "<L> the level (0: leaf hashes), <N> the tile's index in groups of three digits, all but the last with an x (x001/234), <W> the width of a partial tile (1-255). A hash tile is its 32-byte hashes; an entries bundle each entry as a big-endian uint16 length and its bytes. Entries are lines: `record <digest>`, `amendment <digest>`, `audit <chain> <seq> <hash>`, `key-added <kid> <x>`, `key-retired <kid> <time> [compromised-since <time>]`. Tiles never change (Cache-Control: public, max-age=31536000, immutable); the same files are in the log's bucket, for any static host.",
      tags: ['Transparency log'],
      security: [],
      requestParams: { path: z.object({ path: z.string().meta({ description: 'What follows /log/tile/, e.g. 0/x001/234.p/7 or entries/005.' }) }) },
      responses: {
        200: { description: 'The tile.', content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } } },
        404: { description: 'Not a tile path, or no such tile (yet).' },
      },
    },
  },
  '/add-checkpoint': {
    servers: [{ url: 'http://127.0.0.1:7600', description: 'A witness (npm run -s cli -- witness serve): a process of its own, anyone may run one.' }],
    post: {
      summary: "A witness's add-checkpoint (tlog-witness v1.0.0): cosigns a checkpoint proven consistent with the last it cosigned",
      description:
        'Body: `old <size>` (the size the witness last cosigned for this log, 0 for none), the consistency proof (one base64 hash a line), a blank line, the checkpoint note. The registry sends every checkpoint to the witnesses in LOG_WITNESSES.',
      tags: ['Transparency log'],
      security: [],
      requestBody: { content: { 'text/plain': { schema: z.string() } } },
      responses: {
        200: { description: 'The cosignature line(s), to append to the note.', content: { 'text/plain': { schema: z.string() } } },
        400: { description: 'Malformed, or the old size is larger than the checkpoint.' },
        403: { description: "Not signed by the log's key." },
        404: { description: 'A log the witness does not watch.' },
        409: {
          description: 'The old size is not the size it holds, or the same size with another root (a fork): its size in the body.',
          content: { 'text/x.tlog.size': { schema: z.string() } },
        },
        422: { description: 'The consistency proof does not verify (a rewrite or a fork).' },
      },
    },
  },
  '/verify': {
    get: {
      summary: 'The verification page (HTML, Italian and English): codes from the URL fragment #policyNumber=...&checkCode=...',
      tags: ['Public verification'],
      security: [],
      responses: { 200: { description: 'The page.', content: { 'text/html': { schema: z.string() } } } },
    },
  },
  '/authority': {
    get: {
      summary:
        "The contracting authorities' pages (HTML, Italian and English), for their people signed in with OpenID Connect (SPID, CIE): their guarantees, taking charge, demands, answers, releases",
      description:
        "Without a session: the sign-in page (GET /authority/login goes to the OIDC_ISSUER provider, /authority/callback comes back). A person bound to no authority (cli authority add-user) sees that they have no access. The pages' forms (below /authority/, each with the session's CSRF token) record the same acts as the authority API, with the same rules.",
      tags: ['Contracting authorities'],
      security: [],
      responses: {
        200: { description: 'The page: the list of guarantees, or the sign-in page.', content: { 'text/html': { schema: z.string() } } },
        403: {
          description: 'Signed in, and bound to no authority: the page says so, and shows nothing else.',
          content: { 'text/html': { schema: z.string() } },
        },
      },
    },
  },
  '/api/v2/guarantees/{id}/verification': {
    get: {
      summary: 'Whether contracting authorities can verify the guarantee, its verification URL, and how often it was verified',
      tags: ['Public verification'],
      requestParams: { path: idParam },
      responses: {
        200: { description: "The issuer's view.", content: { 'application/json': { schema: issuerVerificationView } } },
        404: errorResponse('No such guarantee in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v2/guarantees/{id}/verification.svg': {
    get: {
      summary: 'A QR code (SVG) of the verification URL, to print on the guarantee',
      tags: ['Public verification'],
      requestParams: { path: idParam },
      responses: {
        200: { description: 'The QR code.', content: { 'image/svg+xml': { schema: z.string() } } },
        404: errorResponse('No such guarantee in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/api/v2/guarantees/{id}/verification.png': {
    get: {
      summary: 'A QR code (PNG, 8 pixels a module) of the verification URL',
      tags: ['Public verification'],
      requestParams: { path: idParam },
      responses: {
        200: { description: 'The QR code.', content: { 'image/png': { schema: z.string() } } },
        404: errorResponse('No such guarantee in this organization.'),
        ...commonErrors,
      },
    },
  },
  '/healthz': { get: { summary: 'Liveness', tags: ['Operations'], security: [], responses: { 200: empty('The process is up.') } } },
  '/readyz': {
    get: {
      summary: 'Readiness: the database answers',
      description:
        'Also tells, without deciding readiness, whether the bucket keeps attached documents under S3 Object Lock: `documents.objectLock` is `enabled`, `absent` (documents are then not protected against deletion, docs/operations.md "Records") or `unknown` (the store has not answered yet).',
      tags: ['Operations'],
      security: [],
      responses: { 200: empty('Ready.'), 503: empty('The database does not answer.') },
    },
  },
  '/metrics': {
    get: {
      summary: 'Prometheus metrics (Bearer METRICS_TOKEN when set)',
      tags: ['Operations'],
      security: [],
      responses: { 200: empty('Metrics in the Prometheus text format.'), 401: empty('Missing or wrong token.') },
    },
  },
};

/**
 * Every operation's operationId: stable names that generated clients use as method names
 * (changing one breaks them). A path and method of the document missing here is an error when
 * the document is built, and so is a name given twice.
 */
const OPERATION_IDS: Record<string, string> = {
  'post /api/v1/presigned-url': 'presignUploadV1',
  'post /api/v2/presigned-url': 'presignUploadV2',
  'get /api/v2/file-status/{uuid}': 'getFileStatus',
  'get /api/v2/files/{uuid}': 'getFile',
  'get /api/v1/guarantees': 'listGuaranteesV1',
  'post /api/v1/guarantees': 'createGuaranteeV1',
  'get /api/v1/guarantees/{id}': 'getGuaranteeV1',
  'get /api/v2/guarantees': 'listGuaranteesV2',
  'post /api/v2/guarantees': 'createGuaranteeV2',
  'get /api/v2/guarantees/{id}': 'getGuaranteeV2',
  'get /api/v2/guarantees/{id}/proof': 'getGuaranteeProof',
  'post /api/v2/guarantees/{id}/amendments': 'amendGuarantee',
  'get /api/v2/guarantees/{id}/amendments': 'listGuaranteeAmendments',
  'get /api/v2/guarantees/{id}/state': 'getGuaranteeState',
  'get /api/v2/guarantees/{id}/amendments/{seq}/proof': 'getAmendmentProof',
  'get /api/v2/audit': 'getAuditTrail',
  'get /api/v1/webhooks': 'listWebhooks',
  'post /api/v1/webhooks': 'registerWebhook',
  'get /api/v1/webhooks/{id}': 'getWebhook',
  'delete /api/v1/webhooks/{id}': 'deleteWebhook',
  'post /api/v1/webhooks/{id}/rotate-secret': 'rotateWebhookSecret',
  'post /api/v1/webhooks/{id}/enable': 'enableWebhook',
  'get /api/v1/webhooks/{id}/attempts': 'listWebhookAttempts',
  'post /api/v1/webhooks/{id}/replay': 'replayWebhookEvents',
  'post /api/public/v1/verifications': 'verifyGuarantee',
  'post /api/authority/v1/guarantees': 'takeChargeOfGuarantee',
  'get /api/authority/v1/guarantees': 'listAuthorityGuarantees',
  'get /api/authority/v1/guarantees/{id}': 'getAuthorityGuarantee',
  'post /api/authority/v1/guarantees/{id}/amendments': 'recordAuthorityAct',
  'post /api/authority/v1/presigned-url': 'presignAuthorityUpload',
  'get /api/authority/v1/file-status/{uuid}': 'getAuthorityFileStatus',
  'get /.well-known/jwks.json': 'getReceiptKeys',
  'get /verify': 'getVerifyPage',
  'get /log/checkpoint': 'getLogCheckpoint',
  'get /log/key': 'getLogKey',
  'get /log/tile/{path}': 'getLogTile',
  'post /add-checkpoint': 'witnessAddCheckpoint',
  'get /authority': 'getAuthorityPages',
  'get /api/v2/guarantees/{id}/verification': 'getGuaranteeVerification',
  'get /api/v2/guarantees/{id}/verification.svg': 'getGuaranteeVerificationQrSvg',
  'get /api/v2/guarantees/{id}/verification.png': 'getGuaranteeVerificationQrPng',
  'get /healthz': 'getHealth',
  'get /readyz': 'getReadiness',
  'get /metrics': 'getMetrics',
};

function withOperationIds(all: ZodOpenApiPathsObject): ZodOpenApiPathsObject {
  const used = new Set<string>();
  return Object.fromEntries(
    Object.entries(all).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([method, operation]) => {
          // A path item's servers (the witness's own address) are not an operation.
          if (method === 'servers') return [method, operation];
          const id = OPERATION_IDS[`${method} ${path}`];
          if (!id || used.has(id))
            throw new Error(`OpenAPI: ${method.toUpperCase()} ${path} has ${id ? `the operationId ${id} of another operation` : 'no operationId'}`);
          used.add(id);
          return [method, { ...(operation as ZodOpenApiOperationObject), operationId: id }];
        }),
      ),
    ]),
  );
}

/** The document; `baseUrl` (PUBLIC_BASE_URL) is its server, else the origin it is read from. */
export function buildOpenApiDocument(baseUrl?: string): ReturnType<typeof createDocument> {
  return createDocument({
    openapi: '3.1.0',
    servers: [{ url: baseUrl ?? '/', description: baseUrl ? 'This registry.' : 'The origin this document was read from.' }],
    info: {
      title: 'Guarantee Registry Service',
      version: '1.0.0',
      description:
        "Registry of guarantees (fideiussioni, cauzioni) for Italian public tenders and contracts, with their signed documents. Every /api path requires an API key, except /api/public/ (contracting authorities' verifications).",
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        bearer: { type: 'http', scheme: 'bearer', description: 'The same API key as a Bearer token.' },
        authorityKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: "A contracting authority's API key (an organization of kind authority): it reaches /api/authority/v1/ and the webhooks endpoints only.",
        },
        authorityBearer: { type: 'http', scheme: 'bearer', description: "An authority's API key as a Bearer token." },
      },
    },
    security: [{ apiKey: [] }, { bearer: [] }],
    paths: withOperationIds(paths),
  });
}
