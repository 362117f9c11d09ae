// `npm run bench -- store [--mb N] [--count N]`
//
// What each store operation of the uploads pipeline costs, in CPU of radosgw + ceph-osd and of
// the client (this process), on the bench profile's radosgw: N objects of M MB, two requests
// at a time, for PUT, HEAD, GET of that version (drained), ListObjectVersions (the scan's prune
// of other versions) and DeleteObject of a version. It explains the scan bench's gap to raw
// (see docs/benchmarks.md): the raw baseline makes one GET a file; the pipeline a HEAD, a GET and
// a list.
import { cpus } from 'node:os';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { parseConfig } from '../config/index.js';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { createStorage } from '../src/shared/storage.js';
import { cpuSeconds, processCpuSeconds, appendResult } from './support.js';

export async function benchStore(argv: string[]): Promise<void> {
  let mb = 1;
  let count = 200;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--mb') mb = Number(argv[++i]);
    else if (argv[i] === '--count') count = Number(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  const { env, started } = await up('bench', ['s3']);
  applyEnv(env, localAppEnv('bench'));
  const config = parseConfig(process.env);
  const storage = createStorage(config);
  const store = { store: (c: string) => (c.startsWith('radosgw ') || c.startsWith('ceph-osd ')) && c.includes('/.data/bench/') };
  const own = () => processCpuSeconds('self');
  const body = Buffer.alloc(mb * 1024 * 1024, 7);
  const prefix = `bench-store-${Date.now()}`;
  const keys = Array.from({ length: count }, (_, i) => `${prefix}/${i}.bin`);
  const versions = new Map<string, string>();
  const lines: string[] = [];
  const run = async (name: string, op: (key: string) => Promise<unknown>) => {
    const store0 = cpuSeconds(store).store ?? 0;
    const own0 = own();
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      [0, 1].map(async () => {
        while (next < keys.length) await op(keys[next++] as string);
      }),
    );
    const s = (performance.now() - t0) / 1000;
    const line = `${name.padEnd(7)} ${(count / s).toFixed(0).padStart(5)} ops/s  radosgw + ceph-osd ${((((cpuSeconds(store).store ?? 0) - store0) * 1000) / count).toFixed(1).padStart(5)} ms/op  client ${(((own() - own0) * 1000) / count).toFixed(1).padStart(5)} ms/op`;
    process.stdout.write(`${line}\n`);
    lines.push(line);
  };
  try {
    await run('put', (k) => storage.client.send(new PutObjectCommand({ Bucket: config.S3_BUCKET, Key: k, Body: body })));
    await run('head', async (k) => versions.set(k, (await storage.head(k))?.versionId ?? ''));
    await run('get', async (k) => {
      for await (const chunk of await storage.read(k, versions.get(k))) void chunk;
    });
    await run('list', (k) => storage.versions(k));
    await run('delete', (k) => storage.removeVersion(k, versions.get(k) ?? ''));
  } finally {
    storage.client.destroy();
  }
  appendResult(
    'store',
    `\n### store, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, ${count} objects of ${mb} MB, two requests at a time.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  if (started.length) await down('bench', started);
}
