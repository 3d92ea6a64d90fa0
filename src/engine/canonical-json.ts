/** Canonical JSON: object keys sorted, no whitespace, undefined dropped. Equal values give equal bytes. */
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  // One string grown in place (V8 joins the pieces once, at the end) rather than a joined array per level:
  // a 5,000-table model is tens of megabytes, and copying it once per nesting level was most of the cost.
  const out = { text: '' };
  write(value, out);
  return out.text;
}

function write(value: unknown, out: { text: string }): void {
  if (value === null || typeof value !== 'object') {
    out.text += JSON.stringify(value) ?? 'null';
    return;
  }
  if (Array.isArray(value)) {
    out.text += '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.text += ',';
      const v: unknown = value[i];
      if (v === undefined) out.text += 'null';
      else write(v, out);
    }
    out.text += ']';
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  out.text += '{';
  let first = true;
  for (const k of keys) {
    const v = record[k];
    if (v === undefined) continue;
    if (!first) out.text += ',';
    first = false;
    out.text += JSON.stringify(k);
    out.text += ':';
    write(v, out);
  }
  out.text += '}';
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A content digest in the `sha256:<hex>` form used everywhere a digest is shown. */
export function digestOf(data: string | Uint8Array): string {
  return `sha256:${sha256Hex(data)}`;
}
