/**
 * Registry credentials from a Docker config.json (the `.dockerconfigjson` key of a
 * `kubernetes.io/dockerconfigjson` Secret). Only `auths` is read: credential helpers would run programs,
 * which a Job must not. An entry's key may be a bare host, a URL, or Docker Hub's legacy index URL.
 */
import { OciError } from './errors.ts';

export type RegistryCredential =
  | { readonly kind: 'basic'; readonly username: string; readonly password: string }
  /** An OAuth2 refresh token (`identitytoken`), exchanged at the token endpoint. */
  | { readonly kind: 'identityToken'; readonly username: string; readonly token: string }
  /** A bearer token to send as it is (`registrytoken`). */
  | { readonly kind: 'registryToken'; readonly token: string };

export type CredentialStore = ReadonlyMap<string, RegistryCredential>;

const MAX_CONFIG_BYTES = 1024 * 1024;

const DOCKER_HUB_KEYS = [
  'https://index.docker.io/v1/',
  'index.docker.io',
  'docker.io',
  'registry-1.docker.io',
];

/** Parses config.json; the message of a refusal never quotes the file, which holds secrets. */
export function parseDockerConfig(text: string): CredentialStore {
  if (text.length > MAX_CONFIG_BYTES) {
    throw new OciError('InvalidConfig', `the registry config is over ${MAX_CONFIG_BYTES} bytes`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new OciError(
      'InvalidConfig',
      'the registry config is not JSON (expected a Docker config.json with "auths")',
    );
  }
  if (!isObject(doc)) throw new OciError('InvalidConfig', 'the registry config is not a JSON object');
  const auths = doc['auths'];
  if (auths === undefined) return new Map();
  if (!isObject(auths))
    throw new OciError('InvalidConfig', 'the registry config\'s "auths" is not an object');
  const store = new Map<string, RegistryCredential>();
  for (const [key, entry] of Object.entries(auths)) {
    const host = hostOfKey(key);
    if (!isObject(entry))
      throw new OciError('InvalidConfig', `the registry config entry for ${host} is not an object`);
    const credential = credentialOf(entry, host);
    if (credential !== undefined) store.set(host, credential);
  }
  return store;
}

export function credentialFor(store: CredentialStore, registry: string): RegistryCredential | undefined {
  const direct = store.get(registry.toLowerCase());
  if (direct !== undefined) return direct;
  if (DOCKER_HUB_KEYS.includes(registry)) {
    for (const key of DOCKER_HUB_KEYS) {
      const hub = store.get(hostOfKey(key));
      if (hub !== undefined) return hub;
    }
  }
  return undefined;
}

function credentialOf(entry: Record<string, unknown>, host: string): RegistryCredential | undefined {
  const str = (name: string): string | undefined => {
    const v = entry[name];
    if (v === undefined || v === '') return undefined;
    if (typeof v !== 'string')
      throw new OciError(
        'InvalidConfig',
        `the registry config entry for ${host} has a "${name}" that is not a string`,
      );
    return v;
  };
  const registryToken = str('registrytoken');
  if (registryToken !== undefined) return { kind: 'registryToken', token: registryToken };
  let username = str('username');
  let password = str('password');
  const auth = str('auth');
  if (auth !== undefined) {
    const decoded = Buffer.from(auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0)
      throw new OciError(
        'InvalidConfig',
        `the registry config entry for ${host} has an "auth" that is not base64 of user:password`,
      );
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  const identityToken = str('identitytoken');
  if (identityToken !== undefined)
    return { kind: 'identityToken', username: username ?? '', token: identityToken };
  if (username === undefined && password === undefined) return undefined;
  return { kind: 'basic', username: username ?? '', password: password ?? '' };
}

/** `https://host:port/v1/` and `host:port` name the same registry. */
function hostOfKey(key: string): string {
  let host = key.trim().toLowerCase();
  host = host.replace(/^[a-z][a-z0-9+.-]*:\/\//, '');
  const slash = host.indexOf('/');
  if (slash >= 0) host = host.slice(0, slash);
  return host;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
