/** How `kubectl ptah` fails: an exit code per kind of failure, and a message naming the object and the fix. */
/** Exit codes of `kubectl ptah`: a read or verification failure differs from "nothing is stored". */
export const PLUGIN_EXIT = {
  ok: 0,
  /** Reading failed, a check failed, or the approval was refused. */
  failed: 1,
  usage: 2,
  /** The object asked for does not exist (no such schema, no current or applied plan). */
  absent: 3,
} as const;
export type PluginExit = (typeof PLUGIN_EXIT)[keyof typeof PLUGIN_EXIT];

/** A failure with the exit code it maps to and a message naming the object and what to do. */
export class PluginError extends Error {
  override readonly name = 'PluginError';
  constructor(
    readonly exit: PluginExit,
    message: string,
  ) {
    super(message);
  }
}
