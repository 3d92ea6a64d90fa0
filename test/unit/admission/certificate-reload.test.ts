// The serving certificate rotates without a restart: a running admission server, its certificate files
// replaced by a pair from another CA, serves the new one on the next handshake; a key that does not match
// its certificate (a half-written rotation) is skipped and the old pair kept.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reloadCertificateOnChange } from '../../../src/admission/certificate-reload.ts';
import { allowed } from '../../../src/admission/review.ts';
import { startAdmissionServer } from '../../../src/admission/server.ts';
import { createCertificateAuthority, issueCertificate } from '../../env/pki.ts';
import { eventually } from '../../env/eventually.ts';

const dir = mkdtempSync(join(tmpdir(), 'ptah-cert-reload-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function pair(name: string) {
  const ca = createCertificateAuthority(join(dir, name), 'ca', `${name}-ca`);
  const cert = issueCertificate(join(dir, name), ca, {
    name: 'serving',
    commonName: `${name}-serving`,
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  return { ca, cert };
}

/** The common name of the certificate the server presents now. */
function served(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cn = socket.getPeerCertificate().subject?.CN;
      socket.end();
      resolve(String(cn));
    });
    socket.on('error', reject);
  });
}

describe('reloadCertificateOnChange', () => {
  it('serves a replaced certificate without a restart, and keeps the old one while the new pair does not match', async () => {
    const first = pair('first');
    const second = pair('second');
    const live = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    copyFileSync(first.cert.certFile, live.certFile);
    copyFileSync(first.cert.keyFile, live.keyFile);
    const server = await startAdmissionServer({
      cert: readFileSync(live.certFile),
      key: readFileSync(live.keyFile),
      handlers: { '/allow': () => allowed() },
    });
    const outcomes: string[] = [];
    const stop = reloadCertificateOnChange(live, server, {
      intervalMs: 50,
      onReload: (o) => outcomes.push(o),
    });
    try {
      assert.equal(await served(server.port), 'first-serving');
      // Half a rotation: the new certificate beside the old key. Skipped; the old pair is still served.
      copyFileSync(second.cert.certFile, live.certFile);
      await eventually('the mismatched pair is seen', async () =>
        outcomes.includes('invalid') ? true : undefined,
      );
      assert.equal(await served(server.port), 'first-serving');
      copyFileSync(second.cert.keyFile, live.keyFile);
      await eventually('the new pair is served', async () =>
        (await served(server.port)) === 'second-serving' ? true : undefined,
      );
      assert.ok(outcomes.includes('reloaded'));
    } finally {
      stop();
      await server.close();
    }
  });
});
