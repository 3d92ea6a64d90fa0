/**
 * Ptah's two artifact kinds, as OCI 1.1 image manifests: `artifactType` names the kind, the config is the
 * empty descriptor OCI 1.1 recommends for artifacts, and each file is one layer whose path is its
 * `org.opencontainers.image.title`. The manifest also carries the content digest, computed exactly as for
 * a ConfigMap snapshot, so the same files give the same digest from either source.
 */
import { SOURCE_PATH_PATTERN } from '../../api/ptah-schema.ts';
import { buildManifest, ManifestError, type SourceFileBytes } from '../snapshot-manifest.ts';
import { OciError } from './errors.ts';
import type { ReadLimits } from './limits.ts';
import { MEDIA_TYPE, type Descriptor, type ImageManifest } from './manifest.ts';
import { sha256Of } from './client.ts';

export const ARTIFACT_TYPE = {
  schema: 'application/vnd.ptah.schema.v1',
  migrations: 'application/vnd.ptah.migrations.v1',
} as const;

export type ArtifactKind = keyof typeof ARTIFACT_TYPE;

/** The media type of a file layer ptah pushes; pulls accept any layer type ORAS would write. */
export const FILE_MEDIA_TYPE = 'application/vnd.ptah.file.v1';
export const TITLE_ANNOTATION = 'org.opencontainers.image.title';
export const CONTENT_DIGEST_ANNOTATION = 'dev.ptah.content-digest';
/** ORAS marks a layer that is a packed directory; ptah takes files, one layer each. */
const ORAS_UNPACK_ANNOTATION = 'io.deis.oras.content.unpack';
const MAX_PATH_LENGTH = 253;

export const EMPTY_CONFIG_BYTES = Buffer.from('{}');
export const EMPTY_CONFIG: Descriptor & { readonly data: string } = {
  mediaType: MEDIA_TYPE.ociEmpty,
  digest: sha256Of(EMPTY_CONFIG_BYTES),
  size: EMPTY_CONFIG_BYTES.length,
  data: EMPTY_CONFIG_BYTES.toString('base64'),
};

const safePath = new RegExp(SOURCE_PATH_PATTERN);

export interface EncodedArtifact {
  readonly manifestBytes: Uint8Array;
  readonly contentDigest: string;
  readonly files: readonly SourceFileBytes[];
}

/** Builds the manifest for `files`; the same files and annotations always give the same bytes. */
export function encodeArtifact(
  artifactType: string,
  files: readonly SourceFileBytes[],
  limits: ReadLimits,
  annotations: Readonly<Record<string, string>> = {},
): EncodedArtifact {
  checkFileSet(
    files.map((f) => ({ path: f.path, size: f.bytes.length })),
    limits,
    'push',
  );
  const built = buildManifest(files);
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE.ociManifest,
    artifactType,
    config: EMPTY_CONFIG,
    layers: built.files.map((f) => ({
      mediaType: FILE_MEDIA_TYPE,
      digest: sha256Of(f.bytes),
      size: f.bytes.length,
      annotations: { [TITLE_ANNOTATION]: f.path },
    })),
    annotations: { ...annotations, [CONTENT_DIGEST_ANNOTATION]: built.contentDigest },
  };
  return {
    manifestBytes: Buffer.from(JSON.stringify(manifest)),
    contentDigest: built.contentDigest,
    files: built.files,
  };
}

export interface FileLayer {
  readonly path: string;
  readonly descriptor: Descriptor;
}

/** The layers of a pulled manifest as files, refused before any blob is read if they are unsafe. */
export function fileLayers(manifest: ImageManifest, where: string, limits: ReadLimits): FileLayer[] {
  const layers = manifest.layers.map((descriptor, i): FileLayer => {
    const annotations = descriptor.annotations ?? {};
    if (annotations[ORAS_UNPACK_ANNOTATION] === 'true') {
      throw new OciError(
        'UnsafeContent',
        `${where}: layer ${i} is a packed directory (pushed with "oras push DIR"); push the files one by one`,
      );
    }
    const path = annotations[TITLE_ANNOTATION];
    if (path === undefined)
      throw new OciError(
        'UnsafeContent',
        `${where}: layer ${i} has no ${TITLE_ANNOTATION} annotation naming its file`,
      );
    return { path, descriptor };
  });
  checkFileSet(
    layers.map((l) => ({ path: l.path, size: l.descriptor.size })),
    limits,
    `${where}:`,
  );
  return layers;
}

/** Contents from the layers, in any order; the content digest as a ConfigMap snapshot computes it. */
export function contentDigestOf(files: readonly SourceFileBytes[]): string {
  try {
    return buildManifest(files).contentDigest;
  } catch (error) {
    if (error instanceof ManifestError) throw new OciError('UnsafeContent', error.message);
    throw error;
  }
}

function checkFileSet(
  files: readonly { path: string; size: number }[],
  limits: ReadLimits,
  where: string,
): void {
  if (files.length === 0) throw new OciError('UnsafeContent', `${where} the artifact has no files`);
  if (files.length > limits.files)
    throw new OciError(
      'TooLarge',
      `${where} the artifact has ${files.length} files, over the limit of ${limits.files}`,
    );
  const seen = new Set<string>();
  let total = 0;
  for (const { path, size } of files) {
    const shown = JSON.stringify(path.slice(0, 100));
    if (
      path.length > MAX_PATH_LENGTH ||
      !safePath.test(path) ||
      path.split('/').some((p) => p === '.' || p === '..')
    ) {
      throw new OciError(
        'UnsafeContent',
        `${where} the file path ${shown} is not a safe relative path (letters, digits, "._-", "/" between parts; no "..", no leading "/")`,
      );
    }
    if (seen.has(path)) throw new OciError('UnsafeContent', `${where} two files have the path ${shown}`);
    seen.add(path);
    if (size > limits.fileBytes)
      throw new OciError(
        'TooLarge',
        `${where} the file ${shown} is ${size} bytes, over the limit of ${limits.fileBytes}`,
      );
    total += size;
  }
  if (total > limits.artifactBytes)
    throw new OciError(
      'TooLarge',
      `${where} the files are ${total} bytes together, over the limit of ${limits.artifactBytes}`,
    );
}
