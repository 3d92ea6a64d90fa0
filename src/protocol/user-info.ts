/**
 * URL user info, removed from any text that leaves a process: the runner applies it to everything it prints
 * on top of redacting the credentials it knows, and the manager applies it again to the runner's words it
 * puts into status, since it knows no credential itself (it reads no Secret).
 */

const REDACTED = '***';

/** Removes the user info of any URL in the text. */
export function stripUserInfo(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s"'<>]*@/gi, `$1${REDACTED}@`);
}
