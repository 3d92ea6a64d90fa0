/**
 * Resolve, pull and push of Ptah artifacts: the operations the CLI and the operator's Jobs call.
 */
import { artifactTypeOf } from './manifest.ts';
import { RegistryClient, type FetchedManifest, type RegistryAccess } from './client.ts';
import {
  CONTENT_DIGEST_ANNOTATION,
  EMPTY_CONFIG_BYTES,
  contentDigestOf,
  encodeArtifact,
  fileLayers,
} from './artifact-format.ts';
import { OciError } from './errors.ts';
import { DEFAULT_LIMITS, type ReadLimits } from './limits.ts';
import { parseReference, pinnedReference, type ArtifactReference } from './reference.ts';
import { MEDIA_TYPE } from './manifest.ts';

export interface ResolvedArtifact {
  /** The reference as it was asked for. */
  readonly requestedReference: string;
  /** `registry/repository@sha256:…` */
  readonly resolvedReference: string;
  readonly digest: string;
  readonly mediaType: string;
  readonly artifactType: string;
  /** The manifest's size in bytes. */
  readonly size: number;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface PulledFile {
  readonly path: string;
  readonly content: Uint8Array;
}

export interface PulledArtifact {
  readonly artifact: ResolvedArtifact;
  /** Sorted by path. */
  readonly files: readonly PulledFile[];
  readonly contentDigest: string;
}

export interface PushedArtifact {
  readonly artifact: ResolvedArtifact;
  readonly contentDigest: string;
  readonly files: readonly string[];
}

export function describeManifest(
  requested: string,
  ref: ArtifactReference,
  fetched: FetchedManifest,
): ResolvedArtifact {
  return {
    requestedReference: requested,
    resolvedReference: pinnedReference(ref, fetched.digest),
    digest: fetched.digest,
    mediaType: fetched.mediaType,
    artifactType: artifactTypeOf(fetched.manifest),
    size: fetched.bytes.length,
    annotations: fetched.manifest.annotations ?? {},
  };
}

/** Reads the manifest a reference names (by digest when it has one) and reports its digest and types. */
export async function resolveArtifact(
  reference: string,
  access: RegistryAccess,
  signal?: AbortSignal,
): Promise<ResolvedArtifact> {
  const ref = parseReference(reference);
  const client = new RegistryClient(access);
  const fetched = await client.getManifest(ref, ref.digest ?? ref.tag ?? 'latest', signal);
  return describeManifest(reference, ref, fetched);
}

/** A digest-pinned reference, refused otherwise: what is pulled or verified is never a moving tag. */
export function parsePinnedReference(reference: string): ArtifactReference & { readonly digest: string } {
  const ref = parseReference(reference);
  if (ref.digest === undefined) {
    throw new OciError(
      'InvalidReference',
      `the reference ${JSON.stringify(reference.slice(0, 200))} has no digest; pin it as REPOSITORY@sha256:… (ptah oci resolve prints it)`,
    );
  }
  return { ...ref, digest: ref.digest };
}

export async function pullArtifact(
  pinnedRef: string,
  access: RegistryAccess,
  expectedArtifactType: string,
  signal?: AbortSignal,
  limits: ReadLimits = DEFAULT_LIMITS,
): Promise<PulledArtifact> {
  const ref = parsePinnedReference(pinnedRef);
  const client = new RegistryClient(access, limits);
  const fetched = await client.getManifest(ref, ref.digest, signal);
  const artifact = describeManifest(pinnedRef, ref, fetched);
  const where = artifact.resolvedReference;
  if (fetched.manifest.kind !== 'manifest') {
    throw new OciError(
      'WrongArtifactType',
      `${where} is an image index, not an artifact manifest of type ${expectedArtifactType}`,
    );
  }
  if (artifact.artifactType !== expectedArtifactType) {
    throw new OciError(
      'WrongArtifactType',
      `${where} has the artifact type ${JSON.stringify(artifact.artifactType)}, not ${expectedArtifactType}`,
    );
  }
  const layers = fileLayers(fetched.manifest, where, limits);
  const files: PulledFile[] = [];
  for (const layer of layers) {
    files.push({
      path: layer.path,
      content: await client.getBlob(ref, layer.descriptor, limits.fileBytes, signal),
    });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const contentDigest = contentDigestOf(files.map((f) => ({ path: f.path, bytes: f.content })));
  const recorded = artifact.annotations[CONTENT_DIGEST_ANNOTATION];
  if (recorded !== undefined && recorded !== contentDigest) {
    throw new OciError(
      'DigestMismatch',
      `${where}: the files have the content digest ${contentDigest}, but the manifest records ${recorded.slice(0, 80)}`,
    );
  }
  return { artifact, files, contentDigest };
}

export interface PushOptions {
  readonly annotations?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  readonly limits?: ReadLimits;
}

/** Uploads the files as blobs and the manifest under the reference's tag. */
export async function pushArtifact(
  reference: string,
  artifactType: string,
  files: readonly { readonly path: string; readonly bytes: Uint8Array }[],
  access: RegistryAccess,
  options: PushOptions = {},
): Promise<PushedArtifact> {
  const ref = parseReference(reference);
  if (ref.tag === undefined || ref.digest !== undefined) {
    throw new OciError(
      'InvalidReference',
      `push needs a reference with a tag and no digest, e.g. registry.example/team/schema:v1 (got ${JSON.stringify(reference.slice(0, 200))})`,
    );
  }
  const limits = options.limits ?? DEFAULT_LIMITS;
  const encoded = encodeArtifact(artifactType, files, limits, options.annotations);
  const client = new RegistryClient(access, limits);
  await client.pushBlob(ref, EMPTY_CONFIG_BYTES, options.signal);
  for (const file of encoded.files) await client.pushBlob(ref, file.bytes, options.signal);
  const digest = await client.putManifest(
    ref,
    ref.tag,
    encoded.manifestBytes,
    MEDIA_TYPE.ociManifest,
    options.signal,
  );
  return {
    artifact: {
      requestedReference: reference,
      resolvedReference: pinnedReference(ref, digest),
      digest,
      mediaType: MEDIA_TYPE.ociManifest,
      artifactType,
      size: encoded.manifestBytes.length,
      annotations: { ...options.annotations, [CONTENT_DIGEST_ANNOTATION]: encoded.contentDigest },
    },
    contentDigest: encoded.contentDigest,
    files: encoded.files.map((f) => f.path),
  };
}
