/**
 * Decoders for what a registry returns as JSON: image manifests, image indexes (a referrers answer is an
 * index too) and Docker's schema 2 equivalents. They take bytes already bounded by the transport, check
 * every field they hand on, and throw OciError('InvalidManifest') for anything else, never a TypeError.
 */
import { OciError } from './errors.ts';

export const MEDIA_TYPE = {
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  ociEmpty: 'application/vnd.oci.empty.v1+json',
} as const;

export const MANIFEST_ACCEPT = [
  MEDIA_TYPE.ociManifest,
  MEDIA_TYPE.ociIndex,
  MEDIA_TYPE.dockerManifest,
  MEDIA_TYPE.dockerList,
].join(', ');

export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly artifactType?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface ImageManifest {
  readonly kind: 'manifest';
  readonly mediaType: string;
  readonly artifactType?: string;
  readonly config: Descriptor;
  readonly layers: readonly Descriptor[];
  readonly subject?: Descriptor;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface ImageIndex {
  readonly kind: 'index';
  readonly mediaType: string;
  readonly artifactType?: string;
  readonly manifests: readonly Descriptor[];
  readonly subject?: Descriptor;
  readonly annotations?: Readonly<Record<string, string>>;
}

export type DecodedManifest = ImageManifest | ImageIndex;

const MAX_ENTRIES = 10_000;
const MAX_ANNOTATIONS = 256;
const MAX_STRING = 64 * 1024;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;
const MEDIA_TYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

/**
 * The artifact type as OCI 1.1 defines it: `artifactType`, else the config's media type (the older
 * convention), except the empty config, which says nothing.
 */
export function artifactTypeOf(manifest: DecodedManifest): string {
  if (manifest.artifactType !== undefined) return manifest.artifactType;
  if (manifest.kind === 'manifest' && manifest.config.mediaType !== MEDIA_TYPE.ociEmpty)
    return manifest.config.mediaType;
  return '';
}

/** `contentType` is the response's Content-Type; the document's own mediaType wins when both are present. */
export function decodeManifest(bytes: Uint8Array, contentType?: string): DecodedManifest {
  const doc = parseJsonObject(bytes, 'manifest');
  const declared = optionalString(doc, 'mediaType', 'manifest');
  const header = contentType?.split(';')[0]?.trim();
  const mediaType =
    declared ?? (header && header !== 'application/json' ? header : undefined) ?? inferMediaType(doc);
  if (doc['schemaVersion'] !== 2) fail('manifest', 'has a schemaVersion that is not 2');
  const common = {
    mediaType,
    ...optionalField('artifactType', optionalMediaType(doc, 'artifactType', 'manifest')),
    ...optionalField(
      'subject',
      doc['subject'] === undefined ? undefined : decodeDescriptor(doc['subject'], 'manifest subject'),
    ),
    ...optionalField('annotations', decodeAnnotations(doc['annotations'], 'manifest')),
  };
  if (mediaType === MEDIA_TYPE.ociManifest || mediaType === MEDIA_TYPE.dockerManifest) {
    const layers = doc['layers'];
    if (!Array.isArray(layers)) fail('manifest', 'has no "layers" array');
    if (layers.length > MAX_ENTRIES) fail('manifest', `has more than ${MAX_ENTRIES} layers`);
    return {
      kind: 'manifest',
      ...common,
      config: decodeDescriptor(doc['config'], 'manifest config'),
      layers: layers.map((l, i) => decodeDescriptor(l, `manifest layer ${i}`)),
    };
  }
  if (mediaType === MEDIA_TYPE.ociIndex || mediaType === MEDIA_TYPE.dockerList) {
    return { kind: 'index', ...common, manifests: decodeIndexEntries(doc) };
  }
  return fail(
    'manifest',
    `has the media type ${JSON.stringify(mediaType.slice(0, 200))}, which is neither an image manifest nor an index`,
  );
}

/** A referrers answer: an image index whose entries carry artifactType and annotations. */
export function decodeReferrers(bytes: Uint8Array): readonly Descriptor[] {
  const doc = parseJsonObject(bytes, 'referrers list');
  if (doc['schemaVersion'] !== 2) fail('referrers list', 'has a schemaVersion that is not 2');
  return decodeIndexEntries(doc);
}

function decodeIndexEntries(doc: Record<string, unknown>): Descriptor[] {
  const manifests = doc['manifests'] ?? [];
  if (!Array.isArray(manifests)) fail('index', 'has a "manifests" that is not an array');
  if (manifests.length > MAX_ENTRIES) fail('index', `has more than ${MAX_ENTRIES} entries`);
  return manifests.map((m, i) => decodeDescriptor(m, `index entry ${i}`));
}

export function decodeDescriptor(value: unknown, what: string): Descriptor {
  if (!isObject(value)) fail(what, 'is not an object');
  const mediaType = optionalMediaType(value, 'mediaType', what);
  if (mediaType === undefined) fail(what, 'has no mediaType');
  const digest = value['digest'];
  if (typeof digest !== 'string' || digest.length > 200 || !DIGEST.test(digest))
    fail(what, 'has no valid digest');
  const size = value['size'];
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
    fail(what, 'has a size that is not a non-negative integer');
  return {
    mediaType,
    digest,
    size,
    ...optionalField('artifactType', optionalMediaType(value, 'artifactType', what)),
    ...optionalField('annotations', decodeAnnotations(value['annotations'], what)),
  };
}

function decodeAnnotations(value: unknown, what: string): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) fail(what, 'has annotations that are not an object');
  const entries = Object.entries(value);
  if (entries.length > MAX_ANNOTATIONS) fail(what, `has more than ${MAX_ANNOTATIONS} annotations`);
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (typeof v !== 'string')
      fail(what, `has an annotation ${JSON.stringify(k.slice(0, 100))} that is not a string`);
    if (k.length > MAX_STRING || v.length > MAX_STRING) fail(what, 'has an annotation over 64 KiB');
    // A plain object keyed by untrusted names: define, never assign, so "__proto__" stays a key.
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: false, configurable: false });
  }
  return out;
}

function inferMediaType(doc: Record<string, unknown>): string {
  // OCI 1.0 made mediaType optional; the fields say which document this is.
  if (Array.isArray(doc['manifests'])) return MEDIA_TYPE.ociIndex;
  if (doc['config'] !== undefined) return MEDIA_TYPE.ociManifest;
  return fail('manifest', 'has no mediaType and neither "config" nor "manifests"');
}

function parseJsonObject(bytes: Uint8Array, what: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return fail(what, 'is not UTF-8 JSON');
  }
  if (!isObject(doc)) fail(what, 'is not a JSON object');
  return doc;
}

function optionalString(doc: Record<string, unknown>, key: string, what: string): string | undefined {
  const v = doc[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length > MAX_STRING) fail(what, `has a "${key}" that is not a string`);
  return v;
}

function optionalMediaType(doc: Record<string, unknown>, key: string, what: string): string | undefined {
  const v = optionalString(doc, key, what);
  if (v !== undefined && !MEDIA_TYPE_PATTERN.test(v)) fail(what, `has a "${key}" that is not a media type`);
  return v;
}

function optionalField<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(what: string, why: string): never {
  throw new OciError('InvalidManifest', `the ${what} ${why}`);
}
