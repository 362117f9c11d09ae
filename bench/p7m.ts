// `npm run bench -- p7m [--seconds S] [--rounds N]`
//
// Verifications per second of a 1 MB .p7m (RSA 2048, SHA-256, openssl cms -sign -binary
// -nodetach, made at run time) by the service's verifier, against a raw baseline in the same
// run: node:crypto hashing the same content and verifying the same signature over the same
// signed attributes, nothing else. Alternating rounds; also the verifier through the worker-
// thread pool the signature worker uses. Appends the figures, dated, to bench/README.md.
import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { verifyP7m } from '../src/files/p7m/p7m.verifier.js';
import { createVerifyPool } from '../src/files/signature.pool.js';
import { log } from './support.js';

interface Options { seconds: number; rounds: number }

function options(argv: string[]): Options {
  const o: Options = { seconds: 3, rounds: 3 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--seconds') o.seconds = Number(argv[++i]);
    else if (argv[i] === '--rounds') o.rounds = Number(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

/** The signed attributes as signed (re-tagged as a SET) and the signature value, read once with forge. */
function rawParts(envelope: Buffer): { signedAttrs: Buffer; signature: Buffer } {
  // @types/node-forge types the options as a boolean (strict); forge takes an object.
  const fromDer = forge.asn1.fromDer as unknown as (bytes: forge.util.ByteStringBuffer, o: object) => forge.asn1.Asn1;
  const root = fromDer(forge.util.createBuffer(envelope.toString('binary')), { strict: true, decodeBitStrings: false });
  const children = (n: forge.asn1.Asn1) => n.value as forge.asn1.Asn1[];
  const signedData = children(children(children(root)[1] as forge.asn1.Asn1)[0] as forge.asn1.Asn1);
  const signerInfo = children(signedData[signedData.length - 1] as forge.asn1.Asn1)[0] as forge.asn1.Asn1;
  const parts = children(signerInfo);
  const attrs = parts.find((p) => (p.tagClass as number) === (forge.asn1.Class.CONTEXT_SPECIFIC as number) && (p.type as number) === 0) as forge.asn1.Asn1;
  const signedAttrs = Buffer.from(forge.asn1.toDer(attrs).getBytes(), 'binary');
  signedAttrs[0] = 0x31;
  const signature = Buffer.from(parts[parts.length - 1]?.value as string, 'binary');
  return { signedAttrs, signature };
}

async function rate(seconds: number, work: () => unknown): Promise<number> {
  let n = 0;
  const until = performance.now() + seconds * 1000;
  const t0 = performance.now();
  while (performance.now() < until) {
    await work();
    n += 1;
  }
  return n / ((performance.now() - t0) / 1000);
}

export async function benchP7m(argv: string[]): Promise<void> {
  const opts = options(argv);
  const dir = mkdtempSync(join(tmpdir(), 'p7m-bench-'));
  try {
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '30', '-subj', '/CN=Bench Signer');
    const content = randomBytes(1024 * 1024);
    writeFileSync(join(dir, 'doc.pdf'), content);
    ssl('cms', '-sign', '-binary', '-nodetach', '-md', 'sha256', '-in', 'doc.pdf', '-signer', 'cert.pem', '-inkey', 'key.pem', '-outform', 'DER', '-out', 'doc.pdf.p7m');
    const envelope = readFileSync(join(dir, 'doc.pdf.p7m'));
    const key = createPublicKey(readFileSync(join(dir, 'cert.pem')));
    const { signedAttrs, signature } = rawParts(envelope);
    const raw = () => {
      createHash('sha256').update(content).digest();
      if (!verify('sha256', signedAttrs, key, signature)) throw new Error('raw verify failed');
    };
    if (verifyP7m(envelope).outcome !== 'signed') throw new Error('the bench envelope does not verify');
    raw();
    const pool = createVerifyPool({ threads: 1 });
    try {
      await pool.verify(Buffer.from(envelope)); // start the thread
      const figures = { app: 0, raw: 0, pool: 0 };
      for (let r = 0; r < opts.rounds; r++) {
        figures.app += await rate(opts.seconds, () => verifyP7m(envelope));
        figures.raw += await rate(opts.seconds, raw);
        // A fresh buffer each time, as the signature worker has one fresh from the store; it is moved to the thread.
        figures.pool += await rate(opts.seconds, () => pool.verify(Buffer.from(envelope)));
        log(`round ${r + 1}/${opts.rounds} done`);
      }
      const [app, base, viaPool] = [figures.app / opts.rounds, figures.raw / opts.rounds, figures.pool / opts.rounds];
      const lines = [
        `1 MB envelope (${envelope.length} bytes, RSA 2048, SHA-256): verifier ${app.toFixed(0)} verifications/s | raw hash + verify ${base.toFixed(0)}/s | verifier/raw ${(app / base).toFixed(2)}`,
        `through the worker-thread pool (1 thread, one at a time, a fresh buffer moved to the thread): ${viaPool.toFixed(0)} verifications/s (${(viaPool / base).toFixed(2)} of raw)`,
      ];
      for (const l of lines) process.stdout.write(`${l}\n`);
      appendFileSync('bench/README.md', `\n### p7m, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, ${opts.rounds} alternating rounds of ${opts.seconds} s.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`);
    } finally {
      await pool.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
