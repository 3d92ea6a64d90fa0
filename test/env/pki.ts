import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A certificate authority on disk, made with the openssl CLI. */
export interface CertificateAuthority {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface IssuedCertificate {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface CertificateRequest {
  /** File name stem inside the PKI directory, e.g. "apiserver". */
  readonly name: string;
  readonly commonName: string;
  /** Becomes O= entries: Kubernetes reads them as groups for client certificates. */
  readonly organizations?: readonly string[];
  /** DNS names and IP addresses; required for serving certificates. */
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  readonly usage: 'server' | 'client' | 'both';
}

function openssl(args: readonly string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe' });
}

/** RDN values go into -subj, where '/' and '=' separate fields; refuse them rather than escape. */
function subject(commonName: string, organizations: readonly string[] = []): string {
  for (const v of [commonName, ...organizations]) {
    if (/[/=\\]/.test(v)) throw new Error(`pki: "${v}" may not contain '/', '=' or '\\'`);
  }
  return organizations.map((o) => `/O=${o}`).join('') + `/CN=${commonName}`;
}

export function createCertificateAuthority(
  dir: string,
  name = 'ca',
  commonName = 'ptah-test-ca',
): CertificateAuthority {
  mkdirSync(dir, { recursive: true });
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.crt`);
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile]);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    keyFile,
    '-sha256',
    '-days',
    '3650',
    '-subj',
    subject(commonName),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-out',
    certFile,
  ]);
  return { certFile, keyFile };
}

export function issueCertificate(
  dir: string,
  ca: CertificateAuthority,
  req: CertificateRequest,
): IssuedCertificate {
  mkdirSync(dir, { recursive: true });
  const keyFile = join(dir, `${req.name}.key`);
  const csrFile = join(dir, `${req.name}.csr`);
  const certFile = join(dir, `${req.name}.crt`);
  const extFile = join(dir, `${req.name}.ext`);
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile]);
  openssl([
    'req',
    '-new',
    '-key',
    keyFile,
    '-subj',
    subject(req.commonName, req.organizations),
    '-out',
    csrFile,
  ]);
  const extendedUsage = { server: 'serverAuth', client: 'clientAuth', both: 'serverAuth,clientAuth' }[
    req.usage
  ];
  const sans = [
    ...(req.dnsNames ?? []).map((d) => `DNS:${d}`),
    ...(req.ipAddresses ?? []).map((ip) => `IP:${ip}`),
  ];
  const lines = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${extendedUsage}`,
  ];
  if (sans.length > 0) lines.push(`subjectAltName=${sans.join(',')}`);
  writeFileSync(extFile, lines.join('\n') + '\n');
  openssl([
    'x509',
    '-req',
    '-in',
    csrFile,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-CAcreateserial',
    '-days',
    '3650',
    '-sha256',
    '-extfile',
    extFile,
    '-out',
    certFile,
  ]);
  return { certFile, keyFile };
}

/** An RSA key pair for signing service-account tokens. */
export function createServiceAccountKeyPair(dir: string): { privateKeyFile: string; publicKeyFile: string } {
  const privateKeyFile = join(dir, 'sa.key');
  const publicKeyFile = join(dir, 'sa.pub');
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', privateKeyFile]);
  openssl(['pkey', '-in', privateKeyFile, '-pubout', '-out', publicKeyFile]);
  return { privateKeyFile, publicKeyFile };
}
