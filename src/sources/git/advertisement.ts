/**
 * The protocol-v0 upload-pack advertisement: every ref the server shows with the object it points at, the
 * peeled commit of each annotated tag (`refs/tags/x^{}`), and the capabilities on the first line. Only v0
 * states `allow-tip-sha1-in-want` / `allow-reachable-sha1-in-want` (uploadpack.allowTipSHA1InWant,
 * allowReachableSHA1InWant, and allowAnySHA1InWant, which sets both), and those decide whether a commit may be
 * asked for by its id, so the advertisement is read in v0 even though the fetch itself may speak v2.
 */
import { GitSourceError } from './errors.ts';
import type { PktLine } from './pkt-line.ts';

export interface Advertisement {
  /** Ref name → the object it points at (a commit, or a tag object for an annotated tag). */
  readonly refs: ReadonlyMap<string, string>;
  /** Annotated tag name → the commit it peels to. */
  readonly peeled: ReadonlyMap<string, string>;
  readonly capabilities: ReadonlySet<string>;
  /** The object format the server's ids are in. */
  readonly objectFormat: 'sha1' | 'sha256';
}

/** At most this many refs are kept; a server advertising more is refused rather than held in memory. */
export const MAX_ADVERTISED_REFS = 100_000;

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * Parses the advertisement lines. Over smart HTTP the reply starts with `# service=git-upload-pack` and a
 * flush; pass `smartHttp` so that header is expected and skipped.
 */
export function parseAdvertisement(lines: readonly PktLine[], smartHttp: boolean): Advertisement {
  let rest = lines;
  if (smartHttp) {
    const [first, second] = rest;
    if (
      first?.kind !== 'data' ||
      trimLf(first.payload) !== '# service=git-upload-pack' ||
      second?.kind !== 'flush'
    )
      throw new GitSourceError(
        'ProtocolError',
        'the server did not answer as a smart-HTTP git-upload-pack (is the URL a Git repository?)',
      );
    rest = rest.slice(2);
  }
  const refs = new Map<string, string>();
  const peeled = new Map<string, string>();
  let capabilities = new Set<string>();
  let first = true;
  for (const line of rest) {
    if (line.kind === 'flush') break;
    let text = line.payload.toString('latin1');
    if (text.endsWith('\n')) text = text.slice(0, -1);
    if (first) {
      const nul = text.indexOf('\0');
      if (nul >= 0) {
        capabilities = new Set(
          text
            .slice(nul + 1)
            .split(' ')
            .filter((c) => c.length > 0),
        );
        text = text.slice(0, nul);
      }
      first = false;
      if (text.startsWith('version ')) continue;
    }
    const space = text.indexOf(' ');
    const oid = text.slice(0, space);
    const name = text.slice(space + 1);
    if (space < 0 || !OID.test(oid) || name.length === 0)
      throw new GitSourceError(
        'ProtocolError',
        `the server advertised a malformed ref line "${text.slice(0, 120)}"`,
      );
    // An empty repository advertises only "capabilities^{}" with the zero id.
    if (name === 'capabilities^{}') continue;
    if (name.endsWith('^{}')) peeled.set(name.slice(0, -3), oid);
    else refs.set(name, oid);
    if (refs.size + peeled.size > MAX_ADVERTISED_REFS)
      throw new GitSourceError('TooLarge', `the server advertises more than ${MAX_ADVERTISED_REFS} refs`);
  }
  const format = [...capabilities]
    .find((c) => c.startsWith('object-format='))
    ?.slice('object-format='.length);
  return { refs, peeled, capabilities, objectFormat: format === 'sha256' ? 'sha256' : 'sha1' };
}

/** Whether the server gives a commit no advertised ref points at, when asked for by its id. */
export function givesReachableCommitsById(ad: Advertisement): boolean {
  return ad.capabilities.has('allow-reachable-sha1-in-want');
}

function trimLf(b: Buffer): string {
  const s = b.toString('latin1');
  return s.endsWith('\n') ? s.slice(0, -1) : s;
}
