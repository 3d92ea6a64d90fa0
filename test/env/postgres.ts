import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './ports.ts';
import { startOnFreePort, startProcess } from './process.ts';

const PG_BIN = process.env['PTAH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';

/** A throwaway PostgreSQL server on loopback that logs every statement it runs. */
export interface PostgresServer {
  readonly dialect: 'postgres';
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly logFile: string;
  readonly pid: number;
  /** Superuser URL for the `postgres` database; it carries a password, so never print it. */
  readonly adminUrl: string;
  /** Creates a database (and a login role of the same name with its own password) and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Every statement the server logged, in order, with the database each ran in. */
  statements(): LoggedStatement[];
  stop(): Promise<void>;
}

export interface LoggedStatement {
  readonly database: string;
  readonly user: string;
  readonly sql: string;
}

export interface StartPostgresOptions {
  /** Parent directory for the data directory; a new temporary one by default. */
  readonly baseDir?: string;
  /** Server settings on top of the defaults (`-c name=value`), e.g. for a benchmark's large schemas. */
  readonly settings?: Readonly<Record<string, string>>;
}

function asPostgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

// The prefix makes each logged line self-describing: database and user, then the statement.
const LINE_PREFIX = '%m [%p] db=%d user=%u ';
const STATEMENT_LINE = /db=(\S*) user=(\S*) LOG:\s+(?:statement|execute [^:]*):\s(.*)$/;

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const base = options.baseDir ?? mkdtempSync(join(tmpdir(), 'ptah-pg-'));
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o755);
  const dataDir = join(base, 'data');
  const logFile = join(base, 'postgres.log');
  const socketDir = join(base, 'socket');
  mkdirSync(dataDir, { mode: 0o700 });
  mkdirSync(socketDir, { mode: 0o755 });
  writeFileSync(logFile, '');
  const password = randomBytes(18).toString('base64url');
  const pwFile = join(base, 'pwfile');
  writeFileSync(pwFile, password + '\n', { mode: 0o600 });
  const owner = asPostgresUser();
  if (owner) {
    for (const p of [dataDir, socketDir, logFile, pwFile]) chownSync(p, owner.uid, owner.gid);
  }
  execFileSync(
    join(PG_BIN, 'initdb'),
    [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      `--pwfile=${pwFile}`,
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
    ],
    { stdio: 'pipe', ...(owner ?? {}) },
  );
  rmSync(pwFile);

  const { process: running, port } = await startOnFreePort('postgres', freePort, {
    start: (port) =>
      startProcess(
        'postgres',
        join(PG_BIN, 'postgres'),
        [
          '-D',
          dataDir,
          '-c',
          `port=${port}`,
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          `unix_socket_directories=${socketDir}`,
          '-c',
          'log_statement=all',
          '-c',
          `log_line_prefix=${LINE_PREFIX}`,
          '-c',
          'fsync=off',
          '-c',
          'synchronous_commit=off',
          '-c',
          'full_page_writes=off',
          '-c',
          'max_connections=200',
          ...Object.entries(options.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
        ],
        logFile,
        owner ?? {},
      ),
    ready: async () => readFileSync(logFile, 'utf8').includes('ready to accept connections'),
    timeoutMs: 30_000,
  });
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

  return {
    dialect: 'postgres',
    host: '127.0.0.1',
    port,
    dataDir,
    logFile,
    pid: running.pid,
    adminUrl,
    async createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) {
        throw new Error(`createDatabase: "${name}" must be a lower-case identifier (letters, digits, _)`);
      }
      const rolePassword = randomBytes(18).toString('base64url');
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE ROLE "${name}" LOGIN PASSWORD '${rolePassword}'`);
        await client.query(`CREATE DATABASE "${name}" OWNER "${name}"`);
      } finally {
        await client.end();
      }
      const dbClient = new pg.Client({ connectionString: adminUrl.replace(/\/postgres$/, `/${name}`) });
      await dbClient.connect();
      try {
        await dbClient.query(`ALTER SCHEMA public OWNER TO "${name}"`);
      } finally {
        await dbClient.end();
      }
      return `postgres://${name}:${rolePassword}@127.0.0.1:${port}/${name}`;
    },
    statements() {
      const out: LoggedStatement[] = [];
      for (const line of readFileSync(logFile, 'utf8').split('\n')) {
        const m = STATEMENT_LINE.exec(line);
        if (m) out.push({ database: m[1] ?? '', user: m[2] ?? '', sql: m[3] ?? '' });
      }
      return out;
    },
    async stop() {
      await running.stop(15_000);
      if (options.baseDir === undefined) rmSync(base, { recursive: true, force: true });
    },
  };
}
