// `witness serve`: runs a witness of the registry's transparency log (or of any C2SP log) as a
// process of its own. Settings (flags, else environment):
//   --name / WITNESS_NAME     its key's name (default witness.localhost)
//   --dir / WITNESS_DIR       its state and, unless WITNESS_KEY, its key (default .data/witness)
//   --port / WITNESS_PORT     where it listens (default 7600; 0: any free port), on WITNESS_HOST (127.0.0.1)
//   --log / WITNESS_LOGS      the verifier key of each log it watches (repeat the flag, or ";" between keys)
//   WITNESS_KEY               its private key (Ed25519 PKCS#8 PEM); otherwise made once in its directory (mode 0600)
// It prints its verifier key (what a log's LOG_WITNESSES and a verifier's --witness name) and
// serves until SIGTERM or SIGINT.
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { COSIGNATURE_V1, cosigner, parseVerifierKey, verifierKey } from '../note.js';
import { createWitness } from './witness.js';
import { createWitnessServer } from './witness.server.js';
import { openWitnessStore } from './witness.store.js';

function keyIn(dir: string): KeyObject {
  if (process.env.WITNESS_KEY) return createPrivateKey({ key: process.env.WITNESS_KEY.replace(/\\n/g, '\n'), format: 'pem' });
  const file = join(dir, 'witness-key.pem');
  if (!existsSync(file)) writeFileSync(file, generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  return createPrivateKey({ key: readFileSync(file, 'utf8'), format: 'pem' });
}

export async function witnessCommand(args: string[], say: (line: string) => void, usage: string): Promise<number> {
  if (args[0] !== 'serve') {
    say(usage);
    return 2;
  }
  const flags: Record<string, string[]> = {};
  for (let i = 1; i < args.length; i += 2) {
    const [flag, value] = [args[i] ?? '', args[i + 1]];
    if (!['--name', '--dir', '--port', '--log'].includes(flag) || value === undefined) {
      say(usage);
      return 2;
    }
    (flags[flag] ??= []).push(value);
  }
  const name = flags['--name']?.[0] ?? process.env.WITNESS_NAME ?? 'witness.localhost';
  const dir = resolve(flags['--dir']?.[0] ?? process.env.WITNESS_DIR ?? '.data/witness');
  const port = Number(flags['--port']?.[0] ?? process.env.WITNESS_PORT ?? 7600);
  const vkeys = flags['--log'] ?? (process.env.WITNESS_LOGS ?? '').split(/[;\s]+/).filter(Boolean);
  if (!vkeys.length) {
    say('witness serve: name at least one log to watch (--log <verifier key>, or WITNESS_LOGS)');
    return 2;
  }
  const logs = vkeys.map((v) => parseVerifierKey(v));
  const store = await openWitnessStore(dir);
  const key = keyIn(dir);
  const vkey = verifierKey(name, key, COSIGNATURE_V1);
  const server = createWitnessServer(createWitness({ signer: cosigner(name, key), logs, store }), vkey);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, process.env.WITNESS_HOST ?? '127.0.0.1', ok);
  });
  const { address, port: bound } = server.address() as AddressInfo;
  say(`witness ${vkey}`);
  say(`witnessing ${logs.map((l) => l.name).join(', ')} at http://${address}:${bound} (state in ${dir})`);
  process.stdout.write(`${vkey}\n`);
  await new Promise<void>((done) => {
    const stop = () => server.close(() => done());
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  store.close();
  return 0;
}
