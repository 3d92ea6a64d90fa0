/**
 * A small OCI distribution client: manifests and blobs by tag or digest, blob and manifest upload,
 * referrers (the API, then the `sha256-<hex>` tag the spec names as its fallback). Every byte it returns
 * has been checked against the digest it was asked for, or, for a tag, against the digest it reports;
 * every body it reads has a ceiling from ReadLimits.
 */
import { createHash } from 'node:crypto';
import { basicHeader, fetchBearerToken, parseChallenges } from './auth.ts';
import {
  credentialFor,
  parseDockerConfig,
  type CredentialStore,
  type RegistryCredential,
} from './docker-config.ts';
import { OciError } from './errors.ts';
import { DEFAULT_LIMITS, type ReadLimits } from './limits.ts';
import {
  MANIFEST_ACCEPT,
  MEDIA_TYPE,
  decodeManifest,
  decodeReferrers,
  type DecodedManifest,
  type Descriptor,
} from './manifest.ts';
import type { ArtifactReference } from './reference.ts';
import { Transport, describeUrl, type HttpResponse } from './transport.ts';

export interface RegistryAccess {
  /** The content of a Docker config.json (a `kubernetes.io/dockerconfigjson` Secret's key). */
  readonly dockerConfigJson?: string;
  /** PEM of a CA to trust besides the system roots. */
  readonly caPem?: string;
  /** Reach the registry over plain HTTP; never implied. */
  readonly plainHttp?: boolean;
}

export interface FetchedManifest {
  readonly digest: string;
  readonly mediaType: string;
  readonly bytes: Uint8Array;
  readonly manifest: DecodedManifest;
}

export interface Referrers {
  readonly descriptors: readonly Descriptor[];
  /** Which way the list was read: the referrers API or the fallback tag. */
  readonly via: 'api' | 'tag';
}

type Action = 'pull' | 'push';

interface SendOptions {
  readonly method: 'GET' | 'HEAD' | 'PUT' | 'POST';
  readonly path: string;
  readonly url?: URL;
  readonly headers?: Record<string, string>;
  readonly body?: Uint8Array;
  readonly maxBytes: number;
  readonly action: Action;
  readonly signal?: AbortSignal | undefined;
}

export function sha256Of(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

export class RegistryClient {
  private readonly transport: Transport;
  private readonly credentials: CredentialStore;
  /** Authorization header per `host scope`, learned from the first challenge. */
  private readonly authorizations = new Map<string, string>();

  constructor(
    access: RegistryAccess,
    readonly limits: ReadLimits = DEFAULT_LIMITS,
  ) {
    this.transport = new Transport({
      ...(access.caPem !== undefined ? { caPem: access.caPem } : {}),
      ...(access.plainHttp !== undefined ? { plainHttp: access.plainHttp } : {}),
    });
    this.credentials =
      access.dockerConfigJson !== undefined ? parseDockerConfig(access.dockerConfigJson) : new Map();
  }

  /** A manifest by tag or digest, its digest checked (against the one asked for, or the one reported). */
  async getManifest(
    ref: ArtifactReference,
    tagOrDigest: string,
    signal?: AbortSignal,
  ): Promise<FetchedManifest> {
    const res = await this.send(ref, {
      method: 'GET',
      path: `manifests/${tagOrDigest}`,
      headers: { accept: MANIFEST_ACCEPT },
      maxBytes: this.limits.manifestBytes,
      action: 'pull',
      signal,
    });
    this.expectOk(res, ref, `the manifest ${tagOrDigest}`);
    const digest = sha256Of(res.body);
    const wanted = tagOrDigest.startsWith('sha256:') ? tagOrDigest : undefined;
    const reported = res.headers['docker-content-digest'];
    if (wanted !== undefined && digest !== wanted) {
      throw new OciError(
        'DigestMismatch',
        `${ref.registry}/${ref.repository}: the manifest served for ${wanted} has the digest ${digest}`,
      );
    }
    if (
      wanted === undefined &&
      reported !== undefined &&
      reported.startsWith('sha256:') &&
      reported !== digest
    ) {
      throw new OciError(
        'DigestMismatch',
        `${ref.registry}/${ref.repository}:${tagOrDigest}: the registry reports ${reported} but the bytes have ${digest}`,
      );
    }
    const manifest = decodeManifest(res.body, res.headers['content-type']);
    return { digest, mediaType: manifest.mediaType, bytes: res.body, manifest };
  }

  /**
   * What the registry says about a manifest without its bytes: for existence checks only. Nothing read
   * this way is trusted as content; resolve reads the manifest with GET so its digest is computed here.
   */
  async headManifest(
    ref: ArtifactReference,
    tagOrDigest: string,
    signal?: AbortSignal,
  ): Promise<
    { digest: string | undefined; mediaType: string | undefined; size: number | undefined } | undefined
  > {
    const res = await this.send(ref, {
      method: 'HEAD',
      path: `manifests/${tagOrDigest}`,
      headers: { accept: MANIFEST_ACCEPT },
      maxBytes: 0,
      action: 'pull',
      signal,
    });
    if (res.status === 404) return undefined;
    this.expectOk(res, ref, `the manifest ${tagOrDigest}`);
    const digest = res.headers['docker-content-digest'];
    if (tagOrDigest.startsWith('sha256:') && digest !== undefined && digest !== tagOrDigest) {
      throw new OciError(
        'DigestMismatch',
        `${ref.registry}/${ref.repository}: the registry reports ${digest} for the manifest ${tagOrDigest}`,
      );
    }
    const length = Number(res.headers['content-length']);
    return {
      digest,
      mediaType: res.headers['content-type']?.split(';')[0]?.trim(),
      size: Number.isSafeInteger(length) ? length : undefined,
    };
  }

  /** A blob by its descriptor, refused if longer than `maxBytes` or the descriptor's size, or if its digest differs. */
  async getBlob(
    ref: ArtifactReference,
    descriptor: Descriptor,
    maxBytes: number,
    signal?: AbortSignal,
  ): Promise<Uint8Array> {
    if (!descriptor.digest.startsWith('sha256:')) {
      throw new OciError(
        'InvalidManifest',
        `${ref.registry}/${ref.repository}: the blob ${descriptor.digest.slice(0, 80)} is not addressed by sha256`,
      );
    }
    if (descriptor.size > maxBytes) {
      throw new OciError(
        'TooLarge',
        `${ref.registry}/${ref.repository}: the blob ${descriptor.digest} is ${descriptor.size} bytes, over the limit of ${maxBytes}`,
      );
    }
    const res = await this.send(ref, {
      method: 'GET',
      path: `blobs/${descriptor.digest}`,
      maxBytes: descriptor.size,
      action: 'pull',
      signal,
    });
    this.expectOk(res, ref, `the blob ${descriptor.digest}`);
    const digest = sha256Of(res.body);
    if (digest !== descriptor.digest || res.body.length !== descriptor.size) {
      throw new OciError(
        'DigestMismatch',
        `${ref.registry}/${ref.repository}: the blob served for ${descriptor.digest} (${descriptor.size} bytes) has the digest ${digest} (${res.body.length} bytes)`,
      );
    }
    return res.body;
  }

  async blobExists(ref: ArtifactReference, digest: string, signal?: AbortSignal): Promise<boolean> {
    const res = await this.send(ref, {
      method: 'HEAD',
      path: `blobs/${digest}`,
      maxBytes: 0,
      action: 'push',
      signal,
    });
    if (res.status === 200) return true;
    if (res.status === 404) return false;
    return this.refuse(res, ref, `the blob ${digest}`);
  }

  /** Uploads a blob in one request (POST then PUT), unless the registry has it already. */
  async pushBlob(ref: ArtifactReference, bytes: Uint8Array, signal?: AbortSignal): Promise<string> {
    const digest = sha256Of(bytes);
    if (await this.blobExists(ref, digest, signal)) return digest;
    const start = await this.send(ref, {
      method: 'POST',
      path: 'blobs/uploads/',
      maxBytes: this.limits.errorBytes,
      action: 'push',
      signal,
    });
    const location = start.headers['location'];
    if (start.status !== 202 || location === undefined) return this.refuse(start, ref, 'a blob upload');
    const url = new URL(location, this.baseUrl(ref));
    url.searchParams.set('digest', digest);
    const done = await this.send(ref, {
      method: 'PUT',
      path: '',
      url,
      headers: { 'content-type': 'application/octet-stream' },
      body: bytes,
      maxBytes: this.limits.errorBytes,
      action: 'push',
      signal,
    });
    if (done.status !== 201) return this.refuse(done, ref, `the blob ${digest}`);
    return digest;
  }

  async putManifest(
    ref: ArtifactReference,
    tagOrDigest: string,
    bytes: Uint8Array,
    mediaType: string,
    signal?: AbortSignal,
  ): Promise<string> {
    const digest = sha256Of(bytes);
    const res = await this.send(ref, {
      method: 'PUT',
      path: `manifests/${tagOrDigest}`,
      headers: { 'content-type': mediaType },
      body: bytes,
      maxBytes: this.limits.errorBytes,
      action: 'push',
      signal,
    });
    if (res.status !== 201) return this.refuse(res, ref, `the manifest ${tagOrDigest}`);
    const reported = res.headers['docker-content-digest'];
    if (reported !== undefined && reported !== digest) {
      throw new OciError(
        'DigestMismatch',
        `${ref.registry}/${ref.repository}: the registry stored the manifest as ${reported}, not ${digest}`,
      );
    }
    return digest;
  }

  /**
   * The manifests that name `digest` as their subject. A registry without the referrers API answers 404;
   * then the index tagged `sha256-<hex>` is the list (OCI distribution spec, "referrers tag schema").
   */
  async referrers(
    ref: ArtifactReference,
    digest: string,
    artifactType?: string,
    signal?: AbortSignal,
  ): Promise<Referrers> {
    const url = new URL(`referrers/${digest}`, this.repositoryUrl(ref));
    if (artifactType !== undefined) url.searchParams.set('artifactType', artifactType);
    const res = await this.send(ref, {
      method: 'GET',
      path: '',
      url,
      headers: { accept: MEDIA_TYPE.ociIndex },
      maxBytes: this.limits.manifestBytes,
      action: 'pull',
      signal,
    });
    const contentType = res.headers['content-type']?.split(';')[0]?.trim();
    if (res.status === 200 && contentType === MEDIA_TYPE.ociIndex) {
      const all = decodeReferrers(res.body);
      return { descriptors: filterByType(all, artifactType), via: 'api' };
    }
    if (res.status !== 404 && res.status !== 200) return this.refuse(res, ref, `the referrers of ${digest}`);
    const fallback = await this.getManifestIfPresent(ref, referrersTag(digest), signal);
    if (fallback === undefined) return { descriptors: [], via: 'tag' };
    if (fallback.manifest.kind !== 'index') {
      throw new OciError(
        'InvalidManifest',
        `${ref.registry}/${ref.repository}: the referrers tag ${referrersTag(digest)} is not an image index`,
      );
    }
    return { descriptors: filterByType(fallback.manifest.manifests, artifactType), via: 'tag' };
  }

  /** A manifest by tag, or undefined when the tag does not exist. */
  async getManifestIfPresent(
    ref: ArtifactReference,
    tag: string,
    signal?: AbortSignal,
  ): Promise<FetchedManifest | undefined> {
    try {
      return await this.getManifest(ref, tag, signal);
    } catch (error) {
      if (error instanceof OciError && error.reason === 'NotFound') return undefined;
      throw error;
    }
  }

  private baseUrl(ref: ArtifactReference): URL {
    return new URL(`${this.transport.plainHttpAllowed ? 'http' : 'https'}://${ref.apiHost}/v2/`);
  }

  private repositoryUrl(ref: ArtifactReference): URL {
    return new URL(`${ref.repository}/`, this.baseUrl(ref));
  }

  private async send(ref: ArtifactReference, options: SendOptions): Promise<HttpResponse> {
    const url = options.url ?? new URL(options.path, this.repositoryUrl(ref));
    const scope = `repository:${ref.repository}:${options.action === 'push' ? 'pull,push' : 'pull'}`;
    const key = `${ref.apiHost} ${scope}`;
    const request = (authorization: string | undefined) =>
      this.transport.send({
        method: options.method,
        url,
        headers: { ...options.headers, ...(authorization !== undefined ? { authorization } : {}) },
        ...(options.body !== undefined ? { body: options.body } : {}),
        maxBytes: Math.max(options.maxBytes, this.limits.errorBytes),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    const known = this.authorizations.get(key);
    let res = await request(known);
    if (res.status !== 401) return this.bounded(res, options.maxBytes, ref, url, options.method);
    const authorization = await this.authorize(ref, res, scope, options.signal);
    this.authorizations.set(key, authorization);
    res = await request(authorization);
    if (res.status === 401) {
      throw new OciError(
        'Unauthorized',
        `${ref.registry}/${ref.repository}: the registry refused the credentials for ${scope} (HTTP 401)`,
      );
    }
    return this.bounded(res, options.maxBytes, ref, url, options.method);
  }

  /** The body ceiling of a success; an error body may use the (small) error ceiling instead. */
  private bounded(
    res: HttpResponse,
    maxBytes: number,
    ref: ArtifactReference,
    url: URL,
    method: string,
  ): HttpResponse {
    if (res.status >= 200 && res.status < 300 && res.body.length > maxBytes) {
      throw new OciError(
        'TooLarge',
        `${method} ${describeUrl(url)}: the answer is over the limit of ${maxBytes} bytes (${ref.repository})`,
      );
    }
    return res;
  }

  private async authorize(
    ref: ArtifactReference,
    res: HttpResponse,
    scope: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const challenges = parseChallenges(res.headers['www-authenticate'] ?? '');
    const credential =
      credentialFor(this.credentials, ref.registry) ?? credentialFor(this.credentials, ref.apiHost);
    const bearer = challenges.find((c) => c.scheme === 'bearer');
    if (bearer !== undefined) {
      if (credential?.kind === 'registryToken') return `Bearer ${credential.token}`;
      const token = await fetchBearerToken(this.transport, {
        challenge: bearer,
        scope,
        credential,
        maxBytes: this.limits.tokenBytes,
        ...(signal ? { signal } : {}),
      });
      return `Bearer ${token}`;
    }
    if (challenges.some((c) => c.scheme === 'basic')) {
      const basic = basicCredential(credential);
      if (basic === undefined) {
        throw new OciError(
          'Unauthorized',
          `${ref.registry}/${ref.repository}: the registry asks for credentials and the registry config has none for ${ref.registry}`,
        );
      }
      return basicHeader(basic);
    }
    throw new OciError(
      'Unauthorized',
      `${ref.registry}/${ref.repository}: the registry answered 401 without a Basic or Bearer challenge`,
    );
  }

  private expectOk(res: HttpResponse, ref: ArtifactReference, what: string): void {
    if (res.status !== 200) this.refuse(res, ref, what);
  }

  private refuse(res: HttpResponse, ref: ArtifactReference, what: string): never {
    const code = registryErrorCode(res.body);
    const where = `${ref.registry}/${ref.repository}: ${what}`;
    const detail = code !== undefined ? ` (${code})` : '';
    if (res.status === 404) throw new OciError('NotFound', `${where} does not exist${detail}`);
    if (res.status === 401 || res.status === 403)
      throw new OciError('Unauthorized', `${where}: access refused, HTTP ${res.status}${detail}`);
    throw new OciError('RegistryError', `${where}: HTTP ${res.status}${detail}`);
  }
}

function basicCredential(
  credential: RegistryCredential | undefined,
): { username: string; password: string } | undefined {
  return credential?.kind === 'basic' ? credential : undefined;
}

export function referrersTag(digest: string): string {
  return digest.replace(':', '-');
}

function filterByType(
  descriptors: readonly Descriptor[],
  artifactType: string | undefined,
): readonly Descriptor[] {
  return artifactType === undefined
    ? descriptors
    : descriptors.filter((d) => d.artifactType === artifactType);
}

/** The first error code of a registry's JSON error body; the message is left out (it may echo input). */
function registryErrorCode(body: Uint8Array): string | undefined {
  try {
    const doc = JSON.parse(Buffer.from(body).toString('utf8')) as { errors?: { code?: unknown }[] };
    const code = doc.errors?.[0]?.code;
    return typeof code === 'string' && /^[A-Z_]{1,64}$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}
