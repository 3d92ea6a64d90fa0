/**
 * Where vcontrollerwrite and vpodintent read what they rebuild from. The manager serves them from its own
 * watches first (a review then waits on no API server round trip), and those caches may lag its writes by a
 * few milliseconds: the manager persists a claim and creates its Job at once, and the Job can reach the
 * webhook before the claim reaches the cache. So the caches may only make an admission faster, never a
 * refusal more likely: whatever a cached read does not admit is decided again from the API server, and
 * that decision is the answer. Nothing is admitted because a cache was empty or not yet synced.
 */
import type { AdmissionDecision } from './review.ts';

export type Reads = 'cached' | 'live';

export async function cachedThenLive(
  judge: (reads: Reads) => Promise<AdmissionDecision>,
): Promise<AdmissionDecision> {
  const fast = await judge('cached').catch(() => undefined);
  if (fast?.allowed === true) return fast;
  return judge('live');
}
