import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface PackagingTools {
  readonly helm: string;
  readonly promtool: string;
}

/**
 * Finds helm and promtool, built from their Go modules by test/env/build-tools.sh (which returns the cached
 * binaries at once, and builds them, taking minutes, when they are missing). PTAH_HELM and PTAH_PROMTOOL
 * name other binaries.
 */
export function findPackagingTools(): PackagingTools {
  const fromEnv = { helm: process.env['PTAH_HELM'], promtool: process.env['PTAH_PROMTOOL'] };
  let built: Record<string, string> = {};
  if (!fromEnv.helm || !fromEnv.promtool) {
    const script = fileURLToPath(new URL('./build-tools.sh', import.meta.url));
    const output = execFileSync('bash', [script], { stdio: ['ignore', 'pipe', 'inherit'] }).toString();
    built = Object.fromEntries(
      output
        .trim()
        .split('\n')
        .map((l) => l.split('=', 2) as [string, string]),
    );
  }
  const tools = {
    helm: fromEnv.helm ?? built['helm'] ?? '',
    promtool: fromEnv.promtool ?? built['promtool'] ?? '',
  };
  for (const [name, path] of Object.entries(tools)) {
    if (!existsSync(path)) throw new Error(`${name} is missing (${path}); run bash test/env/build-tools.sh`);
  }
  return tools;
}
