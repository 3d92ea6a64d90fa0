/**
 * The compiled programs the tests and the demo run: the manager process and operation Pods start the
 * bundles in dist/ (what an image ships), never the sources through a loader. Rebuilt here when a source
 * file is newer than the last build, so a test always runs the code of the checkout.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleIsCurrent } from '../../bin/launch.mjs';
import { imageAccountFiles } from './image-account.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export type Program = 'ptah' | 'ptah-runner' | 'ptah-operator' | 'kubectl-ptah';

export function bundlePath(program: Program): string {
  return join(ROOT, 'dist', `${program}.mjs`);
}

/** The bundle of `program`, building dist/ first when it is missing or older than the sources. */
export function builtProgram(program: Program): string {
  const path = bundlePath(program);
  if (!bundleIsCurrent(path)) {
    execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'build.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  if (!bundleIsCurrent(path)) throw new Error(`build: ${path} is still missing or stale after npm run build`);
  return path;
}

/**
 * Maps an image reference to a compiled program in the node agent's image map, as the image built from
 * deploy/images/ would run it: this Node, the bundle, a writable HOME and TMPDIR under the Pod's work
 * directory (the image's root filesystem is read-only), and the image's account for its UID.
 */
export function registerImage(imageMapFile: string, reference: string, program: Program): void {
  const map = JSON.parse(readFileSync(imageMapFile, 'utf8')) as { images: Record<string, unknown> };
  map.images[reference] = {
    entrypoint: [process.execPath, builtProgram(program)],
    env: { TMPDIR: '/ptah/work', HOME: '/ptah/work' },
    files: imageAccountFiles(imageMapFile),
  };
  writeFileSync(imageMapFile, JSON.stringify(map, null, 2) + '\n');
}
