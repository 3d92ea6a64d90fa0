/**
 * Git's pkt-line framing (gitprotocol-common): four hex digits of length (including themselves), then the
 * payload; `0000` is a flush. Only what reading an upload-pack advertisement needs, bounded: a server cannot
 * make us hold more than the caller's byte limit.
 */
import { GitSourceError } from './errors.ts';

export type PktLine = { readonly kind: 'data'; readonly payload: Buffer } | { readonly kind: 'flush' };

/** The largest pkt-line the protocol allows (65520 bytes, 4 of them the length). */
export const MAX_PKT_LINE = 65520;

/**
 * Splits `bytes` into pkt-lines up to and including the first flush after `flushesBefore` earlier flushes.
 * Returns undefined while the buffer does not yet hold that flush (more bytes needed).
 */
export function readPktLines(bytes: Buffer, flushes = 1): { lines: PktLine[]; consumed: number } | undefined {
  const lines: PktLine[] = [];
  let offset = 0;
  let seen = 0;
  while (offset + 4 <= bytes.length) {
    const head = bytes.subarray(offset, offset + 4).toString('latin1');
    if (!/^[0-9a-f]{4}$/.test(head))
      throw new GitSourceError(
        'ProtocolError',
        `the server sent a malformed pkt-line length "${printable(head)}"`,
      );
    const length = parseInt(head, 16);
    if (length === 0) {
      lines.push({ kind: 'flush' });
      offset += 4;
      if (++seen === flushes) return { lines, consumed: offset };
      continue;
    }
    if (length < 4 || length > MAX_PKT_LINE)
      throw new GitSourceError('ProtocolError', `the server sent a pkt-line of impossible length ${length}`);
    if (offset + length > bytes.length) return undefined;
    lines.push({ kind: 'data', payload: bytes.subarray(offset + 4, offset + length) });
    offset += length;
  }
  return undefined;
}

function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?');
}
