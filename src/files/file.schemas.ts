// Request and response schemas of the presigned-URL endpoints (seed 6 and 7).
import { z } from 'zod';
import { text } from '../shared/validation.js';

const fileType = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(40, 'must be at most 40 characters')
  .meta({ description: 'File extension, with or without the leading dot, case-insensitive: pdf, .PDF, pdf.p7m...', example: 'pdf.p7m' });

const fileName = text().min(1, 'must not be empty').optional()
  .meta({ description: 'The file\'s original name: the default of docs[].originalFileName when the file is attached to a guarantee.' });

export const presignV1 = z.strictObject({ fileType, fileName }).meta({ id: 'PresignRequestV1' });

export const presignV2 = z.strictObject({
  fileType,
  fileName,
  isDocumentPublic: z.boolean({ error: 'must be a boolean' }).optional()
    .meta({ description: 'A public document is also checked for a .p7m (CAdES) signature.' }),
}).meta({ id: 'PresignRequestV2' });

export const presignResult = z.object({
  presignedUrl: z.string().meta({ description: 'The URL of the upload form (S3 presigned POST).' }),
  fields: z.record(z.string(), z.unknown()).meta({ description: 'Form fields to send first, in any order; the file goes last, as the field `file`.' }),
  fileType: z.string().meta({ description: 'fileType as the client sent it.' }),
  key: z.string().meta({ description: 'The object key, `<fileUuid>.<ext>`: equal to fields.key; use it as docs[].key.' }),
}).meta({ id: 'PresignResult' });

export type PresignV1 = z.output<typeof presignV1>;
export type PresignV2 = z.output<typeof presignV2>;
export type PresignResult = z.infer<typeof presignResult>;
