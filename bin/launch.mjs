// Shared by the launchers in bin/: run a program's bundle from dist/ when it is at least as new as every
// source file and the build script (so an edited checkout never runs stale code), else the TypeScript
// sources through tsx.
// An image ships dist/ without src/, and always runs the bundle.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

export function bundleIsCurrent(bundle) {
  const stamp = join(root, 'dist', 'build-stamp');
  if (!existsSync(bundle) || !existsSync(stamp)) return false;
  const src = join(root, 'src');
  if (!existsSync(src)) return true;
  const built = statSync(stamp).mtimeMs;
  const inputs = [join(root, 'package.json'), join(root, 'scripts', 'build.ts')].filter((f) => existsSync(f));
  return newestSource(src) <= built && inputs.every((f) => statSync(f).mtimeMs <= built);
}

export async function launch(program, source) {
  const bundle = join(root, 'dist', `${program}.mjs`);
  if (bundleIsCurrent(bundle)) {
    await import(pathToFileURL(bundle).href);
    return;
  }
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, source)).href);
}
