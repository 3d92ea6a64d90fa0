/**
 * The layers of src/ point downwards (docs: ../shared/design/architecture.md): nothing imports the
 * controller, the engine knows nothing of Kubernetes, the controller imports no database driver. The plan
 * store sits below the controller so the kubectl plugin can verify plans without importing the manager.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

interface ImportEdge {
  readonly from: string;
  readonly specifier: string;
  /** The imported file relative to src/, or the package name. */
  readonly target: string;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

function importsOf(file: string): ImportEdge[] {
  const text = readFileSync(file, 'utf8');
  const edges: ImportEdge[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2];
    if (specifier === undefined) continue;
    const target = specifier.startsWith('.') ? relative(SRC, resolve(dirname(file), specifier)) : specifier;
    edges.push({ from: relative(SRC, file), specifier, target });
  }
  return edges;
}

const edges = sourceFiles(SRC).flatMap(importsOf);
const layerOf = (path: string): string => path.split('/')[0] ?? path;

describe('source layers', () => {
  it('finds the imports it judges', () => {
    assert.ok(edges.length > 100, `only ${edges.length} imports found: the scanner is broken`);
    assert.ok(edges.some((e) => layerOf(e.from) === 'controller' && layerOf(e.target) === 'protocol'));
    assert.ok(edges.some((e) => layerOf(e.from) === 'controller' && layerOf(e.target) === 'plan-store'));
  });

  it('nothing outside the controller imports it', () => {
    const offending = edges.filter(
      (e) => layerOf(e.from) !== 'controller' && layerOf(e.target) === 'controller',
    );
    assert.deepEqual(offending, []);
  });

  it('the engine imports neither Kubernetes nor the layers above it', () => {
    const above = new Set([
      'controller',
      'runner',
      'admission',
      'api',
      'cli',
      'sources',
      'plan-store',
      '@kubernetes/client-node',
    ]);
    const offending = edges.filter((e) => layerOf(e.from) === 'engine' && above.has(layerOf(e.target)));
    assert.deepEqual(offending, []);
  });

  it('the controller, admission and plan store import no database driver nor the engine', () => {
    const drivers = new Set(['pg', 'mysql2', 'mysql2/promise', 'libpg-query', 'pgsql-deparser', 'engine']);
    const kubernetesSide = new Set(['controller', 'admission', 'plan-store']);
    const offending = edges.filter(
      (e) => kubernetesSide.has(layerOf(e.from)) && drivers.has(layerOf(e.target)),
    );
    assert.deepEqual(offending, []);
  });
});
