/**
 * Which commit a source's ref names, and how that commit may be fetched, decided from the advertisement
 * alone so that a refusal comes before anything is fetched:
 * - a branch (`main`, `refs/heads/main`) at its tip; a tag (`v1`, `refs/tags/v1`) at the commit it peels to;
 *   a short name that is both a branch and a tag is refused rather than guessed;
 * - a commit id is asked for by a branch or lightweight tag that points at it, else by its id only when the
 *   server says it gives any reachable commit by id (allow-reachable-sha1-in-want); otherwise refused.
 */
import { givesReachableCommitsById, type Advertisement } from './advertisement.ts';
import { GitSourceError } from './errors.ts';

export type RefKind = 'branch' | 'tag' | 'commit';

export interface SelectedRef {
  readonly kind: RefKind;
  /** The full ref name for a branch or tag; for a commit, the ref it is fetched by, if any. */
  readonly refName?: string;
  /** The commit the ref names now. */
  readonly commit: string;
  /** What to fetch: a ref name, or the commit id itself. */
  readonly fetch: { readonly by: 'ref'; readonly name: string } | { readonly by: 'id' };
}

const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** git check-ref-format's rules, the parts a source may meet. */
const REF = /^(?!.*(?:\.\.|@\{|\/\/|\.lock(?:\/|$)|\/\.))(?![./-])[A-Za-z0-9._/+-]{1,255}(?<![./])$/;

export function isCommitId(ref: string): boolean {
  return COMMIT_ID.test(ref);
}

export function selectRef(ad: Advertisement, ref: string, describe: string): SelectedRef {
  if (isCommitId(ref)) return selectCommit(ad, ref, describe);
  if (!REF.test(ref))
    throw new GitSourceError('InvalidRef', `"${ref.slice(0, 100)}" is not a branch, tag or commit id`);
  const candidates = ref.startsWith('refs/') ? [ref] : [`refs/heads/${ref}`, `refs/tags/${ref}`];
  const found = candidates.filter((name) => ad.refs.has(name));
  if (found.length === 0) throw new GitSourceError('RefNotFound', `${describe} has no branch or tag ${ref}`);
  if (found.length > 1)
    throw new GitSourceError(
      'AmbiguousRef',
      `${describe} has both a branch and a tag named ${ref}; name refs/heads/${ref} or refs/tags/${ref}`,
    );
  const name = found[0]!;
  if (!name.startsWith('refs/heads/') && !name.startsWith('refs/tags/'))
    throw new GitSourceError('InvalidRef', `${ref} is neither a branch (refs/heads/) nor a tag (refs/tags/)`);
  const kind: RefKind = name.startsWith('refs/heads/') ? 'branch' : 'tag';
  return {
    kind,
    refName: name,
    commit: ad.peeled.get(name) ?? ad.refs.get(name)!,
    fetch: { by: 'ref', name },
  };
}

function selectCommit(ad: Advertisement, commit: string, describe: string): SelectedRef {
  if ((commit.length === 64) !== (ad.objectFormat === 'sha256'))
    throw new GitSourceError(
      'InvalidRef',
      `${commit} is not a ${ad.objectFormat} commit id, which ${describe} uses`,
    );
  const tip = [...ad.refs]
    .filter(
      ([name, oid]) => oid === commit && (name.startsWith('refs/heads/') || name.startsWith('refs/tags/')),
    )
    .map(([name]) => name)
    .sort()[0];
  if (tip !== undefined) return { kind: 'commit', refName: tip, commit, fetch: { by: 'ref', name: tip } };
  if (givesReachableCommitsById(ad)) return { kind: 'commit', commit, fetch: { by: 'id' } };
  throw new GitSourceError(
    'CommitNotAdvertised',
    `no branch or tag of ${describe} points at ${commit}, and the server gives commits only at a branch or tag (uploadpack.allowReachableSHA1InWant is off); name a tag instead`,
  );
}
