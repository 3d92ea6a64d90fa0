/**
 * How a claim names what a Git operation reads, in the one string field a claim has for it
 * (`artifactReference`): a Resolve reads `<repository>#<ref>:<path>`, every later operation the commit
 * Resolve recorded, `<repository>#<commit>:<path>`. A repository URL holds no `#` (the API refuses one) and
 * a ref or commit id no `:`, so both parse back without ambiguity.
 */
export function gitRequestedReference(source: {
  readonly repository: string;
  readonly ref: string;
  readonly path: string;
}): string {
  return `${source.repository}#${source.ref}:${source.path}`;
}

export function gitPinnedReference(source: {
  readonly repository: string;
  readonly commit: string;
  readonly path: string;
}): string {
  return `${source.repository}#${source.commit}:${source.path}`;
}

/** The commit a pinned reference names, or undefined when it names none. */
export function commitOfPinnedReference(reference: string): string | undefined {
  const tail = reference.slice(reference.lastIndexOf('#') + 1);
  const commit = tail.slice(0, tail.indexOf(':'));
  return /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(commit) ? commit : undefined;
}
