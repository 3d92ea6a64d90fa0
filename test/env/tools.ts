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
  return findTools({ helm: process.env['PTAH_HELM'], promtool: process.env['PTAH_PROMTOOL'] });
}

export interface OciTools {
  readonly oras: string;
  readonly cosign: string;
}

/** Finds oras and cosign, the OCI clients the artifact tests interoperate with; PTAH_ORAS and PTAH_COSIGN name other binaries. */
export function findOciTools(): OciTools {
  return findTools({ oras: process.env['PTAH_ORAS'], cosign: process.env['PTAH_COSIGN'] });
}

function findTools<K extends string>(fromEnv: Record<K, string | undefined>): Record<K, string> {
  let built: Record<string, string> = {};
  if (Object.values<string | undefined>(fromEnv).some((v) => !v)) {
    const script = fileURLToPath(new URL('./build-tools.sh', import.meta.url));
    const output = execFileSync('bash', [script], { stdio: ['ignore', 'pipe', 'inherit'] }).toString();
    built = Object.fromEntries(
      output
        .trim()
        .split('\n')
        .map((l) => l.split('=', 2) as [string, string]),
    );
  }
  const tools = {} as Record<K, string>;
  for (const name of Object.keys(fromEnv) as K[]) {
    const path = fromEnv[name] || built[name] || '';
    if (!existsSync(path)) throw new Error(`${name} is missing (${path}); run bash test/env/build-tools.sh`);
    tools[name] = path;
  }
  return tools;
}
