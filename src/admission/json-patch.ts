/**
 * The one function that turns a mutating handler's before/after objects into an RFC 6902 JSON Patch.
 * Handlers change a typed object; none writes patch operations by hand.
 *
 * Objects are diffed member by member; arrays and scalars that differ are replaced whole, which is always
 * correct (the API server applies the patch to exactly the object the handler saw) and keeps the patch
 * readable for stamped lists such as groups.
 */
import { isDeepStrictEqual } from 'node:util';
import type { JsonPatchOperation } from './review.ts';

export function computeJsonPatch(before: unknown, after: unknown): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  diff(before, after, '', ops);
  return ops;
}

function diff(before: unknown, after: unknown, path: string, ops: JsonPatchOperation[]): void {
  if (isDeepStrictEqual(before, after)) return;
  if (isPlainObject(before) && isPlainObject(after)) {
    for (const key of Object.keys(before).sort()) {
      if (!(key in after) || after[key] === undefined) {
        if (before[key] !== undefined) ops.push({ op: 'remove', path: `${path}/${escapePointer(key)}` });
      }
    }
    for (const key of Object.keys(after).sort()) {
      const value = after[key];
      if (value === undefined) continue;
      const child = `${path}/${escapePointer(key)}`;
      if (!(key in before) || before[key] === undefined) ops.push({ op: 'add', path: child, value });
      else diff(before[key], value, child, ops);
    }
    return;
  }
  // The root has path '' in RFC 6901; replacing it is valid JSON Patch.
  ops.push({ op: 'replace', path, value: after });
}

/** RFC 6901: '~' is written '~0' and '/' is written '~1', in that order. */
export function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
