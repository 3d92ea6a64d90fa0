/**
 * OCI references: `[oci://]registry[:port]/repository[:tag][@sha256:<hex>]`, as distribution's reference
 * grammar spells them. A name without a registry part means Docker Hub, whose API answers at
 * registry-1.docker.io, and a one-part Docker Hub name lives under `library/`.
 */
import { OciError } from './errors.ts';

export interface ArtifactReference {
  /** The host (and port) the reference names, e.g. `127.0.0.1:5000` or `docker.io`. */
  readonly registry: string;
  /** The host the API is reached at: `registry` except for Docker Hub. */
  readonly apiHost: string;
  readonly repository: string;
  readonly tag?: string;
  readonly digest?: string;
}

const REPOSITORY_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
const MAX_REFERENCE_LENGTH = 1024;
const DOCKER_HUB = 'docker.io';

export function parseReference(input: string): ArtifactReference {
  const text = input.startsWith('oci://') ? input.slice('oci://'.length) : input;
  const bad = (why: string) =>
    new OciError('InvalidReference', `the reference ${JSON.stringify(truncate(input))} ${why}`);
  if (text.length === 0 || input.length > MAX_REFERENCE_LENGTH)
    throw bad('is empty or longer than 1024 characters');
  if (/[\s?#]/.test(text)) throw bad('holds a space, "?" or "#"');

  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw bad('has a digest that is not sha256:<64 lowercase hex>');
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw bad('has a tag that is not [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}');
  }
  const parts = rest.split('/');
  let registry = DOCKER_HUB;
  const first = parts[0] ?? '';
  if (
    parts.length > 1 &&
    (first.includes('.') || first.includes(':') || first === 'localhost' || first.startsWith('['))
  ) {
    registry = first;
    parts.shift();
  }
  if (!HOST.test(registry)) throw bad('has a registry host that is not a host[:port]');
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift('library');
  if (parts.length === 0 || parts.some((p) => !REPOSITORY_COMPONENT.test(p))) {
    throw bad('has a repository that is not lowercase path components (a-z, 0-9, ".", "_", "-")');
  }
  const repository = parts.join('/');
  if (repository.length > 255) throw bad('has a repository longer than 255 characters');
  return {
    registry,
    apiHost: registry === DOCKER_HUB || registry === 'index.docker.io' ? 'registry-1.docker.io' : registry,
    repository,
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/** `registry/repository[:tag][@digest]`, without the `oci://` scheme. */
export function formatReference(ref: ArtifactReference): string {
  return `${ref.registry}/${ref.repository}${ref.tag !== undefined ? `:${ref.tag}` : ''}${ref.digest !== undefined ? `@${ref.digest}` : ''}`;
}

/** The digest-pinned form `registry/repository@sha256:…`; the tag is dropped, the digest is what counts. */
export function pinnedReference(ref: ArtifactReference, digest: string): string {
  return `${ref.registry}/${ref.repository}@${digest}`;
}

function truncate(s: string): string {
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
