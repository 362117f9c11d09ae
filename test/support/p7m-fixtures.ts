// .p7m fixtures made with the openssl CLI in a temporary directory, once per test process
// (both p7m test files share them): nothing secret or expiring is committed.
import { execFileSync } from 'node:child_process';
import { constants, createHash, createPrivateKey, sign as nodeSign, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  OIDS,
  SignerInfo,
  algorithm,
  attribute,
  bulk,
  certificateNode,
  issuerAndSerial,
  children,
  counterSignature,
  encode,
  integer,
  octetString,
  oidNode,
  parse,
  rsaWithoutNull,
  sequence,
  set,
  signWith,
  signatureOf,
  signedData,
  signerInfo,
  sortedDer,
  tagged,
  type Asn1,
} from './cms-rewrite.js';
import { PdfRef, type PdfValue } from '../../src/files/p7m/pdf/pdf.objects.js';
import { appendUpdate, catalogAndPage, nextNumber, plainPdf, serialize, signPdf, withEntries, type SignOptions } from './pdf-signing.js';

const { asn1 } = forge;

export interface P7mFixtures {
  dir: string;
  /** The signed document; `marker` is a unique run of its bytes, for tampering. */
  doc: Buffer;
  marker: Buffer;
  rootPem: string;
  unrelatedPem: string;
  selfSignedPem: string;
  /** DER envelopes (BER for `stream`), all carrying the intermediate unless named otherwise. */
  der: {
    rsa: Buffer;
    ec: Buffer;
    pss: Buffer;
    pssMgf1Sha512: Buffer;
    pssKeyRsaEncryption: Buffer;
    stream: Buffer;
    nested: Buffer;
    nestedTamperedInner: Buffer;
    twoSigners: Buffer;
    keyid: Buffer;
    noattr: Buffer;
    cades: Buffer;
    sha1: Buffer;
    expired: Buffer;
    ecWithoutIntermediate: Buffer;
    detached: Buffer;
    selfSigned: Buffer;
    /** Signed by a certificate issued by an end-entity (CA:FALSE) certificate, which is in the envelope. */
    issuedByNonCa: Buffer;
    /** Signed by "Mario Rossi", an Italian qualified certificate: serialNumber TINIT-RSSMRA80A01H501U, QcCompliance and QcSSCD. */
    qualified: Buffer;
    /** The same with a QcType statement saying the certificate is for websites (QcType web), issued by the intermediate. */
    qualifiedWeb: Buffer;
  };
  /** Envelopes with the quirks of real ones (test/support/cms-rewrite.ts), built from the above on first use. */
  quirks: () => Quirks;
  /** `der.rsa` with counter-signatures (RFC 5652 §11.4) by the EC signer, built on first use. */
  counterSigned: () => CounterSigned;
  /** Envelopes with RFC 3161 signature timestamps by a test TSA (openssl ts), built on first use. */
  timestamped: () => Timestamped;
  /** An RFC 3161 TimeStampToken (DER) over `data` (imprint SHA-256 unless named), from the test TSA (chained to the root through the intermediate). */
  timestampToken: (data: Buffer, imprintHash?: string) => Buffer;
  /**
   * EdDSA signers in CMS (RFC 8419), which openssl 3.0 cannot make: `der.rsa` rebuilt around
   * an Ed25519 (SHA-512 digest) or Ed448 (SHAKE256, 512 bits) certificate under the
   * intermediate; `…NoAttributes` sign the content itself; `ed448ShakeLen` names its digest
   * id-shake256-len (512). Built on first use.
   */
  eddsa: () => Record<'ed25519' | 'ed448' | 'ed25519NoAttributes' | 'ed448ShakeLen', Buffer>;
  /** `.tsd` (RFC 5544) and `.m7m` (S/MIME bundle) containers of `der.rsa`, built on first use. */
  containers: () => Containers;
  /** Signed PDFs (PAdES), built on first use. */
  pdfs: () => SignedPdfs;
  /** A PDF of about `bytes` bytes signed by the RSA signer (ETSI.CAdES.detached). */
  signedPdf: (bytes: number) => Buffer;
  /** `pdf` signed once more (an incremental update) by `signer` ('rsa', 'ec', 'expired', ...), ETSI.CAdES.detached unless named. */
  pdfSignedBy: (pdf: Buffer, signer: string, opts?: Partial<SignOptions>) => Buffer;
  /**
   * A TimeStampToken over `data` (SHA-256 imprint) of the given genTime (GeneralizedTime, e.g.
   * 20200101120000Z), by a TSA valid 2019-2030, or ('tsa-expired') one valid 2019-01-01 to 2020-06-01.
   */
  timestampTokenAt: (data: Buffer, genTime: string, tsa?: 'tsa-2020' | 'tsa-expired') => Buffer;
  /** openssl's PEM output (`-----BEGIN CMS-----`) of `der.rsa`. */
  pem: string;
  /** Writes `bytes` into the fixture directory and returns the path (for cross-checks). */
  file(name: string, bytes: Buffer): string;
}

/** Each a DER envelope that DSS and openssl accept (or, for `duplicateMessageDigest`, refuse). */
export interface Quirks {
  /** Version 1 says issuerAndSerialNumber; the sid holds a subjectKeyIdentifier. */
  keyIdUnderVersion1: Buffer;
  /** Version 3 says subjectKeyIdentifier; the sid holds an issuerAndSerialNumber. */
  issuerSerialUnderVersion3: Buffer;
  /** The SignerInfo's issuer name in PrintableStrings; the certificate's in UTF8Strings. */
  issuerPrintableString: Buffer;
  /** The SignerInfo's issuer name with other case and spacing ("TEST", "test   intermediate"). */
  issuerCaseAndSpaces: Buffer;
  /** SignedData version 4 where its contents call for 1. */
  signedDataVersion: Buffer;
  /** Signed attributes sent in reverse (non-DER) order, the signature over them as sent. */
  unsortedSignedAsSent: Buffer;
  /** Signed attributes sent in reverse order, the signature over their DER (sorted) encoding. */
  unsortedSignedSorted: Buffer;
  /** Two content-timestamp signed attributes (legal: only three attributes must be single). */
  twoContentTimestamps: Buffer;
  /** Two messageDigest attributes: refused. */
  duplicateMessageDigest: Buffer;
  /** A 3 MB CRL in SignedData's crls and in a revocation-values unsigned attribute, and an archive timestamp of 300,000 nodes, as CAdES-LT/LTA carry. */
  longTerm: Buffer;
  /** RSA over SHA3-256 (openssl -md sha3-256). */
  sha3Rsa: Buffer;
  /** ECDSA with SHA3-256 (id-ecdsa-with-sha3-256). */
  sha3Ecdsa: Buffer;
  /** RSASSA-PSS with SHA-512 where the content digest is SHA-256. */
  pssOtherHash: Buffer;
  /** RSA PKCS#1 v1.5 whose DigestInfo has no NULL parameters. */
  digestInfoWithoutNull: Buffer;
  /**
   * `pssOtherHash` with a CMSAlgorithmProtection signed attribute (RFC 6211), re-signed: `same`
   * names the SignerInfo's algorithms; `explicitTrailer` the same with trailerField 1 written
   * out (the default); `otherTrailer` trailerField 2; `otherSalt` a salt length of 32.
   */
  pssProtected: Record<'same' | 'explicitTrailer' | 'otherTrailer' | 'otherSalt', Buffer>;
}

export interface CounterSigned {
  /** The RSA signer's signature counter-signed by the EC signer. */
  valid: Buffer;
  /** The counter-signature's messageDigest is of other bytes. */
  wrongDigest: Buffer;
  /** The counter-signature carries a contentType attribute (RFC 5652 §11.4 forbids it). */
  withContentType: Buffer;
  /** The EC counter-signature itself counter-signed by the RSA signer. */
  nested: Buffer;
}

export interface Timestamped {
  /** The RSA signer's signature with a timestamp over it. */
  valid: Buffer;
  /** A timestamp over other bytes than the signature. */
  otherImprint: Buffer;
  /** A token signed by a certificate without the timeStamping extended key usage (the EC signer's). */
  notTsa: Buffer;
  /** A token signed by a certificate whose timeStamping usage is not critical. */
  laxTsa: Buffer;
  /** A token signed by a certificate with timeStamping and codeSigning. */
  wideTsa: Buffer;
  /** A token signed by the TSA's certificate without naming it (no ESS signing-certificate attribute). */
  noEss: Buffer;
  /** Two valid timestamps over the signature (two TSAs, or one asked twice). */
  twoStamps: Buffer;
  /** signingTime claims 2019, before the certificate's validity; the timestamp's time is now. */
  claimedBeforeValidity: Buffer;
  /** The same without the timestamp. */
  claimedBeforeValidityUnstamped: Buffer;
  /**
   * Signed by "Expired Signer" (certificate valid 2020-01-01 to 2020-01-02, its key still at
   * hand) with signingTime 2020-01-01T12:00:00Z, no timestamp: a backdated signature.
   */
  backdated: Buffer;
  /** `backdated` with a signature timestamp of 2020-01-01T12:00:00Z by a TSA whose certificate was valid then. */
  backdatedStamped: Buffer;
}

export interface Containers {
  /** TimeStampedData of the .p7m with one timestamp over it. */
  tsd: Buffer;
  /** The same with a renewal timestamp over the first TimeStampAndCRL. */
  tsdRenewed: Buffer;
  /** Its timestamp is over other bytes. */
  tsdOtherData: Buffer;
  /** A timestamped PDF that is not signed. */
  tsdUnsigned: Buffer;
  /** The MIME bundle of the .p7m and a timestamp response over it. */
  m7m: Buffer;
  /** The response is over other bytes. */
  m7mOtherData: Buffer;
}

export interface SignedPdfs {
  /** No signature at all. */
  unsigned: Buffer;
  /** One ETSI.CAdES.detached signature by the RSA signer, covering the whole file. */
  signed: Buffer;
  /** The same with SubFilter adbe.pkcs7.detached, by the EC signer. */
  adbe: Buffer;
  /** `signed`, then signed again by the EC signer in an incremental update, as PAdES allows. */
  twoSignatures: Buffer;
  /** `signed`, then an incremental update nobody signed that adds a visible annotation over the text. */
  appended: Buffer;
  /** `appended`, then signed by the EC signer: the second signature covers the update, the first is not intact. */
  afterAnnotation: Buffer;
}

let cached: P7mFixtures | undefined;

/** Builds the fixtures on first use (about 1–2 s, mostly RSA key generation). */
export function p7mFixtures(): P7mFixtures {
  cached ??= build();
  return cached;
}

/** Flips every bit of the byte at `offset` (a copy). */
export function flipByte(bytes: Buffer, offset: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[offset] = copy[offset]! ^ 0xff;
  return copy;
}

function build(): P7mFixtures {
  const dir = mkdtempSync(join(tmpdir(), 'p7m-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const ssl = (...args: string[]): Buffer => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const read = (name: string): Buffer => readFileSync(join(dir, name));
  const write = (name: string, data: string | Buffer): void => writeFileSync(join(dir, name), data);

  write('ca.ext', 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n');
  write('leaf.ext', 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n');
  const caAddExt = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'root.key',
    '-out',
    'root.pem',
    '-days',
    '3650',
    '-subj',
    '/O=Test/CN=Test Root',
    ...caAddExt,
  );
  ssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'other.key',
    '-out',
    'other.pem',
    '-days',
    '3650',
    '-subj',
    '/CN=Unrelated Root',
    ...caAddExt,
  );
  // A trusted list's operator signs with a certificate of the list's country (test/support/trusted-list.ts).
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'tl-operator.key',
    '-out',
    'tl-operator.pem',
    '-days',
    '3650',
    '-subj',
    '/C=IT/O=Agenzia di prova/CN=Firmatario della lista',
  );
  ssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-384',
    '-nodes',
    '-keyout',
    'tl-operator-ec.key',
    '-out',
    'tl-operator-ec.pem',
    '-days',
    '3650',
    '-subj',
    '/C=IT/O=Agenzia di prova/CN=Firmatario ECDSA della lista',
  );
  ssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'self.key',
    '-out',
    'self.pem',
    '-days',
    '365',
    '-subj',
    '/CN=Self Signed Signer',
  );
  const issue = (name: string, keyArgs: string[], subject: string, ca: string, ext: string, serial: number): void => {
    ssl('genpkey', ...keyArgs, '-out', `${name}.key`);
    ssl('req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-set_serial',
      String(serial),
      '-days',
      '365',
      '-extfile',
      ext,
      '-out',
      `${name}.pem`,
    );
  };
  issue('int', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'], '/O=Test/CN=Test Intermediate', 'root', 'ca.ext', 2);
  issue('rsa', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'], '/O=Test/CN=RSA Signer', 'int', 'leaf.ext', 0x1001);
  issue('pss', ['-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048'], '/O=Test/CN=PSS Signer', 'int', 'leaf.ext', 0x1002);
  issue('ec', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], '/O=Test/CN=EC Signer', 'int', 'leaf.ext', 0x1003);
  // An end-entity certificate without keyUsage (so that only basicConstraints stops it) used as an issuer.
  write('noca.ext', 'basicConstraints=CA:FALSE\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n');
  issue('noca', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], '/O=Test/CN=Not A CA', 'int', 'noca.ext', 0x1004);
  issue('victim', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], '/O=Test/CN=Issued By Not A CA', 'noca', 'leaf.ext', 0x1005);
  write('noca-chain.pem', Buffer.concat([read('noca.pem'), read('int.pem')]));
  // QCStatements { QcCompliance, QcSSCD } (ETSI EN 319 412-5), as Italian qualified certificates carry.
  write(
    'qualified.ext',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,nonRepudiation\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n' +
      '1.3.6.1.5.5.7.1.3=DER:30143008060604008E4601013008060604008E460104\n',
  );
  issue(
    'qualified',
    ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
    '/C=IT/O=Test/CN=Mario Rossi/serialNumber=TINIT-RSSMRA80A01H501U',
    'int',
    'qualified.ext',
    0x1008,
  );
  // QcCompliance and QcType { web } (0.4.0.1862.1.6.3): a website certificate.
  write(
    'qualified-web.ext',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n' +
      '1.3.6.1.5.5.7.1.3=DER:301F3008060604008E4601013013060604008E4601063009060704008E46010603\n',
  );
  issue('qualified-web', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], '/C=IT/O=Test/CN=www.example.it', 'int', 'qualified-web.ext', 0x100b);

  // A certificate whose validity ended long before any signing time: `openssl ca` takes explicit dates.
  write(
    'ca.cnf',
    [
      '[ca]',
      'default_ca = test',
      '[test]',
      'database = index.txt',
      'new_certs_dir = .',
      'serial = serial',
      'default_md = sha256',
      'policy = any',
      'unique_subject = no',
      '[any]',
      'commonName = supplied',
      '[leaf]',
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature,nonRepudiation',
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid',
      '',
    ].join('\n'),
  );
  write('index.txt', '');
  write('serial', '2001\n');
  ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'expired.key');
  ssl('req', '-new', '-key', 'expired.key', '-out', 'expired.csr', '-subj', '/CN=Expired Signer');
  ssl(
    'ca',
    '-batch',
    '-config',
    'ca.cnf',
    '-cert',
    'int.pem',
    '-keyfile',
    'int.key',
    '-in',
    'expired.csr',
    '-out',
    'expired.pem',
    '-startdate',
    '20200101000000Z',
    '-enddate',
    '20200102000000Z',
    '-extensions',
    'leaf',
    '-notext',
  );

  const marker = Buffer.from('GUARANTEE-DOCUMENT-MARKER-7f3a');
  const doc = Buffer.concat([Buffer.from('%PDF-1.7 pretend document\n'), marker, Buffer.from('\nend of the document\n')]);
  write('doc.pdf', doc);
  // Large enough for -stream to cut the content into several 4096-byte chunks.
  write('big.pdf', Buffer.concat([doc, Buffer.alloc(10_000, 'x'), marker]));
  const sign = (out: string, input: string, ...extra: string[]): Buffer => {
    ssl('cms', '-sign', '-binary', '-md', 'sha256', '-in', input, '-outform', 'DER', '-out', out, ...extra);
    return read(out);
  };
  const as = (name: string, ...more: string[]): string[] => ['-signer', `${name}.pem`, '-inkey', `${name}.key`, ...more];
  const chain = ['-certfile', 'int.pem'];

  const rsa = sign('rsa.p7m', 'doc.pdf', '-nodetach', ...as('rsa'), ...chain);
  const tampered = flipByte(rsa, rsa.indexOf(marker) + 3);
  write('rsa-tampered.p7m', tampered);
  const der = {
    rsa,
    ec: sign('ec.p7m', 'doc.pdf', '-nodetach', ...as('ec'), ...chain),
    pss: sign('pss.p7m', 'doc.pdf', '-nodetach', ...as('pss', '-keyopt', 'rsa_padding_mode:pss'), ...chain),
    pssMgf1Sha512: sign(
      'mgf.p7m',
      'doc.pdf',
      '-nodetach',
      ...as('rsa', '-keyopt', 'rsa_padding_mode:pss', '-keyopt', 'rsa_mgf1_md:sha512', '-keyopt', 'rsa_pss_saltlen:32'),
      ...chain,
    ),
    pssKeyRsaEncryption: sign('pss-plain.p7m', 'doc.pdf', '-nodetach', ...as('pss'), ...chain),
    stream: sign('stream.p7m', 'big.pdf', '-nodetach', '-stream', ...as('rsa'), ...chain),
    nested: sign('nested.p7m', 'rsa.p7m', '-nodetach', ...as('ec'), ...chain),
    nestedTamperedInner: sign('nested-bad.p7m', 'rsa-tampered.p7m', '-nodetach', ...as('ec'), ...chain),
    twoSigners: sign('two.p7m', 'doc.pdf', '-nodetach', ...as('rsa'), ...as('ec'), ...chain),
    keyid: sign('keyid.p7m', 'doc.pdf', '-nodetach', '-keyid', ...as('ec'), ...chain),
    noattr: sign('noattr.p7m', 'doc.pdf', '-nodetach', '-noattr', ...as('rsa'), ...chain),
    cades: sign('cades.p7m', 'doc.pdf', '-nodetach', '-cades', ...as('rsa'), ...chain),
    sha1:
      (ssl('cms', '-sign', '-binary', '-md', 'sha1', '-nodetach', '-in', 'doc.pdf', '-outform', 'DER', '-out', 'sha1.p7m', ...as('rsa'), ...chain),
      read('sha1.p7m')),
    expired: sign('expired.p7m', 'doc.pdf', '-nodetach', ...as('expired'), ...chain),
    ecWithoutIntermediate: sign('ec-alone.p7m', 'doc.pdf', '-nodetach', ...as('ec')),
    detached: sign('detached.p7m', 'doc.pdf', ...as('rsa'), ...chain),
    selfSigned: sign('self.p7m', 'doc.pdf', '-nodetach', ...as('self')),
    issuedByNonCa: sign('noca.p7m', 'doc.pdf', '-nodetach', ...as('victim'), '-certfile', 'noca-chain.pem'),
    qualified: sign('qualified.p7m', 'doc.pdf', '-nodetach', '-cades', ...as('qualified'), ...chain),
    qualifiedWeb: sign('qualified-web.p7m', 'doc.pdf', '-nodetach', ...as('qualified-web'), ...chain),
  };
  ssl('cms', '-sign', '-binary', '-md', 'sha256', '-nodetach', '-in', 'doc.pdf', '-outform', 'PEM', '-out', 'rsa.pem.p7m', ...as('rsa'), ...chain);
  // A CRL of 150,000 revoked certificates (about 3 MB), as CAdES-LT envelopes embed.
  write('crl.cnf', '[ca]\ndefault_ca = crl\n[crl]\ndatabase = crl-index.txt\ndefault_md = sha256\ndefault_crl_days = 30\n');
  write(
    'crl-index.txt',
    Array.from(
      { length: 150_000 },
      (_, i) => `R\t301231235959Z\t240101000000Z\t${(0x100000 + i).toString(16).toUpperCase()}\tunknown\t/CN=Revoked ${i}\n`,
    ).join(''),
  );
  ssl('ca', '-gencrl', '-config', 'crl.cnf', '-cert', 'int.pem', '-keyfile', 'int.key', '-out', 'big-crl.pem');
  ssl('crl', '-in', 'big-crl.pem', '-outform', 'DER', '-out', 'big-crl.der');
  let quirks: Quirks | undefined;
  let counterSigned: CounterSigned | undefined;
  let timestamped: Timestamped | undefined;
  // A time-stamping authority under the intermediate (openssl ts wants timeStamping, critical).
  write(
    'tsa.ext',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=critical,timeStamping\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n',
  );
  issue('tsa', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], '/O=Test/CN=Test TSA', 'int', 'tsa.ext', 0x1006);
  write(
    'ts.cnf',
    '[tsa]\ndefault_tsa = t\n[t]\nserial = tsa-serial\nsigner_digest = sha256\ndefault_policy = 1.2.3.4.1\ndigests = sha1, sha256, sha512\naccuracy = secs:1\ness_cert_id_alg = sha256\n',
  );
  write('tsa-serial', '01\n');
  let stamps = 0;
  /** A TimeStampToken (`openssl ts -token_out`) over `data`, or the whole TimeStampResp (a .tsr, as a .m7m carries it). */
  const stamp = (data: Buffer, imprintHash: string, as: 'token' | 'reply'): Buffer => {
    const n = ++stamps;
    const out = `stamp-${n}.${as === 'token' ? 'tst' : 'tsr'}`;
    write(`stamp-${n}.bin`, data);
    ssl('ts', '-query', '-data', `stamp-${n}.bin`, `-${imprintHash}`, '-cert', '-no_nonce', '-out', `stamp-${n}.tsq`);
    // prettier-ignore
    ssl('ts', '-reply', '-config', 'ts.cnf', '-queryfile', `stamp-${n}.tsq`, '-signer', 'tsa.pem', '-inkey', 'tsa.key', '-chain', 'int.pem',
      ...(as === 'token' ? ['-token_out'] : []), '-out', out);
    return read(out);
  };
  const timestampToken = (data: Buffer, imprintHash = 'sha256'): Buffer => stamp(data, imprintHash, 'token');
  const timestampReply = (data: Buffer): Buffer => stamp(data, 'sha256', 'reply');
  let containers: Containers | undefined;
  let pdfs: SignedPdfs | undefined;
  let signatures = 0;
  const pdfSigned = (pdf: Buffer, signer: string, subFilter: string, claimedTime?: string | null, more: Partial<SignOptions> = {}): Buffer =>
    signPdf(
      pdf,
      (data) => {
        const n = ++signatures;
        write(`pdf-${n}.data`, data);
        ssl(
          'cms',
          '-sign',
          '-binary',
          '-md',
          'sha256',
          '-in',
          `pdf-${n}.data`,
          '-outform',
          'DER',
          '-out',
          `pdf-${n}.cms`,
          ...as(signer),
          ...chain,
          ...(subFilter === 'ETSI.CAdES.detached' ? ['-cades'] : []),
        );
        return read(`pdf-${n}.cms`);
      },
      { objectNumber: 900 + signatures, ...more, subFilter, ...(claimedTime !== undefined && { claimedTime }) },
    );
  const markedPdf = (padding: number): Buffer => plainPdf(marker.toString('latin1'), padding);
  // A token's TSTInfo signed by a certificate that is not a TSA's (openssl ts refuses to make one).
  // TSAs that RFC 3161 §2.3 refuses: timeStamping not critical, or beside another purpose.
  write(
    'tsa-lax.ext',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=timeStamping\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n',
  );
  issue('tsa-lax', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], '/O=Test/CN=Lax TSA', 'int', 'tsa-lax.ext', 0x1009);
  write(
    'tsa-wide.ext',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=critical,timeStamping,codeSigning\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n',
  );
  issue('tsa-wide', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'], '/O=Test/CN=Wide TSA', 'int', 'tsa-wide.ext', 0x100a);
  const notTsaToken = (data: Buffer, signer = 'ec', ess = true): Buffer => {
    const genuine = parse(timestampToken(data));
    const tstInfo = Buffer.from(children(children(signedData(genuine)[2]!)[1]!)[0]!.value as string, 'latin1');
    write('tstinfo.der', tstInfo);
    ssl(
      'cms',
      '-sign',
      '-binary',
      '-nodetach',
      '-in',
      'tstinfo.der',
      '-econtent_type',
      '1.2.840.113549.1.9.16.1.4',
      '-md',
      'sha256',
      '-signer',
      `${signer}.pem`,
      '-inkey',
      `${signer}.key`,
      '-certfile',
      'int.pem',
      '-outform',
      'DER',
      '-out',
      `not-tsa-${signer}.tst`,
      ...(ess ? ['-cades'] : []),
    );
    return read(`not-tsa-${signer}.tst`);
  };
  // A TSA certificate valid from 2019 to 2030, and tokens of a chosen genTime that it signs
  // (openssl ts stamps the current time): the TSTInfo built here, signed with openssl cms.
  // Also one whose certificate ended in 2020 ('tsa-expired', 2019-01-01 to 2020-06-01): its
  // key can still mint a token of any time within those dates.
  const oldTsas = new Set<string>();
  const tokenAt = (data: Buffer, genTime: string, tsa: 'tsa-2020' | 'tsa-expired' = 'tsa-2020'): Buffer => {
    if (!oldTsas.has(tsa)) {
      ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${tsa}.key`);
      ssl('req', '-new', '-key', `${tsa}.key`, '-out', `${tsa}.csr`, '-subj', tsa === 'tsa-2020' ? '/CN=Test TSA 2020' : '/CN=Test TSA expired');
      const end = tsa === 'tsa-2020' ? '20300101000000Z' : '20200601000000Z';
      // prettier-ignore
      ssl('ca', '-batch', '-config', 'ca.cnf', '-cert', 'int.pem', '-keyfile', 'int.key', '-in', `${tsa}.csr`, '-out', `${tsa}.pem`,
        '-startdate', '20190101000000Z', '-enddate', end, '-extfile', 'tsa.ext', '-notext');
      oldTsas.add(tsa);
    }
    const tstInfo = sequence(
      integer(1),
      oidNode('1.2.3.4.1'),
      sequence(algorithm(OIDS.sha256), octetString(createHash('sha256').update(data).digest())),
      integer(++stamps),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.GENERALIZEDTIME, false, genTime),
    );
    write(`tstinfo-at-${stamps}.der`, encode(tstInfo));
    // prettier-ignore
    ssl('cms', '-sign', '-binary', '-nodetach', '-in', `tstinfo-at-${stamps}.der`, '-econtent_type', '1.2.840.113549.1.9.16.1.4', '-md', 'sha256',
      '-signer', `${tsa}.pem`, '-inkey', `${tsa}.key`, '-certfile', 'int.pem', '-outform', 'DER', '-out', `token-at-${stamps}.tst`, '-cades');
    const token = read(`token-at-${stamps}.tst`);
    if (tsa === 'tsa-2020') return token;
    // The expired TSA's token as its key's holder would make it today: without a signingTime
    // (openssl writes the real time, which the TSA's certificate no longer covers).
    const ci = parse(token);
    const si = signerInfo(ci);
    si.signedAttributes = si.signedAttributes.filter((a) => asn1.derToOid(children(a)[0]!.value as string) !== OIDS.signingTime);
    si.signature = nodeSign('sha256', si.signedBytesDer(), createPrivateKey(read(`${tsa}.key`)));
    return encode(ci);
  };
  let eddsa: ReturnType<P7mFixtures['eddsa']> | undefined;
  const buildEddsa = (): ReturnType<P7mFixtures['eddsa']> => {
    for (const alg of ['ED25519', 'ED448']) {
      const name = alg.toLowerCase();
      ssl('genpkey', '-algorithm', alg, '-out', `${name}.key`);
      ssl('req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', `/O=Test/CN=${alg} Signer`);
      // prettier-ignore
      ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'int.pem', '-CAkey', 'int.key', '-set_serial', alg === 'ED25519' ? '4096' : '4097', '-days', '365',
        '-extfile', 'leaf.ext', '-out', `${name}.pem`);
    }
    const SHA512 = '2.16.840.1.101.3.4.2.3';
    const SHAKE256 = '2.16.840.1.101.3.4.2.12';
    const SHAKE256_LEN = '2.16.840.1.101.3.4.2.18';
    const build = (name: 'ed25519' | 'ed448', digest: Asn1, digestOf: (data: Buffer) => Buffer, attributes = true): Buffer => {
      const cert = read(`${name}.pem`);
      const edKey = createPrivateKey(read(`${name}.key`));
      const ci = parse(der.rsa);
      const sd = signedData(ci);
      sd[1] = set(digest);
      sd[3] = tagged(0, certificateNode(cert), certificateNode(read('int.pem')));
      const si = signerInfo(ci);
      const fields = si.fields;
      fields[1] = issuerAndSerial(cert);
      fields[2] = digest;
      if (attributes) {
        si.signedAttributes = sortedDer(
          si.signedAttributes
            .filter((a) => asn1.derToOid(children(a)[0]!.value as string) !== OIDS.smimeCapabilities)
            .map((a) =>
              asn1.derToOid(children(a)[0]!.value as string) === OIDS.messageDigest ? attribute(OIDS.messageDigest, octetString(digestOf(doc))) : a,
            ),
        );
      } else fields.splice(3, 1);
      si.signatureAlgorithm = algorithm(name === 'ed25519' ? '1.3.101.112' : '1.3.101.113');
      si.signature = nodeSign(null, attributes ? si.signedBytesDer() : doc, edKey);
      return encode(ci);
    };
    const sha512 = (data: Buffer) => createHash('sha512').update(data).digest();
    const shake = (data: Buffer) => createHash('shake256', { outputLength: 64 }).update(data).digest();
    return {
      ed25519: build('ed25519', algorithm(SHA512), sha512),
      ed448: build('ed448', algorithm(SHAKE256), shake),
      ed25519NoAttributes: build('ed25519', algorithm(SHA512), sha512, false),
      ed448ShakeLen: build('ed448', algorithm(SHAKE256_LEN, integer(512)), shake),
    };
  };
  const sha3Rsa = sign('sha3.p7m', 'doc.pdf', '-nodetach', '-md', 'sha3-256', ...as('rsa'), ...chain);
  return {
    dir,
    doc,
    marker,
    der,
    timestampToken,
    signedPdf: (bytes: number) => pdfSigned(markedPdf(bytes), 'rsa', 'ETSI.CAdES.detached'),
    pdfSignedBy: (pdf, signer, opts = {}) => pdfSigned(pdf, signer, opts.subFilter ?? 'ETSI.CAdES.detached', opts.claimedTime, opts),
    timestampTokenAt: (data, genTime, tsa) => tokenAt(data, genTime, tsa),
    pdfs: () => {
      if (!pdfs) {
        const unsigned = markedPdf(100);
        const signed = pdfSigned(unsigned, 'rsa', 'ETSI.CAdES.detached');
        // A visible annotation over the page's text, added after the signature: not a change PAdES allows.
        const { pageNum, page } = catalogAndPage(signed);
        const note = nextNumber(signed);
        const update = appendUpdate(
          signed,
          new Map([
            [note, '<< /Type /Annot /Subtype /FreeText /Rect [60 700 300 740] /Contents (added later) /DA (/Helv 12 Tf 0 g) >>'],
            [pageNum, serialize(withEntries(page, { Annots: [...((page.get('Annots') as PdfValue[] | undefined) ?? []), new PdfRef(note, 0)] }))],
          ]),
        );
        pdfs = {
          unsigned,
          signed,
          adbe: pdfSigned(unsigned, 'ec', 'adbe.pkcs7.detached'),
          twoSignatures: pdfSigned(signed, 'ec', 'ETSI.CAdES.detached'),
          afterAnnotation: pdfSigned(update, 'ec', 'ETSI.CAdES.detached'),
          appended: update,
        };
      }
      return pdfs;
    },
    containers: () => (containers ??= buildContainers(der.rsa, doc, timestampToken, timestampReply)),
    eddsa: () => (eddsa ??= buildEddsa()),
    timestamped: () => (timestamped ??= buildTimestamped(der, timestampToken, notTsaToken, tokenAt, (name) => createPrivateKey(read(`${name}.key`)))),
    counterSigned: () => (counterSigned ??= buildCounterSigned(der.rsa, read('ec.pem'), read('rsa.pem'), (name) => createPrivateKey(read(`${name}.key`)))),
    quirks: () => (quirks ??= buildQuirks(der, sha3Rsa, doc, read('big-crl.der'), (name) => createPrivateKey(read(`${name}.key`)))),
    rootPem: read('root.pem').toString(),
    unrelatedPem: read('other.pem').toString(),
    selfSignedPem: read('self.pem').toString(),
    pem: read('rsa.pem.p7m').toString(),
    file: (name, bytes) => {
      write(name, bytes);
      return join(dir, name);
    },
  };
}

function buildQuirks(der: P7mFixtures['der'], sha3Rsa: Buffer, doc: Buffer, crl: Buffer, key: (name: string) => KeyObject): Quirks {
  const rewrite = (from: Buffer, change: (ci: Asn1, si: SignerInfo) => void): Buffer => {
    const ci = parse(from);
    change(ci, signerInfo(ci));
    return encode(ci);
  };
  // The issuer Name of an issuerAndSerialNumber, its string values rewritten.
  const renameIssuer = (si: SignerInfo, value: (type: number, text: string) => [number, string]): void => {
    for (const rdn of children(children(si.sid)[0]!)) {
      for (const ava of children(rdn)) {
        const v = children(ava)[1]!;
        const [type, text] = value(v.type, Buffer.from(v.value as string, 'latin1').toString('utf8'));
        v.type = type;
        v.value = Buffer.from(text, 'utf8').toString('latin1');
      }
    }
  };
  const rsaKey = key('rsa');
  const sha256Rsa = signWith('sha256', rsaKey);
  const timestampToken = sequence(oidNode('1.2.840.113549.1.7.2'), tagged(0, sequence(integer(3))));
  return {
    keyIdUnderVersion1: rewrite(der.keyid, (_, si) => {
      si.version = 1;
    }),
    issuerSerialUnderVersion3: rewrite(der.rsa, (_, si) => {
      si.version = 3;
    }),
    issuerPrintableString: rewrite(der.rsa, (_, si) => renameIssuer(si, (type, text) => [type === 12 ? 19 : type, text])),
    issuerCaseAndSpaces: rewrite(der.rsa, (_, si) =>
      renameIssuer(si, (type, text) => [type, text === 'Test' ? 'TEST' : text.toLowerCase().replace(' ', '   ')]),
    ),
    signedDataVersion: rewrite(der.rsa, (ci) => {
      signedData(ci)[0] = integer(4);
    }),
    unsortedSignedAsSent: rewrite(der.rsa, (_, si) => {
      si.signedAttributes = [...si.signedAttributes].reverse();
      si.resign(sha256Rsa);
    }),
    unsortedSignedSorted: rewrite(der.rsa, (_, si) => {
      si.signedAttributes = [...si.signedAttributes].reverse();
    }),
    twoContentTimestamps: rewrite(der.rsa, (_, si) => {
      si.signedAttributes = sortedDer([
        ...si.signedAttributes,
        attribute(OIDS.contentTimestamp, timestampToken),
        attribute(OIDS.contentTimestamp, timestampToken),
      ]);
      si.resign(sha256Rsa);
    }),
    duplicateMessageDigest: rewrite(der.rsa, (_, si) => {
      si.signedAttributes = sortedDer([...si.signedAttributes, attribute(OIDS.messageDigest, octetString(Buffer.alloc(32)))]);
      si.resign(sha256Rsa);
    }),
    longTerm: rewrite(der.rsa, (ci, si) => {
      // The CRL in SignedData's crls and in a revocation-values attribute, and an archive
      // timestamp's worth of nodes: each over the default budget of 200,000 nodes.
      const crlNode = parse(crl);
      si.unsignedAttributes = [attribute(OIDS.revocationValues, sequence(tagged(0, sequence(crlNode)))), attribute(OIDS.archiveTimestampV3, bulk(300_000))];
      const sd = signedData(ci);
      sd.splice(sd.length - 1, 0, tagged(1, crlNode));
    }),
    sha3Rsa,
    sha3Ecdsa: rewrite(der.ec, (ci, si) => {
      const sd = signedData(ci);
      sd[1] = set(algorithm(OIDS.sha3_256));
      si.digestAlgorithm = algorithm(OIDS.sha3_256);
      si.signedAttributes = si.signedAttributes.map((a) =>
        asn1.derToOid(children(a)[0]!.value as string) === OIDS.messageDigest
          ? attribute(OIDS.messageDigest, octetString(createHash('sha3-256').update(doc).digest()))
          : a,
      );
      si.signatureAlgorithm = algorithm(OIDS.ecdsaWithSha3_256);
      si.resign(signWith('sha3-256', key('ec')));
    }),
    pssOtherHash: rewrite(der.pss, (_, si) => {
      const sha512 = algorithm(OIDS.sha512);
      si.signatureAlgorithm = algorithm(OIDS.rsaPss, sequence(tagged(0, sha512), tagged(1, algorithm(OIDS.mgf1, sha512)), tagged(2, integer(64))));
      si.resign((data) => signPss(data, key('pss')));
    }),
    digestInfoWithoutNull: rewrite(der.rsa, (_, si) => si.resign(rsaWithoutNull(OIDS.sha256, 'sha256', rsaKey))),
    pssProtected: (() => {
      const sha512 = algorithm(OIDS.sha512);
      const pssParams = (salt: number, trailer?: number): Asn1 =>
        sequence(
          tagged(0, sha512),
          tagged(1, algorithm(OIDS.mgf1, sha512)),
          tagged(2, integer(salt)),
          ...(trailer === undefined ? [] : [tagged(3, integer(trailer))]),
        );
      const protectedBy = (named: Asn1): Buffer =>
        rewrite(der.pss, (_, si) => {
          si.signatureAlgorithm = algorithm(OIDS.rsaPss, pssParams(64));
          si.signedAttributes = sortedDer([
            ...si.signedAttributes,
            attribute(OIDS.algorithmProtection, sequence(algorithm(OIDS.sha256), tagged(1, oidNode(OIDS.rsaPss), named))),
          ]);
          si.resign((data) => signPss(data, key('pss')));
        });
      return {
        same: protectedBy(pssParams(64)),
        explicitTrailer: protectedBy(pssParams(64, 1)),
        otherTrailer: protectedBy(pssParams(64, 2)),
        otherSalt: protectedBy(pssParams(32)),
      };
    })(),
  };
}

const signPss = (data: Buffer, k: KeyObject): Buffer => nodeSign('sha512', data, { key: k, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 });

function buildCounterSigned(rsaEnvelope: Buffer, ecCert: Buffer, rsaCert: Buffer, key: (name: string) => KeyObject): CounterSigned {
  const ec = { cert: ecCert, key: key('ec'), signatureAlgorithm: OIDS.ecdsaWithSha256 };
  const rsa = { cert: rsaCert, key: key('rsa'), signatureAlgorithm: OIDS.rsaEncryption };
  const withCounter = (counter: (signatureValue: Buffer) => Asn1): Buffer => {
    const ci = parse(rsaEnvelope);
    const sd = signedData(ci);
    children(sd[3]!).push(certificateNode(ecCert)); // the counter-signer's certificate travels with the others
    const si = signerInfo(ci);
    si.unsignedAttributes = [attribute(OIDS.counterSignature, counter(signatureOf(si)))];
    return encode(ci);
  };
  return {
    valid: withCounter((sig) => counterSignature(sig, ec)),
    wrongDigest: withCounter((sig) => counterSignature(sig, ec, { digestOf: Buffer.from('another signature') })),
    withContentType: withCounter((sig) => counterSignature(sig, ec, { contentType: true })),
    nested: withCounter((sig) => {
      const counter = new SignerInfo(counterSignature(sig, ec));
      counter.unsignedAttributes = [attribute(OIDS.counterSignature, counterSignature(signatureOf(counter), rsa))];
      return counter.node;
    }),
  };
}

function buildTimestamped(
  der: P7mFixtures['der'],
  token: (data: Buffer) => Buffer,
  notTsaToken: (data: Buffer, signer?: string, ess?: boolean) => Buffer,
  tokenAt: (data: Buffer, genTime: string) => Buffer,
  key: (name: string) => KeyObject,
): Timestamped {
  const rsaEnvelope = der.rsa;
  const rsaKey = key('rsa');
  const stamped = (envelope: Buffer, stamp: (signatureValue: Buffer) => Buffer, count = 1): Buffer => {
    const ci = parse(envelope);
    const si = signerInfo(ci);
    si.unsignedAttributes = Array.from({ length: count }, () => attribute(OIDS.signatureTimestamp, parse(stamp(signatureOf(si)))));
    return encode(ci);
  };
  /** `envelope` with its signingTime claiming `utcTime`, re-signed with `signerKey`. */
  const claiming = (envelope: Buffer, utcTime: string, signerKey: KeyObject): Buffer => {
    const ci = parse(envelope);
    const si = signerInfo(ci);
    si.signedAttributes = sortedDer(
      si.signedAttributes.map((a) =>
        asn1.derToOid(children(a)[0]!.value as string) === OIDS.signingTime
          ? attribute(OIDS.signingTime, asn1.create(asn1.Class.UNIVERSAL, asn1.Type.UTCTIME, false, utcTime))
          : a,
      ),
    );
    si.resign(signWith('sha256', signerKey));
    return encode(ci);
  };
  const claimed = claiming(rsaEnvelope, '190601000000Z', rsaKey);
  const backdated = claiming(der.expired, '200101120000Z', key('expired'));
  return {
    valid: stamped(rsaEnvelope, token),
    otherImprint: stamped(rsaEnvelope, () => token(Buffer.from('another signature'))),
    notTsa: stamped(rsaEnvelope, (sig) => notTsaToken(sig)),
    laxTsa: stamped(rsaEnvelope, (sig) => notTsaToken(sig, 'tsa-lax')),
    wideTsa: stamped(rsaEnvelope, (sig) => notTsaToken(sig, 'tsa-wide')),
    noEss: stamped(rsaEnvelope, (sig) => notTsaToken(sig, 'tsa', false)),
    twoStamps: stamped(rsaEnvelope, token, 2),
    claimedBeforeValidity: stamped(claimed, token),
    claimedBeforeValidityUnstamped: claimed,
    backdated,
    backdatedStamped: stamped(backdated, (sig) => tokenAt(sig, '20200101120000Z')),
  };
}

function buildContainers(p7m: Buffer, doc: Buffer, token: (data: Buffer) => Buffer, reply: (data: Buffer) => Buffer): Containers {
  const tsd = (content: Buffer, stamps: Asn1[]): Buffer =>
    encode(sequence(oidNode(OIDS.timestampedData), tagged(0, sequence(integer(1), octetString(content), tagged(0, ...stamps)))));
  const first = sequence(parse(token(p7m)));
  const mime = (tsr: Buffer): Buffer => {
    const b64 = (x: Buffer): string => x.toString('base64').replace(/.{76}/g, '$&\r\n');
    return Buffer.from(
      [
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="----=_Part_7_m7m"',
        '',
        'This is a multi-part message in MIME format.',
        '------=_Part_7_m7m',
        'Content-Type: application/pkcs7-mime; smime-type=signed-data; name="polizza.pdf.p7m"',
        'Content-Transfer-Encoding: base64',
        'Content-Disposition: attachment; filename="polizza.pdf.p7m"',
        '',
        b64(p7m),
        '------=_Part_7_m7m',
        'Content-Type: application/timestamp-reply; name="polizza.pdf.tsr"',
        'Content-Transfer-Encoding: base64',
        '',
        b64(tsr),
        '------=_Part_7_m7m--',
        '',
      ].join('\r\n'),
      'latin1',
    );
  };
  return {
    tsd: tsd(p7m, [first]),
    tsdRenewed: tsd(p7m, [first, sequence(parse(token(encode(first))))]),
    tsdOtherData: tsd(p7m, [sequence(parse(token(Buffer.from('other data'))))]),
    tsdUnsigned: tsd(doc, [sequence(parse(token(doc)))]),
    m7m: mime(reply(p7m)),
    m7mOtherData: mime(reply(Buffer.from('other data'))),
  };
}
