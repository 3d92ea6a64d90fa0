/**
 * ptah-runner: the main container of every operation Pod. It compiles its options, runs the fixed `ptah`
 * commands of one operation, prints their diagnostics bounded and redacted on stderr, writes ONE result
 * frame as its last stdout output and a short summary to the termination message, and exits with a code
 * from the table in docs/runner.md.
 *
 * `runRunner` takes its streams and environment as arguments so tests drive it in-process; `cli.ts` is
 * the process entry.
 */
import { SourceOptionsError } from './source-flags.ts';
import { apply } from './apply.ts';
import { runChild, type ChildResult } from './child.ts';
import type { Sha256Digest } from '../api/digest.ts';
import { encodeFrame, framePayloadDigest, neutraliseMarkers } from '../protocol/frame.ts';
import type { FailureCause } from '../protocol/cause.ts';
import { migrationApply } from './migration-apply.ts';
import { migrationHistory } from './migration-history.ts';
import { observe } from './observe.ts';
import { refused, RUNNER_EXIT, type OperationContext, type OperationReport } from './operation.ts';
import { compileOciOptions, isOciCommand, registrySecrets, runOciCommand } from './oci-source.ts';
import {
  compileGitOptions,
  GIT_COMMAND_OPERATION,
  gitSecrets,
  isGitCommand,
  runGitCommand,
} from './git-source.ts';
import {
  compileRunnerOptions,
  operationIdOf,
  RunnerOptionsError,
  type CompiledCheckSnapshotOptions,
  type CompiledRunOptions,
} from './options.ts';
import { plan } from './plan.ts';
import { createRedactor, type Redactor } from './redact.ts';
import {
  isRunnerOperation,
  RUNNER_PROTOCOL_VERSION,
  type OutputTruncation,
  type RunnerOperation,
  type RunnerResult,
  type TargetReport,
} from '../protocol/result.ts';
import { materialiseSnapshot } from '../sources/verify-snapshot.ts';
import { targetReport } from './target-identity.ts';
import { terminationSummary, writeTerminationMessage } from './termination.ts';

export interface RunnerIo {
  writeStdout(text: string): void;
  writeStderr(text: string): void;
  /** Aborted when the Pod is asked to stop (SIGTERM). */
  readonly signal?: AbortSignal;
  /** The clock, for tests. */
  now?(): Date;
}

type Env = Readonly<Record<string, string | undefined>>;

export async function runRunner(argv: readonly string[], env: Env, io: RunnerIo): Promise<number> {
  const now = io.now ?? (() => new Date());
  const startedAt = now();
  // Built before anything else, so even an options error is printed through it.
  let redactor = createRedactor([env['PTAH_DB_URL'], env['PTAH_DEV_URL'], env['PTAH_DEV_DB_URL']]);
  const say = (line: string): void =>
    io.writeStderr(neutraliseMarkers(redactor.redact(`ptah-runner: ${line}`)) + '\n');

  let report: OperationReport;
  let operation: RunnerOperation | undefined;
  let operationId = operationIdOf(env);
  let terminationPath = env['PTAH_TERMINATION_MESSAGE_PATH'] || '/dev/termination-log';
  let target: TargetReport | undefined;
  const truncation = { stdoutBytesDropped: 0, stderrBytesDropped: 0 };
  // Set just before a ptah child is spawned: until then a runner error cannot have changed the database.
  const progress = { childStarted: false };

  try {
    if (isOciCommand(argv[0])) {
      // A registry command: no database URL anywhere; the registry's own secrets are what to redact.
      operation = argv[0];
      const oci = compileOciOptions(argv, env);
      operationId = operationIdOf(env);
      redactor = createRedactor([], registrySecrets(oci));
      report = await runOciCommand(oci, say, io.signal);
    } else if (isGitCommand(argv[0])) {
      // A Git command: no database URL anywhere; the Git password and key are what to redact.
      operation = GIT_COMMAND_OPERATION[argv[0]];
      const git = compileGitOptions(argv, env);
      operationId = operationIdOf(env);
      redactor = createRedactor([], gitSecrets(git));
      report = await runGitCommand(git, say, io.signal);
    } else {
      const options = compileRunnerOptions(argv, env, startedAt);
      operation = options.mode === 'check-snapshot' ? 'check-snapshot' : options.operation;
      operationId = options.operationId;
      terminationPath = options.terminationMessagePath;
      if (options.mode === 'check-snapshot') {
        report = checkSnapshot(options, say);
      } else {
        target = targetReport(options.databaseUrl);
        report = await runOperation(options, env, redactor, io, say, truncation, progress);
      }
    }
  } catch (error) {
    operation ??= guessOperation(argv, env);
    if (error instanceof SourceOptionsError) {
      say(`refused: ${error.message}`);
      report = refused(error.code, error.message);
    } else if (error instanceof RunnerOptionsError) {
      say(`refused: ${error.message}`);
      report = {
        outcome: 'refused',
        exitCode: RUNNER_EXIT.refused,
        childExitCode: -1,
        outputs: {},
        error: { code: error.code, message: redactor.redact(error.message) },
        ...(error.code === 'deadline_expired' ? { cause: { kind: 'deadline' } as const } : {}),
      };
    } else {
      // A runner bug. Once a mutating child has started it may have run: say so, never guess otherwise.
      const message = redactor.redact(error instanceof Error ? error.message : String(error)).slice(0, 300);
      say(`internal error: ${message}`);
      const mutating = (operation === 'apply' || operation === 'migration-apply') && progress.childStarted;
      report = {
        outcome: mutating ? 'uncertain' : 'failed',
        exitCode: mutating ? RUNNER_EXIT.uncertain : RUNNER_EXIT.failed,
        childExitCode: -1,
        outputs: {},
        error: { code: 'runner_error', message },
      };
    }
  }

  const result: RunnerResult = {
    protocolVersion: RUNNER_PROTOCOL_VERSION,
    operation: operation ?? 'observe',
    operationId,
    exitCode: report.exitCode,
    childExitCode: report.childExitCode,
    outcome: report.outcome,
    startedAt: startedAt.toISOString(),
    finishedAt: now().toISOString(),
    outputs: report.outputs,
    ...(target !== undefined ? { target } : {}),
    ...(report.error !== undefined
      ? { error: { code: report.error.code, message: redactor.redact(report.error.message) } }
      : {}),
    ...(report.cause !== undefined ? { cause: redactCause(report.cause, redactor) } : {}),
    ...(truncation.stdoutBytesDropped + truncation.stderrBytesDropped > 0
      ? { truncation: truncation as OutputTruncation }
      : {}),
  };

  // Without a known operation there is no claim a frame could answer: only the termination message is written.
  let frameDigest: string | undefined;
  if (operation !== undefined) {
    const frame = encodeFrame(result);
    if (redactor.leaks(frame.replace(/"bytesBase64":"[^"]*"/, ''))) {
      // Every string in the result was redacted; reaching this is a bug, and the frame is withheld.
      say('refused to write a result that contains a credential');
      writeTerminationMessage(terminationPath, 'PTAH_RUNNER_SUMMARY_V1 {"errorCode":"credential_in_result"}');
      return RUNNER_EXIT.failed;
    }
    frameDigest = framePayloadDigest(frame);
    io.writeStdout(frame);
  }
  writeTerminationMessage(terminationPath, terminationSummary(result, frameDigest, redactor));
  return report.exitCode;
}

async function runOperation(
  options: CompiledRunOptions,
  runnerEnv: Env,
  redactor: Redactor,
  io: RunnerIo,
  say: (line: string) => void,
  truncation: { stdoutBytesDropped: number; stderrBytesDropped: number },
  progress: { childStarted: boolean },
): Promise<OperationReport> {
  let stderrBudget = options.maxOutputBytes;
  const ctx: OperationContext = {
    options,
    redactor,
    log: say,
    async runPtah(args, limits) {
      if (args.some((a) => redactor.leaks(a))) {
        // Defence in depth: argv is visible to every process on the node.
        throw new RunnerOptionsError(
          'argv',
          'a ptah argument contains a credential',
          'credentials travel in env only',
        );
      }
      const env: Record<string, string> = { ...options.childSettings, PTAH_DB_URL: options.databaseUrl };
      if (limits.devUrl === true && options.devUrl !== undefined) env['PTAH_DEV_DB_URL'] = options.devUrl;
      say(`running ptah ${args.join(' ')}`);
      progress.childStarted = true;
      const child: ChildResult = await runChild(
        {
          ptah: options.ptah,
          args,
          env,
          deadline: options.deadline,
          graceMs: options.terminationGraceMs,
          stdoutLimit: limits.stdoutLimit,
          stderrLimit: options.maxOutputBytes,
          ...(io.signal !== undefined ? { signal: io.signal } : {}),
        },
        runnerEnv,
      );
      truncation.stdoutBytesDropped += child.stdoutBytesDropped;
      truncation.stderrBytesDropped += child.stderrBytesDropped;
      // Ptah's diagnostics, redacted, with markers neutralised, within one budget for the whole run.
      const text = redactor.redact(child.stderr.toString('utf8'));
      const shown = Buffer.from(text, 'utf8').subarray(0, Math.max(0, stderrBudget)).toString('utf8');
      stderrBudget -= Buffer.byteLength(shown);
      if (shown.length > 0) {
        io.writeStderr(
          neutraliseMarkers(
            shown
              .split('\n')
              .filter((l) => l !== '')
              .map((l) => `ptah| ${l}`)
              .join('\n'),
          ) + '\n',
        );
      }
      truncation.stderrBytesDropped += Buffer.byteLength(text) - Buffer.byteLength(shown);
      say(
        `ptah exited with ${child.exitCode}${child.stopped !== undefined ? ` (stopped: ${child.stopped})` : ''}`,
      );
      return child;
    },
  };
  switch (options.operation) {
    case 'observe':
      return await observe(ctx);
    case 'plan':
      return await plan(ctx);
    case 'apply':
      return await apply(ctx);
    case 'migration-history':
      return await migrationHistory(ctx);
    case 'migration-apply':
      return await migrationApply(ctx);
  }
}

/**
 * The snapshot-check init mode. The verifier lives beside the manifest builder the manager uses
 * (`src/sources/`), so the layout the manager writes and the layout the Pod checks cannot drift apart; nothing is copied unless
 * the manifest and every file verified.
 */
function checkSnapshot(options: CompiledCheckSnapshotOptions, say: (line: string) => void): OperationReport {
  const contentDigest = options.contentDigest as Sha256Digest;
  let verdict: ReturnType<typeof materialiseSnapshot>;
  try {
    verdict = materialiseSnapshot(options.snapshotDir, contentDigest, options.outDir);
  } catch {
    return {
      outcome: 'failed',
      exitCode: RUNNER_EXIT.failed,
      childExitCode: -1,
      outputs: { snapshot: { contentDigest, files: 0 } },
      error: {
        code: 'snapshot_copy_failed',
        message: 'the checked files could not be written to the output directory',
      },
    };
  }
  if (!verdict.ok) {
    say(`snapshot refused: ${verdict.failing}: ${verdict.message}`);
    return {
      outcome: 'refused',
      exitCode: RUNNER_EXIT.refused,
      childExitCode: -1,
      outputs: { snapshot: { contentDigest, files: 0, failingFile: verdict.failing } },
      error: { code: `snapshot_${snake(verdict.reason)}`, message: `${verdict.failing}: ${verdict.message}` },
    };
  }
  say(`snapshot checked: ${verdict.files.length} files match ${contentDigest}`);
  return {
    outcome: 'succeeded',
    exitCode: RUNNER_EXIT.succeeded,
    childExitCode: -1,
    outputs: { snapshot: { contentDigest, files: verdict.files.length } },
  };
}

/** The only text a cause carries is about the user's files; it goes through redaction like every other. */
function redactCause(cause: FailureCause, redactor: Redactor): FailureCause {
  if (cause.kind !== 'desired-state') return cause;
  return {
    ...cause,
    problems: cause.problems.map((p) => ({ ...p, message: redactor.redact(p.message) })),
  };
}

function snake(reason: string): string {
  return reason.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}

function guessOperation(argv: readonly string[], env: Env): RunnerOperation | undefined {
  if (argv[0] === 'check-snapshot') return 'check-snapshot';
  if (isOciCommand(argv[0])) return argv[0];
  if (isGitCommand(argv[0])) return GIT_COMMAND_OPERATION[argv[0]];
  const i = argv.indexOf('--operation');
  const fromArgs =
    i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith('--operation='))?.slice('--operation='.length);
  const op = fromArgs ?? env['PTAH_OPERATION'];
  return isRunnerOperation(op) ? op : undefined;
}
