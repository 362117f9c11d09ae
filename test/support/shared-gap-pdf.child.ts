// Run as a child process by test/unit/files/p7m.fuzz.test.ts: builds a PDF of 32 signature
// dictionaries whose ByteRanges share one 50 MB /Contents gap, verifies it, and prints the
// verdict's reason, the signature count, and this process's RSS before and at its peak.
import { verifyP7m } from '../../src/files/p7m/p7m.verifier.js';

const GAP = 50 * 1024 * 1024;
const SIGNATURES = 32;
const TAIL = 1000;
const field = (value: number | string): string => String(value).padEnd(12, ' ');

// The header's length does not depend on the numbers (each padded to 12 characters).
const header = (a: number, b: number): string =>
  `%PDF-1.7\n${Array.from({ length: SIGNATURES }, (_, k) => `/ByteRange [0 ${field(a)} ${field(b)} ${field(TAIL - k)}]`).join('\n')}\n/Contents `;
const a = header(0, 0).length;
const b = a + GAP + 2;
const pdf = Buffer.alloc(b + TAIL, 0x30);
pdf.write(header(a, b), 0, 'latin1');
pdf[a] = 0x3c; // '<'
pdf[b - 1] = 0x3e; // '>'

const before = process.memoryUsage().rss;
const verdict = verifyP7m(pdf, { maxBytes: pdf.length });
process.stdout.write(
  JSON.stringify({ reason: verdict.reason, signatures: verdict.pdf?.signatures.length, before, peak: process.resourceUsage().maxRSS * 1024 }),
);
