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

describe('the composition root (src/composition.ts)', () => {
  it('is the one place that opens pools and secret boxes for the processes (the database layer keeps its own)', () => {
    const allowed: Record<string, string[]> = {
      createSequelize: ['src/composition.ts', 'src/shared/db/sequelize.ts', 'src/shared/db/migrator.ts'],
      createSecretBox: ['src/composition.ts', 'src/shared/secrets.ts'],
    };
    const found: string[] = [];
    for (const file of ['src', 'workers', 'scripts'].flatMap(sources)) {
      const text = readFileSync(file, 'utf8');
      for (const [name, places] of Object.entries(allowed)) if (text.includes(`${name}(`) && !places.includes(file)) found.push(`${file} calls ${name}`);
    }
    expect(found).to.deep.equal([]);
  });
});
