/**
 * A desired state (or the live database read as one) that the engine cannot load. Its own module, so code
 * that only catches it (the command line) does not load a dialect's parser to do so.
 */
export class DesiredStateError extends Error {
  override readonly name = 'DesiredStateError';
}
