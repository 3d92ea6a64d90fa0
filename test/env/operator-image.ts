/**
 * The operator image (deploy/images/operator/Dockerfile) as the node agent runs it: no container runtime
 * runs here, so the image map gives the reference the image's entrypoint, environment, working directory
 * and files, with the files bound from this checkout's build output. test/integration/images.test.ts holds
 * this layout equal to the Dockerfile's.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { builtProgram } from './build-output.ts';
import { IMAGE_ACCOUNT, imageAccountFiles } from './image-account.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** What the Dockerfile's final stage declares: WORKDIR, ENV, USER, ENTRYPOINT, and where it COPYs to. */
export const OPERATOR_IMAGE = {
  workingDir: '/app',
  entrypoint: ['node', '/app/dist/ptah-runner.mjs'],
  env: {
    NODE_ENV: 'production',
    HOME: '/ptah/work',
    TMPDIR: '/ptah/work',
    PTAH_RUNNER_PTAH_BINARY: '/app/dist/ptah.mjs',
  },
  user: `${IMAGE_ACCOUNT.uid}:${IMAGE_ACCOUNT.gid}`,
  /** The account the image creates for that UID (an SSH client refuses to run for a UID without one). */
  account: IMAGE_ACCOUNT,
  /** Image path -> checkout path: the bundles, the one unbundled module and its package, package.json. */
  files: {
    '/app/dist': 'dist',
    '/app/node_modules': 'node_modules',
    '/app/package.json': 'package.json',
  },
} as const;

/** A digest of the bundles: the same build gives the same reference, a new build a new one. */
export function operatorImageDigest(salt = '', dist = join(ROOT, 'dist')): string {
  builtProgram('ptah-operator');
  builtProgram('ptah-runner');
  const hash = createHash('sha256').update(salt);
  for (const name of readdirSync(dist)
    .filter((n) => n.endsWith('.mjs'))
    .sort()) {
    hash.update(name).update(readFileSync(join(dist, name)));
  }
  return `sha256:${hash.digest('hex')}`;
}

/**
 * Adds `repository@<digest>` to the node agent's image map as the operator image; returns the digest.
 * `salt` gives the same build another digest, as a rebuilt image would have (for upgrade tests); `dist`
 * another build's bundles in place of this checkout's (test/env/operator-build.ts).
 */
export function registerOperatorImage(
  imageMapFile: string,
  repository: string,
  salt = '',
  dist = join(ROOT, 'dist'),
): string {
  const digest = operatorImageDigest(salt, dist);
  const map = JSON.parse(readFileSync(imageMapFile, 'utf8')) as { images: Record<string, unknown> };
  map.images[`${repository}@${digest}`] = {
    entrypoint: OPERATOR_IMAGE.entrypoint,
    workingDir: OPERATOR_IMAGE.workingDir,
    // The image's PATH finds its Node; here that is the Node running this checkout.
    env: { PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, ...OPERATOR_IMAGE.env },
    files: {
      ...Object.fromEntries(Object.entries(OPERATOR_IMAGE.files).map(([at, from]) => [at, join(ROOT, from)])),
      '/app/dist': dist,
      ...imageAccountFiles(imageMapFile),
    },
  };
  writeFileSync(imageMapFile, JSON.stringify(map, null, 2) + '\n');
  return digest;
}
