/**
 * The few core Kubernetes objects the pure controller modules build or read, typed as narrowly as they use
 * them. Structurally compatible with the client library's models, so I/O code can pass those in.
 */
import type { ObjectMeta } from './meta.ts';

export interface ConfigMapObject {
  readonly apiVersion?: 'v1';
  readonly kind?: 'ConfigMap';
  readonly metadata: ObjectMeta;
  readonly immutable?: boolean;
  /** UTF-8 text values. */
  readonly data?: Readonly<Record<string, string>>;
  /** Base64-encoded byte values. */
  readonly binaryData?: Readonly<Record<string, string>>;
}

/** The API server refuses a ConfigMap whose keys and values add up to more than this. */
export const MAX_CONFIG_MAP_BYTES = 1024 * 1024;

/** Bytes the API server counts against MAX_CONFIG_MAP_BYTES: every key and every decoded value. */
export function configMapSize(cm: Pick<ConfigMapObject, 'data' | 'binaryData'>): number {
  let total = 0;
  for (const [k, v] of Object.entries(cm.data ?? {})) total += Buffer.byteLength(k) + Buffer.byteLength(v);
  for (const [k, v] of Object.entries(cm.binaryData ?? {}))
    total += Buffer.byteLength(k) + Buffer.from(v, 'base64').length;
  return total;
}
