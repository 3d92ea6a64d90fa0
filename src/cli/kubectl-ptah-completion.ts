/**
 * Shell completion. kubectl (1.26+) completes a plugin's arguments by running `kubectl_complete-ptah`
 * with the words typed after `kubectl ptah`; that program (bin/kubectl_complete-ptah) calls
 * `kubectl-ptah __complete`, which answers in Cobra's format: one candidate a line, then `:<directive>`.
 * `kubectl ptah completion bash|zsh` prints a script for calling `kubectl-ptah` directly.
 */
import type { PluginContext } from './kubectl-ptah-context.ts';
import { API_GROUP, API_VERSION } from '../api/meta.ts';

/** Cobra's ShellCompDirectiveNoFileComp: the shell offers no file names either. */
const NO_FILES = 4;

export const SUBCOMMANDS = ['plan', 'approve', 'status', 'migration', 'completion'] as const;
const MIGRATION_SUBCOMMANDS = ['status', 'plan', 'approve', 'acknowledge'] as const;

const CONNECTION = ['-n', '--namespace', '--kubeconfig', '--context'];
const FLAGS: Record<string, readonly string[]> = {
  plan: ['--applied', '-o', '--output', ...CONNECTION],
  approve: ['--yes', ...CONNECTION],
  status: CONNECTION,
  'migration status': CONNECTION,
  'migration plan': ['-o', '--output', ...CONNECTION],
  'migration approve': ['--yes', ...CONNECTION],
  'migration acknowledge': ['--operation', '--yes', ...CONNECTION],
};

const FLAG_VALUES: Readonly<Record<string, readonly string[]>> = {
  '-o': ['sql', 'json', 'diff'],
  '--output': ['sql', 'json', 'diff'],
};
const MIGRATION_FLAG_VALUES: Readonly<Record<string, readonly string[]>> = {
  '-o': ['text', 'json'],
  '--output': ['text', 'json'],
};

/** Flags that take the next word as their value. */
const VALUE_FLAGS = new Set([
  '-o',
  '--output',
  '-n',
  '--namespace',
  '--kubeconfig',
  '--context',
  '--operation',
]);

/** The kinds whose names complete a command's argument. */
export type NamedPlural = 'ptahschemas' | 'ptahmigrations';

/** What `words` (the last one being typed, possibly empty) may continue with. */
export async function candidates(
  words: readonly string[],
  namesOf: (plural: NamedPlural) => Promise<readonly string[]>,
): Promise<string[]> {
  const current = words.at(-1) ?? '';
  let before = words.slice(0, -1);
  const matching = (list: readonly string[]) => list.filter((c) => c.startsWith(current));
  if (before.length === 0) return matching(SUBCOMMANDS);
  let sub: string = before[0]!;
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) return [];
  if (sub === 'completion') return before.length === 1 ? matching(['bash', 'zsh']) : [];
  let plural: NamedPlural = 'ptahschemas';
  let flagValues = FLAG_VALUES;
  if (sub === 'migration') {
    if (before.length === 1) return matching(MIGRATION_SUBCOMMANDS);
    if (!(MIGRATION_SUBCOMMANDS as readonly string[]).includes(before[1]!)) return [];
    sub = `migration ${before[1]!}`;
    before = before.slice(1);
    plural = 'ptahmigrations';
    flagValues = MIGRATION_FLAG_VALUES;
  }
  const previous = before.at(-1) ?? '';
  const values = flagValues[previous];
  if (values !== undefined) return matching(values);
  if (VALUE_FLAGS.has(previous)) return [];
  if (current.startsWith('-')) return matching(FLAGS[sub] ?? []);
  const positionals = before
    .slice(1)
    .filter((w, i, all) => !w.startsWith('-') && !VALUE_FLAGS.has(all[i - 1] ?? ''));
  return positionals.length === 0 ? matching(await namesOf(plural)) : [];
}

export async function namesIn(ctx: PluginContext, plural: NamedPlural): Promise<string[]> {
  const list = (await ctx.objects.listNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: ctx.namespace,
    plural,
    limit: 500,
  })) as { items: { metadata: { name: string } }[] };
  return list.items.map((item) => item.metadata.name);
}

export function cobraAnswer(list: readonly string[]): string {
  return [...list, `:${NO_FILES}`].join('\n') + '\n';
}

const BASH = `# bash completion for kubectl-ptah; load with: source <(kubectl-ptah completion bash)
_kubectl_ptah() {
  local IFS=$'\\n'
  local out
  out="$(kubectl-ptah __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" || return
  COMPREPLY=($(printf '%s\\n' "$out" | grep -v '^:'))
}
complete -F _kubectl_ptah kubectl-ptah
`;

const ZSH = `#compdef kubectl-ptah
# zsh completion for kubectl-ptah; load with: source <(kubectl-ptah completion zsh)
_kubectl_ptah() {
  local -a out
  out=("\${(@f)$(kubectl-ptah __complete "\${(@)words[2,CURRENT]}" 2>/dev/null | grep -v '^:')}")
  compadd -a out
}
compdef _kubectl_ptah kubectl-ptah
`;

export const COMPLETION_SCRIPTS: Readonly<Record<string, string>> = { bash: BASH, zsh: ZSH };
