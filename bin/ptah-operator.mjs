#!/usr/bin/env node
// Entry point for `ptah-operator`, the manager: loads the TypeScript sources through tsx when run from a
// checkout, or the compiled output when dist/ exists.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist', 'src', 'controller', 'main.js');
if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'controller', 'main.ts')).href);
}
