/**
 * What both families say of a dispatched Apply whose Job this release cannot adopt (job-adoption.ts): kept
 * apart from the adoption check so the pure decisions need none of the builders it rebuilds with.
 */

export function unconfirmedMessage(jobName: string, differences: string): string {
  return `apply ${jobName} was dispatched by another manager process and this release does not build the same Job from its claim (${differences}): its result is not read, and a fresh read of the database decides`;
}
