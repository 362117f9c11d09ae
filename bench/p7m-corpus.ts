// `npm run bench -- p7m-corpus <dir>...`
//
// Not a speed figure: how the verifier's verdicts compare with OpenSSL's on a corpus of real
// envelopes (every file under the directories, recursively: DSS's test resources, a signing
// tool's output, an archive of e-invoices). For each file, ours (`verifyP7m`, no trust store,
// certificates judged at the signing time) against `openssl cms -verify -noverify -binary`
// (the signatures only: no chain, no validity dates, no timestamps, no counter-signatures, as
// OpenSSL does not look at them), DER first, then PEM/S/MIME. Prints the four counts and every
// file where the two disagree, with our reason or OpenSSL's error; appends them to
// bench/results/p7m-corpus.md. Files are read, never kept.
import { appendResult } from './support.js';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isPdf } from '../src/files/p7m/pades.js';
import { verifyP7m, type SignatureVerdict } from '../src/files/p7m/p7m.verifier.js';

function filesUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    });
}

function openssl(path: string): { ok: boolean; error: string } {
  let error = '';
  for (const inform of ['DER', 'PEM', 'SMIME']) {
    const run = spawnSync('openssl', ['cms', '-verify', '-noverify', '-binary', '-inform', inform, '-in', path, '-out', '/dev/null'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (run.status === 0) return { ok: true, error: '' };
    if (inform === 'DER')
      error =
        run.stderr
          .split('\n')
          .find((l) => /error|fail/i.test(l))
          ?.replace(/^[0-9A-F]+:error:[0-9A-F]+:/, '')
          .slice(0, 120) ?? `exit ${run.status}`;
  }
  return { ok: false, error };
}

interface PdfTally {
  files: number;
  signed: number;
  /** Reason class → files. */
  reasons: Map<string, string[]>;
  /** Files with an update after a signature, and those whose every signature stayed intact. */
  analysed: number;
  intact: number;
  /** Why not intact → files. */
  notIntact: Map<string, string[]>;
}

/** A reason without its numbers, names and dates: what kind of reason it is. */
const reasonClass = (reason: string): string =>
  reason
    .replace(/PDF signature \d+: /, '')
    .replace(/(level \d+ )?signer \d+( counter-signature \d+)?: /, '')
    .replace(/ \(.*$/, '')
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\d+/g, 'N')
    .slice(0, 110);

function tallyPdf(t: PdfTally, name: string, v: SignatureVerdict): void {
  t.files++;
  if (v.outcome === 'signed') t.signed++;
  else {
    const k = reasonClass(v.reason ?? '');
    t.reasons.set(k, [...(t.reasons.get(k) ?? []), name]);
  }
  const sigs = v.pdf?.signatures ?? [];
  if (sigs.length > 1 || sigs.some((s) => !s.coversWholeFile)) {
    t.analysed++;
    const broken = sigs.find((s) => !s.intact);
    if (!broken) t.intact++;
    else {
      const k = reasonClass(broken.notIntactBecause ?? '');
      t.notIntact.set(k, [...(t.notIntact.get(k) ?? []), name]);
    }
  }
}

function pdfLines(t: PdfTally): string[] {
  const sorted = (m: Map<string, string[]>): string[] =>
    [...m].sort((a, b) => b[1].length - a[1].length).map(([k, files]) => `  ${files.length}\t${k}${files.length <= 3 ? `  (${files.join(', ')})` : ''}`);
  return [
    `${t.files} PDFs: ${t.signed} Signed; not Signed, by reason:`,
    ...sorted(t.reasons),
    `modification analysis: ${t.analysed} PDFs with an update after a signature, ${t.intact} with every signature intact; not intact, by reason:`,
    ...sorted(t.notIntact),
  ];
}

/**
 * What DSS's own tests say of each PDF they validate, read from their Java sources (a checkout
 * of https://github.com/esig/dss, its dss-pades/src/test/java): a test class that names a file
 * under validation/ and asserts TOTAL_FAILED, a signature not valid at B level
 * (isBLevelTechnicallyValid, isSignatureIntact or isSignatureValid false), or modifications
 * DSS counts against it (undefined changes, pages added or removed, overlapping annotations)
 * says "not valid"; otherwise DSS's defaults assert B level valid: "valid". A class's verdict
 * goes to every file it names. A heuristic, and said so where the figures are.
 */
function dssVerdicts(javaDir: string): Map<string, 'valid' | 'not valid'> {
  const verdicts = new Map<string, 'valid' | 'not valid'>();
  for (const path of filesUnder(javaDir).filter((p) => p.endsWith('.java'))) {
    const source = readFileSync(path, 'utf8');
    const files = [...source.matchAll(/"(?:\/validation\/|src\/test\/resources\/validation\/)([^"]+\.pdf)"/g)].map((m) => m[1]!);
    if (files.length === 0) continue;
    const notValid =
      /Indication\.TOTAL_FAILED/.test(source) ||
      /assertFalse\([^;]*\.(isBLevelTechnicallyValid|isSignatureIntact|isSignatureValid)\(/.test(source) ||
      /assertFalse\(Utils\.isCollectionEmpty\([^;]*(getPdfUndefinedChanges|getPdfPageDifferenceConcernedPages|getPdfAnnotationsOverlapConcernedPages)\(\)/.test(
        source,
      ) ||
      /assertTrue\(Utils\.isCollectionNotEmpty\([^;]*(getPdfUndefinedChanges|getPdfPageDifferenceConcernedPages|getPdfAnnotationsOverlapConcernedPages)\(\)/.test(
        source,
      ) ||
      /assertEquals\([1-9]\d*, [^;]*(getPdfUndefinedChanges|getPdfPageDifferenceConcernedPages|getPdfAnnotationsOverlapConcernedPages)\(\)\.size\(\)/.test(
        source,
      );
    for (const f of files) if (!verdicts.has(f) || notValid) verdicts.set(f, notValid ? 'not valid' : 'valid');
  }
  return verdicts;
}

/**
 * Our verdict at DSS's B level: every signer's digest and signature verify, nothing but its
 * certificate's time or chain fails, and every PDF signature is intact (whatever the time of
 * the check does to an expired certificate, which DSS's B level does not look at).
 */
function ourBLevel(v: SignatureVerdict): boolean {
  if (v.outcome === 'signed') return true;
  const timeOrChain = (p: string): boolean => /^(the certificate (is|was) not valid|chain not trusted)/.test(p);
  return (
    v.signers.length > 0 &&
    v.signers.every((s) => s.digestMatches && s.signatureValid && s.problems.every(timeOrChain)) &&
    (v.pdf?.signatures ?? []).every((s) => s.intact) &&
    (v.pdf?.signatures.length ?? 0) > 0
  );
}

export async function benchP7mCorpus(argv: string[]): Promise<void> {
  const dssAt = argv.indexOf('--dss');
  const dss = dssAt >= 0 ? dssVerdicts(argv.splice(dssAt, 2)[1] ?? '') : undefined;
  if (argv.length === 0 || argv.some((a) => a.startsWith('--'))) throw new Error('usage: npm run bench -- p7m-corpus <dir>... [--dss <DSS checkout>]');
  const against = { agree: 0, weValidTheyNot: [] as string[], theyValidWeNot: [] as string[] };
  const counts = { both: 0, oursOnly: 0, opensslOnly: 0, neither: 0 };
  const disagreements: string[] = [];
  const pdfs: PdfTally = { files: 0, signed: 0, reasons: new Map(), analysed: 0, intact: 0, notIntact: new Map() };
  for (const dir of argv) {
    for (const path of filesUnder(dir)) {
      const bytes = readFileSync(path);
      // PDFs: OpenSSL cannot read them; our verdicts, by reason, and the modification analysis.
      if (isPdf(bytes)) {
        const v = verifyP7m(bytes);
        tallyPdf(pdfs, relative(dir, path), v);
        const theirs = dss?.get(path.slice(path.indexOf('/validation/') + '/validation/'.length));
        if (theirs && path.includes('/validation/')) {
          const ours = ourBLevel(v);
          if (ours === (theirs === 'valid')) against.agree++;
          else (ours ? against.weValidTheyNot : against.theyValidWeNot).push(`${relative(dir, path)}: ${v.reason ?? 'signed'}`);
        }
        await new Promise((r) => setImmediate(r));
        continue;
      }
      const ours = verifyP7m(bytes);
      const theirs = openssl(path);
      const signed = ours.outcome === 'signed';
      if (signed && theirs.ok) counts.both++;
      else if (signed) counts.oursOnly++;
      else if (theirs.ok) counts.opensslOnly++;
      else counts.neither++;
      if (signed !== theirs.ok)
        disagreements.push(`${signed ? 'only ours signed:   ' : 'only OpenSSL signed:'} ${relative(dir, path)}: ${signed ? theirs.error : ours.reason}`);
      await new Promise((r) => setImmediate(r));
    }
  }
  const total = counts.both + counts.oursOnly + counts.opensslOnly + counts.neither;
  const lines = [
    ...(total > 0
      ? [
          `${total} files: both signed ${counts.both}, only ours ${counts.oursOnly}, only OpenSSL ${counts.opensslOnly}, neither ${counts.neither}`,
          ...disagreements,
        ]
      : []),
    ...(pdfs.files > 0 ? pdfLines(pdfs) : []),
    ...(dss
      ? [
          `against DSS's tests (B level: signatures intact and valid, certificate times aside; ${dss.size} files its tests validate): agree on ${against.agree}, ours valid and DSS's not ${against.weValidTheyNot.length}, DSS's valid and ours not ${against.theyValidWeNot.length}`,
          ...against.weValidTheyNot.map((f) => `  ours valid, DSS's not: ${f}`),
          ...against.theyValidWeNot.map((f) => `  DSS's valid, ours not: ${f}`),
        ]
      : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  appendResult(
    'p7m-corpus',
    `\n### p7m-corpus, ${new Date().toISOString()}\n\nNode ${process.version}, ${argv.join(', ')}; OpenSSL ${spawnSync('openssl', ['version'], { encoding: 'utf8' }).stdout.trim()}.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
}
