// `kubectl ptah` (the kubectl plugin `kubectl-ptah`): reads a schema's or a migration's plan, status and
// journal with the person's own kubeconfig, and creates an approval or a run acknowledgment. Thin over src/plan-store (the manager's own chunk
// checks) and src/api; it never imports the manager and never connects to a database.
import { VERSION } from '../build-info.ts';
import { PLUGIN_EXIT, PluginError, type PluginExit } from './kubectl-ptah-errors.ts';
import { COMPLETION_SCRIPTS } from './kubectl-ptah-completion.ts';

const USAGE = `usage: kubectl ptah <command> [options]

commands:
  plan <schema> [--applied] [-o sql|json|diff]   print a plan, rebuilt from its chunks and verified
  approve <schema> [--yes]                       show the current plan, then approve exactly it
  status <schema>                                phase, plan, conditions and journal
  migration status|plan <migration>              a PtahMigration: history, plan sequence, runs, journal
  migration approve <migration> [--yes]          show the current migration plan, then approve exactly it
  migration acknowledge <migration> [--yes]      settle the run the migration records as unresolved
  completion bash|zsh                            a completion script for kubectl-ptah

Every command takes -n/--namespace, --kubeconfig and --context; without them the kubeconfig's current
context and its namespace apply. Only approve and acknowledge write anything.
Exit codes: 0 done, 1 read or verification failed, 2 usage, 3 no such object or plan.`;

type Command = (argv: readonly string[]) => Promise<PluginExit>;

// Imported when chosen, so --help, --version and completion scripts start without the Kubernetes client.
const COMMANDS: Record<string, Command> = {
  plan: async (argv) => (await import('./kubectl-ptah-plan.ts')).runPlan(argv),
  approve: async (argv) => (await import('./kubectl-ptah-approve.ts')).runApprove(argv),
  status: async (argv) => (await import('./kubectl-ptah-status.ts')).runStatus(argv),
  migration: async (argv) => (await import('./kubectl-ptah-migration.ts')).runMigration(argv),
  completion: async ([shell]) => {
    const script = COMPLETION_SCRIPTS[shell ?? ''];
    if (script === undefined)
      throw new PluginError(PLUGIN_EXIT.usage, 'usage: kubectl ptah completion bash|zsh');
    process.stdout.write(script);
    return PLUGIN_EXIT.ok;
  },
  __complete: async (words) => {
    const { candidates, cobraAnswer, namesIn } = await import('./kubectl-ptah-completion.ts');
    const { connect } = await import('./kubectl-ptah-context.ts');
    const list = await candidates(words, async (plural) => {
      try {
        return await namesIn(connect(namespaceFlags(words)), plural);
      } catch {
        return [];
      }
    });
    process.stdout.write(cobraAnswer(list));
    return PLUGIN_EXIT.ok;
  },
};

/** The connection flags among words being completed, so names come from the namespace typed. */
function namespaceFlags(words: readonly string[]): {
  namespace?: string;
  kubeconfig?: string;
  context?: string;
} {
  const flags: { namespace?: string; kubeconfig?: string; context?: string } = {};
  words.forEach((w, i) => {
    const next = words[i + 1];
    if (next === undefined) return;
    if (w === '-n' || w === '--namespace') flags.namespace = next;
    if (w === '--kubeconfig') flags.kubeconfig = next;
    if (w === '--context') flags.context = next;
  });
  return flags;
}

export async function main(argv: readonly string[]): Promise<PluginExit> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(USAGE + '\n');
    return command === undefined ? PLUGIN_EXIT.usage : PLUGIN_EXIT.ok;
  }
  if (command === '--version' || command === 'version') {
    process.stdout.write(`kubectl-ptah ${VERSION}\n`);
    return PLUGIN_EXIT.ok;
  }
  const run = COMMANDS[command];
  if (run === undefined) {
    process.stderr.write(`kubectl ptah: unknown command "${command}"\n\n${USAGE}\n`);
    return PLUGIN_EXIT.usage;
  }
  try {
    return await run(rest);
  } catch (error) {
    if (error instanceof PluginError) {
      process.stderr.write(`kubectl ptah ${command}: ${error.message}\n`);
      return error.exit;
    }
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`kubectl ptah ${command}: ${error.message}\n`);
      return PLUGIN_EXIT.usage;
    }
    throw error;
  }
}

process.exitCode = await main(process.argv.slice(2));
