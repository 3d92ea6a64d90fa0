/**
 * Writes deploy/crds/*.yaml from the schema descriptions in src/api, and the same files into the Helm chart's
 * crds/ directory (Helm installs a chart's CRDs from there, never from outside the chart).
 * Run: node --import tsx scripts/gen-crds.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCrds, crdFileName, renderCrdYaml } from '../src/api/crds.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const crd of buildCrds()) {
  const file = join(root, crdFileName(crd));
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, renderCrdYaml(crd));
  console.log(`wrote ${crdFileName(crd)}`);
  const inChart = join('deploy/helm/ptah-operator/crds', basename(crdFileName(crd)));
  writeFileSync(join(root, inChart), renderCrdYaml(crd));
  console.log(`wrote ${inChart}`);
}
