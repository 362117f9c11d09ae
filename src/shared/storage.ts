// The S3-compatible store: one client per process, configured for AWS or for a compatible
// endpoint (radosgw here), and the presigned POST that lets a client upload one object.
import {
  CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutBucketCorsCommand, S3Client, S3ServiceException,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import type { Config } from '../../config/index.js';

export interface Storage {
  client: S3Client;
  bucket: string;
  /** A form upload of exactly `key`, between 1 byte and `maxBytes`, valid for `ttlSeconds`. */
  presignUpload(key: string, maxBytes: number, ttlSeconds: number): Promise<{ url: string; fields: Record<string, string> }>;
  /** Lets browsers on `origins` POST uploads to the bucket (replaces its CORS rules; none when empty). */
  allowBrowserUploads(origins: readonly string[]): Promise<void>;
  /** The object's current version, or undefined when there is none. */
  head(key: string): Promise<ObjectVersion | undefined>;
  /** Streams the object, only if it is still the version `etag` (else PreconditionFailed). */
  read(key: string, etag?: string): Promise<Readable>;
  /** Copies `from` to `to` only if `from` is still the version `etag`; false when it changed or vanished. */
  copyIfUnchanged(from: string, to: string, etag: string): Promise<boolean>;
  remove(key: string): Promise<void>;
}

export interface ObjectVersion {
  /** Without quotes. */
  etag: string;
}

/** The store's answer for a missing object, or for a condition (If-Match) that failed. */
export function isMissing(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.$metadata.httpStatusCode === 404 || err.name === 'NoSuchKey' || err.name === 'NotFound');
}
export function isChanged(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.$metadata.httpStatusCode === 412 || err.name === 'PreconditionFailed');
}

const unquote = (etag: string | undefined) => (etag ?? '').replace(/^"|"$/g, '');

type StoreConfig = Pick<Config, 'S3_ENDPOINT' | 'S3_REGION' | 'S3_BUCKET' | 'AWS_ACCESS_KEY_ID' | 'AWS_SECRET_ACCESS_KEY'>;

/** Region, endpoint and credentials of any AWS SDK client that talks to the store (S3, or radosgw's SNS topics). */
export function storeClientSettings(config: Omit<StoreConfig, 'S3_BUCKET'>) {
  return {
    region: config.S3_REGION,
    ...(config.S3_ENDPOINT && { endpoint: config.S3_ENDPOINT }),
    ...(config.AWS_ACCESS_KEY_ID && config.AWS_SECRET_ACCESS_KEY && {
      credentials: { accessKeyId: config.AWS_ACCESS_KEY_ID, secretAccessKey: config.AWS_SECRET_ACCESS_KEY },
    }),
  };
}

export function createStorage(config: StoreConfig): Storage {
  const client = new S3Client({
    ...storeClientSettings(config),
    ...(config.S3_ENDPOINT && { forcePathStyle: true }),
    // radosgw (and other compatible stores) refuse the SDK's default streaming checksums.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    client,
    bucket: config.S3_BUCKET,
    async presignUpload(key, maxBytes, ttlSeconds) {
      // createPresignedPost binds the key itself (a `key` condition); signing is local, no request.
      const post = await createPresignedPost(client, {
        Bucket: config.S3_BUCKET,
        Key: key,
        Conditions: [['content-length-range', 1, maxBytes]],
        Expires: ttlSeconds,
      });
      return { url: post.url, fields: post.fields };
    },
    async allowBrowserUploads(origins) {
      await client.send(new PutBucketCorsCommand({
        Bucket: config.S3_BUCKET,
        CORSConfiguration: {
          CORSRules: origins.length
            ? [{ AllowedOrigins: [...origins], AllowedMethods: ['POST'], AllowedHeaders: ['*'], ExposeHeaders: ['ETag', 'Location'], MaxAgeSeconds: 3600 }]
            : [{ AllowedOrigins: ['https://no-browser-uploads.invalid'], AllowedMethods: ['POST'] }],
        },
      }));
    },
    async head(key) {
      try {
        const out = await client.send(new HeadObjectCommand({ Bucket: config.S3_BUCKET, Key: key }));
        return { etag: unquote(out.ETag) };
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
    async read(key, etag) {
      const out = await client.send(new GetObjectCommand({ Bucket: config.S3_BUCKET, Key: key, ...(etag && { IfMatch: `"${etag}"` }) }));
      return out.Body as Readable;
    },
    async copyIfUnchanged(from, to, etag) {
      const command = new CopyObjectCommand({
        Bucket: config.S3_BUCKET, Key: to, CopySource: `${config.S3_BUCKET}/${encodeURIComponent(from)}`, CopySourceIfMatch: `"${etag}"`,
      });
      // radosgw 16 ignores x-amz-copy-source-if-match and honours only the legacy
      // x-amz-copy-if-match: a compatible endpoint gets both.
      if (config.S3_ENDPOINT) {
        command.middlewareStack.add((next) => async (args) => {
          const request = args.request as { headers?: Record<string, string> };
          if (request.headers) request.headers['x-amz-copy-if-match'] = `"${etag}"`;
          return next(args);
        }, { step: 'build', name: 'legacyCopyIfMatch' });
      }
      try {
        const out = await client.send(command);
        // And whatever the store did with the condition, the copy must be the version judged.
        if (unquote(out.CopyObjectResult?.ETag) !== etag) {
          await client.send(new DeleteObjectCommand({ Bucket: config.S3_BUCKET, Key: to }));
          return false;
        }
        return true;
      } catch (err) {
        if (isChanged(err) || isMissing(err)) return false;
        throw err;
      }
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: config.S3_BUCKET, Key: key }));
    },
  };
}
