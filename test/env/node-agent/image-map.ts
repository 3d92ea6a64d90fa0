import { readFileSync } from 'node:fs';

/** What the node agent runs for one image reference, in place of pulling and unpacking it. */
export interface ImageEntry {
  readonly entrypoint: readonly string[];
  readonly workingDir?: string;
  /** Like an image's ENV: defaults the container's own env overrides. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The image's own files: container path -> host path, bound read-only into the container before its
   * volumes (which may mount over them), so a program finds what the image would hold where the image
   * would hold it, e.g. `/app/dist`.
   */
  readonly files?: Readonly<Record<string, string>>;
}

export interface ImageMap {
  readonly images: Readonly<Record<string, ImageEntry>>;
}

/** Read on every use so a test can add an image while the agent runs, as a registry would allow. */
export function readImageMap(file: string): ImageMap {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<ImageMap>;
  if (typeof parsed.images !== 'object' || parsed.images === null) {
    throw new Error(`image map ${file}: expected {"images": {...}}`);
  }
  for (const [ref, entry] of Object.entries(parsed.images)) {
    if (!Array.isArray(entry.entrypoint) || entry.entrypoint.some((part) => typeof part !== 'string')) {
      throw new Error(`image map ${file}: images["${ref}"].entrypoint must be an array of strings`);
    }
    for (const [at, from] of Object.entries(entry.files ?? {})) {
      if (!at.startsWith('/') || typeof from !== 'string' || !from.startsWith('/')) {
        throw new Error(
          `image map ${file}: images["${ref}"].files: "${at}" and its source must be absolute paths`,
        );
      }
    }
  }
  return parsed as ImageMap;
}

/**
 * Expands $(VAR) from the container's env the way the kubelet does: $$ escapes a dollar, an
 * unknown variable is left as written.
 */
export function expandVariables(text: string, env: ReadonlyMap<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (match === '$$') return '$';
    return name !== undefined && env.has(name) ? (env.get(name) as string) : match;
  });
}

/** Docker semantics: `command` replaces the entrypoint, `args` replace the (empty) image CMD. */
export function resolveArgv(
  entry: ImageEntry,
  command: readonly string[] | undefined,
  args: readonly string[] | undefined,
  env: ReadonlyMap<string, string>,
): string[] {
  const head = command && command.length > 0 ? command : entry.entrypoint;
  const argv = [...head, ...(args ?? [])].map((part) => expandVariables(part, env));
  if (argv.length === 0) throw new Error('container has no command and its image no entrypoint');
  return argv;
}
