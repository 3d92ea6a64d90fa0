import {
  chmodSync,
  chownSync,
  mkdtempSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { freePort } from './ports.ts';
import { startOnFreePort, startProcess } from './process.ts';

/** A throwaway MariaDB server on loopback with the general query log on. */
export interface MariadbServer {
  readonly dialect: 'mysql';
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly logFile: string;
  readonly pid: number;
  /** root URL; it carries a password, so never print it. */
  readonly adminUrl: string;
  /** Creates a database and a user of the same name with all privileges on it; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Statements from the general log, in order. */
  statements(): { readonly sql: string }[];
  stop(): Promise<void>;
}

function mysqlOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'mysql']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'mysql']).toString().trim()),
  };
}

export async function startMariadb(options: { baseDir?: string } = {}): Promise<MariadbServer> {
  const bin = existsSync('/usr/sbin/mariadbd') ? '/usr/sbin/mariadbd' : '/usr/sbin/mysqld';
  const base = options.baseDir ?? mkdtempSync(join(tmpdir(), 'ptah-mariadb-'));
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o755);
  const dataDir = join(base, 'data');
  const logFile = join(base, 'mariadb.log');
  const generalLog = join(base, 'general.log');
  const runDir = join(base, 'run');
  // Temporary tables (information_schema queries use them) live with the server, not in the shared /tmp
  // another process may clean under it.
  const tmpDir = join(base, 'tmp');
  const socket = join(runDir, 'mysqld.sock');
  mkdirSync(dataDir, { mode: 0o700 });
  mkdirSync(runDir, { mode: 0o755 });
  mkdirSync(tmpDir, { mode: 0o700 });
  writeFileSync(logFile, '');
  writeFileSync(generalLog, '');
  const owner = mysqlOwner();
  if (owner)
    for (const p of [dataDir, runDir, tmpDir, logFile, generalLog]) chownSync(p, owner.uid, owner.gid);
  const user = owner ? ['--user=mysql'] : [];
  execFileSync(
    'mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${dataDir}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      ...user,
    ],
    { stdio: 'pipe' },
  );
  const password = randomBytes(18).toString('base64url');

  const { process: running, port } = await startOnFreePort('mariadb', freePort, {
    start: (port) =>
      startProcess(
        'mariadb',
        bin,
        [
          '--no-defaults',
          `--datadir=${dataDir}`,
          `--socket=${socket}`,
          `--pid-file=${join(runDir, 'mysqld.pid')}`,
          `--tmpdir=${tmpDir}`,
          `--port=${port}`,
          '--bind-address=127.0.0.1',
          '--skip-name-resolve',
          '--general-log=1',
          `--general-log-file=${generalLog}`,
          '--innodb-flush-log-at-trx-commit=0',
          '--innodb-buffer-pool-size=64M',
          '--max-connections=200',
          ...user,
        ],
        logFile,
      ),
    ready: async () => readFileSync(logFile, 'utf8').includes('ready for connections'),
    timeoutMs: 60_000,
  });
  // A fresh install lets root in over the socket without a password; give it one for TCP.
  const boot = await mysql.createConnection({ socketPath: socket, user: 'root' });
  try {
    await boot.query(`CREATE OR REPLACE USER 'root'@'127.0.0.1' IDENTIFIED BY '${password}'`);
    await boot.query(`GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION`);
  } finally {
    await boot.end();
  }
  const adminUrl = `mysql://root:${encodeURIComponent(password)}@127.0.0.1:${port}/mysql`;

  return {
    dialect: 'mysql',
    host: '127.0.0.1',
    port,
    dataDir,
    logFile: generalLog,
    pid: running.pid,
    adminUrl,
    async createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) {
        throw new Error(`createDatabase: "${name}" must be a lower-case identifier (letters, digits, _)`);
      }
      const userPassword = randomBytes(18).toString('base64url');
      const c = await mysql.createConnection({ socketPath: socket, user: 'root' });
      try {
        await c.query(`CREATE DATABASE \`${name}\``);
        await c.query(`CREATE USER '${name}'@'127.0.0.1' IDENTIFIED BY '${userPassword}'`);
        await c.query(`GRANT ALL PRIVILEGES ON \`${name}\`.* TO '${name}'@'127.0.0.1'`);
      } finally {
        await c.end();
      }
      return `mysql://${name}:${userPassword}@127.0.0.1:${port}/${name}`;
    },
    statements() {
      const out: { sql: string }[] = [];
      for (const line of readFileSync(generalLog, 'utf8').split('\n')) {
        const m = /\s(?:Query|Execute)\s+(.*)$/.exec(line);
        if (m?.[1]) out.push({ sql: m[1] });
      }
      return out;
    },
    async stop() {
      await running.stop(20_000);
      if (options.baseDir === undefined) rmSync(base, { recursive: true, force: true });
    },
  };
}
