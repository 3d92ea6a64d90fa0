import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sendHttpRequest } from './http-client.ts';
import { createCertificateAuthority, issueCertificate } from './pki.ts';
import { freePort } from './ports.ts';
import { startProcess, waitUntil, type ManagedProcess } from './process.ts';

const REGISTRY_BIN = process.env['PTAH_REGISTRY_BIN'] ?? '/usr/bin/docker-registry';
const HTPASSWD_BIN = process.env['PTAH_HTPASSWD_BIN'] ?? '/usr/bin/htpasswd';

/** A throwaway OCI distribution registry on loopback (Debian's docker-registry). */
export interface RegistryServer {
  /** 127.0.0.1:PORT, the form an image reference starts with. */
  readonly host: string;
  /** http(s)://host */
  readonly url: string;
  /** The CA that signed the serving certificate, when started with TLS. */
  readonly caFile?: string;
  /** Basic credentials the registry demands, when started with auth; never print the password. */
  readonly auth?: { readonly username: string; readonly password: string };
  readonly logFile: string;
  /** The server process's id: the current one, or the last one after `interrupt` or `stop`. */
  readonly pid: number;
  /** Stops the server and keeps its address, storage and credentials: an outage that `resume` ends. */
  interrupt(): Promise<void>;
  /** Starts the server again on the same address, with what it stored before. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartRegistryOptions {
  readonly tls?: boolean;
  readonly auth?: boolean;
  /** Directory for config, storage and log; a new temporary one (removed on stop) by default. */
  readonly dir?: string;
}

/** bcrypt is the only scheme docker-registry's htpasswd reader accepts; the password goes on stdin, not argv. */
function writeHtpasswd(file: string, username: string, password: string): void {
  const line = execFileSync(HTPASSWD_BIN, ['-B', '-i', '-n', username], { input: password, stdio: 'pipe' });
  writeFileSync(file, line, { mode: 0o600 });
}

export async function startRegistry(options: StartRegistryOptions = {}): Promise<RegistryServer> {
  const base = options.dir ?? mkdtempSync(join(tmpdir(), 'ptah-registry-'));
  mkdirSync(base, { recursive: true });
  const storageDir = join(base, 'storage');
  mkdirSync(storageDir, { recursive: true });
  const logFile = join(base, 'registry.log');
  const configFile = join(base, 'config.yml');

  let caFile: string | undefined;
  let tls: { certificate: string; key: string } | undefined;
  if (options.tls) {
    const pkiDir = join(base, 'pki');
    const ca = createCertificateAuthority(pkiDir, 'registry-ca', 'ptah-test-registry-ca');
    const serving = issueCertificate(pkiDir, ca, {
      name: 'registry',
      commonName: '127.0.0.1',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    caFile = ca.certFile;
    tls = { certificate: serving.certFile, key: serving.keyFile };
  }

  let auth: { username: string; password: string } | undefined;
  let htpasswdFile: string | undefined;
  if (options.auth) {
    auth = { username: 'ptah', password: randomBytes(18).toString('base64url') };
    htpasswdFile = join(base, 'htpasswd');
    writeHtpasswd(htpasswdFile, auth.username, auth.password);
  }

  const scheme = tls ? 'https' : 'http';
  let host = '';
  const writeConfig = () => {
    const config = {
      version: 0.1,
      log: { level: 'info', fields: { service: 'registry' } },
      storage: {
        filesystem: { rootdirectory: storageDir },
        delete: { enabled: true },
        cache: { blobdescriptor: 'inmemory' },
      },
      http: {
        addr: host,
        // A fixed secret keeps upload state valid across requests; random per instance is enough here.
        secret: randomBytes(24).toString('hex'),
        headers: { 'X-Content-Type-Options': ['nosniff'] },
        ...(tls ? { tls } : {}),
      },
      ...(htpasswdFile ? { auth: { htpasswd: { realm: 'ptah-test-registry', path: htpasswdFile } } } : {}),
      health: { storagedriver: { enabled: false } },
    };
    writeFileSync(configFile, stringify(config), { mode: 0o600 });
  };
  /** Starts docker-registry on `host` with the config file as written; resolves once it answers. */
  const launch = async (): Promise<ManagedProcess> => {
    // A minimal environment: REGISTRY_* variables from the caller's shell would override the config.
    const candidate = startProcess('docker-registry', REGISTRY_BIN, ['serve', configFile], logFile, {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: base },
    });
    try {
      await waitUntil(
        'docker-registry',
        async () => {
          const res = await sendHttpRequest(`${scheme}://${host}/v2/`, { caFile, timeoutMs: 2_000 });
          // 401 is the expected answer to an anonymous probe when auth is on: the server is up.
          return res.status === 200 || (auth !== undefined && res.status === 401);
        },
        { process: candidate, timeoutMs: 30_000, intervalMs: 100 },
      );
      return candidate;
    } catch (error) {
      await candidate.stop(2_000);
      throw error;
    }
  };
  let server: ManagedProcess | undefined;
  // freePort can lose a race with another process; a registry that cannot bind exits, so retry.
  for (let attempt = 0; attempt < 5 && server === undefined; attempt++) {
    host = `127.0.0.1:${await freePort()}`;
    writeConfig();
    try {
      server = await launch();
    } catch (error) {
      if (attempt === 4) throw error;
    }
  }
  if (server === undefined) throw new Error('docker-registry: could not start');
  let running: ManagedProcess | undefined = server;
  let pid = server.pid;

  return {
    host,
    url: `${scheme}://${host}`,
    ...(caFile ? { caFile } : {}),
    ...(auth ? { auth } : {}),
    logFile,
    get pid() {
      return pid;
    },
    async interrupt() {
      await running?.stop(5_000);
      running = undefined;
    },
    async resume() {
      // The address was free when this server took it; another process could take it in between, so a
      // few attempts, each a fresh launch on the same address.
      for (let attempt = 0; running === undefined; attempt++) {
        try {
          running = await launch();
          pid = running.pid;
        } catch (error) {
          if (attempt === 4) throw error;
        }
      }
    },
    async stop() {
      await running?.stop(5_000);
      running = undefined;
      if (options.dir === undefined) rmSync(base, { recursive: true, force: true });
    },
  };
}
