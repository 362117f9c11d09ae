// `npm run bench -- p7m [--seconds S] [--rounds N]`
//
// Verifications per second of a 1 MB .p7m (RSA 2048, SHA-256, openssl cms -sign -binary
// -nodetach, made at run time) by the service's verifier, against a raw baseline in the same
// run: node:crypto hashing the same content and verifying the same signature over the same
// signed attributes, nothing else. Alternating rounds; also the verifier through the worker-
// thread pool the signature worker uses. Then the same comparison for a 5 MB signed PDF (the
// raw baseline hashes its two ByteRange ranges) and for a CAdES-LTA-shaped envelope: the 1 MB
// .p7m with a 3 MB CRL in its crls and in a revocation-values attribute and an archive
// timestamp of 300,000 nodes (the raw baseline ignores all of it, as it may).
// Appends the figures, dated, to bench/results/p7m.md.
import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { verifyP7m } from '../src/files/p7m/p7m.verifier.js';
import { createVerifyPool } from '../src/files/signature.pool.js';
import { walkTlv } from '../src/files/p7m/p7m.asn1.js';
import { pdfSignatures } from '../src/files/p7m/pades.js';
import { OIDS, attribute, bulk, encode, parse, sequence, signedData, signerInfo, tagged } from '../test/support/cms-rewrite.js';
import { plainPdf, signPdf } from '../test/support/pdf-signing.js';
import { log, appendResult } from './support.js';

interface Options {
  seconds: number;
  rounds: number;
}

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

/** The DER of a PDF's /Contents without its zero padding. */
function trimmedCms(cms: Buffer): Buffer {
  return cms.subarray(0, walkTlv(cms, { remaining: cms.length }));
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
    ssl(
      'cms',
      '-sign',
      '-binary',
      '-nodetach',
      '-md',
      'sha256',
      '-in',
      'doc.pdf',
      '-signer',
      'cert.pem',
      '-inkey',
      'key.pem',
      '-outform',
      'DER',
      '-out',
      'doc.pdf.p7m',
    );
    const envelope = readFileSync(join(dir, 'doc.pdf.p7m'));
    const key = createPublicKey(readFileSync(join(dir, 'cert.pem')));
    const { signedAttrs, signature } = rawParts(envelope);
    const raw = () => {
      createHash('sha256').update(content).digest();
      if (!verify('sha256', signedAttrs, key, signature)) throw new Error('raw verify failed');
    };
    if (verifyP7m(envelope).outcome !== 'signed') throw new Error('the bench envelope does not verify');
    raw();
    // A 5 MB PDF signed over its ByteRange (openssl cms, detached, CAdES attributes).
    const detached = (data: Buffer): Buffer => {
      writeFileSync(join(dir, 'ranges.bin'), data);
      // prettier-ignore
      ssl('cms', '-sign', '-binary', '-cades', '-md', 'sha256', '-in', 'ranges.bin', '-signer', 'cert.pem', '-inkey', 'key.pem', '-outform', 'DER', '-out', 'pdf.cms');
      return readFileSync(join(dir, 'pdf.cms'));
    };
    const pdf = signPdf(plainPdf('bench', 5 * 1024 * 1024), detached, { subFilter: 'ETSI.CAdES.detached' });
    const [pdfSignature] = pdfSignatures(pdf);
    if (!pdfSignature) throw new Error('the bench PDF has no signature');
    const pdfParts = rawParts(trimmedCms(pdfSignature.cms()));
    const rawPdf = () => {
      const h = createHash('sha256');
      for (const range of pdfSignature.signed) h.update(range);
      h.digest();
      if (!verify('sha256', pdfParts.signedAttrs, key, pdfParts.signature)) throw new Error('raw PDF verify failed');
    };
    // The same PDF signed twice more: three signatures, two revisions after the first, each
    // examined by the modification analysis. The raw baseline hashes each signature's ranges
    // and verifies each signature, and reads nothing else.
    const thrice = signPdf(signPdf(pdf, detached, { subFilter: 'ETSI.CAdES.detached' }), detached, { subFilter: 'ETSI.CAdES.detached' });
    const thriceParts = pdfSignatures(thrice).map((sig) => ({ sig, parts: rawParts(trimmedCms(sig.cms())) }));
    const rawThrice = () => {
      for (const { sig, parts } of thriceParts) {
        const h = createHash('sha256');
        for (const range of sig.signed) h.update(range);
        h.digest();
        if (!verify('sha256', parts.signedAttrs, key, parts.signature)) throw new Error('raw PDF verify failed');
      }
    };
    // The 1 MB envelope with what CAdES-LT/LTA add, unsigned.
    writeFileSync(join(dir, 'crl.cnf'), '[ca]\ndefault_ca = crl\n[crl]\ndatabase = index.txt\ndefault_md = sha256\ndefault_crl_days = 30\n');
    writeFileSync(
      join(dir, 'index.txt'),
      Array.from({ length: 150_000 }, (_, i) => `R\t301231235959Z\t240101000000Z\t${(0x100000 + i).toString(16).toUpperCase()}\tunknown\t/CN=R${i}\n`).join(''),
    );
    ssl('ca', '-gencrl', '-config', 'crl.cnf', '-cert', 'cert.pem', '-keyfile', 'key.pem', '-out', 'crl.pem');
    ssl('crl', '-in', 'crl.pem', '-outform', 'DER', '-out', 'crl.der');
    const crl = parse(readFileSync(join(dir, 'crl.der')));
    const lta = parse(envelope);
    const sd = signedData(lta);
    signerInfo(lta).unsignedAttributes = [
      attribute(OIDS.revocationValues, sequence(tagged(0, sequence(crl)))),
      attribute(OIDS.archiveTimestampV3, bulk(300_000)),
    ];
    sd.splice(sd.length - 1, 0, tagged(1, crl));
    const longTerm = encode(lta);
    for (const [name, bytes] of [
      ['PDF', pdf],
      ['PDF signed three times', thrice],
      ['long-term envelope', longTerm],
    ] as const) {
      const v = verifyP7m(bytes);
      if (v.outcome !== 'signed') throw new Error(`the bench ${name} does not verify: ${v.reason}`);
    }
    rawPdf();
    rawThrice();
    const pool = createVerifyPool({ threads: 1 });
    try {
      await pool.verify(Buffer.from(envelope)); // start the thread
      const figures = { app: 0, raw: 0, pool: 0, pdf: 0, rawPdf: 0, lta: 0, thrice: 0, rawThrice: 0 };
      for (let r = 0; r < opts.rounds; r++) {
        figures.app += await rate(opts.seconds, () => verifyP7m(envelope));
        figures.raw += await rate(opts.seconds, raw);
        // A fresh buffer each time, as the signature worker has one fresh from the store; it is moved to the thread.
        figures.pool += await rate(opts.seconds, () => pool.verify(Buffer.from(envelope)));
        figures.pdf += await rate(opts.seconds, () => verifyP7m(pdf));
        figures.rawPdf += await rate(opts.seconds, rawPdf);
        figures.lta += await rate(opts.seconds, () => verifyP7m(longTerm));
        figures.thrice += await rate(opts.seconds, () => verifyP7m(thrice));
        figures.rawThrice += await rate(opts.seconds, rawThrice);
        log(`round ${r + 1}/${opts.rounds} done`);
      }
      const per = (x: number) => x / opts.rounds;
      const [app, base, viaPool] = [per(figures.app), per(figures.raw), per(figures.pool)];
      const lines = [
        `1 MB envelope (${envelope.length} bytes, RSA 2048, SHA-256): verifier ${app.toFixed(0)} verifications/s | raw hash + verify ${base.toFixed(0)}/s | verifier/raw ${(app / base).toFixed(2)}`,
        `through the worker-thread pool (1 thread, one at a time, a fresh buffer moved to the thread): ${viaPool.toFixed(0)} verifications/s (${(viaPool / base).toFixed(2)} of raw)`,
        `5 MB signed PDF (${pdf.length} bytes, ETSI.CAdES.detached): verifier ${per(figures.pdf).toFixed(0)}/s | raw hash of the ranges + verify ${per(figures.rawPdf).toFixed(0)}/s | verifier/raw ${(figures.pdf / figures.rawPdf).toFixed(2)}`,
        `5 MB PDF signed three times (${thrice.length} bytes, two revisions after the first signature, each examined): verifier ${per(figures.thrice).toFixed(1)}/s | raw hash of each signature's ranges + 3 verifies ${per(figures.rawThrice).toFixed(1)}/s | verifier/raw ${(figures.thrice / figures.rawThrice).toFixed(2)}`,
        `long-term envelope (${longTerm.length} bytes: the 1 MB envelope, a 3 MB CRL twice, an archive timestamp): verifier ${per(figures.lta).toFixed(0)}/s | raw hash + verify (as above) ${base.toFixed(0)}/s | verifier/raw ${(figures.lta / figures.raw).toFixed(2)}`,
      ];
      for (const l of lines) process.stdout.write(`${l}\n`);
      appendResult(
        'p7m',
        `\n### p7m, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, ${opts.rounds} alternating rounds of ${opts.seconds} s.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
      );
    } finally {
      await pool.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
