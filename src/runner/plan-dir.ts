/**
 * Rebuilds plan bytes from the projected chunk files `000.plan`, `001.plan`, … and checks them against the
 * content digest the Apply is bound to. The manager checked names, UIDs, order and per-chunk hashes before
 * dispatch; this is the runner's own check, immediately before the bytes are executed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Digest } from '../api/digest.ts';

const MAX_CHUNKS = 16;
const CHUNK_NAME = /^(\d{3})\.plan$/;

export type PlanDirResult =
  { readonly ok: true; readonly bytes: Buffer } | { readonly ok: false; readonly reason: string };

export function readPlanDir(dir: string, expectedDigest: string, maxBytes: number): PlanDirResult {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => !n.startsWith('..'));
  } catch {
    return { ok: false, reason: 'the plan directory cannot be read' };
  }
  const chunks = names.filter((n) => CHUNK_NAME.test(n)).sort();
  if (chunks.length === 0) return { ok: false, reason: 'the plan directory holds no chunk' };
  if (chunks.length > MAX_CHUNKS)
    return { ok: false, reason: `the plan has ${chunks.length} chunks; at most ${MAX_CHUNKS}` };
  for (const [i, name] of chunks.entries()) {
    // Contiguous from 000: a missing chunk is a different plan, not a shorter one.
    if (name !== `${String(i).padStart(3, '0')}.plan`)
      return { ok: false, reason: `chunk ${String(i).padStart(3, '0')}.plan is missing` };
  }
  const parts: Buffer[] = [];
  let size = 0;
  for (const name of chunks) {
    const part = readFileSync(join(dir, name));
    size += part.length;
    if (size > maxBytes) return { ok: false, reason: `the plan exceeds ${maxBytes} bytes` };
    parts.push(part);
  }
  const bytes = Buffer.concat(parts, size);
  if (sha256Digest(bytes) !== expectedDigest) {
    return { ok: false, reason: 'the rebuilt plan does not match the approved content digest' };
  }
  return { ok: true, bytes };
}
