/**
 * The operator.ptah.run/read-requested-at annotation asks for a read now. What status.lastReadRequest
 * records for a value: the value itself, or `sha256:<hex>` of it when it is longer than 64 bytes, so a
 * long or hostile value never grows status.
 */
import { sha256Digest } from './digest.ts';
import { isRfc3339 } from './schema-dsl.ts';

export const MAX_RECORDED_READ_REQUEST_BYTES = 64;

export interface ReadRequest {
  /** What status.lastReadRequest records once the request is answered. */
  readonly recorded: string;
  /** An RFC 3339 instant starts a read; anything else is answered with a ReadRequestInvalid Warning only. */
  readonly valid: boolean;
}

export function readRequest(value: string): ReadRequest {
  const recorded = Buffer.byteLength(value) > MAX_RECORDED_READ_REQUEST_BYTES ? sha256Digest(value) : value;
  return { recorded, valid: isRfc3339(value) };
}

/** Whether the annotation holds a request status has not recorded as answered. */
export function readRequestPending(
  annotation: string | undefined,
  lastReadRequest: string | undefined,
): boolean {
  return annotation !== undefined && readRequest(annotation).recorded !== lastReadRequest;
}
