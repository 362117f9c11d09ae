// The S3-compatible store: one client per process, configured for AWS or for a compatible
// endpoint (radosgw here), and the presigned POST that lets a client upload one object. The
// bucket is versioned: a document is one object version, named by its VersionId, and reads
// name that version, so a later upload to the same key never changes what was judged. Every
// call is bounded in time (connect, then the whole request), so a store that hangs cannot
// wedge a worker's slots while BullMQ keeps renewing their locks.
import {
  DeleteObjectCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectLockConfigurationCommand,
  GetObjectRetentionCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  PutBucketCorsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectRetentionCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { Readable } from 'node:stream';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import type { Config } from '../../config/index.js';

export interface Storage {
  client: S3Client;
  bucket: string;
  /** A form upload of exactly `key`, between 1 byte and `maxBytes`, valid for `ttlSeconds`. */
  presignUpload(key: string, maxBytes: number, ttlSeconds: number): Promise<{ url: string; fields: Record<string, string> }>;
  /** Writes `body` as `key` (the pages' uploads, received by the service, go to the store as a client's would). */
  put(key: string, body: Buffer): Promise<void>;
  /** Lets browsers on `origins` POST uploads to the bucket (replaces its CORS rules; none when empty). */
  allowBrowserUploads(origins: readonly string[]): Promise<void>;
  /** Turns bucket versioning on (idempotent); `release` calls it. */
  enableVersioning(): Promise<void>;
  /** Whether the bucket keeps versions. */
  isVersioned(): Promise<boolean>;
  /** The object's current version, or undefined when there is none. */
  head(key: string): Promise<ObjectVersion | undefined>;
  /** Streams the object: exactly version `versionId` when given (else NoSuchVersion/NoSuchKey), the current one otherwise. */
  read(key: string, versionId?: string): Promise<Readable>;
  /** Every version (and delete marker) of exactly `key`. */
  versions(key: string): Promise<string[]>;
  /** Deletes one version of `key` for good (a missing one is no error). */
  removeVersion(key: string, versionId: string): Promise<void>;
  /** Whether the bucket has S3 Object Lock ('absent': created without it, or a store that has none). */
  objectLock(): Promise<'enabled' | 'absent'>;
  /**
   * Keeps version `versionId` of `key` in COMPLIANCE mode until `until`: no one, the bucket's
   * owner included, can delete it or shorten the date before then. Asking again with the same
   * date (a retry) changes nothing; a later one extends it.
   */
  retain(key: string, versionId: string, until: Date): Promise<void>;
  /** The version's retention, if it has one. */
  retention(key: string, versionId: string): Promise<{ mode: string; until: Date } | undefined>;
}

export interface ObjectVersion {
  /**
   * The version's id, as the store names it: `null` (S3's literal) for an object written before
   * the bucket's versioning was turned on, which names that version all the same.
   */
  versionId: string;
  size: number;
}

/** The store's answer for a missing object or object version. */
export function isMissing(err: unknown): boolean {
  return (
    err instanceof S3ServiceException &&
    (err.$metadata.httpStatusCode === 404 || err.name === 'NoSuchKey' || err.name === 'NotFound' || err.name === 'NoSuchVersion')
  );
}

type StoreConfig = Pick<Config, 'S3_ENDPOINT' | 'S3_REGION' | 'S3_BUCKET' | 'AWS_ACCESS_KEY_ID' | 'AWS_SECRET_ACCESS_KEY'> &
  Partial<Pick<Config, 'S3_CONNECT_TIMEOUT_MS' | 'S3_REQUEST_TIMEOUT_MS'>>;

/** Region, endpoint and credentials of any AWS SDK client that talks to the store (S3, or radosgw's SNS topics). */
export function storeClientSettings(config: Omit<StoreConfig, 'S3_BUCKET'>) {
  return {
    region: config.S3_REGION,
    ...(config.S3_ENDPOINT && { endpoint: config.S3_ENDPOINT }),
    ...(config.AWS_ACCESS_KEY_ID &&
      config.AWS_SECRET_ACCESS_KEY && {
        credentials: { accessKeyId: config.AWS_ACCESS_KEY_ID, secretAccessKey: config.AWS_SECRET_ACCESS_KEY },
      }),
  };
}

export function createStorage(config: StoreConfig): Storage {
  const connectMs = config.S3_CONNECT_TIMEOUT_MS ?? 5_000;
  const requestMs = config.S3_REQUEST_TIMEOUT_MS ?? 30_000;
  const client = new S3Client({
    ...storeClientSettings(config),
    ...(config.S3_ENDPOINT && { forcePathStyle: true }),
    // radosgw (and other compatible stores) refuse the SDK's default streaming checksums.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // Without these the SDK waits for ever on a store that accepts connections and never answers:
    // requestTimeout bounds the wait for the answer's headers, socketTimeout each silence while a
    // body streams (a long download that keeps moving is not cut).
    requestHandler: new NodeHttpHandler({
      connectionTimeout: connectMs,
      requestTimeout: requestMs,
      throwOnRequestTimeout: true,
      socketTimeout: requestMs,
    }),
  });
  const Bucket = config.S3_BUCKET;
  return {
    client,
    bucket: config.S3_BUCKET,
    async presignUpload(key, maxBytes, ttlSeconds) {
      // createPresignedPost binds the key itself (a `key` condition); signing is local, no request.
      const post = await createPresignedPost(client, {
        Bucket,
        Key: key,
        Conditions: [['content-length-range', 1, maxBytes]],
        Expires: ttlSeconds,
      });
      return { url: post.url, fields: post.fields };
    },
    async put(key, body) {
      await client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentLength: body.length }));
    },
    async allowBrowserUploads(origins) {
      await client.send(
        new PutBucketCorsCommand({
          Bucket,
          CORSConfiguration: {
            CORSRules: origins.length
              ? [{ AllowedOrigins: [...origins], AllowedMethods: ['POST'], AllowedHeaders: ['*'], ExposeHeaders: ['ETag', 'Location'], MaxAgeSeconds: 3600 }]
              : [{ AllowedOrigins: ['https://no-browser-uploads.invalid'], AllowedMethods: ['POST'] }],
          },
        }),
      );
    },
    async enableVersioning() {
      await client.send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    },
    async isVersioned() {
      return (await client.send(new GetBucketVersioningCommand({ Bucket }))).Status === 'Enabled';
    },
    async head(key) {
      try {
        const out = await client.send(new HeadObjectCommand({ Bucket, Key: key }));
        // No header: the object predates versioning (its version is S3's "null").
        return { versionId: out.VersionId || 'null', size: out.ContentLength ?? 0 };
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
    async read(key, versionId) {
      const out = await client.send(new GetObjectCommand({ Bucket, Key: key, ...(versionId && { VersionId: versionId }) }));
      return out.Body as Readable;
    },
    async versions(key) {
      const ids: string[] = [];
      let KeyMarker: string | undefined;
      let VersionIdMarker: string | undefined;
      do {
        const out = await client.send(new ListObjectVersionsCommand({ Bucket, Prefix: key, KeyMarker, VersionIdMarker, MaxKeys: 1000 }));
        for (const v of [...(out.Versions ?? []), ...(out.DeleteMarkers ?? [])]) {
          if (v.Key === key && v.VersionId) ids.push(v.VersionId);
        }
        [KeyMarker, VersionIdMarker] = out.IsTruncated ? [out.NextKeyMarker, out.NextVersionIdMarker] : [undefined, undefined];
      } while (KeyMarker);
      return ids;
    },
    async removeVersion(key, versionId) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: key, VersionId: versionId }));
    },
    async objectLock() {
      try {
        const out = await client.send(new GetObjectLockConfigurationCommand({ Bucket }));
        return out.ObjectLockConfiguration?.ObjectLockEnabled === 'Enabled' ? 'enabled' : 'absent';
      } catch (err) {
        // S3's answer for a bucket without it (and radosgw's); a store without the API at all says 501.
        if (
          err instanceof S3ServiceException &&
          (err.name === 'ObjectLockConfigurationNotFoundError' || err.$metadata.httpStatusCode === 404 || err.$metadata.httpStatusCode === 501)
        )
          return 'absent';
        throw err;
      }
    },
    async retain(key, versionId, until) {
      await client.send(new PutObjectRetentionCommand({ Bucket, Key: key, VersionId: versionId, Retention: { Mode: 'COMPLIANCE', RetainUntilDate: until } }));
    },
    async retention(key, versionId) {
      try {
        const out = await client.send(new GetObjectRetentionCommand({ Bucket, Key: key, VersionId: versionId }));
        return out.Retention?.Mode && out.Retention.RetainUntilDate ? { mode: out.Retention.Mode, until: out.Retention.RetainUntilDate } : undefined;
      } catch (err) {
        if (err instanceof S3ServiceException && (err.name === 'NoSuchObjectLockConfiguration' || err.$metadata.httpStatusCode === 404)) return undefined;
        throw err;
      }
    },
  };
}
