/** Canonical JSON: object keys sorted, no whitespace, undefined dropped. Equal values give equal bytes. */
import { type Hash, createHash } from 'node:crypto';

/**
 * Canonical JSON is written in pieces of about this many characters. A 5,000-table model is tens of
 * megabytes of text: grown as one string it was held whole (with every piece it was joined from) just to be
 * hashed, so a fingerprint hashes each piece as it is written and keeps none.
 */
const PIECE_CHARS = 64 * 1024;
/** A subtree's JSON at least this long is a piece of its own; a shorter one is appended to the next piece. */
const WHOLE_PIECE_CHARS = 1024;

export function canonicalJson(value: unknown): string {
  const pieces: string[] = [];
  const out = new Writer((text) => pieces.push(text));
  out.value(value);
  out.end();
  return pieces.join('');
}

/** `digestOf(canonicalJson(value))`, without ever holding the text. */
export function canonicalDigest(value: unknown): string {
  const hash = createHash('sha256');
  const out = new Writer((text) => hash.update(text));
  out.value(value);
  out.end();
  return digestHex(hash);
}

/** Keys seen, quoted: a model repeats the same few field names hundreds of thousands of times. */
const quotedKeys = new Map<string, string>();
const QUOTED_KEYS_LIMIT = 10_000;
function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (quotedKeys.size >= QUOTED_KEYS_LIMIT) quotedKeys.clear();
    quotedKeys.set(k, q);
  }
  return q;
}

/**
 * Sorted key lists, found by the keys in the order Object.keys gives them. Objects built by the same code
 * list their keys in the same order, so a model of hundreds of thousands of objects sorts a few dozen key
 * lists instead of one per object (each sort copied its array: half of what a fingerprint allocated).
 */
interface KeyOrder {
  sorted?: SortedKeys;
  readonly next: Map<string, KeyOrder>;
}
interface SortedKeys {
  readonly keys: readonly string[];
  /**
   * Whether an object built by adding these keys in this order lists them in this order. Not when a key is
   * an array index ("2", "10"): JavaScript lists those first, in numeric order, whatever order they came in.
   */
  readonly copyable: boolean;
}
let keyOrders: KeyOrder = { next: new Map() };
let keyOrderNodes = 0;
const KEY_ORDER_LIMIT = 10_000;
const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;
function sortedKeys(record: object): SortedKeys {
  // for-in lists an object's keys as Object.keys does (a model's objects are plain: their prototypes add
  // none), but from the shape's own cache rather than into a new array for every object.
  let node = keyOrders;
  for (const k in record) {
    let child = node.next.get(k);
    if (child === undefined) {
      child = { next: new Map() };
      node.next.set(k, child);
      keyOrderNodes++;
    }
    node = child;
  }
  let sorted = node.sorted;
  if (sorted === undefined) {
    const keys = Object.keys(record).sort();
    sorted = node.sorted = { keys, copyable: !keys.some((k) => ARRAY_INDEX.test(k)) };
  }
  // Objects keyed by data (a map of names) would grow it without end: it starts over instead.
  if (keyOrderNodes >= KEY_ORDER_LIMIT) {
    keyOrders = { next: new Map() };
    keyOrderNodes = 0;
  }
  return sorted;
}

/**
 * The value with every object's keys in sorted order, for JSON.stringify to write: one native call writes a
 * whole subtree, about twice as fast as walking it here. Undefined when an object's keys cannot be put in
 * that order (array indexes), and the caller walks it instead.
 */
function keySortedCopy(value: unknown): unknown {
  // JSON.stringify would drop a function or symbol member; the walk writes null, and so does this.
  if (typeof value === 'function' || typeof value === 'symbol') return null;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const c = v === undefined ? null : keySortedCopy(v);
      if (c === undefined) return undefined;
      copy[i] = c;
    }
    return copy;
  }
  const { keys, copyable } = sortedKeys(value);
  if (!copyable) return undefined;
  const record = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const k of keys) {
    const v = record[k];
    if (v === undefined) continue;
    const c = keySortedCopy(v);
    if (c === undefined) return undefined;
    copy[k] = c;
  }
  return copy;
}

/**
 * The first levels are walked here and written piece by piece; each subtree below them (a model's table,
 * view or function) is written by JSON.stringify from a key-sorted copy, small enough to hash at once.
 */
const WALKED_LEVELS = 3;

class Writer {
  // Each piece handed on is whole JSON tokens, so a UTF-16 surrogate pair is never cut between two pieces
  // (JSON.stringify escapes a lone surrogate): hashing the pieces in turn hashes the text's UTF-8 bytes.
  private text = '';
  constructor(private readonly emit: (text: string) => void) {}

  end(): void {
    if (this.text !== '') this.emit(this.text);
    this.text = '';
  }

  value(value: unknown, level = 0): void {
    if (value === null || typeof value !== 'object') {
      this.text += JSON.stringify(value) ?? 'null';
      return;
    }
    const copy = level >= WALKED_LEVELS ? keySortedCopy(value) : undefined;
    if (copy !== undefined) {
      const json = JSON.stringify(copy);
      if (json.length >= WHOLE_PIECE_CHARS) {
        // Handed on as JSON.stringify wrote it: appended, it was copied again to flatten the pieces.
        this.end();
        this.emit(json);
        return;
      }
      this.text += json;
    } else if (Array.isArray(value)) {
      this.text += '[';
      for (let i = 0; i < value.length; i++) {
        if (i > 0) this.text += ',';
        const v: unknown = value[i];
        if (v === undefined) this.text += 'null';
        else this.value(v, level + 1);
      }
      this.text += ']';
    } else {
      const record = value as Record<string, unknown>;
      this.text += '{';
      let first = true;
      for (const k of sortedKeys(record).keys) {
        const v = record[k];
        if (v === undefined) continue;
        if (!first) this.text += ',';
        first = false;
        this.text += quotedKey(k);
        this.text += ':';
        this.value(v, level + 1);
      }
      this.text += '}';
    }
    if (this.text.length >= PIECE_CHARS) {
      this.emit(this.text);
      this.text = '';
    }
  }
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

const digestHex = (hash: Hash) => `sha256:${hash.digest('hex')}`;

/** A content digest in the `sha256:<hex>` form used everywhere a digest is shown. */
export function digestOf(data: string | Uint8Array): string {
  return `sha256:${sha256Hex(data)}`;
}
