/**
 * Credential redaction for everything the runner prints, frames or writes to the termination message.
 *
 * The secrets are derived from the database URLs the Pod was given (target and, for Plan, dev): the whole
 * URL, its user info, its password in every spelling a program might echo it (raw, percent-decoded,
 * JSON-escaped), and password-like query parameters. On top of that, any `scheme://user:pass@` in the text
 * loses its user info, whatever URL it belongs to.
 */
import { stripUserInfo } from '../protocol/user-info.ts';

export { stripUserInfo };

const REDACTED = '***';
/** Query parameters that carry a secret in libpq and MySQL connection strings. */
const SECRET_QUERY_KEY = /pass|secret|token|key/i;

export interface Redactor {
  /** Returns the text with every known credential replaced. */
  redact(text: string): string;
  /**
   * True when the text holds a known credential verbatim: used to refuse bytes that cannot be altered.
   * Secrets shorter than `minLength` are not looked for: a short password ("test") occurs in ordinary
   * plans and digests by chance, and refusing those would refuse honest output; the URL and its user
   * info, which is how a credential actually leaks, are always long enough.
   */
  leaks(text: string | Uint8Array, minLength?: number): boolean;
}

export function createRedactor(
  urls: readonly (string | undefined)[],
  /** Other credentials (a registry password, a token), redacted in every escaped spelling. */
  plainSecrets: readonly string[] = [],
): Redactor {
  const secrets = new Set<string>(withEscapes(plainSecrets.filter((s) => s !== '')));
  // A whole URL is replaced by its credential-free spelling, so diagnostics still say which database.
  const wholeUrls = new Map<string, string>();
  for (const url of urls) {
    if (url === undefined || url === '') continue;
    for (const s of secretsOfUrl(url)) secrets.add(s);
    const safe = safeSpelling(url);
    if (safe !== undefined) for (const spelling of withEscapes([url])) wholeUrls.set(spelling, safe);
  }
  // Longest first, so a URL is replaced whole before its password inside it is.
  const ordered = [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
  return {
    redact(text: string): string {
      let out = text;
      for (const [url, safe] of wholeUrls) out = out.split(url).join(safe);
      for (const s of ordered) out = out.split(s).join(REDACTED);
      return stripUserInfo(out);
    },
    leaks(text: string | Uint8Array, minLength = 8): boolean {
      const t = typeof text === 'string' ? text : Buffer.from(text).toString('latin1');
      const long = ordered.filter((s) => s.length >= minLength);
      const candidates = typeof text === 'string' ? long : long.map(toLatin1Bytes);
      return candidates.some((s) => t.includes(s));
    },
  };
}

function safeSpelling(raw: string): string | undefined {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.username !== '' || u.password !== '' ? `${REDACTED}@` : ''}${u.host}${u.pathname}`;
  } catch {
    return undefined;
  }
}

function secretsOfUrl(raw: string): string[] {
  const out = [raw];
  let u: URL | undefined;
  try {
    u = new URL(raw);
  } catch {
    // Not a URL we can take apart: the whole string is still redacted.
    return withEscapes(out);
  }
  const at = raw.indexOf('@');
  const schemeEnd = raw.indexOf('://');
  if (at > 0 && schemeEnd >= 0 && at > schemeEnd) out.push(raw.slice(schemeEnd + 3, at));
  if (u.password !== '') {
    out.push(u.password);
    out.push(safeDecode(u.password));
    out.push(encodeURIComponent(safeDecode(u.password)));
  }
  for (const [key, value] of u.searchParams) {
    if (SECRET_QUERY_KEY.test(key) && value !== '') {
      out.push(value);
      out.push(encodeURIComponent(value));
    }
  }
  return withEscapes(out);
}

/** JSON and shell-ish escaping change the spelling of a secret; add those spellings too. */
function withEscapes(values: readonly string[]): string[] {
  const out = new Set<string>();
  for (const v of values) {
    out.add(v);
    out.add(JSON.stringify(v).slice(1, -1));
    out.add(JSON.stringify(JSON.stringify(v).slice(1, -1)).slice(1, -1));
  }
  return [...out];
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function toLatin1Bytes(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}
