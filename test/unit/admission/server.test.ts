import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAdmissionServer, type AdmissionServer } from '../../../src/admission/server.ts';
import { allowed, denied, type AdmissionReview } from '../../../src/admission/review.ts';
import { createCertificateAuthority, issueCertificate } from '../../env/pki.ts';

let dir: string;
let ca: string;
let server: AdmissionServer;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ptah-admission-test-'));
  const authority = createCertificateAuthority(dir);
  const serving = issueCertificate(dir, authority, {
    name: 'webhook',
    commonName: 'webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  ca = readFileSync(authority.certFile, 'utf8');
  server = await startAdmissionServer({
    cert: readFileSync(serving.certFile),
    key: readFileSync(serving.keyFile),
    maxBodyBytes: 64 * 1024,
    handlers: {
      '/allow': () => allowed(),
      '/deny': (r) => denied(`no for ${r.userInfo.username ?? 'nobody'}`),
      '/crash': () => {
        throw new Error('handler bug');
      },
    },
  });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function post(
  path: string,
  body: string,
  contentType = 'application/json',
  method = 'POST',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${server.url}${path}`,
      { method, ca, headers: { 'content-type': contentType } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const review = (uid: string) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      resource: { group: '', version: 'v1', resource: 'configmaps' },
      operation: 'CREATE',
      userInfo: { username: 'erin' },
      object: {},
    },
  });

describe('admission server', () => {
  it('answers over TLS and echoes the request UID', async () => {
    const r = await post('/deny', review('uid-42'));
    assert.equal(r.status, 200);
    const out = JSON.parse(r.body) as AdmissionReview;
    assert.equal(out.apiVersion, 'admission.k8s.io/v1');
    assert.equal(out.response?.uid, 'uid-42');
    assert.equal(out.response?.allowed, false);
    assert.equal(out.response?.status?.message, 'no for erin');
    const ok = JSON.parse((await post('/allow', review('uid-43'))).body) as AdmissionReview;
    assert.deepEqual(ok.response, { uid: 'uid-43', allowed: true });
  });

  it('turns a handler crash into a refusing 500 review', async () => {
    const out = JSON.parse((await post('/crash', review('uid-1'))).body) as AdmissionReview;
    assert.equal(out.response?.uid, 'uid-1');
    assert.equal(out.response?.allowed, false);
    assert.equal(out.response?.status?.code, 500);
    assert.match(out.response?.status?.message ?? '', /handler bug/);
  });

  it('refuses the wrong content type, an oversized body, other methods, unknown paths and non-reviews', async () => {
    assert.equal((await post('/allow', review('u'), 'text/plain')).status, 415);
    assert.equal((await post('/allow', 'x'.repeat(70 * 1024))).status, 413);
    assert.equal((await post('/allow', '', 'application/json', 'GET')).status, 405);
    assert.equal((await post('/nope', review('u'))).status, 404);
    assert.equal((await post('/allow', '{not json')).status, 400);
    assert.equal(
      (
        await post(
          '/allow',
          JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: {} }),
        )
      ).status,
      400,
    );
  });
});
