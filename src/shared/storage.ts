// The S3-compatible store: one client per process, configured for AWS or for a compatible
// endpoint (radosgw here), and the presigned POST that lets a client upload one object.
import { PutBucketCorsCommand, S3Client } from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import type { Config } from '../../config/index.js';

export interface Storage {
  client: S3Client;
  bucket: string;
  /** A form upload of exactly `key`, between 1 byte and `maxBytes`, valid for `ttlSeconds`. */
  presignUpload(key: string, maxBytes: number, ttlSeconds: number): Promise<{ url: string; fields: Record<string, string> }>;
  /** Lets browsers on `origins` POST uploads to the bucket (replaces its CORS rules; none when empty). */
  allowBrowserUploads(origins: readonly string[]): Promise<void>;
}

export function createStorage(config: Pick<Config, 'S3_ENDPOINT' | 'S3_REGION' | 'S3_BUCKET' | 'AWS_ACCESS_KEY_ID' | 'AWS_SECRET_ACCESS_KEY'>): Storage {
  const client = new S3Client({
    region: config.S3_REGION,
    ...(config.S3_ENDPOINT && { endpoint: config.S3_ENDPOINT, forcePathStyle: true }),
    ...(config.AWS_ACCESS_KEY_ID && config.AWS_SECRET_ACCESS_KEY && {
      credentials: { accessKeyId: config.AWS_ACCESS_KEY_ID, secretAccessKey: config.AWS_SECRET_ACCESS_KEY },
    }),
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
  };
}
