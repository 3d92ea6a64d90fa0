/**
 * Writes deploy/crds/*.yaml from the schema descriptions in src/api.
 * Run: node --import tsx scripts/gen-crds.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCrds, crdFileName, renderCrdYaml } from '../src/api/crds.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const crd of buildCrds()) {
  const file = join(root, crdFileName(crd));
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, renderCrdYaml(crd));
  console.log(`wrote ${crdFileName(crd)}`);
}
