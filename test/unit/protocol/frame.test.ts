import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  acceptFrame,
  decodeFrame,
  encodeFrame,
  framePayloadDigest,
  neutraliseMarkers,
} from '../../../src/protocol/frame.ts';
import { RUNNER_PROTOCOL_VERSION, type RunnerResult } from '../../../src/protocol/result.ts';

function result(overrides: Partial<RunnerResult> = {}): RunnerResult {
  return {
    protocolVersion: RUNNER_PROTOCOL_VERSION,
    operation: 'plan',
    operationId: 'a1b2c3d4e5f60718',
    exitCode: 0,
    childExitCode: 3,
    outcome: 'succeeded',
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:01.000Z',
    outputs: {
      plan: {
        planOutcome: 'Changes',
        planContentDigest: 'sha256:' + 'ab'.repeat(32),
        planSize: 12,
        bytesBase64: Buffer.from('CREATE TABLE t();\n').toString('base64'),
      },
    },
    ...overrides,
  };
}

/** A small deterministic PRNG so a failing case can be reproduced from its seed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('result frame', () => {
  it('round-trips a result through a noisy log and reports its payload digest', () => {
    const r = result({ error: { code: 'x', message: 'línea\nnueva ✓' } });
    const frame = encodeFrame(r);
    const log = `starting\nstderr: something\n${frame}`;
    const d = decodeFrame(log);
    assert.equal(d.kind, 'complete');
    if (d.kind !== 'complete') return;
    assert.deepEqual(d.result, r);
    assert.equal(d.payloadDigest, framePayloadDigest(frame));
    assert.equal(d.framesSeen, 1);
  });

  it('frames are one header line, one payload line and one end line', () => {
    const lines = encodeFrame(result()).split('\n');
    assert.equal(lines.length, 4);
    assert.match(lines[0]!, /^PTAH_RESULT_V1 \d+ [0-9a-f]{64}$/);
    assert.equal(lines[2], 'PTAH_RESULT_END_V1');
    assert.equal(lines[3], '');
  });

  it('a log with no frame has not arrived yet', () => {
    assert.deepEqual(decodeFrame(''), { kind: 'incomplete' });
    assert.deepEqual(decodeFrame('hello\nPTAH_RESULT_ something else\n'), { kind: 'incomplete' });
  });

  it('every truncation of a frame is incomplete, never complete and never a guess', () => {
    const prefix = 'noise line\n';
    const full = Buffer.from(prefix + encodeFrame(result()), 'utf8');
    for (let cut = 0; cut < full.length - 1; cut++) {
      const d = decodeFrame(full.subarray(0, cut));
      assert.equal(d.kind, 'incomplete', `cut at ${cut} gave ${JSON.stringify(d)}`);
    }
    // Only the final newline missing: the end marker is whole, the frame is complete.
    assert.equal(decodeFrame(full.subarray(0, full.length - 1)).kind, 'complete');
  });

  it('no single bit flip anywhere in a frame yields a complete frame', () => {
    const frame = Buffer.from(encodeFrame(result()), 'utf8');
    const rnd = prng(7);
    const positions = new Set<number>();
    // Every header and trailer byte, and a sample of payload bytes.
    const headerEnd = frame.indexOf(0x0a);
    for (let i = 0; i <= headerEnd; i++) positions.add(i);
    for (let i = frame.length - 21; i < frame.length; i++) positions.add(i);
    for (let k = 0; k < 300; k++) positions.add(Math.floor(rnd() * frame.length));
    for (const pos of positions) {
      for (let bit = 0; bit < 8; bit++) {
        const flipped = Buffer.from(frame);
        flipped[pos] = flipped[pos]! ^ (1 << bit);
        const d = decodeFrame(flipped);
        assert.notEqual(d.kind, 'complete', `flip of bit ${bit} at ${pos} was accepted`);
      }
    }
  });

  it('a frame whose digest checks but whose content is not a result is corrupt', () => {
    const payload = '{"hello":"world"}';
    const digest = createHash('sha256').update(payload).digest('hex');
    const log = `PTAH_RESULT_V1 ${payload.length} ${digest}\n${payload}\nPTAH_RESULT_END_V1\n`;
    const d = decodeFrame(log);
    assert.equal(d.kind, 'corrupt');
  });

  it('the last of two frames wins, and a forged earlier frame cannot mask the real one', () => {
    const forged = encodeFrame(result({ operationId: 'forged', outputs: {} }));
    const real = encodeFrame(result());
    const d = decodeFrame(forged + 'child output\n' + real);
    assert.equal(d.kind, 'complete');
    if (d.kind !== 'complete') return;
    assert.equal(d.result.operationId, 'a1b2c3d4e5f60718');
    assert.equal(d.framesSeen, 2);
  });

  it('a corrupt last frame is corrupt even when an earlier frame is valid', () => {
    const good = encodeFrame(result());
    const bad = encodeFrame(result({ exitCode: 1 })).replace('"exitCode":1', '"exitCode":0');
    assert.equal(decodeFrame(good + bad).kind, 'corrupt');
  });

  it('a child that prints a frame is neutralised and cannot plant one', () => {
    const planted = neutraliseMarkers('hello\n' + encodeFrame(result({ operationId: 'evil' })));
    assert.equal(decodeFrame(planted).kind, 'incomplete');
    assert.equal(decodeFrame(planted + encodeFrame(result())).kind, 'complete');
  });

  it('random results round-trip, and random text around them never changes the answer', () => {
    const rnd = prng(42);
    for (let i = 0; i < 50; i++) {
      const r = result({
        operationId: randomBytes(8).toString('hex'),
        exitCode: Math.floor(rnd() * 6),
        error: { code: 'c' + i, message: randomBytes(Math.floor(rnd() * 200)).toString('latin1') },
      });
      const noise = neutraliseMarkers(randomBytes(Math.floor(rnd() * 500)).toString('latin1'));
      const d = decodeFrame(noise + '\n' + encodeFrame(r) + 'trailing stderr line\n');
      assert.equal(d.kind, 'complete');
      if (d.kind === 'complete') assert.deepEqual(d.result, r);
    }
  });
});

describe('acceptFrame', () => {
  const claim = { operation: 'plan' as const, operationId: 'a1b2c3d4e5f60718' };

  it('accepts only a complete frame bound to the claimed operation id', () => {
    const ok = acceptFrame(decodeFrame(encodeFrame(result())), claim);
    assert.equal(ok.accepted, true);
  });

  it('refuses another operation id, even though the decoder read it faithfully', () => {
    const decoded = decodeFrame(encodeFrame(result({ operationId: 'ffffffffffffffff' })));
    assert.equal(decoded.kind, 'complete');
    const a = acceptFrame(decoded, claim);
    assert.deepEqual([a.accepted, !a.accepted && a.reason], [false, 'mismatch']);
  });

  it('refuses another operation or protocol version', () => {
    const other = acceptFrame(decodeFrame(encodeFrame(result({ operation: 'apply' }))), claim);
    assert.equal(other.accepted, false);
    const proto = acceptFrame(decodeFrame(encodeFrame(result({ protocolVersion: 99 }))), claim);
    assert.equal(proto.accepted, false);
  });

  it('maps incomplete to not-arrived and corrupt to corrupt', () => {
    const a = acceptFrame({ kind: 'incomplete' }, claim);
    assert.equal(!a.accepted && a.reason, 'not-arrived');
    const b = acceptFrame({ kind: 'corrupt', reason: 'x' }, claim);
    assert.equal(!b.accepted && b.reason, 'corrupt');
  });
});

describe('recorded frames', () => {
  it('a protocol-1 Plan log recorded from an earlier build still decodes and binds', () => {
    const log = readFileSync(new URL('./fixtures/plan-result-v1.log', import.meta.url));
    const decoded = decodeFrame(log);
    assert.equal(decoded.kind, 'complete');
    if (decoded.kind !== 'complete') return;
    assert.equal(
      decoded.payloadDigest,
      'sha256:be6437fdd65351b576e9bf5964a1acc57b8d88316ff780fd3966b8b7750cddd0',
    );
    const accepted = acceptFrame(decoded, { operation: 'plan', operationId: 'sha256:' + '7'.repeat(64) });
    assert.equal(accepted.accepted, true);
    const plan = decoded.result.outputs.plan!;
    const bytes = Buffer.from(plan.bytesBase64!, 'base64');
    assert.equal(plan.planSize, bytes.length);
    assert.equal(plan.planContentDigest, 'sha256:' + createHash('sha256').update(bytes).digest('hex'));
    // Re-encoding the decoded result gives the recorded bytes: the encoder is still canonical.
    assert.ok(log.toString('utf8').endsWith(encodeFrame(decoded.result)));
  });
});
