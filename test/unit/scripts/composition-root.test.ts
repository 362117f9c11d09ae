import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The TypeScript files under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('the composition root (src/composition.ts, its core src/core.ts)', () => {
  it('is the one place that opens pools and secret boxes for the processes (the database layer keeps its own)', () => {
    const allowed: Record<string, string[]> = {
      createSequelize: ['src/core.ts', 'src/shared/db/sequelize.ts', 'src/shared/db/migrator.ts'],
      createSecretBox: ['src/core.ts', 'src/shared/secrets.ts'],
    };
    const found: string[] = [];
    for (const file of ['src', 'workers', 'scripts'].flatMap(sources)) {
      const text = readFileSync(file, 'utf8');
      for (const [name, places] of Object.entries(allowed)) if (text.includes(`${name}(`) && !places.includes(file)) found.push(`${file} calls ${name}`);
    }
    expect(found).to.deep.equal([]);
  });

  it("leaves the web's and the workers' services out of the CLI's start: a command loads what it alone uses", () => {
    // What src/cli.ts and src/core.ts load at their start, followed through the project's own modules.
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^import (?!type )[^;]*?from '([^']+)';/gms)) {
        const spec = m[1] as string;
        if (spec.startsWith('.')) visit(join(file, '..', spec).replace(/\.js$/, '.ts'));
        else if (!spec.startsWith('node:')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string));
      }
    };
    visit('src/cli.ts');
    expect([...seen].filter((f) => f.endsWith('composition.ts'))).to.deep.equal([]);
    for (const heavy of [
      'ethers',
      '@aws-sdk/client-s3',
      '@aws-sdk/client-sns',
      'koa',
      'bullmq',
      'undici',
      'openid-client',
      'xml-crypto',
      'piscina',
      'clamscan',
      'umzug',
      'jose',
    ])
      expect([...packages], heavy).to.not.include(heavy);
  });
});
