/**
 * Canonical JSON: the one byte form every digest and fingerprint in the operator is computed over.
 *
 * Object keys are sorted by code point, there is no whitespace, and numbers must be finite safe integers
 * so that every language and every release writes the same bytes for the same value. Fractions are refused
 * rather than formatted: no binding needs one, and float formatting is where implementations disagree.
 */

export type CanonicalValue =
  | null
  | boolean
  | number
  | string
  | readonly CanonicalValue[]
  | { readonly [key: string]: CanonicalValue | undefined };

export class CanonicalJsonError extends Error {
  override readonly name = 'CanonicalJsonError';
}

/** Serialises a value canonically. `undefined` object members are omitted, as absent; anywhere else they are refused. */
export function canonicalJson(value: CanonicalValue): string {
  return write(value, '$');
}

function write(value: unknown, at: string): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isSafeInteger(value)) {
        throw new CanonicalJsonError(
          `${at}: ${String(value)} is not a safe integer; canonical JSON holds integers only`,
        );
      }
      // -0 and 0 are one value.
      return String(value === 0 ? 0 : value);
    case 'object':
      if (Array.isArray(value)) {
        return `[${value.map((item, i) => write(item, `${at}[${i}]`)).join(',')}]`;
      }
      return writeObject(value as Record<string, unknown>, at);
    default:
      throw new CanonicalJsonError(`${at}: a ${typeof value} has no canonical JSON form`);
  }
}

function writeObject(value: Record<string, unknown>, at: string): string {
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    throw new CanonicalJsonError(`${at}: only plain objects have a canonical JSON form`);
  }
  const members: string[] = [];
  for (const key of Object.keys(value).sort(compareCodePoints)) {
    const member = value[key];
    if (member === undefined) continue;
    members.push(`${JSON.stringify(key)}:${write(member, `${at}.${key}`)}`);
  }
  return `{${members.join(',')}}`;
}

/**
 * Code point order rather than UTF-16 unit order, so keys outside the BMP sort the way UTF-8 bytes do. The
 * two orders differ only where the first unit that differs is a surrogate; only then are code points read.
 */
function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    return isSurrogate(x) || isSurrogate(y) ? byCodePoints(a, b) : x - y;
  }
  // One is a prefix of the other in units, so in code points too (a high surrogate left unpaired by the cut
  // sorts before the pair it starts).
  return a.length - b.length;
}

const isSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdfff;

function byCodePoints(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = (x[i]!.codePointAt(0) ?? 0) - (y[i]!.codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
