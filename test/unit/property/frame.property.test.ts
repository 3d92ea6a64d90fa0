// Property tests for the result-frame decoder (src/protocol/frame.ts): it never throws, never accepts a
// result other than the one encoded, and every encoded result decodes to itself among arbitrary log noise.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  decodeFrame,
  encodeFrame,
  FRAME_END_MARKER,
  FRAME_HEADER_MARKER,
  neutraliseMarkers,
} from '../../../src/protocol/frame.ts';
import { RUNNER_PROTOCOL_VERSION, type RunnerResult } from '../../../src/protocol/result.ts';
import { heapGrowth, runs } from './settings.ts';

const text = fc.string({ unit: 'grapheme', maxLength: 200 });

const resultArb: fc.Arbitrary<RunnerResult> = fc
  .record({
    operation: fc.constantFrom('observe', 'plan', 'apply'),
    operationId: fc.stringMatching(/^[0-9a-f]{16}$/),
    exitCode: fc.integer({ min: 0, max: 255 }),
    childExitCode: fc.integer({ min: -1, max: 255 }),
    outcome: fc.constantFrom('succeeded', 'failed', 'refused', 'uncertain'),
    code: fc.stringMatching(/^[a-z][a-z_]{0,30}$/),
    message: text,
    bytes: fc.uint8Array({ maxLength: 512 }),
    withError: fc.boolean(),
  })
  .map(
    (r) =>
      ({
        protocolVersion: RUNNER_PROTOCOL_VERSION,
        operation: r.operation,
        operationId: r.operationId,
        exitCode: r.exitCode,
        childExitCode: r.childExitCode,
        outcome: r.outcome,
        startedAt: '2026-01-01T00:00:00.000Z',
        finishedAt: '2026-01-01T00:00:01.000Z',
        outputs:
          r.operation === 'plan'
            ? {
                plan: {
                  planOutcome: 'Changes',
                  planContentDigest: 'sha256:' + 'ab'.repeat(32),
                  planSize: r.bytes.length,
                  bytesBase64: Buffer.from(r.bytes).toString('base64'),
                },
              }
            : {},
        ...(r.withError ? { error: { code: r.code, message: r.message } } : {}),
      }) as unknown as RunnerResult,
  );

/** Whatever a child printed around the frame, as the runner lets it through. */
const noise = fc.array(text, { maxLength: 5 }).map((lines) => lines.map(neutraliseMarkers).join('\n'));

describe('result frame decoder (property)', () => {
  it('every encoded result decodes to itself, whatever was logged before it', () => {
    fc.assert(
      fc.property(resultArb, noise, (result, before) => {
        const encoded = encodeFrame(result);
        const decoded = decodeFrame(`${before}\n${encoded}`);
        assert.equal(decoded.kind, 'complete');
        if (decoded.kind === 'complete') assert.deepEqual(decoded.result, JSON.parse(JSON.stringify(result)));
      }),
      runs(150),
    );
  });

  it('never throws on arbitrary bytes, nor on text salted with markers', () => {
    const salted = fc
      .array(
        fc.oneof(text, fc.constantFrom(FRAME_HEADER_MARKER, FRAME_END_MARKER, '\n', ' 12 ', 'ff'.repeat(32))),
        {
          maxLength: 30,
        },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 2048 }), salted), (input) => {
        const d = decodeFrame(input);
        assert.ok(d.kind === 'complete' || d.kind === 'incomplete' || d.kind === 'corrupt');
      }),
      runs(400),
    );
  });

  it('a frame changed in any one byte is never read as another result', () => {
    fc.assert(
      fc.property(resultArb, fc.nat(), fc.integer({ min: 1, max: 255 }), (result, at, xor) => {
        const bytes = Buffer.from(encodeFrame(result), 'utf8');
        const i = at % bytes.length;
        bytes[i] = bytes[i]! ^ xor;
        const d = decodeFrame(bytes);
        if (d.kind === 'complete') assert.deepEqual(d.result, JSON.parse(JSON.stringify(result)));
      }),
      runs(300),
    );
  });

  it('a frame cut anywhere is incomplete, never complete or a crash', () => {
    fc.assert(
      fc.property(resultArb, fc.nat(), (result, at) => {
        const frame = encodeFrame(result);
        // The last byte is the newline after the end marker; cutting it still leaves a finished frame.
        const cut = at % (frame.length - 1);
        assert.notEqual(decodeFrame(frame.slice(0, cut)).kind, 'complete');
      }),
      runs(200),
    );
  });

  it('memory stays bounded: a declared length beyond the limit is refused without reading on', () => {
    fc.assert(
      fc.property(fc.integer({ min: 16 * 1024 * 1024 + 1, max: 9_999_999_999 }), (length) => {
        const d = decodeFrame(`${FRAME_HEADER_MARKER} ${length} ${'0'.repeat(64)}\n{`);
        assert.equal(d.kind, 'corrupt');
      }),
      runs(50),
    );
    const big = Buffer.alloc(4 * 1024 * 1024, 0x61);
    const growth = heapGrowth(() => {
      for (let i = 0; i < 5; i++) decodeFrame(big);
    });
    assert.ok(
      growth < 64 * 1024 * 1024,
      `decoding 4 MiB of noise five times grew the heap by ${growth} bytes`,
    );
  });
});
