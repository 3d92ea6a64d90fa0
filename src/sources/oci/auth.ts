/**
 * Registry authentication as distribution's token spec describes it: a 401 names a scheme in
 * WWW-Authenticate; Basic takes the config's user and password, Bearer sends them (or nothing, for an
 * anonymous pull) to the realm it names and uses the token it answers with. Tokens are kept per scope for
 * the life of one client, never written anywhere.
 */
import { OciError } from './errors.ts';
import type { RegistryCredential } from './docker-config.ts';
import { describeUrl, type Transport } from './transport.ts';

export interface Challenge {
  readonly scheme: string;
  readonly params: Readonly<Record<string, string>>;
}

/** Parses `Bearer realm="…",service="…",scope="…"`; several challenges in one header are split. */
export function parseChallenges(header: string): Challenge[] {
  const challenges: { scheme: string; params: Record<string, string> }[] = [];
  const input = header.slice(0, 8192);
  let pos = 0;
  const skip = (chars: string) => {
    while (pos < input.length && chars.includes(input[pos]!)) pos++;
  };
  const token = (): string => {
    const start = pos;
    while (pos < input.length && /[A-Za-z0-9!#$%&'*+.^_`|~-]/.test(input[pos]!)) pos++;
    return input.slice(start, pos);
  };
  while (pos < input.length) {
    skip(' ,\t');
    const name = token();
    if (name === '') break;
    const save = pos;
    skip(' \t');
    if (input[pos] === '=') {
      pos++;
      skip(' \t');
      let value = '';
      if (input[pos] === '"') {
        pos++;
        while (pos < input.length && input[pos] !== '"') {
          if (input[pos] === '\\') pos++;
          value += input[pos] ?? '';
          pos++;
        }
        pos++;
      } else {
        const start = pos;
        while (pos < input.length && input[pos] !== ',' && input[pos] !== ' ') pos++;
        value = input.slice(start, pos);
      }
      const current = challenges[challenges.length - 1];
      if (current === undefined) break;
      current.params[name.toLowerCase()] = value;
    } else {
      pos = save;
      challenges.push({ scheme: name.toLowerCase(), params: {} });
    }
  }
  return challenges;
}

export function basicHeader(credential: { readonly username: string; readonly password: string }): string {
  return `Basic ${Buffer.from(`${credential.username}:${credential.password}`, 'utf8').toString('base64')}`;
}

export interface TokenRequest {
  readonly challenge: Challenge;
  readonly scope: string;
  readonly credential: RegistryCredential | undefined;
  readonly maxBytes: number;
  readonly signal?: AbortSignal;
}

export async function fetchBearerToken(transport: Transport, req: TokenRequest): Promise<string> {
  const realm = req.challenge.params['realm'];
  if (realm === undefined)
    throw new OciError('Unauthorized', 'the registry asked for a Bearer token without naming a realm');
  let url: URL;
  try {
    url = new URL(realm);
  } catch {
    throw new OciError('Unauthorized', 'the registry named a token realm that is not a URL');
  }
  const service = req.challenge.params['service'];
  const where = `token endpoint ${describeUrl(url)}`;
  let res;
  if (req.credential?.kind === 'identityToken') {
    // OAuth2 refresh-token grant, as Docker does for an identitytoken.
    const form = new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: req.credential.token,
      client_id: 'ptah',
      scope: req.scope,
    });
    if (service !== undefined) form.set('service', service);
    res = await transport.send({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: Buffer.from(form.toString()),
      maxBytes: req.maxBytes,
      ...(req.signal ? { signal: req.signal } : {}),
    });
  } else {
    if (service !== undefined) url.searchParams.set('service', service);
    url.searchParams.set('scope', req.scope);
    const headers: Record<string, string> = {};
    if (req.credential?.kind === 'basic') headers['authorization'] = basicHeader(req.credential);
    res = await transport.send({
      method: 'GET',
      url,
      headers,
      maxBytes: req.maxBytes,
      ...(req.signal ? { signal: req.signal } : {}),
    });
  }
  if (res.status === 401 || res.status === 403) {
    throw new OciError('Unauthorized', `${where} refused the credentials (HTTP ${res.status})`);
  }
  if (res.status !== 200) throw new OciError('RegistryError', `${where} answered HTTP ${res.status}`);
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(res.body).toString('utf8'));
  } catch {
    throw new OciError('RegistryError', `${where} answered with something that is not JSON`);
  }
  const token =
    typeof doc === 'object' && doc !== null
      ? ((doc as Record<string, unknown>)['token'] ?? (doc as Record<string, unknown>)['access_token'])
      : undefined;
  if (typeof token !== 'string' || token.length === 0) {
    throw new OciError('RegistryError', `${where} answered without a token`);
  }
  return token;
}
