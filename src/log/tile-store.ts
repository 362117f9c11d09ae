// Where the log's tiles and checkpoint are published: a bucket of their own (LOG_S3_BUCKET), at
// the paths tlog-tiles names (checkpoint, tile/...), with the HTTP headers a static host or a
// CDN serving the bucket as it is should send. Kept apart from the documents' bucket: no
// versioning or retention there, no upload events, and it can be made public as a whole.
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Config } from '../../config/index.js';
import { createStorage, isMissing } from '../shared/storage.js';

export interface TileStore {
  bucket: string;
  put(path: string, bytes: Uint8Array, kind: 'immutable' | 'checkpoint'): Promise<void>;
  /** The object's bytes, or undefined when there is none. */
  get(path: string): Promise<Uint8Array | undefined>;
}

/** Full and partial tiles never change once written (a partial tile's path names its width); the checkpoint does. */
export const CACHE = {
  immutable: 'public, max-age=31536000, immutable',
  checkpoint: 'no-cache',
} as const;

export function logBucketOf(config: Pick<Config, 'S3_BUCKET' | 'LOG_S3_BUCKET'>): string {
  return config.LOG_S3_BUCKET ?? `${config.S3_BUCKET}-log`;
}

export function createTileStore(config: Parameters<typeof createStorage>[0] & Pick<Config, 'LOG_S3_BUCKET'>): TileStore {
  const bucket = logBucketOf(config);
  const { client } = createStorage({ ...config, S3_BUCKET: bucket });
  return {
    bucket,
    async put(path, bytes, kind) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: path,
          Body: bytes,
          ContentLength: bytes.length,
          ContentType: kind === 'checkpoint' ? 'text/plain; charset=utf-8' : 'application/octet-stream',
          CacheControl: CACHE[kind],
        }),
      );
    },
    async get(path) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: path }));
        return out.Body ? new Uint8Array(await out.Body.transformToByteArray()) : new Uint8Array();
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
  };
}
