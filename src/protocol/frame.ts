/**
 * The result frame: how a runner's result crosses the container log to the manager. ONE module for both
 * sides, so the writer and the reader cannot drift apart.
 *
 *   PTAH_RESULT_V1 <payload bytes> <sha256 hex of payload>\n
 *   <payload: canonical JSON of a RunnerResult, one line>\n
 *   PTAH_RESULT_END_V1\n
 *
 * The payload is single-line JSON (JSON escapes every newline inside strings), so a marker at the start of
 * a line can never sit inside a payload. The runner never lets a child's output start a line with a marker
 * (see `neutraliseMarkers`), so the last header in a log is the runner's own.
 *
 * The decoder never guesses: a log without a finished frame is `incomplete` (maybe not yet written), a
 * frame that is finished but wrong in any byte is `corrupt`. Binding a frame to a claim is a separate step,
 * `acceptFrame`, so that what was read and whether it counts are two answers.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, type CanonicalValue } from '../api/canonical-json.ts';
import {
  RUNNER_PROTOCOL_VERSION,
  isRunnerOperation,
  type RunnerOperation,
  type RunnerResult,
} from './result.ts';

export const FRAME_HEADER_MARKER = 'PTAH_RESULT_V1';
export const FRAME_END_MARKER = 'PTAH_RESULT_END_V1';
/** A header is the marker, two numbers and a 64-hex digest; anything longer is not ours. */
const MAX_HEADER_BYTES = 96;
/** 8 MiB of plan bytes in base64 plus room for everything else. */
export const MAX_FRAME_PAYLOAD_BYTES = 16 * 1024 * 1024;

export type DecodedFrame =
  | {
      readonly kind: 'complete';
      readonly result: RunnerResult;
      readonly payloadDigest: string;
      readonly framesSeen: number;
    }
  | { readonly kind: 'incomplete' }
  | { readonly kind: 'corrupt'; readonly reason: string };

export class FrameEncodeError extends Error {
  override readonly name = 'FrameEncodeError';
}

/** The frame text for a result; the runner writes it as its last stdout output. */
export function encodeFrame(result: RunnerResult): string {
  const payload = canonicalJson(result as unknown as CanonicalValue);
  const bytes = Buffer.from(payload, 'utf8');
  if (bytes.length > MAX_FRAME_PAYLOAD_BYTES) {
    throw new FrameEncodeError(
      `result payload is ${bytes.length} bytes; the frame limit is ${MAX_FRAME_PAYLOAD_BYTES}`,
    );
  }
  return `${FRAME_HEADER_MARKER} ${bytes.length} ${sha256Hex(bytes)}\n${payload}\n${FRAME_END_MARKER}\n`;
}

/** sha256 of the payload of an encoded frame: what the termination summary names. */
export function framePayloadDigest(frame: string): string {
  const start = frame.indexOf('\n') + 1;
  const end = frame.indexOf('\n', start);
  return `sha256:${sha256Hex(Buffer.from(frame.slice(start, end), 'utf8'))}`;
}

/** Reads the LAST frame in a log (stdout and stderr may be interleaved around it). */
export function decodeFrame(log: string | Uint8Array): DecodedFrame {
  const buf = typeof log === 'string' ? Buffer.from(log, 'utf8') : Buffer.from(log);
  const headers = headerOffsets(buf);
  const last = headers.at(-1);
  if (last === undefined) return { kind: 'incomplete' };

  const headerEnd = buf.indexOf(0x0a, last);
  if (headerEnd < 0) {
    // A header still being written, or one cut off at the end: it may yet arrive.
    return buf.length - last > MAX_HEADER_BYTES ? corrupt('header line is too long') : { kind: 'incomplete' };
  }
  if (headerEnd - last > MAX_HEADER_BYTES) return corrupt('header line is too long');
  const header = buf.subarray(last, headerEnd).toString('latin1');
  const m = /^PTAH_RESULT_V1 (0|[1-9][0-9]{0,9}) ([0-9a-f]{64})$/.exec(header);
  if (m === null) return corrupt('header line is malformed');
  const length = Number(m[1]);
  const expectedDigest = m[2]!;
  if (length > MAX_FRAME_PAYLOAD_BYTES)
    return corrupt(`declared payload of ${length} bytes exceeds the limit`);

  const payloadStart = headerEnd + 1;
  const payloadEnd = payloadStart + length;
  // The payload is one line: a newline inside the declared length means the length is wrong.
  const newlineInPayload = buf.subarray(payloadStart, Math.min(payloadEnd, buf.length)).indexOf(0x0a);
  if (newlineInPayload >= 0) return corrupt('payload is shorter than its declared length');
  if (buf.length < payloadEnd) return { kind: 'incomplete' };

  const trailer = Buffer.from(`\n${FRAME_END_MARKER}`, 'latin1');
  const tail = buf.subarray(payloadEnd, payloadEnd + trailer.length);
  if (!trailer.subarray(0, tail.length).equals(tail)) {
    return corrupt('payload is longer than its declared length, or the end marker is missing');
  }
  if (tail.length < trailer.length) return { kind: 'incomplete' };
  const after = buf.subarray(payloadEnd + trailer.length);
  if (after.length > 0 && after[0] !== 0x0a)
    return corrupt('end marker is followed by other text on its line');

  const payload = buf.subarray(payloadStart, payloadEnd);
  const digest = sha256Hex(payload);
  if (digest !== expectedDigest) return corrupt('payload SHA-256 does not match the header');

  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    return corrupt('payload is not JSON');
  }
  const problem = resultShapeProblem(parsed);
  if (problem !== undefined) return corrupt(problem);
  return {
    kind: 'complete',
    result: parsed as RunnerResult,
    payloadDigest: `sha256:${digest}`,
    framesSeen: headers.length,
  };
}

/** What the manager claimed: the only result it may act on is one for this operation. */
export interface FrameClaim {
  readonly operation: RunnerOperation;
  readonly operationId: string;
  readonly protocolVersion?: number;
}

export type FrameAcceptance =
  | { readonly accepted: true; readonly result: RunnerResult }
  | {
      readonly accepted: false;
      readonly reason: 'not-arrived' | 'corrupt' | 'mismatch';
      readonly message: string;
    };

/**
 * Binds a decoded frame to the claim. Anything but a complete frame for exactly this operation id,
 * operation and protocol is refused; the caller treats `not-arrived` as "wait (or fail once the container
 * has terminated)" and everything else as failed — never as success.
 */
export function acceptFrame(decoded: DecodedFrame, claim: FrameClaim): FrameAcceptance {
  if (decoded.kind === 'incomplete') {
    return { accepted: false, reason: 'not-arrived', message: 'no complete result frame in the log' };
  }
  if (decoded.kind === 'corrupt') {
    return { accepted: false, reason: 'corrupt', message: `result frame is corrupt: ${decoded.reason}` };
  }
  const r = decoded.result;
  const protocol = claim.protocolVersion ?? RUNNER_PROTOCOL_VERSION;
  if (r.protocolVersion !== protocol) {
    return {
      accepted: false,
      reason: 'mismatch',
      message: `result protocol ${r.protocolVersion}, expected ${protocol}`,
    };
  }
  if (r.operationId !== claim.operationId) {
    return {
      accepted: false,
      reason: 'mismatch',
      message: 'result names another operation id than the claim',
    };
  }
  if (r.operation !== claim.operation) {
    return {
      accepted: false,
      reason: 'mismatch',
      message: `result is for operation ${r.operation}, claim is ${claim.operation}`,
    };
  }
  return { accepted: true, result: r };
}

/**
 * Child output is printed by the runner; a line that starts with a frame marker is prefixed so a child
 * (or anything it echoes) can never plant a frame the decoder would read.
 */
export function neutraliseMarkers(text: string): string {
  return text.replace(/(^|\n)(?=PTAH_RESULT_)/g, '$1> ');
}

function headerOffsets(buf: Buffer): number[] {
  const marker = Buffer.from(`${FRAME_HEADER_MARKER} `, 'latin1');
  const out: number[] = [];
  let from = 0;
  for (;;) {
    const i = buf.indexOf(marker, from);
    if (i < 0) return out;
    if (i === 0 || buf[i - 1] === 0x0a) out.push(i);
    from = i + 1;
  }
}

function corrupt(reason: string): DecodedFrame {
  return { kind: 'corrupt', reason };
}

function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A frame whose digest checks but whose content is not a result is still corrupt: the reader must not guess. */
function resultShapeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'payload is not an object';
  const v = value as Record<string, unknown>;
  if (!Number.isSafeInteger(v['protocolVersion'])) return 'protocolVersion is missing';
  if (!isRunnerOperation(v['operation'])) return 'operation is missing or unknown';
  if (typeof v['operationId'] !== 'string' || v['operationId'] === '') return 'operationId is missing';
  if (!Number.isSafeInteger(v['exitCode'])) return 'exitCode is missing';
  if (!Number.isSafeInteger(v['childExitCode'])) return 'childExitCode is missing';
  if (!['succeeded', 'failed', 'refused', 'uncertain'].includes(v['outcome'] as string))
    return 'outcome is missing or unknown';
  if (typeof v['startedAt'] !== 'string' || typeof v['finishedAt'] !== 'string')
    return 'timestamps are missing';
  const outputs = v['outputs'];
  if (typeof outputs !== 'object' || outputs === null || Array.isArray(outputs)) return 'outputs is missing';
  return undefined;
}
